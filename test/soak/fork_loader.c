/* fork_loader - fork while other threads hold the loader's list of objects:
 * one thread lists the objects (dl_iterate_phdr) and one dlopens and
 * dlcloses libm over and over, while two threads allocate (with
 * ALLOCSPY_INTERVAL_MS, they write the periodic dumps, which list the
 * objects too) and the main thread forks N times (the argument; 100
 * without it). Each child allocates,
 * frees and _exits; it never lists objects itself, nor dlopens (nor calls
 * exit: glibc leaves the lock of the exit handlers held in a child forked
 * during a dlclose, which takes it). Prints "done" and exits 0. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static int count(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	if ((*(int *)arg)++ == 0) {
		struct timespec ts = { 0, 50000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void *lister(void *arg)
{
	(void)arg;
	while (!stop) {
		int n = 0;
		dl_iterate_phdr(count, &n);
	}
	return NULL;
}

static void *opener(void *arg)
{
	(void)arg;
	while (!stop) {
		void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
		if (h != NULL)
			dlclose(h);
	}
	return NULL;
}

static void *churn(void *arg)
{
	char *keep[64] = { 0 };
	unsigned i = (unsigned)(size_t)arg;
	while (!stop) {
		i = i * 1103515245u + 12345u;
		unsigned k = (i >> 16) % 64;
		free(keep[k]);
		keep[k] = strdup("a block that one thread keeps for a while");
	}
	for (int k = 0; k < 64; k++)
		free(keep[k]);
	return NULL;
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 100;
	pthread_t t[4];
	pthread_create(&t[0], NULL, lister, NULL);
	pthread_create(&t[1], NULL, opener, NULL);
	pthread_create(&t[2], NULL, churn, (void *)1);
	pthread_create(&t[3], NULL, churn, (void *)2);
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			free(malloc(100));
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0) {
			printf("child %d failed\n", i);
			return 1;
		}
	}
	stop = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
