/* par_basic - plain malloc, calloc, realloc and free, with the edge cases
 * valgrind counts in its own way: malloc(0) and calloc(0, n) are allocs of
 * 0 bytes, free(NULL) is no free, realloc(NULL, n) is an alloc only and
 * realloc(p, 0) a free only. Leaves 5 blocks allocated; exits 3. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[5];

int main(void)
{
	unsigned long sum = 0;
	void *volatile null = NULL;   /* gcc drops a literal free(NULL), even at -O0 */

	void *z = malloc(0);
	free(null);
	free(null);
	char *a = malloc(100);
	memset(a, 'a', 100);
	int *c = calloc(25, sizeof *c);
	void *c0 = calloc(0, 16);
	void *c1 = calloc(16, 0);
	char *r = realloc(null, 40);   /* a literal NULL becomes malloc(40) */
	memset(r, 'r', 40);
	r = realloc(r, 400);
	r = realloc(r, 10);
	r = realloc(r, 10);
	void *g = malloc(64);
	void *g0 = realloc(g, 0);
	void *n0 = realloc(null, 0);

	/* A deterministic churn of mixed sizes, freed in a shuffled order. */
	enum { N = 500 };
	static void *slot[N];
	for (int i = 0; i < N; i++) {
		size_t sz = (size_t)(i * 37 % 301);
		slot[i] = (i % 3 == 0) ? calloc(1, sz) : malloc(sz);
		if (sz)
			((char *)slot[i])[0] = (char)i;
	}
	for (int i = 0; i < N; i++) {
		int j = (i * 7 + 3) % N;
		if (slot[j] && j % 5 != 0) {
			if (j * 37 % 301 != 0)
				sum += ((unsigned char *)slot[j])[0];
			free(slot[j]);
			slot[j] = NULL;
		}
	}
	for (int i = 0; i < N; i += 5) {
		slot[i] = realloc(slot[i], (size_t)i + 1);
		free(slot[i]);
	}

	keep[0] = z;
	keep[1] = a;
	keep[2] = c;
	keep[3] = r;
	keep[4] = n0;
	free(c0);
	free(c1);
	printf("g0=%s sum=%lu a=%c r=%c\n", g0 ? "non-null" : "null", sum, a[99], r[9]);
	return 3;
}
