/* leak_tail - pointers into the last 8 bytes of a block's requested size,
 * where glibc's next chunk header lies for some sizes: a global points to
 * offset 96 of a 100-byte block, another to offset 120 of a 128-byte block,
 * and another to the last byte of a 24-byte block. valgrind knows no chunk
 * headers: all three are "possibly lost". Exits 0. */
#include "leak_common.h"

static char *t100, *t128, *t24;

static __attribute__((noinline)) void build(void)
{
	char *a = malloc(100);
	t100 = a + 96;
	char *b = malloc(128);
	t128 = b + 120;
	char *c = malloc(24);
	t24 = c + 23;
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("tail pointers held\n");
	LEAK_END(argc, argv, 0);
}
