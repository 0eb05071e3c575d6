/* par_exit_many - a program linked with a library that registers 100 exit
 * handlers before main (test/progs/lib/exit_many.c): the blocks glibc
 * allocated for them are freed at exit, after the handlers, and valgrind
 * counts those frees. "exit" ends by exit(3), no argument by returning. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int exit_many_handlers(void);

static void *g_kept;

static void handler(void)
{
	free(g_kept);
}

int main(int argc, char **argv)
{
	atexit(handler);
	g_kept = malloc(40);
	free(malloc(10));
	printf("%d handlers in the library\n", exit_many_handlers());
	if (argc > 1 && strcmp(argv[1], "exit") == 0)
		exit(3);
	return 0;
}
