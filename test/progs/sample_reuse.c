/* sample_reuse - a sampled block's address handed out again, unsampled.
 * site_first's block (24 bytes: sampled at ALLOCSPY_SAMPLE=1) is freed after
 * site_empty's (0 bytes: never sampled) was allocated and freed, so it is
 * not a temporary; the allocator then hands its address out again to
 * site_empty, whose block is freed at once: a temporary of site_empty,
 * which no sampled stack may count. A few blocks from site_warm come first
 * (the thread's first allocation starts its sampling). Writes whether the
 * address came back (the case it is for) with write(2), as stdio's buffer
 * would be a block, and exits 0 either way: its status is the same under
 * valgrind, whose allocator never hands an address out again so soon. */
#include <stdlib.h>
#include <unistd.h>

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
	if (z == x)
		(void)!write(1, "address reused\n", 15);
	else
		(void)!write(1, "address not reused\n", 19);
	return 0;
}
