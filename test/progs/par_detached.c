/* par_detached - 5 detached threads with small stacks, each allocating and
 * freeing, keeping one block in a global, then meeting main at a barrier.
 * main then waits until the threads have ended (the process has one
 * thread left: they cannot be joined), so that their cached stacks are
 * the same at exit whoever runs the program. Exits 0. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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
	/* Read without stdio: nothing here allocates. */
	for (;;) {
		char buf[4096];
		int fd = open("/proc/self/status", O_RDONLY);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			break;
		buf[n] = '\0';
		const char *p = strstr(buf, "\nThreads:");
		if (p == NULL || atoi(p + 9) <= 1)
			break;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	printf("threads=%d\n", THREADS);
	return 0;
}
