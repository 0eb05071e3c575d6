/* par_exit - the ways a program ends: "return" from main, "exit",
 * "_exit" (no atexit handlers), "thread-exit" (exit called by a second
 * thread while main waits in pthread_join) and "quick_exit" (its own
 * handlers, not atexit's). An atexit handler allocates and frees, and so
 * does an at_quick_exit handler, so their work must be in the summary.
 * The status is 10 plus the argument's index. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[4];

static void handler(void)
{
	keep[2] = malloc(77);
	free(keep[0]);
	keep[0] = NULL;
}

static void quick_handler(void)
{
	keep[2] = malloc(55);
	free(keep[1]);
	keep[1] = NULL;
}

static void *exiter(void *arg)
{
	keep[3] = malloc(33);
	printf("exiting from a thread\n");
	exit(13);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "return";
	atexit(handler);
	keep[0] = malloc(50);
	keep[1] = strdup(how);
	for (int i = 0; i < 100; i++)
		free(malloc((size_t)i));
	printf("ending by %s\n", how);
	if (strcmp(how, "exit") == 0)
		exit(11);
	if (strcmp(how, "_exit") == 0) {
		fflush(stdout);
		_exit(12);
	}
	if (strcmp(how, "thread-exit") == 0) {
		pthread_t t;
		pthread_create(&t, NULL, exiter, NULL);
		pthread_join(t, NULL);
	}
	if (strcmp(how, "quick_exit") == 0) {
		at_quick_exit(quick_handler);
		fflush(stdout);
		quick_exit(14);
	}
	return 10;
}
