/* leak_freed - pointers that only freed memory holds: a block whose start
 * is stored only in a block that was then freed ("definitely lost": freed
 * memory is no root), the same through a block realloc'd to a new place,
 * and for contrast a block whose pointer sits in a block that is itself
 * reachable from a global (both "still reachable"). The stored pointers sit
 * at offset 64, away from the words free() writes. Exits 0. */
#include "leak_common.h"

static void **kept;

static __attribute__((noinline)) void build(void)
{
	void **f = malloc(128);
	memset(f, 0, 128);
	f[8] = malloc(31);
	free(f);

	void **g = malloc(128);
	memset(g, 0, 128);
	g[8] = malloc(47);
	g = realloc(g, 100000);   /* moves: the old copy is freed */
	g[8] = NULL;
	free(g);

	kept = malloc(128);
	memset(kept, 0, 128);
	kept[8] = malloc(59);
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("freed holders\n");
	LEAK_END(argc, argv, 0);
}
