/* leak_interior - interior pointers: a global pointing 16 bytes into a
 * block and one pointing into the middle of a 1000-byte block (both
 * "possibly lost"), one pointing one past the end of a block (not inside:
 * "definitely lost"), and a lost block whose only pointer into a second
 * block is an interior one. Exits 0. */
#include "leak_common.h"

static char *into16, *middle, *past_end;

static __attribute__((noinline)) void build(void)
{
	char *a = malloc(64);
	into16 = a + 16;
	char *b = malloc(1000);
	middle = b + 500;
	char *c = malloc(72);
	past_end = c + 72;
	char **lost = malloc(24);
	char *d = malloc(80);
	lost[0] = d + 8;
	lost[1] = NULL;
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("interior pointers held\n");
	LEAK_END(argc, argv, 0);
}
