/* live.c - the live-block table.
 *
 * 64 shards, chosen by the high bits of a multiplicative hash of the
 * address; each is an open-addressing table with linear probing and
 * backward-shift deletion (no tombstones), grown by doubling at 3/4 load.
 * Memory comes from mmap, never from the program's heap. */
#include <errno.h>
#include <string.h>

#include "arena.h"
#include "glue.h"
#include "live.h"
#include "lock.h"

#define ASP_SHARD_BITS 6
#define ASP_SHARDS (1u << ASP_SHARD_BITS)
#define ASP_SHARD_MIN_SLOTS 512

struct shard {
	asp_lock_t lock;
	size_t count;
	size_t limit;		/* grow when count reaches it (3/4 load) */
	size_t mask;		/* slots - 1; 0 while unallocated */
	struct asp_live_entry *slots;
} __attribute__((aligned(ASP_CACHE_LINE)));

static struct shard g_shards[ASP_SHARDS];

static inline uint64_t hash(uintptr_t p)
{
	return (uint64_t)(p >> 4) * 0x9E3779B97F4A7C15ull;
}

static inline struct shard *shard_of(uint64_t h)
{
	return &g_shards[h >> (64 - ASP_SHARD_BITS)];
}

static inline size_t home(const struct shard *s, uint64_t h)
{
	return (size_t)(h >> 20) & s->mask;
}

static int grow(struct shard *s)
{
	size_t slots = s->mask ? (s->mask + 1) * 2 : ASP_SHARD_MIN_SLOTS;
	struct asp_live_entry *n = asp__pages_alloc(slots * sizeof *n);
	if (n == NULL)
		return -ENOMEM;
	struct asp_live_entry *old = s->slots;
	size_t old_slots = s->mask ? s->mask + 1 : 0;
	s->slots = n;
	s->mask = slots - 1;
	s->limit = slots / 4 * 3;
	for (size_t i = 0; i < old_slots; i++) {
		if (old[i].ptr == 0)
			continue;
		size_t j = home(s, hash(old[i].ptr));
		while (n[j].ptr != 0)
			j = (j + 1) & s->mask;
		n[j] = old[i];
	}
	if (old != NULL)
		asp__pages_free(old, old_slots * sizeof *old);
	return 0;
}

int asp__live_insert(uintptr_t ptr, uint64_t size, unsigned fn, uintptr_t site)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	asp_lock(&s->lock);
	if (ASP_UNLIKELY(s->count >= s->limit)) {
		if (grow(s) != 0) {
			asp_unlock(&s->lock);
			return -ENOMEM;
		}
	}
	size_t i = home(s, h);
	while (s->slots[i].ptr != 0 && s->slots[i].ptr != ptr)
		i = (i + 1) & s->mask;
	/* The same address again means it was freed behind the shim's back. */
	s->count += s->slots[i].ptr != ptr;
	s->slots[i] = (struct asp_live_entry){ ptr, size, fn, site };
	asp_unlock(&s->lock);
	return 0;
}

/* The slot holding ptr, or -1. Lock held. */
static ptrdiff_t lookup(const struct shard *s, uint64_t h, uintptr_t ptr)
{
	if (s->mask == 0)
		return -1;
	for (size_t i = home(s, h);; i = (i + 1) & s->mask) {
		if (s->slots[i].ptr == ptr)
			return (ptrdiff_t)i;
		if (s->slots[i].ptr == 0)
			return -1;
	}
}

int asp__live_remove(uintptr_t ptr, struct asp_live_entry *out)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	asp_lock(&s->lock);
	ptrdiff_t at = lookup(s, h, ptr);
	if (at < 0) {
		asp_unlock(&s->lock);
		return 0;
	}
	size_t i = (size_t)at;
	*out = s->slots[i];
	s->count--;
	/* Backward shift: pull later entries of the probe run into the hole
	 * unless their home lies cyclically in (i, j]. */
	for (size_t j = (i + 1) & s->mask; s->slots[j].ptr != 0; j = (j + 1) & s->mask) {
		size_t k = home(s, hash(s->slots[j].ptr));
		int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (stays)
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i].ptr = 0;
	asp_unlock(&s->lock);
	return 1;
}

int asp__live_find(uintptr_t ptr, struct asp_live_entry *out)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	asp_lock(&s->lock);
	ptrdiff_t at = lookup(s, h, ptr);
	if (at >= 0)
		*out = s->slots[at];
	asp_unlock(&s->lock);
	return at >= 0;
}

void asp__live_totals(uint64_t *blocks, uint64_t *bytes)
{
	*blocks = *bytes = 0;
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct shard *s = &g_shards[i];
		asp_lock(&s->lock);
		*blocks += s->count;
		for (size_t j = 0; s->mask && j <= s->mask; j++)
			*bytes += s->slots[j].ptr ? s->slots[j].size : 0;
		asp_unlock(&s->lock);
	}
}

size_t asp__live_snapshot(struct asp_live_entry *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct shard *s = &g_shards[i];
		asp_lock(&s->lock);
		for (size_t j = 0; s->mask && j <= s->mask; j++) {
			if (s->slots[j].ptr == 0)
				continue;
			if (n < max)
				out[n] = s->slots[j];
			n++;
		}
		asp_unlock(&s->lock);
	}
	return n;
}

void asp__live_atfork_prepare(void)
{
	for (size_t i = 0; i < ASP_SHARDS; i++)
		asp_lock(&g_shards[i].lock);
}

void asp__live_atfork_parent(void)
{
	for (size_t i = ASP_SHARDS; i-- > 0;)
		asp_unlock(&g_shards[i].lock);
}

void asp__live_atfork_child(void)
{
	for (size_t i = 0; i < ASP_SHARDS; i++)
		asp_lock_reset(&g_shards[i].lock);
}
