/* leak_unwritten - a pointer in bytes the program never wrote. A 256-byte
 * holder stores, at offset 64, the start of a 40-byte target block, and is
 * freed; the next malloc(256) gets the same memory back from glibc, and the
 * program writes only its first 8 bytes. The target is then held by a
 * global that points 8 bytes into it. valgrind scans only bytes the
 * program wrote (the new block's offset 64 is undefined to it), so the
 * target is "possibly lost": 40 bytes in 1 blocks, and the new block
 * "still reachable". The in-process scan reads the old pointer left at
 * offset 64 and calls the target "still reachable" too. With the argument
 * "write" the program clears the new block's offset 64, and both say
 * "possibly lost". Prints one line, exits 0. */
#include "leak_common.h"

static void **kept;	/* the new block, reachable */
static char *into;	/* 8 bytes into the target */

static __attribute__((noinline)) void build(int write)
{
	char *target = malloc(40);
	void **holder = malloc(256);
	memset(holder, 0, 256);
	holder[8] = target;
	free(holder);
	kept = malloc(256);	/* the holder's memory again */
	kept[0] = NULL;
	if (write)
		kept[8] = NULL;
	into = target + 8;
}

int main(int argc, char **argv)
{
	build(argc > 1 && strcmp(argv[1], "write") == 0);
	scrub_stack();
	printf("a target held only from an unwritten word\n");
	fflush(stdout);
	return 0;
}
