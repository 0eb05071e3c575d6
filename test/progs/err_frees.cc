// err_frees - every heap error valgrind's memcheck reports at a free, once
// each, then one three times from one place: a double free, a free inside
// a block, of a stack address, of a global, of a wild pointer, a new[]
// block freed by free, a malloc block by delete, a new block by delete[],
// a realloc of a freed block, malloc and calloc of a fishy size. Under
// valgrind (and the shim in track mode) the invalid frees are not carried
// out, so the program runs to the end: it prints "done" and exits 0.
// Natively, glibc aborts it at the first one.
// Leaves nothing allocated: 11 errors from 11 contexts, 13 errors in all.
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#include <cstdint>
#include <cstdio>
#include <cstdlib>

static int global_int;

// Out of line, so that each error has a frame of its own.
__attribute__((noinline)) static void release(void *p)
{
	free(p);
}

int main()
{
	char *a = (char *)malloc(10);
	free(a);
	free(a);				// double free

	char *b = (char *)malloc(20);
	free(b + 4);				// inside a live block

	int on_stack = 0;
	free(&on_stack);			// a stack address

	free(&global_int);			// a global

	free((void *)(uintptr_t)0x1000);	// a wild pointer

	int *c = new int[4];
	free(c);				// new[] by free

	int *d = (int *)malloc(8);
	delete d;				// malloc by delete

	int *e = new int;
	delete[] e;				// new by delete[]

	char *f = (char *)malloc(16);
	free(f);
	f = (char *)realloc(f, 32);		// realloc of a freed block

	volatile size_t huge = (size_t)-5;
	void *g = malloc(huge);			// fishy
	void *h = calloc(huge, 2);		// fishy nmemb

	for (int i = 0; i < 3; i++)
		release(b + 8);			// one context, three errors

	free(b);
	std::printf("done %d %d %d\n", f == nullptr, g == nullptr, h == nullptr);
	return on_stack;
}
