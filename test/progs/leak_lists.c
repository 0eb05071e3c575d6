/* leak_lists - three long lost lists, each a definitely lost head with the
 * rest of its nodes indirectly lost behind it, built so that the leak
 * check's cliques form in three orders:
 *   backward  30,000 nodes of 48 bytes, each pointing at the one allocated
 *             before it: in address order every node leads a clique before
 *             the next one takes it (the order that once made the scan's
 *             cost grow with the square of the list's length);
 *   shuffled  20,000 nodes of 32 bytes, linked in a shuffled order;
 *   forward   10,000 nodes of 64 bytes, each pointing at the next one.
 *   definitely lost: 48 + 32 + 64 = 144 bytes in 3 blocks
 *   indirectly lost: 29,999 * 48 + 19,999 * 32 + 9,999 * 64
 *                    = 2,719,856 bytes in 59,997 blocks
 *   still reachable: stdout's buffer, when libc does not free it at exit
 * Exits 0. */
#include <stdint.h>

#include "leak_common.h"

struct link {
	struct link *next;
};

static __attribute__((noinline)) void backward(long n)
{
	struct link *prev = NULL;
	for (long i = 0; i < n; i++) {
		struct link *l = malloc(48);
		l->next = prev;
		memset(l + 1, 0, 48 - sizeof *l);
		prev = l;
	}
}

static __attribute__((noinline)) void shuffled(long n)
{
	/* The order, in a block of its own (freed before the end). */
	struct link **order = malloc((size_t)n * sizeof *order);
	for (long i = 0; i < n; i++) {
		order[i] = malloc(32);
		memset(order[i], 0, 32);
	}
	uint64_t x = 88172645463325252ULL;
	for (long i = n - 1; i > 0; i--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		long j = (long)(x % (uint64_t)(i + 1));
		struct link *t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (long i = 0; i + 1 < n; i++)
		order[i]->next = order[i + 1];
	memset(order, 0, (size_t)n * sizeof *order);
	free(order);
}

static __attribute__((noinline)) void forward(long n)
{
	struct link *head = malloc(64), *l = head;
	memset(head, 0, 64);
	for (long i = 1; i < n; i++) {
		l->next = malloc(64);
		l = l->next;
		memset(l, 0, 64);
	}
}

int main(int argc, char **argv)
{
	backward(30000);
	shuffled(20000);
	forward(10000);
	scrub_stack();
	printf("lists built\n");
	LEAK_END(argc, argv, 0);
}
