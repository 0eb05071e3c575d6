/* strdup_free - seed 000's strdup build without GLib: THREADS threads, each
 * ITERS x strdup("foobar")/free.
 *
 * usage: strdup_free [THREADS [ITERS]]   (defaults 2 100000)
 */
#include <pthread.h>
#include <string.h>

#include "bench.h"

static long iters;
static const char *str = "foobar";

static void *worker(void *arg)
{
	for (long i = 0; i < iters; i++)
		free(bench_launder(strdup(bench_launder((void *)str))));
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = bench_arg(argc, argv, 1, 2);
	pthread_t *t = calloc(nthreads, sizeof *t);

	iters = bench_arg(argc, argv, 2, 100000);
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
