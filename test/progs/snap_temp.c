/* snap_temp - known temporary allocations, for t58. A temporary allocation,
 * as heaptrack defines it, is freed by the thread that made it before that
 * thread allocates anything else. In order:
 *   keep    10 blocks of 48 bytes, then a 64-byte one held to the end; the
 *           10 are freed after it: none is temporary
 *   temps   25 malloc(32), 5 calloc(1, 16) and 3 strdup, each freed at
 *           once: 33 temporary (25 malloc, 5 calloc, 3 strdup)
 *   pairs   4 times: a = malloc(24), b = malloc(40), free(a), free(b):
 *           b is temporary (nothing was allocated after it), a is not
 *   then the 64-byte block is freed: not temporary.
 * 52 allocations, 37 temporary (29 by malloc). Nothing is left. No stdio.
 * Exit status 0. */
#include <stdlib.h>
#include <string.h>

static void *held;

static void keep(void)
{
	void *v[10];

	for (int i = 0; i < 10; i++)
		v[i] = malloc(48);
	held = malloc(64);
	for (int i = 0; i < 10; i++)
		free(v[i]);
}

static void temps(void)
{
	for (int i = 0; i < 25; i++) {
		char *volatile p = malloc(32);

		p[0] = 1;
		free(p);
	}
	for (int i = 0; i < 5; i++)
		free(calloc(1, 16));
	for (int i = 0; i < 3; i++)
		free(strdup("a temporary string"));
}

static void pairs(void)
{
	for (int i = 0; i < 4; i++) {
		char *volatile a = malloc(24);
		char *volatile b = malloc(40);

		free(a);
		free(b);
	}
}

int main(void)
{
	keep();
	temps();
	pairs();
	free(held);
	return 0;
}
