/* gitalloc - seed 004: libgit2's allocator benchmark, COUNT x malloc/free of
 * one size class.
 *
 * usage: gitalloc small|medium|big [COUNT]
 *   small   100 B      (default COUNT 20,000,000)
 *   medium  100 KiB    (default COUNT 8,000,000: below the mmap threshold)
 *   big     100 MiB    (default COUNT 20,000: each one an mmap/munmap)
 * The seed ran 100M/100M/1M and took the best of 10; the defaults here are
 * scaled to about 0.2-1 s each on a small machine. The blocks are not
 * touched, as in the seed: it is the allocator's cost that is measured.
 */
#include <string.h>

#include "bench.h"

int main(int argc, char **argv)
{
	size_t size;
	long count;

	if (argc < 2)
		goto usage;
	if (!strcmp(argv[1], "small")) {
		size = 100;
		count = 20000000;
	} else if (!strcmp(argv[1], "medium")) {
		size = 100 * 1024;
		count = 8000000;
	} else if (!strcmp(argv[1], "big")) {
		size = 100 * 1024 * 1024;
		count = 20000;
	} else {
		goto usage;
	}
	count = bench_arg(argc, argv, 2, count);
	for (long i = 0; i < count; i++) {
		void *p = bench_launder(malloc(size));

		if (!p)
			abort();
		free(p);
	}
	return 0;
usage:
	fprintf(stderr, "usage: gitalloc small|medium|big [COUNT]\n");
	return 2;
}
