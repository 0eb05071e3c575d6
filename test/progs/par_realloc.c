/* par_realloc - realloc growth and shrink chains across glibc's mmap
 * threshold, interleaved chains, and reallocarray (including an overflow
 * that must fail with ENOMEM and leave the block alone). Exits 0 with two
 * blocks still allocated. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[2];

int main(void)
{
	char *p = NULL;
	size_t sz;
	unsigned long sum = 0;

	/* Doubling from 1 byte to 4 MiB: crosses the 128 KiB mmap threshold. */
	for (sz = 1; sz <= (4u << 20); sz *= 2) {
		p = realloc(p, sz);
		memset(p + sz / 2, (int)(sz & 0x7f), sz - sz / 2);
		sum += (unsigned char)p[sz / 2];
	}
	/* Back down again. */
	for (sz = 2u << 20; sz >= 3; sz /= 3) {
		p = realloc(p, sz);
		p[sz - 1] = 1;
	}
	free(p);

	/* Three interleaved chains growing by odd steps. */
	char *q[3] = { NULL, NULL, NULL };
	for (int i = 1; i <= 300; i++) {
		int k = i % 3;
		q[k] = realloc(q[k], (size_t)i * 13);
		q[k][0] = (char)i;
	}
	for (int k = 0; k < 3; k++)
		sum += (unsigned char)q[k][0];
	free(q[0]);
	free(q[1]);

	/* reallocarray: from NULL, growing, and an overflowing request. */
	long *v = reallocarray(NULL, 10, sizeof *v);
	for (int i = 0; i < 10; i++)
		v[i] = i;
	v = reallocarray(v, 1000, sizeof *v);
	v[999] = 7;
	volatile size_t quarter = SIZE_MAX / 4;
	errno = 0;
	long *bad = reallocarray(v, quarter, 8);
	int err = errno;
	v = reallocarray(v, 5, sizeof *v);
	sum += (unsigned long)(v[4] + v[0]);

	keep[0] = q[2];
	keep[1] = v;
	printf("sum=%lu overflow=%s errno=%s\n", sum, bad ? "non-null" : "null",
	    err == ENOMEM ? "ENOMEM" : "other");
	return 0;
}
