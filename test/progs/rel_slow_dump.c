/* rel_slow_dump - keeps 60,000 blocks from 4 call sites live, so that a
 * dump with stacks takes some milliseconds, then makes 20,000 more
 * allocations and frees, and prints "done". Under ALLOCSPY_INTERVAL_MS=1
 * each periodic dump takes longer than half the interval: the program
 * must still get its share of the time and end. */
#include <stdio.h>
#include <stdlib.h>

#define LIVE 60000

static void *keep[LIVE];

static __attribute__((noinline)) void *site_a(size_t n) { return malloc(n); }
static __attribute__((noinline)) void *site_b(size_t n) { return malloc(n + 8); }
static __attribute__((noinline)) void *site_c(size_t n) { return calloc(1, n); }
static __attribute__((noinline)) void *site_d(size_t n) { return malloc(n + 16); }

int main(void)
{
	void *(*const sites[4])(size_t) = { site_a, site_b, site_c, site_d };
	for (int i = 0; i < LIVE; i++)
		if ((keep[i] = sites[i % 4](32)) == NULL)
			return 1;
	for (int i = 0; i < 20000; i++)
		free(sites[i % 4](64));
	for (int i = 0; i < LIVE; i++)
		free(keep[i]);
	puts("done");
	return 0;
}
