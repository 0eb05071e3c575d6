/* sort.c - an in-place heapsort, for the report's tables. */
#include <string.h>

#include "sort.h"

static void swap(char *a, char *b, size_t size)
{
	char t[256];
	memcpy(t, a, size);
	memcpy(a, b, size);
	memcpy(b, t, size);
}

static void sift(char *b, size_t root, size_t n, size_t size,
                 int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t child = 2 * root + 1;
		if (child >= n)
			return;
		if (child + 1 < n && cmp(b + child * size, b + (child + 1) * size) < 0)
			child++;
		if (cmp(b + root * size, b + child * size) >= 0)
			return;
		swap(b + root * size, b + child * size, size);
		root = child;
	}
}

void asp__sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	char *b = base;
	if (n < 2 || size > 256)
		return;
	for (size_t i = n / 2; i-- > 0;)
		sift(b, i, n, size, cmp);
	for (size_t end = n - 1; end > 0; end--) {
		swap(b, b + end * size, size);
		sift(b, 0, end, size, cmp);
	}
}
