/* stack_many - allocations from N distinct stacks (argument 1, 100000 by
 * default; at most 10^DEPTH), R from each (argument 2, 1 by default), for
 * the per-stack totals of the dump and its truncated stacks (t48).
 *
 * Path p (0 <= p < N) goes down DEPTH levels of one recursive function,
 * each level through one of 10 call sites chosen by a decimal digit of p,
 * and allocates R blocks of 16 + p % 7 bytes at the bottom, one after
 * another from one call site: N stacks, each of 1 + 1 + DEPTH program
 * frames (the allocation in leaf, the call of leaf, the DEPTH levels)
 * above main's. The last block of every third path (p % 3 == 0) is kept;
 * the others are freed at once. No stdio before the end:
 * libc allocates nothing of its own until then. Prints the kept blocks and
 * bytes; exit status 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH 5

static void *kept[100000];
static size_t nkept, kept_bytes;

static unsigned long repeat = 1;

static void __attribute__((noinline)) leaf(unsigned long p)
{
	size_t size = 16 + p % 7;

	for (unsigned long r = 0; r < repeat; r++) {
		char *b = malloc(size);

		if (b == NULL)
			exit(1);
		memset(b, (int)p, size);
		if (r + 1 == repeat && p % 3 == 0 && nkept < sizeof kept / sizeof kept[0]) {
			kept[nkept++] = b;
			kept_bytes += size;
		} else {
			free(b);
		}
	}
}

static void __attribute__((noinline)) level(int d, unsigned long path, unsigned long p)
{
	if (d == 0) {
		leaf(p);
		return;
	}
	/* One call site per digit: ten return addresses at each level. */
	switch (path % 10) {
	case 0: level(d - 1, path / 10, p); break;
	case 1: level(d - 1, path / 10, p); break;
	case 2: level(d - 1, path / 10, p); break;
	case 3: level(d - 1, path / 10, p); break;
	case 4: level(d - 1, path / 10, p); break;
	case 5: level(d - 1, path / 10, p); break;
	case 6: level(d - 1, path / 10, p); break;
	case 7: level(d - 1, path / 10, p); break;
	case 8: level(d - 1, path / 10, p); break;
	default: level(d - 1, path / 10, p); break;
	}
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 100000;

	repeat = argc > 2 ? strtoul(argv[2], NULL, 10) : 1;

	if (n > 100000)
		n = 100000;
	for (unsigned long p = 0; p < n; p++)
		level(DEPTH, p, p);
	printf("%zu blocks, %zu bytes kept\n", nkept, kept_bytes);
	return 0;
}
