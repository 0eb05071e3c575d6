/* rel_fork_lister - fork while another thread lists the loaded objects: a
 * thread calls dl_iterate_phdr over and over, its callback slow, while the
 * main thread forks 20 times; each child allocates, frees and _exits.
 * glibc does not reset the list's lock in a child, so nearly every child
 * starts with it held by a thread it does not have; the child itself
 * never lists. Prints "done 20". */
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

static int slow(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct timespec ts = { 0, 200000 };
	(void)info;
	(void)size;
	(void)arg;
	nanosleep(&ts, NULL);
	return 0;
}

static void *lister(void *arg)
{
	(void)arg;
	while (!stop)
		dl_iterate_phdr(slow, NULL);
	return NULL;
}

int main(void)
{
	pthread_t t;
	int n = 0;
	pthread_create(&t, NULL, lister, NULL);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			free(malloc(100));
			_exit(0);
		}
		int status;
		if (pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0)
			n++;
	}
	stop = 1;
	pthread_join(t, NULL);
	printf("done %d\n", n);
	return 0;
}
