/* strtab - strings numbered in the order of first use, found again by an
 * open-addressing hash table that doubles when half full. */
#include "strtab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"

/* FNV-1a folds the bytes into a word; asp_hash spreads that word over the
 * top bits, which a table of 2^bits slots takes, as the shim's do. */
static size_t slot_of(const char *s, unsigned bits)
{
	uint64_t h = 14695981039346656037u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211u;
	return (size_t)(asp_hash(h) >> (64 - bits));
}

static int grow(asp_strtab_t *t)
{
	unsigned bits = t->bits ? t->bits + 1 : 8;
	size_t mask = ((size_t)1 << bits) - 1;
	size_t *slot = calloc(mask + 1, sizeof *slot);

	if (!slot)
		return -1;
	for (size_t i = 0; i < t->n; i++) {
		size_t h = slot_of(t->v[i], bits);

		while (slot[h])
			h = (h + 1) & mask;
		slot[h] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->bits = bits;
	return 0;
}

size_t asp_strtab_intern(asp_strtab_t *t, const char *s)
{
	size_t mask, h;

	if ((!t->slot || t->n * 2 >= ((size_t)1 << t->bits)) && grow(t) < 0)
		return SIZE_MAX;
	mask = ((size_t)1 << t->bits) - 1;
	for (h = slot_of(s, t->bits); t->slot[h]; h = (h + 1) & mask)
		if (strcmp(t->v[t->slot[h] - 1], s) == 0)
			return t->slot[h] - 1;
	if (t->n == t->cap) {
		size_t cap = t->cap * 2 + 64;
		char **v = realloc(t->v, cap * sizeof *v);

		if (!v)
			return SIZE_MAX;
		t->v = v;
		t->cap = cap;
	}
	/* A copy: callers pass names made up in their own buffers. */
	t->v[t->n] = strdup(s);
	if (!t->v[t->n])
		return SIZE_MAX;
	t->slot[h] = ++t->n;
	return t->n - 1;
}

void asp_strtab_free(asp_strtab_t *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i]);
	free(t->v);
	free(t->slot);
	*t = (asp_strtab_t){ 0 };
}
