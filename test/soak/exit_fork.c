/* exit_fork - fork while the process ends: a thread forks in a loop (each
 * child allocates, then _exit) while the main thread calls exit() with
 * blocks still allocated, so forks land inside the exit report's leak
 * scan; two more threads free and allocate large (mmap'd) blocks all the
 * while. Prints "done" and exits 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[1000];

static void *forker(void *arg)
{
	(void)arg;
	for (;;) {
		pid_t pid = fork();
		if (pid == 0) {
			free(malloc(100));
			_exit(0);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return NULL;
}

static void *churn(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	void *big[8] = { 0 };
	for (;;) {
		unsigned i = (unsigned)rand_r(&seed) % 8;
		free(big[i]);
		big[i] = malloc(200000 + (size_t)rand_r(&seed) % 100000);
		if (big[i])
			memset(big[i], 1, 64);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;
	for (int i = 0; i < 1000; i++)
		keep[i] = malloc((size_t)i + 1);
	pthread_create(&t, NULL, forker, NULL);
	pthread_create(&t, NULL, churn, (void *)1);
	pthread_create(&t, NULL, churn, (void *)2);
	usleep(20000);
	printf("done\n");
	fflush(stdout);
	exit(0);
}
