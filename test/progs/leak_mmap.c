/* leak_mmap - blocks above glibc's 128 KiB mmap threshold: one lost, one
 * reachable from a global, one reachable only through an interior pointer
 * ("possibly lost"), a big lost block holding the only pointers to small
 * blocks (indirect), and a small block kept only in a 1 MiB anonymous
 * mapping of the program's own. Exits 0. */
#include <sys/mman.h>
#include "leak_common.h"

static char *big_root, *big_inner;
static void **region;

static __attribute__((noinline)) void build(void)
{
	char *lost = malloc(200000);
	lost[0] = 1;
	big_root = malloc(300000);
	char *b = malloc(150000);
	big_inner = b + 70000;
	void **holder = malloc(140000);
	memset(holder, 0, 140000);
	for (int i = 0; i < 10; i++)
		holder[i * 1000] = malloc(10 + (size_t)i);
	region = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	region[100000] = malloc(99);
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("big blocks made\n");
	LEAK_END(argc, argv, 0);
}
