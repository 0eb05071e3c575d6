/* par_fork - a process that forks: the child inherits the parent's heap
 * history, allocates and frees on its own, and exits with 5; the parent
 * waits for it and exits with 0. Both print a summary, the child's first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *keep[3];

int main(void)
{
	int st = 0;

	keep[0] = malloc(100);
	for (int i = 0; i < 50; i++)
		free(strdup("before fork"));
	printf("parent before fork\n");
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		keep[1] = calloc(10, 10);
		free(keep[0]);
		for (int i = 0; i < 20; i++)
			free(malloc(1000));
		printf("child\n");
		exit(5);
	}
	waitpid(pid, &st, 0);
	keep[2] = malloc(200);
	printf("parent: child status %d\n", WEXITSTATUS(st));
	return 0;
}
