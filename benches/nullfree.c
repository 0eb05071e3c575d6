/* nullfree - seed 002: N calls of free(p), where p is NULL PCT percent of
 * the time and a fresh malloc(1) otherwise.
 *
 * usage: nullfree PCT [N]   (PCT 0..100, e.g. 2, 50 or 98; N 10000000)
 * The seed (LKML, "is if (p) kfree(p) cheaper?") used 2%, 50% and 98%.
 * Iteration j gets NULL when (j * PCT) % 100 < PCT, which spreads the NULLs
 * evenly: 50 alternates, 2 is every 50th, 98 all but every 50th.
 */
#include "bench.h"

int main(int argc, char **argv)
{
	long pct, n;

	if (argc < 2) {
		fprintf(stderr, "usage: nullfree PCT [N]\n");
		return 2;
	}
	pct = strtol(argv[1], NULL, 10);
	if (pct < 0 || pct > 100) {
		fprintf(stderr, "nullfree: error: PCT must be 0..100\n");
		return 2;
	}
	n = bench_arg(argc, argv, 2, 10000000);
	for (long j = 0; j < n; j++) {
		void *p = (j * pct) % 100 < pct ? NULL : malloc(1);

		free(bench_launder(p));
	}
	return 0;
}
