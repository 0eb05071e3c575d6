/* asp_pvalloc - pvalloc, which valgrind 3.19 refuses (it aborts the
 * program), so it is checked against the dump only: 3 calls, page-aligned
 * blocks, all freed. Exits 0. */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(void)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	void *a = pvalloc(100);
	void *b = pvalloc(2 * page);
	void *c = pvalloc(0);
	printf("aligned=%d\n", (uintptr_t)a % page == 0 && (uintptr_t)b % page == 0 &&
	    (c == NULL || (uintptr_t)c % page == 0));
	free(a);
	free(b);
	free(c);
	return 0;
}
