/* leak_graph SEED - a random graph of 3,000 blocks from four allocation
 * sites: each block points at up to two others (one pointer in five into
 * the block, 8 bytes past its start), and a few in a thousand are held by
 * a global array, some of those by an interior pointer too. What is lost
 * falls into cliques of many shapes, whose leaders' loss records take
 * their indirectly lost blocks (valgrind's "(direct, indirect)" bytes);
 * the records of every kind are valgrind's to compare with. SEED (a
 * number, default 1) picks the graph. Exits 0. */
#include <stdint.h>

#include "leak_common.h"

#define NBLOCKS 3000

void **held;

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Four sites, so that the cliques' leaders fall in different records. */
static __attribute__((noinline)) void *one(uint64_t r, size_t size)
{
	switch (r % 4) {
	case 0:
		return malloc(size);
	case 1:
		return calloc(1, size);
	case 2:
		return malloc(size + 1);
	default:
		return realloc(NULL, size);
	}
}

static __attribute__((noinline)) void build(uint64_t x)
{
	void **b = malloc(NBLOCKS * sizeof *b);
	for (int i = 0; i < NBLOCKS; i++) {
		size_t size = 24 + (next(&x) % 12) * 8;
		b[i] = one(next(&x), size);
		memset(b[i], 0, size);
	}
	for (int i = 0; i < NBLOCKS; i++) {
		int k = (int)(next(&x) % 3);
		for (int j = 0; j < k; j++) {
			uint64_t t = next(&x) % NBLOCKS;
			((void **)b[i])[j + 1] = (char *)b[t] + (next(&x) % 5 == 0 ? 8 : 0);
		}
	}
	held = calloc(NBLOCKS, sizeof *held);
	for (int i = 0; i < NBLOCKS; i++)
		if (next(&x) % 1000 < 5)
			held[i] = (char *)b[i] + (next(&x) % 4 == 0 ? 8 : 0);
	memset(b, 0, NBLOCKS * sizeof *b);
	free(b);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 1;
	build(seed * 2654435761u + 1);
	scrub_stack();
	printf("graph built\n");
	fflush(stdout);
	return 0;
}
