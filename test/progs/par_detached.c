/* par_detached - 5 detached threads with small stacks, each allocating and
 * freeing, keeping one block in a global, then meeting main at a barrier.
 * main exits right after the barrier, while the threads may still be
 * finishing: nothing they do after the barrier allocates or frees, so the
 * counts stay deterministic. Exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { THREADS = 5 };

static pthread_barrier_t barrier;
static void *keep[THREADS];

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < 300; i++) {
		void *p = malloc((size_t)(id * 100 + i));
		void *q = calloc((size_t)i + 1, 3);
		free(p);
		free(q);
	}
	keep[id] = malloc(1000 + (size_t)id);
	pthread_barrier_wait(&barrier);
	return NULL;
}

int main(void)
{
	pthread_attr_t attr;
	pthread_t t;

	pthread_barrier_init(&barrier, NULL, THREADS + 1);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t, &attr, worker, (void *)i);
	pthread_attr_destroy(&attr);
	pthread_barrier_wait(&barrier);
	printf("threads=%d\n", THREADS);
	return 0;
}
