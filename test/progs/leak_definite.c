/* leak_definite - blocks that no pointer reaches: dropped in a callee, in a
 * loop, by overwriting the only pointer, and by realloc'ing away from a
 * copy. One block stays reachable from a global. main's own local pointer
 * is lost when main returns, and still reachable when main calls exit.
 *   definitely lost: 100 + 10 * 16 + 200 + 300 (+ 40 when main returns)
 *   still reachable: 50 + stdout's buffer (+ 40 when main calls exit)
 * Exits 0. */
#include "leak_common.h"

static void *global;

static __attribute__((noinline)) void drop(size_t n)
{
	char *p = malloc(n);
	memset(p, 1, n);
}

static __attribute__((noinline)) void build(void)
{
	drop(100);
	for (int i = 0; i < 10; i++)
		drop(16);
	char *p = malloc(200);
	p = malloc(300);         /* the 200 bytes are lost here */
	p[0] = 1;
	p = NULL;                /* and the 300 here */
	global = malloc(50);
}

int main(int argc, char **argv)
{
	char *mine;

	build();
	scrub_stack();
	mine = malloc(40);
	mine[0] = 'm';
	printf("built\n");
	LEAK_END(argc, argv, 0);
}
