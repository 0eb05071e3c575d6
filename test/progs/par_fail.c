/* par_fail - allocations that fail and return NULL: calloc whose size
 * overflows, and malloc, calloc, memalign and posix_memalign of 16 TiB.
 * valgrind counts none of them. (valgrind does not set errno on some of
 * these failures, so errno is checked in asp_errno, without valgrind.)
 * Exits 2. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	/* volatile: the compiler must not see the sizes (it warns on them). */
	volatile size_t huge = (size_t)1 << 44, half = SIZE_MAX / 2, big = (size_t)1 << 33;
	int nulls = 0;

	void *ok = malloc(32);
	void *a = calloc(half, 4);
	nulls += a == NULL;
	void *b = calloc(big, big);
	nulls += b == NULL;
	void *c = malloc(huge);
	nulls += c == NULL;
	void *d = calloc(huge / 8, 8);
	nulls += d == NULL;
	void *e = memalign(4096, huge);
	nulls += e == NULL;
	void *f = NULL;
	int rc = posix_memalign(&f, 64, huge);
	nulls += f == NULL && rc == ENOMEM;
	free(ok);
	void *g = malloc(48);
	printf("nulls=%d g=%s\n", nulls, g ? "ok" : "null");
	return 2;
}
