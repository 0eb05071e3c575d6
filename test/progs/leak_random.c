/* leak_random - a heap of 20,000 blocks of random sizes (a tenth of them 4
 * to 24 KiB, spanning pages; the rest 8 to 207 bytes, dozens to a page),
 * held by a global array, then pulled apart at random, by a fixed seed:
 * some entries cleared (their blocks lost unless another block points at
 * them), some moved 1 to 7 bytes into their block (possibly lost), some
 * blocks made to point at another's start or 3 bytes into it. Every kind
 * of pointer the leak scan looks up, over pages full of block starts; the
 * figures are valgrind's to compare with. Exits 0. */
#include <stdint.h>

#include "leak_common.h"

#define NBLOCKS 20000

void *held[NBLOCKS];

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static __attribute__((noinline)) void build(void)
{
	uint64_t x = 88172645463325252ULL;
	for (int i = 0; i < NBLOCKS; i++) {
		uint64_t r = next(&x);
		held[i] = calloc(1, r % 10 == 0 ? 4096 + r % 20000 : 8 + r % 200);
	}
	for (int i = 0; i < NBLOCKS; i++) {
		uint64_t r = next(&x);
		char *other = held[(r >> 8) % NBLOCKS];
		switch (r % 5) {
		case 0:
			held[i] = NULL;
			break;
		case 1:
			held[i] = (char *)held[i] + (r >> 8) % 8;
			break;
		case 2:
			if (other != NULL)
				*(void **)held[i] = other;
			break;
		case 3:
			if (other != NULL)
				*(void **)held[i] = other + 3;
			break;
		default:
			break;
		}
	}
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("a heap pulled apart\n");
	LEAK_END(argc, argv, 0);
}
