/* sample_reuse - a sampled block's address handed out again, unsampled.
 * site_first's block (24 bytes: sampled at ALLOCSPY_SAMPLE=1) is freed after
 * site_empty's (0 bytes: never sampled) was allocated and freed, so it is
 * not a temporary; the allocator then hands its address out again to
 * site_empty, whose block is freed at once: a temporary of site_empty,
 * which no sampled stack may count. A few blocks from site_warm come first
 * (the thread's first allocation starts its sampling). Exits 0 when the address came back
 * (the case it is for), 3 when it did not. */
#include <stdlib.h>

static void *keep(void *p)
{
	__asm__ __volatile__("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void *site_first(void) { return keep(malloc(24)); }
__attribute__((noinline)) static void *site_empty(void) { return keep(malloc(0)); }
__attribute__((noinline)) static void site_warm(void) { free(keep(malloc(100))); }

int main(void)
{
	for (int i = 0; i < 4; i++)
		site_warm();
	void *x = site_first();
	void *y = site_empty();
	free(y);
	free(x);
	void *z = site_empty();
	free(z);
	return z == x ? 0 : 3;
}
