/* malloc_free - seed 003: THREADS threads, each ITERS x malloc(SIZE)/free.
 *
 * usage: malloc_free [THREADS [ITERS [SIZE]]]   (defaults 5 100000 1024)
 * The seed compared glibc malloc against tcmalloc with 5 threads x 100,000
 * malloc(1024)/free; the benches also run it with 2 threads.
 */
#include <pthread.h>

#include "bench.h"

static long iters, size;

static void *worker(void *arg)
{
	for (long i = 0; i < iters; i++)
		free(bench_launder(malloc(size)));
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = bench_arg(argc, argv, 1, 5);
	pthread_t *t = calloc(nthreads, sizeof *t);

	iters = bench_arg(argc, argv, 2, 100000);
	size = bench_arg(argc, argv, 3, 1024);
	if (!t)
		return 1;
	for (long i = 0; i < nthreads; i++)
		if (pthread_create(&t[i], NULL, worker, NULL))
			return 1;
	for (long i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
