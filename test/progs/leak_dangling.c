/* leak_dangling - a dangling pointer the program keeps and never follows.
 * A global table holds a 64-byte block's address; the block is freed and
 * the entry left as it was; the next malloc(64) gets the same memory back
 * from glibc at once, and the program drops its only pointer to that new
 * block. valgrind keeps freed memory out of use for a while (its
 * --freelist-vol), so there the new block lies elsewhere and is
 * "definitely lost": 64 bytes in 1 blocks. Here the table's old entry
 * points at the new block's start: "still reachable". With the argument
 * "clear" the program clears the entry when it frees the block, and both
 * say "definitely lost". Prints one line, exits 0. */
#include "leak_common.h"

static void *table[4];

static __attribute__((noinline)) void build(int clear)
{
	table[0] = malloc(64);
	memset(table[0], 1, 64);
	free(table[0]);
	if (clear)
		table[0] = NULL;
	char *again = malloc(64);	/* the freed memory again, under glibc */
	memset(again, 2, 64);
	__asm__ volatile("" : : "r"(again) : "memory");
}

int main(int argc, char **argv)
{
	build(argc > 1 && strcmp(argv[1], "clear") == 0);
	scrub_stack();
	printf("a block whose address a dangling pointer still holds\n");
	fflush(stdout);
	return 0;
}
