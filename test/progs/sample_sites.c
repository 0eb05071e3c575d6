/* sample_sites - allocation sites with known bytes, for ALLOCSPY_SAMPLE's
 * estimates. Each site is a function of its own (one stack each), called
 * from main in one thread; every block is freed at once except site_keep's
 * (all 400 stay live, reachable from a global: its estimated in-use
 * figures equal its estimated allocated ones) and site_leak's (the last 100
 * of its 1,000 are lost: 70,000 bytes definitely lost).
 *
 *   site        size (bytes)      count           bytes    share
 *   site_tiny             32  3,500,000     112,000,000   18.7%
 *   site_small         1,000    120,000     120,000,000   20.0%
 *   site_medium       20,000      6,000     120,000,000   20.0%
 *   site_large       300,000        400     120,000,000   20.0%
 *   site_huge      5,000,000         24     120,000,000   20.0%
 *   site_keep          5,000        400       2,000,000    0.3%
 *   site_leak            700      1,000         700,000    0.1%
 *   site_crumbs            8    100,000         800,000    0.1%
 *   site_odd             100     50,000       5,000,000    0.8%
 *
 * 600,500,000 bytes in 3,777,824 blocks in all (and stdout's buffer);
 * 500 blocks of 2,070,000 bytes are live at exit. Prints "ok", exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[400];

/* The block is written so that the compiler keeps every allocation. */
static void use(void *p, size_t size)
{
	if (p == NULL) {
		fputs("out of memory\n", stderr);
		exit(1);
	}
	memset(p, 1, size < 64 ? size : 64);
}

#define SITE(name, size, count)                                                 \
	static __attribute__((noinline)) void name(void)                       \
	{                                                                       \
		for (long i = 0; i < (count); i++) {                            \
			void *p = malloc(size);                                 \
			use(p, size);                                           \
			free(p);                                                \
		}                                                               \
	}

SITE(site_tiny, 32, 3500000)
SITE(site_small, 1000, 120000)
SITE(site_medium, 20000, 6000)
SITE(site_large, 300000, 400)
SITE(site_huge, 5000000, 24)
SITE(site_crumbs, 8, 100000)
SITE(site_odd, 100, 50000)

static __attribute__((noinline)) void site_keep(void)
{
	for (int i = 0; i < 400; i++) {
		keep[i] = malloc(5000);
		use(keep[i], 5000);
	}
}

static __attribute__((noinline)) void site_leak(void)
{
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(700);
		use(p, 700);
		if (i < 900)
			free(p);
	}
}

int main(void)
{
	site_tiny();
	site_keep();
	site_small();
	site_crumbs();
	site_medium();
	site_leak();
	site_large();
	site_odd();
	site_huge();
	puts("ok");
	return 0;
}
