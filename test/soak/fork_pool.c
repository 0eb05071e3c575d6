/* fork_pool - threads churn a shared pool while the main thread forks.
 * 4 workers loop over malloc, calloc, strdup, realloc(malloc(16), n) and
 * posix_memalign, each time swapping the new block into a random slot of a
 * shared pool (under a mutex) and freeing the block it took out, so most
 * frees are cross-thread. Meanwhile main forks N times (each child
 * allocates, frees and leaves with _exit), runs posix_spawn and system(),
 * and starts 2000 short threads. Prints "done" and exits 0.
 * Usage: fork_pool [forks] */
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define SLOTS 256

static void *pool[SLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int stop;

static void *make(unsigned *seed)
{
	size_t n = 1 + rand_r(seed) % 2000;
	void *p = NULL;
	switch (rand_r(seed) % 5) {
	case 0: return malloc(n);
	case 1: return calloc(1, n);
	case 2: {
		char buf[64];
		memset(buf, 'x', sizeof buf - 1);
		buf[n % sizeof buf] = '\0';
		return strdup(buf);
	}
	case 3: return realloc(malloc(16), n);
	default:
		if (posix_memalign(&p, 64, n) != 0)
			return NULL;
		return p;
	}
}

static void *worker(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	while (!stop) {
		void *mine = make(&seed);
		unsigned slot = (unsigned)rand_r(&seed) % SLOTS;
		pthread_mutex_lock(&lock);
		void *old = pool[slot];
		pool[slot] = mine;
		pthread_mutex_unlock(&lock);
		free(old);
	}
	return NULL;
}

static void *short_thread(void *arg)
{
	free(malloc((size_t)(uintptr_t)arg));
	return NULL;
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 50;
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			unsigned seed = (unsigned)i;
			for (int k = 0; k < 100; k++)
				free(make(&seed));
			_exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			printf("child %d failed\n", i);
			return 1;
		}
	}
	pid_t pid;
	char *args[] = { "true", NULL };
	if (posix_spawnp(&pid, "true", NULL, NULL, args, environ) == 0)
		waitpid(pid, NULL, 0);
	if (system("true") != 0)
		return 1;
	for (int i = 0; i < 2000; i++) {
		pthread_t s;
		if (pthread_create(&s, NULL, short_thread, (void *)(uintptr_t)(i + 1)) == 0)
			pthread_join(s, NULL);
	}
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < SLOTS; i++)
		free(pool[i]);
	printf("done\n");
	return 0;
}
