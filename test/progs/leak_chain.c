/* leak_chain - indirect losses: a lost list head with 5 nodes behind it,
 * a lost binary tree of depth 3, and a reachable list hanging off a global.
 *   definitely lost: head 48 + tree root 32
 *   indirectly lost: 5 * 48 + 6 * 32
 *   still reachable: 4 * 64 + stdout's buffer
 * Exits 0. */
#include "leak_common.h"

struct node {
	struct node *next;
	char pad[40];
};

struct tree {
	struct tree *l, *r;
	char pad[16];
};

static struct { struct node *head; } reach;

static struct tree *mk_tree(int depth)
{
	struct tree *t = calloc(1, sizeof *t);
	if (depth > 1) {
		t->l = mk_tree(depth - 1);
		t->r = mk_tree(depth - 1);
	}
	return t;
}

static __attribute__((noinline)) void build(void)
{
	struct node *head = calloc(1, sizeof *head), *n = head;
	for (int i = 0; i < 5; i++) {
		n->next = calloc(1, sizeof *n);
		n = n->next;
	}
	mk_tree(3);

	struct node *r = malloc(64);
	reach.head = r;
	for (int i = 0; i < 3; i++) {
		r->next = malloc(64);
		r = r->next;
	}
	r->next = NULL;
}

int main(int argc, char **argv)
{
	build();
	scrub_stack();
	printf("chains built\n");
	LEAK_END(argc, argv, 0);
}
