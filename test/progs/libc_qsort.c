/* libc_qsort - qsort of 3000 strdup'd strings (large enough that glibc's
 * merge sort mallocs a buffer), qsort of a small array (no buffer),
 * bsearch, and tsearch/tdelete/tdestroy. Exits 0. */
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N = 3000 };

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(a, b);
}

int main(void)
{
	char **v = malloc(N * sizeof *v);
	unsigned x = 12345;
	for (int i = 0; i < N; i++) {
		char tmp[32];
		x = x * 1103515245u + 12345u;
		snprintf(tmp, sizeof tmp, "k%08x-%d", x, i);
		v[i] = strdup(tmp);
	}
	qsort(v, N, sizeof *v, cmp_str);
	int sorted = 1;
	for (int i = 1; i < N; i++)
		sorted &= strcmp(v[i - 1], v[i]) < 0;
	char *key = v[N / 3];
	char **hit = bsearch(&key, v, N, sizeof *v, cmp_str);

	int small[20];
	for (int i = 0; i < 20; i++)
		small[i] = (i * 7919) % 23;
	qsort(small, 20, sizeof small[0], cmp_int);

	void *root = NULL;
	for (int i = 0; i < N; i += 3)
		tsearch(v[i], &root, cmp_key);
	int found = 0;
	for (int i = 0; i < N; i += 2)
		found += tfind(v[i], &root, cmp_key) != NULL;
	for (int i = 0; i < N; i += 6)
		tdelete(v[i], &root, cmp_key);
	tdestroy(root, free);   /* frees the strings still in the tree */
	for (int i = 0; i < N; i++)
		if (i % 3 != 0 || i % 6 == 0)
			free(v[i]);
	printf("sorted=%d hit=%d small=%d..%d found=%d\n", sorted, hit == &v[N / 3],
	    small[0], small[19], found);
	free(v);
	return 0;
}
