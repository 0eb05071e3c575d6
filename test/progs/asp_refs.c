/* asp_refs - include/allocspy.h alone, no link flag: THREADS threads each
 * take and drop GETS references to one shared object, and create and
 * destroy OWN objects of their own (init, one acquire, two releases).
 *
 *   asp_refs [THREADS [GETS [OWN]]]     (3 20000 50)
 *
 * Prints the shared object's final count and how many releases were the
 * last one; exits 0 when both are right. */
#include <allocspy.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static asp_ref_t shared;
static int gets, own;

static void *worker(void *arg)
{
	long lasts = 0;
	(void)arg;
	for (int i = 0; i < gets; i++) {
		asp_ref_acquire(&shared);
		lasts += asp_ref_release(&shared);
	}
	for (int i = 0; i < own; i++) {
		asp_ref_t *r = malloc(sizeof *r);
		asp_ref_init(r);
		asp_ref_acquire(r);
		lasts += asp_ref_release(r);
		if (asp_ref_release(r)) {
			free(r);
			lasts += 1000000;
		}
	}
	return (void *)lasts;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 3;
	gets = argc > 2 ? atoi(argv[2]) : 20000;
	own = argc > 3 ? atoi(argv[3]) : 50;
	pthread_t t[64];
	long lasts = 0;

	if (threads < 1 || threads > 64)
		return 2;
	asp_ref_init(&shared);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++) {
		void *r;
		pthread_join(t[i], &r);
		lasts += (long)r;
	}
	int final = (int)asp_ref_count(&shared);
	int last = asp_ref_release(&shared);
	printf("count=%d last=%d own_destroyed=%ld\n", final, last, lasts / 1000000);
	return final == 1 && last && lasts == (long)threads * own * 1000000 ? 0 : 1;
}
