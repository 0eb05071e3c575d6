/* bench.h - helpers shared by the seed workloads in benches/.
 *
 * The workloads are built at -O2. GCC may delete a malloc/free pair whose
 * pointer never escapes, and a free(NULL) it can prove, so every pointer
 * passes through bench_launder() on its way to free(): an out-of-line
 * function whose inline asm makes the pointer escape and the compiler forget
 * its value.
 */
#ifndef BENCH_H
#define BENCH_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* Returns p unchanged; to the compiler, p escapes and comes back unknown. */
__attribute__((noinline, unused)) static void *bench_launder(void *p)
{
	__asm__ __volatile__("" : "+r"(p) : : "memory");
	return p;
}

/* argv[i] as a positive integer, or def when absent; exits 2 on a bad value. */
__attribute__((unused)) static long bench_arg(int argc, char **argv, int i,
					      long def)
{
	char *end;
	long v;

	if (i >= argc)
		return def;
	errno = 0;
	v = strtol(argv[i], &end, 10);
	if (errno || end == argv[i] || *end || v <= 0) {
		fprintf(stderr, "%s: error: bad number: %s\n", argv[0], argv[i]);
		exit(2);
	}
	return v;
}

#endif /* BENCH_H */
