/* thread_perf - seed 001: TASKS threads, each ROUNDS rounds of malloc(i) for
 * i = 1..NMALLOCS, then free of all of them.
 *
 * usage: thread_perf [TASKS [ROUNDS [NMALLOCS]]]   (defaults 10 500 1000)
 * The seed ran 10 tasks x 500 rounds to show that the lock in a shared
 * malloc costs threads their speed; a profiler must not add such a lock.
 * The threads start together at a barrier.
 */
#include <pthread.h>

#include "bench.h"

static long rounds, nmallocs;
static pthread_barrier_t start;

static void *task(void *arg)
{
	void **ptrs = calloc(nmallocs + 1, sizeof *ptrs);

	if (!ptrs)
		abort();
	pthread_barrier_wait(&start);
	for (long j = 0; j < rounds; j++) {
		for (long i = 1; i <= nmallocs; i++) {
			ptrs[i] = bench_launder(malloc(i));
			if (!ptrs[i])
				abort();
		}
		for (long i = 1; i <= nmallocs; i++)
			free(ptrs[i]);
	}
	free(ptrs);
	return NULL;
}

int main(int argc, char **argv)
{
	long ntasks = bench_arg(argc, argv, 1, 10);
	pthread_t *t = calloc(ntasks, sizeof *t);

	rounds = bench_arg(argc, argv, 2, 500);
	nmallocs = bench_arg(argc, argv, 3, 1000);
	if (!t || pthread_barrier_init(&start, NULL, ntasks))
		return 1;
	for (long i = 0; i < ntasks; i++)
		if (pthread_create(&t[i], NULL, task, NULL))
			return 1;
	for (long i = 0; i < ntasks; i++)
		pthread_join(t[i], NULL);
	pthread_barrier_destroy(&start);
	free(t);
	return 0;
}
