/* leak_roots - where a pointer can be the only reference to a block, each
 * root holding a block of its own size: an initialised global (.data),
 * a zero global (.bss), a function-local static, a __thread variable of
 * the main thread, an anonymous mmap'd page, a malloc'd block reachable
 * from a global (which makes its target reachable too), and the
 * environment (setenv). A pointer kept only XOR'ed with a key is hidden
 * from any scanner: "definitely lost". Exits 0. */
#include <stdint.h>
#include <sys/mman.h>
#include "leak_common.h"

static void *data_root = (void *)1;
static void *bss_root;
static __thread void *tls_root;
static void **mmap_root;
static uintptr_t hidden;
static void **holder;

static __attribute__((noinline)) void build(void)
{
	static void *static_local;

	data_root = malloc(11);
	bss_root = malloc(22);
	static_local = malloc(33);
	tls_root = malloc(44);
	mmap_root = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mmap_root[7] = malloc(55);
	holder = malloc(2 * sizeof *holder);
	holder[0] = malloc(66);
	holder[1] = NULL;
	hidden = (uintptr_t)malloc(77) ^ (uintptr_t)0x5a5a5a5a5a5a5a5aull;
	setenv("ALLOCSPY_LEAK_ROOTS", "a value set by the program", 1);
	(void)static_local;
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("roots set\n");
	LEAK_END(argc, argv, 0);
}
