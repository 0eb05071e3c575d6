/* vgalloc.c - for the tests: glibc's allocator made to behave as valgrind's
 * does in two of the ways that liballocspy(7) lists among the differences
 * from valgrind. Preloaded after the shim (LD_PRELOAD=liballocspy.so:
 * vgalloc.so), it is the allocator the shim forwards to: realloc always
 * moves a block, as valgrind's does, and a new block holds zeros, never
 * the bytes of memory freed before (valgrind's leak check reads no byte
 * the program did not write). With it, the shim's LEAK SUMMARY of
 * test/progs/leak_realloc_stale, leak_unwritten and mawk equals
 * valgrind's. (lib.sh vgalloc_preload builds it.) */
#include <malloc.h>
#include <stddef.h>
#include <string.h>

extern void *__libc_calloc(size_t n, size_t size);
extern void __libc_free(void *p);

void *malloc(size_t size)
{
	return __libc_calloc(1, size);
}

void *realloc(void *p, size_t size)
{
	if (p == NULL)
		return __libc_calloc(1, size);
	if (size == 0) {
		__libc_free(p);
		return NULL;
	}
	void *q = __libc_calloc(1, size);
	if (q == NULL)
		return NULL;
	size_t old = malloc_usable_size(p);
	memcpy(q, p, old < size ? old : size);
	__libc_free(p);
	return q;
}
