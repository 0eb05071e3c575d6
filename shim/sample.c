/* sample.c - ALLOCSPY_SAMPLE: picking the allocations that get a stack,
 * their weights, and (count mode) the table of sampled blocks still live.
 *
 * Nothing here allocates from the program's heap or calls libm: the
 * logarithm and the exponential are computed below, from the bits of a
 * double. Each thread's generator is a splitmix64 sequence seeded from
 * ALLOCSPY_SAMPLE_SEED (or a random seed) and the thread's serial, so a
 * program that allocates the same way gets the same samples again. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/random.h>

#include "account.h"
#include "arena.h"
#include "next.h"
#include "options.h"
#include "sample.h"
#include "stack.h"
#include "thread.h"

uint64_t asp__sample_mean;
uint64_t asp__sample_seed;
uint8_t asp__sample_filter[1u << ASP_SAMPLE_FILTER_BITS];

void asp__sample_init(void)
{
	if (asp__opt.sample == 0)
		return;
	asp__sample_mean = asp__opt.sample;
	asp__sample_seed = asp__opt.sample_seed;
	if (!asp__opt.sample_seed_set) {
		uint64_t s = 0;
		if (getrandom(&s, sizeof s, GRND_NONBLOCK) != (ssize_t)sizeof s)
			s = asp_now_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
		asp__sample_seed = s & INT64_MAX;	/* a JSON integer in the dump */
	}
}

/* The generator and the math ------------------------------------------------ */

static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint64_t next_in(uint64_t *state)
{
	*state += 0x9E3779B97F4A7C15ull;
	return mix64(*state);
}

static uint64_t next_random(struct asp_thread *t)
{
	return next_in(&t->sample_rng);
}

static const double ln2 = 0.69314718055994530942;

/* -ln(u) for u in (0, 1): u = m * 2^e with m in [sqrt(1/2), sqrt(2)), and
 * ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| < 0.172: the series to
 * s^21 is exact to about 1e-17. */
static double neg_log(double u)
{
	union { double d; uint64_t b; } x = { u };
	int e = (int)((x.b >> 52) & 0x7ff) - 1023;
	x.b = (x.b & 0x000fffffffffffffull) | 0x3ff0000000000000ull;	/* m in [1, 2) */
	double m = x.d;
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	static const double inv_odd[11] = {
		1.0, 1.0 / 3, 1.0 / 5, 1.0 / 7, 1.0 / 9, 1.0 / 11, 1.0 / 13, 1.0 / 15, 1.0 / 17,
		1.0 / 19, 1.0 / 21,
	};
	double s = (m - 1) / (m + 1), s2 = s * s;
	double sum = inv_odd[10];
	for (int k = 9; k >= 0; k--)
		sum = sum * s2 + inv_odd[k];
	return -((double)e * ln2 + 2 * s * sum);
}

/* 1/k! for k = 0..17 */
static const double inv_fact[18] = {
	1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
	1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600,
	1.0 / 6227020800.0, 1.0 / 87178291200.0, 1.0 / 1307674368000.0,
	1.0 / 20922789888000.0, 1.0 / 355687428096000.0,
};

/* 1 - e^(-x) for x >= 0, without cancellation for small x. */
static double one_minus_exp_neg(double x)
{
	if (x > 60)
		return 1;
	if (x < 0.5) {
		/* x - x^2/2! + x^3/3! - ...: exact to 1e-17 for x < 0.5 */
		double sum = inv_fact[17];
		for (int k = 16; k >= 1; k--)
			sum = inv_fact[k] - x * sum;
		return x * sum;
	}
	/* e^(-x) = 2^(-n) e^(-r), x = n ln2 + r, 0 <= r < ln2 */
	int n = (int)(x / ln2);
	double r = x - n * ln2, e = inv_fact[17];
	for (int k = 16; k >= 0; k--)
		e = inv_fact[k] - r * e;
	union { double d; uint64_t b; } scale = { .b = (uint64_t)(1023 - n) << 52 };
	return 1 - e * scale.d;
}

double asp__sample_weight(uint64_t size)
{
	if (size == 0 || asp__sample_mean == 0)
		return 0;
	return 1 / one_minus_exp_neg((double)size / (double)asp__sample_mean);
}

/* Bytes to the next sample point: the ceiling of an exponential variate of
 * mean asp__sample_mean, at least 1 (and at most 2^62: the countdown is
 * signed). */
static uint64_t draw(struct asp_thread *t)
{
	/* u in (0, 1): 53 random bits and a half */
	double u = ((double)(next_random(t) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	double x = neg_log(u) * (double)asp__sample_mean;
	if (x >= 4.6e18)
		return (uint64_t)1 << 62;
	uint64_t n = (uint64_t)x;
	return n < x || n == 0 ? n + 1 : n;
}

uint64_t asp__draw_exponential(uint64_t *state, uint64_t seed, double mean)
{
	if (*state == 0)
		*state = mix64(seed) | 1;
	double u = ((double)(next_in(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	double x = neg_log(u) * mean;
	if (x >= 4.6e18)
		return (uint64_t)1 << 62;
	uint64_t n = (uint64_t)x;
	return n < x || n == 0 ? n + 1 : n;
}

uintptr_t asp__sample_hit(struct asp_thread *t, uintptr_t site, size_t size)
{
	if (asp__sample_mean == 0)
		return site;
	if (t->sample_rng == 0) {
		/* The thread's first allocation: its generator and first point
		 * (the countdown started at 0). */
		t->sample_rng = mix64(asp__sample_seed ^ mix64(t->serial)) | 1;
		t->sample_left = (int64_t)draw(t) - (int64_t)size;
		if (t->sample_left > 0)
			return site;
	}
	/* The allocation holds the point. The process after its end is
	 * independent of what came before (memoryless): a new point. */
	t->sample_left = draw(t);
	uintptr_t id = asp__stack_capture(t, site);
	if (id == 0 || asp__site_sampled(id))
		return site;
	t->sample_w = asp__sample_weight(size);
	return id | ASP_SITE_SAMPLED;
}

/* Count mode: the live sampled blocks --------------------------------------- */

/* Sharded by address, as the live table is, so that threads rarely meet:
 * each shard open addressing on the block's address, at most half full.
 * Only the holder of a shard reads it; frees look at the filter first,
 * without a lock. The shard's lock blocks no signal (two system calls per
 * sample would cost more than the rest of it) and works as the live
 * table's does (live.h): it holds its holder's thread record, a holder
 * waits for nothing but the arena, and a signal handler that lands while
 * its thread is inside this code (t->in_sample) never waits for a shard:
 * it tries once, and otherwise its block goes untracked (an allocation:
 * the stack's in-use estimate misses it) or its free waits in the
 * thread's record, the block still allocated, until the thread is out
 * (a block's address must leave the table before the allocator can hand
 * it out again). fork's prepare handler takes every shard but those whose
 * holder is stuck in a handler (its own thread's, or one that waits for
 * the fork): the child rebuilds those. */
#define ASP_SAMPLE_SHARDS 64

struct shard {
	uintptr_t holder;	/* 0: free; else the holder's thread record */
	struct asp_sample_block *blocks;
	size_t mask, count;
	/* While grow publishes a larger array: the old one, whole, and its
	 * size (a fork's child rebuilds the shard from it). */
	struct asp_sample_block *moving;
	size_t moving_slots;
} __attribute__((aligned(ASP_CACHE_LINE)));

static struct shard g_shards[ASP_SAMPLE_SHARDS];

static inline struct shard *shard_of(uintptr_t p)
{
	return &g_shards[(asp_hash(p) >> 58) & (ASP_SAMPLE_SHARDS - 1)];
}

static inline int try_take(struct shard *s, uintptr_t self)
{
	uintptr_t none = 0;
	return __atomic_compare_exchange_n(&s->holder, &none, self, 0, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_RELAXED);
}

/* Takes s for t: 1. Nested (a signal handler inside this code) it only
 * tries once: 0 when s is busy. */
static int take(struct shard *s, struct asp_thread *t, int nested)
{
	uintptr_t self = (uintptr_t)t;
	if (ASP_LIKELY(try_take(s, self)))
		return 1;
	if (nested)
		return 0;
	for (unsigned spins = 0;; spins++) {
		while (asp_atomic_load_relaxed(&s->holder) != 0) {
			if (spins++ < 64)
				asp_cpu_relax();
			else
				sched_yield();
		}
		if (try_take(s, self))
			return 1;
	}
}

static inline void release(struct shard *s)
{
	asp_atomic_store_release(&s->holder, 0);
}

static inline size_t home(uintptr_t p, size_t mask)
{
	return (size_t)(asp_hash(p) >> 20) & mask;
}

/* The larger array is filled before it is published, and the old one
 * stays whole until then: a fork from a signal handler that landed in
 * here leaves its child a whole array to rebuild the shard from. */
static int grow(struct shard *s)
{
	size_t slots = s->blocks ? (s->mask + 1) * 2 : 64;
	struct asp_sample_block *n = asp__pages_alloc(slots * sizeof *n);
	if (n == NULL)
		return -ENOMEM;
	struct asp_sample_block *old = s->blocks;
	size_t old_slots = old ? s->mask + 1 : 0;
	for (size_t i = 0; i < old_slots; i++) {
		if (old[i].ptr == 0)
			continue;
		size_t j = home(old[i].ptr, slots - 1);
		while (n[j].ptr != 0)
			j = (j + 1) & (slots - 1);
		n[j] = old[i];
	}
	s->moving_slots = old_slots;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->moving = old;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->blocks = n;
	s->mask = slots - 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->moving = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (old != NULL)
		asp__pages_free(old, old_slots * sizeof *old);
	return 0;
}

static void filter_add(uintptr_t p, int delta)
{
	uint8_t *f = &asp__sample_filter[asp__sample_slot(p)];
	uint8_t v = *f;
	if (v != 255)
		asp_atomic_store_relaxed(f, (uint8_t)(v + delta));
}

/* Adds or replaces p's entry. s held. */
static void insert_block(struct shard *s, uintptr_t p, uint64_t size, uintptr_t site)
{
	if ((s->blocks == NULL || (s->count + 1) * 2 > s->mask + 1) && grow(s) != 0)
		return;
	size_t j = home(p, s->mask);
	while (s->blocks[j].ptr != 0 && s->blocks[j].ptr != p)
		j = (j + 1) & s->mask;
	/* The same address again: its old block was freed behind the
	 * shim's back (or by a free the shim did not count). */
	if (s->blocks[j].ptr == 0) {
		s->count++;
		filter_add(p, 1);
	}
	s->blocks[j] = (struct asp_sample_block){ p, size, site };
}

/* Removes p's entry, if any, into *out. s held. */
static int remove_block(struct shard *s, uintptr_t p, struct asp_sample_block *out)
{
	struct asp_sample_block *b = s->blocks;
	size_t mask = s->mask, j = b ? home(p, mask) : 0;
	while (b != NULL && b[j].ptr != 0 && b[j].ptr != p)
		j = (j + 1) & mask;
	if (b == NULL || b[j].ptr != p)
		return 0;
	if (out != NULL)
		*out = b[j];
	/* Backward-shift deletion: the entries after it that would not be
	 * found past the hole move into it. */
	size_t hole = j;
	for (size_t k = (j + 1) & mask; b[k].ptr != 0; k = (k + 1) & mask) {
		size_t h = home(b[k].ptr, mask);
		/* k's entry may fill the hole when its home is not cyclically
		 * within (hole, k]. */
		if (((k - h) & mask) >= ((k - hole) & mask)) {
			b[hole] = b[k];
			hole = k;
		}
	}
	b[hole] = (struct asp_sample_block){ 0, 0, 0 };
	s->count--;
	filter_add(p, -1);
	return 1;
}

/* Out of this code: the frees signal handlers left in t are made now,
 * each block leaving the table before it goes back. */
static void drain(struct asp_thread *t)
{
	for (;;) {
		uint32_t k = asp_atomic_load_relaxed(&t->nsample_defer);
		if (k == 0 || t->in_sample != 0)
			return;
		uintptr_t p = t->sample_defer[k - 1];
		/* A signal handler that lands here finds the thread outside
		 * the table and drains too: it may have made this free by
		 * now. The entry is this one's while the count is still k
		 * (such a handler drains them all; none adds one). */
		if (!__atomic_compare_exchange_n(&t->nsample_defer, &k, k - 1, 0, __ATOMIC_ACQ_REL,
		                                 __ATOMIC_RELAXED))
			continue;
		struct shard *s = shard_of(p);
		t->in_sample++;
		take(s, t, 0);
		remove_block(s, p, NULL);
		release(s);
		t->in_sample--;
		asp__next.free((void *)p);
	}
}

void asp__sample_keep(struct asp_thread *t, uintptr_t p, uint64_t size, uintptr_t site)
{
	struct shard *s = shard_of(p);
	int nested = t->in_sample++;
	/* A signal handler's, and the shard busy: the block goes untracked. */
	if (take(s, t, nested)) {
		insert_block(s, p, size, site);
		release(s);
	}
	t->in_sample--;
	if (ASP_UNLIKELY(t->nsample_defer != 0))
		drain(t);
}

int asp__sample_take(struct asp_thread *t, uintptr_t p, struct asp_sample_block *out, int defer)
{
	struct shard *s = shard_of(p);
	int nested = t->in_sample++, found = -1;
	if (take(s, t, nested)) {
		found = remove_block(s, p, out);
		release(s);
	}
	t->in_sample--;
	if (found < 0) {
		uint32_t k = t->nsample_defer;
		if (!defer || k == ASP_ARRAY_SIZE(t->sample_defer))
			return 0;	/* the entry stays: an estimate a block too high */
		t->sample_defer[k] = p;
		asp_atomic_store_release(&t->nsample_defer, k + 1);
		return -1;
	}
	if (ASP_UNLIKELY(t->nsample_defer != 0))
		drain(t);
	return found;
}

void asp__sample_blocks(void (*fn)(void *arg, const struct asp_sample_block *b), void *arg)
{
	struct asp_thread *t = asp__thread_self();
	int nested = t->in_sample++;
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++) {
		struct shard *s = &g_shards[k];
		/* Nested and busy: read as it is (a signal's report). */
		int own = take(s, t, nested);
		for (size_t i = 0; s->blocks != NULL && i <= s->mask; i++)
			if (s->blocks[i].ptr != 0)
				fn(arg, &s->blocks[i]);
		if (own)
			release(s);
	}
	t->in_sample--;
}

/* fork: every shard, but those held by the forking thread itself or by a
 * thread stuck in a handler (live.h): the first the child's interrupted
 * code finishes, the others the child rebuilds. */
static uint64_t g_fork_took, g_fork_skipped;

void asp__sample_atfork_prepare(struct asp_thread *self)
{
	uint64_t took = 0, skipped = 0;
	uintptr_t me = (uintptr_t)self | !self;	/* none: an anonymous holder, 1 */
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++) {
		struct shard *s = &g_shards[k];
		for (unsigned spins = 0; !try_take(s, me); spins++) {
			uintptr_t holder = asp_atomic_load_relaxed(&s->holder);
			if (holder == me)
				goto next;
			if (holder > 1 && asp__thread_stuck(holder)) {
				skipped |= (uint64_t)1 << k;
				goto next;
			}
			if (spins < 64)
				asp_cpu_relax();
			else
				sched_yield();
		}
		took |= (uint64_t)1 << k;
next:;
	}
	g_fork_took = took;
	g_fork_skipped = skipped;
}

void asp__sample_atfork_release(void)
{
	for (size_t k = ASP_SAMPLE_SHARDS; k-- > 0;)
		if (g_fork_took & ((uint64_t)1 << k))
			release(&g_shards[k]);
	g_fork_took = 0;
}

void asp__sample_atfork_child(void)
{
	uint64_t skipped = g_fork_skipped;
	g_fork_skipped = 0;
	if (skipped == 0)
		return;
	/* Their holders are gone half way: each is rebuilt from its slots
	 * (from the old array when its holder was publishing a larger one;
	 * an entry a backward shift had copied but not cleared yet is kept
	 * once), and the filter counted again. Every one is let go, even
	 * one whose holder was making its first array. */
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++) {
		struct shard *s = &g_shards[k];
		if (!(skipped & ((uint64_t)1 << k)))
			continue;
		struct asp_sample_block *old = s->moving ? s->moving : s->blocks;
		size_t slots = s->moving ? s->moving_slots : s->blocks ? s->mask + 1 : 0;
		s->moving = NULL;
		s->blocks = NULL;
		s->mask = s->count = 0;
		for (size_t j = 0; j < slots; j++)
			if (old[j].ptr != 0)
				insert_block(s, old[j].ptr, old[j].size, old[j].site);
		if (slots != 0)
			asp__pages_free(old, slots * sizeof *old);
		s->holder = 0;
	}
	memset(asp__sample_filter, 0, sizeof asp__sample_filter);
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++)
		for (size_t j = 0; g_shards[k].blocks != NULL && j <= g_shards[k].mask; j++)
			if (g_shards[k].blocks[j].ptr != 0)
				filter_add(g_shards[k].blocks[j].ptr, 1);
}
