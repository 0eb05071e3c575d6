/* vfork_threads - 4 threads each run /bin/true 50 times with vfork+exec
 * (and posix_spawn, which uses clone(CLONE_VFORK)) while allocating.
 * Prints "done" and exits 0. */
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 50; i++) {
		char *p = strdup("allocated around a vfork");
		pid_t pid;
		if (i % 2) {
			pid = vfork();
			if (pid == 0) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
		} else {
			char *args[] = { "true", NULL };
			if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0)
				pid = -1;
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		free(p);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
	return 0;
}
