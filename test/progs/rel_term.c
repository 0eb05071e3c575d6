/* rel_term - 3 threads and main allocate and free without end, until a
 * signal ends the process (the test sends SIGTERM). Prints "ready" once
 * they run. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void churn(unsigned seed)
{
	void *keep[32] = { 0 };
	for (;;) {
		unsigned i = (unsigned)rand_r(&seed) % 32;
		free(keep[i]);
		keep[i] = malloc(1 + (size_t)rand_r(&seed) % 3000);
		if (rand_r(&seed) % 8 == 0)
			keep[i] = realloc(keep[i], 1 + (size_t)rand_r(&seed) % 3000);
	}
}

static void *worker(void *arg)
{
	churn((unsigned)(uintptr_t)arg);
	return NULL;
}

int main(void)
{
	pthread_t t;
	for (uintptr_t i = 1; i <= 3; i++)
		pthread_create(&t, NULL, worker, (void *)i);
	printf("ready\n");
	fflush(stdout);
	churn(4);
	return 0;
}
