/* asp_errno - the errno and return-value semantics the shim must keep:
 * ENOMEM from failing malloc, calloc, realloc and reallocarray, EINVAL
 * returned (not set) by posix_memalign, and free leaving errno alone.
 * Run natively and under the shim (valgrind does not set errno on some
 * failures): the two outputs must be equal. Exits 0. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void show(const char *what, int isnull, int err)
{
	printf("%-28s %s errno=%s\n", what, isnull ? "NULL" : "ptr ",
	    err == ENOMEM ? "ENOMEM" : err == 0 ? "0" : err == 1234 ? "1234" : "other");
}

int main(void)
{
	volatile size_t huge = (size_t)1 << 44, half = SIZE_MAX / 2;
	void *p;

	errno = 0;
	p = malloc(huge);
	show("malloc(16 TiB)", p == NULL, errno);
	errno = 0;
	p = calloc(half, 4);
	show("calloc(overflow)", p == NULL, errno);
	errno = 0;
	p = calloc(huge / 16, 16);
	show("calloc(16 TiB)", p == NULL, errno);
	char *q = malloc(10);
	strcpy(q, "unchanged");
	errno = 0;
	p = realloc(q, huge);
	show("realloc(q, 16 TiB)", p == NULL, errno);
	errno = 0;
	p = reallocarray(q, half, 4);
	show("reallocarray(overflow)", p == NULL, errno);
	printf("q still holds: %s\n", q);

	errno = 1234;
	free(q);
	show("free(q)", 0, errno);
	void *volatile null = NULL;   /* gcc drops a literal free(NULL) */
	errno = 1234;
	free(null);
	show("free(NULL)", 0, errno);

	void *a = (void *)1;
	errno = 0;
	int rc = posix_memalign(&a, 24, 64);
	printf("posix_memalign(24): rc=%s errno=%d untouched=%d\n",
	    rc == EINVAL ? "EINVAL" : "other", errno, a == (void *)1);
	errno = 0;
	rc = posix_memalign(&a, 64, huge);
	printf("posix_memalign(16 TiB): rc=%s errno=%d untouched=%d\n",
	    rc == ENOMEM ? "ENOMEM" : "other", errno, a == (void *)1);

	errno = 1234;
	p = malloc(100);
	show("malloc(100) keeps errno", p == NULL, errno);
	free(p);
	return 0;
}
