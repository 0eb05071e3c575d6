/* live.c - the live-block table.
 *
 * 64 shards, chosen by the high bits of a multiplicative hash of the
 * address; each is an open-addressing table with linear probing and
 * backward-shift deletion (no tombstones), grown by doubling at 3/4 load.
 * Memory comes from mmap, never from the program's heap. */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "arena.h"
#include "glue.h"
#include "live.h"

#define ASP_SHARD_BITS 6
#define ASP_SHARDS (1u << ASP_SHARD_BITS)
#define ASP_SHARD_MIN_SLOTS 128	/* 3 KiB: one page per shard to start */
_Static_assert(ASP_SHARD_MIN_SLOTS * sizeof(struct asp_live_entry) <= 4096, "first array fits a page");

/* A shard's lock remembers its holder (the address of the holder's
 * in-flight flag, one per thread), so that a signal handler that allocates
 * while its thread holds the same shard gives up on tracking that one
 * block instead of waiting for itself forever. */
struct shard {
	uintptr_t holder;	/* 0: free; else the holder's record */
	size_t count;
	size_t limit;		/* grow when count reaches it (3/4 load) */
	size_t mask;		/* slots - 1; 0 while unallocated */
	struct asp_live_entry *slots;
} __attribute__((aligned(ASP_CACHE_LINE)));

static struct shard g_shards[ASP_SHARDS];

/* 0 with the shard held, or -EDEADLK when self already holds it. */
static inline int shard_lock(struct shard *s, uintptr_t self)
{
	uintptr_t free_ = 0;
	self |= !self;		/* no record: an anonymous holder, 1 */
	if (ASP_LIKELY(__atomic_compare_exchange_n(&s->holder, &free_, self, 0, __ATOMIC_ACQUIRE,
	                                           __ATOMIC_RELAXED)))
		return 0;
	if (self != 1 && free_ == self)
		return -EDEADLK;
	for (unsigned spins = 0;; spins++) {
		while (asp_atomic_load_relaxed(&s->holder) != 0) {
			if (spins++ < 64)
				asp_cpu_relax();
			else
				sched_yield();
		}
		free_ = 0;
		if (__atomic_compare_exchange_n(&s->holder, &free_, self, 0, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return 0;
	}
}

static inline void shard_unlock(struct shard *s)
{
	__atomic_store_n(&s->holder, 0, __ATOMIC_RELEASE);
}

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

/* The first array of every shard: one page each, out of one mapping made
 * on the first insert (one system call, not 64). */
static char *g_first_pages;

static struct asp_live_entry *first_array(const struct shard *s)
{
	char *pages = asp_atomic_load_acquire(&g_first_pages);
	if (pages == NULL) {
		char *mine = asp__pages_alloc(ASP_SHARDS * 4096);
		if (mine == NULL)
			return NULL;
		if (__atomic_compare_exchange_n(&g_first_pages, &pages, mine, 0, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			pages = mine;
		else
			asp__pages_free(mine, ASP_SHARDS * 4096);
	}
	return (struct asp_live_entry *)(pages + (size_t)(s - g_shards) * 4096);
}

static int grow(struct shard *s)
{
	size_t slots = s->mask ? (s->mask + 1) * 2 : ASP_SHARD_MIN_SLOTS;
	struct asp_live_entry *n = s->mask ? asp__pages_alloc(slots * sizeof *n) : first_array(s);
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
		asp__pages_free(old, old_slots == ASP_SHARD_MIN_SLOTS ? 4096 : old_slots * sizeof *old);
	return 0;
}

int asp__live_insert(int *inflight, uintptr_t ptr, uint64_t size, unsigned fn, uintptr_t site)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	if (ASP_UNLIKELY(shard_lock(s, (uintptr_t)inflight) != 0))
		return -EDEADLK;
	if (inflight)
		*inflight = 1;
	if (ASP_UNLIKELY(s->count >= s->limit)) {
		if (grow(s) != 0) {
			shard_unlock(s);
			return -ENOMEM;
		}
	}
	size_t i = home(s, h);
	while (s->slots[i].ptr != 0 && s->slots[i].ptr != ptr)
		i = (i + 1) & s->mask;
	/* The same address again means it was freed behind the shim's back. */
	s->count += s->slots[i].ptr != ptr;
	s->slots[i] = (struct asp_live_entry){ ptr, size, fn, site };
	shard_unlock(s);
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

int asp__live_remove(int *inflight, uintptr_t ptr, struct asp_live_entry *out)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	if (ASP_UNLIKELY(shard_lock(s, (uintptr_t)inflight) != 0))
		return -EDEADLK;
	if (inflight)
		*inflight = 1;
	ptrdiff_t at = lookup(s, h, ptr);
	if (at < 0) {
		shard_unlock(s);
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
	shard_unlock(s);
	return 1;
}

int asp__live_find(uintptr_t ptr, struct asp_live_entry *out)
{
	uint64_t h = hash(ptr);
	struct shard *s = shard_of(h);
	shard_lock(s, 1);
	ptrdiff_t at = lookup(s, h, ptr);
	if (at >= 0)
		*out = s->slots[at];
	shard_unlock(s);
	return at >= 0;
}

void asp__live_totals(uint64_t *blocks, uint64_t *bytes)
{
	*blocks = *bytes = 0;
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct shard *s = &g_shards[i];
		shard_lock(s, 1);
		*blocks += s->count;
		for (size_t j = 0; s->mask && j <= s->mask; j++)
			*bytes += s->slots[j].ptr ? s->slots[j].size : 0;
		shard_unlock(s);
	}
}

size_t asp__live_snapshot(struct asp_live_entry *out, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct shard *s = &g_shards[i];
		shard_lock(s, 1);
		for (size_t j = 0; s->mask && j <= s->mask; j++) {
			if (s->slots[j].ptr == 0)
				continue;
			if (n < max)
				out[n] = s->slots[j];
			n++;
		}
		shard_unlock(s);
	}
	return n;
}

void asp__live_atfork_prepare(void)
{
	for (size_t i = 0; i < ASP_SHARDS; i++)
		shard_lock(&g_shards[i], 1);
}

void asp__live_atfork_parent(void)
{
	for (size_t i = ASP_SHARDS; i-- > 0;)
		shard_unlock(&g_shards[i]);
}

void asp__live_atfork_child(void)
{
	for (size_t i = 0; i < ASP_SHARDS; i++)
		g_shards[i].holder = 0;
}
