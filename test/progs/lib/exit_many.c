/* exit_many - a library whose constructor registers 100 exit handlers, as
 * a C++ library with many global objects does (one per object). glibc
 * keeps the first 32 handlers in a static block and the others in blocks
 * it allocates, which it frees at exit once their handlers have run. One
 * of the handlers frees a block the constructor allocated. Linked into
 * par_exit_many. */
#include <stdlib.h>

static void *g_block;

static void nothing(void)
{
}

static void release(void)
{
	free(g_block);
	g_block = NULL;
}

__attribute__((constructor)) static void setup(void)
{
	g_block = malloc(64);
	atexit(release);
	for (int i = 0; i < 99; i++)
		atexit(nothing);
}

int exit_many_handlers(void)
{
	return 100;
}
