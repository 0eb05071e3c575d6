/* leak_realloc_stale - the one leak shape on which the shim and valgrind
 * differ by design. valgrind's realloc always moves a block; glibc's
 * shrinks a block where it is (and often grows it there too). The program
 * builds a buffer of 4096 bytes, keeps a copy of its address in a second
 * global that it never updates (as mawk keeps its code buffer's old base),
 * shrinks the buffer to 216 bytes with realloc, and then holds only an
 * interior pointer to it. Natively and under the shim the block did not
 * move, so the stale copy points at its start: "still reachable", 216
 * bytes in 1 blocks. Under valgrind the stale copy points at the freed old
 * block, and the interior pointer is all that is left: "possibly lost",
 * 216 bytes in 1 blocks. With the argument "clear" the program clears the
 * stale copy, and both say "possibly lost". Prints one line, exits 0. */
#include "leak_common.h"

static char *stale;	/* the buffer's address before realloc, never updated */
static char *cursor;	/* where the program is in the buffer: an interior pointer */

static __attribute__((noinline)) void build(int clear)
{
	char *buf = malloc(4096);
	memset(buf, 'x', 4096);
	stale = buf;
	buf = realloc(buf, 216);
	cursor = buf + 100;
	if (clear)
		stale = NULL;
}

int main(int argc, char **argv)
{
	build(argc > 1 && strcmp(argv[1], "clear") == 0);
	scrub_stack();
	printf("a shrunk buffer, held by an interior pointer\n");
	fflush(stdout);
	return 0;
}
