/* leak_cycle - cycles: an unreachable 2-cycle and 3-cycle (valgrind calls
 * one block of each "definitely lost" and the rest "indirectly lost"), a
 * lost block pointing into an unreachable 4-cycle, and a 3-cycle reachable
 * from a global. Exits 0. */
#include "leak_common.h"

struct ring {
	struct ring *next;
	char pad[24];
};

static struct ring *anchor;

static struct ring *mk_ring(int n, size_t extra)
{
	struct ring *first = malloc(sizeof *first + extra), *r = first;
	for (int i = 1; i < n; i++) {
		r->next = malloc(sizeof *r + extra);
		r = r->next;
	}
	r->next = first;
	return first;
}

static __attribute__((noinline)) void build(void)
{
	mk_ring(2, 0);
	mk_ring(3, 8);
	struct ring *tail = malloc(sizeof *tail + 100);
	tail->next = mk_ring(4, 16);
	anchor = mk_ring(3, 32);
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("cycles built\n");
	LEAK_END(argc, argv, 0);
}
