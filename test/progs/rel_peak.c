/* rel_peak - 4 threads each hold 256 KiB (64 blocks of 4 KiB) at once,
 * meet at a barrier, then free them: the heap's peak is 1 MiB plus the 4
 * threads' DTVs (272 bytes each, from the loader) and nothing else, as
 * main allocates nothing before. Prints "done" and exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

enum { THREADS = 4, BLOCKS = 64, SIZE = 4096 };

static pthread_barrier_t all_held, checked;

static void *worker(void *arg)
{
	void *b[BLOCKS];
	(void)arg;
	for (int i = 0; i < BLOCKS; i++)
		b[i] = malloc(SIZE);
	pthread_barrier_wait(&all_held);
	pthread_barrier_wait(&checked);
	for (int i = 0; i < BLOCKS; i++)
		free(b[i]);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	pthread_barrier_init(&all_held, NULL, THREADS + 1);
	pthread_barrier_init(&checked, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	pthread_barrier_wait(&all_held);
	pthread_barrier_wait(&checked);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
