/* sig_busy - N threads (argument 1, 1 by default: main alone) that
 * allocate and free blocks of 16 to 4,015 bytes without end, keeping up
 * to 1,024 each, until a signal ends the process (t83: SIGTERM from
 * outside, landing most often inside the allocator, with its lock held
 * when there are threads). Prints "ready" on stdout once the threads run;
 * never exits by itself. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static void *loop(void *arg)
{
	void *keep[1024] = { 0 };

	for (unsigned long i = 0;; i++) {
		size_t k = (i * 2654435761u) % 1024;

		free(keep[k]);
		keep[k] = malloc(16 + i % 4000);
	}
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	pthread_t t;

	for (int i = 1; i < n; i++)
		pthread_create(&t, NULL, loop, NULL);
	printf("ready\n");
	fflush(stdout);
	loop(NULL);
	return 0;
}
