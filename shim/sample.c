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

static uint64_t next_random(struct asp_thread *t)
{
	t->sample_rng += 0x9E3779B97F4A7C15ull;
	return mix64(t->sample_rng);
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
	double s = (m - 1) / (m + 1), s2 = s * s;
	double sum = 1.0 / 21;
	for (int k = 19; k >= 1; k -= 2)
		sum = sum * s2 + 1.0 / k;
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
 * mean asp__sample_mean, at least 1. */
static uint64_t draw(struct asp_thread *t)
{
	/* u in (0, 1): 53 random bits and a half */
	double u = ((double)(next_random(t) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
	double x = neg_log(u) * (double)asp__sample_mean;
	if (x >= 9.2e18)
		return (uint64_t)INT64_MAX;
	uint64_t n = (uint64_t)x;
	return n < x || n == 0 ? n + 1 : n;
}

uintptr_t asp__sample_hit(struct asp_thread *t, uintptr_t site, size_t size)
{
	if (asp__sample_mean == 0)
		return site;
	if (t->sample_left == 0) {
		/* The thread's first allocation: its generator and first point. */
		t->sample_rng = mix64(asp__sample_seed ^ mix64(t->serial));
		t->sample_left = draw(t);
		if (size < t->sample_left) {
			t->sample_left -= size;
			return site;
		}
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
 * Only the holder of a shard's lock reads it; frees look at the filter
 * first, without a lock. The lock blocks no signal: it holds its holder's
 * pthread_self, and a signal handler that lands while its own thread holds
 * it does not wait: its frees of sampled blocks go into the thread's
 * record, and the thread makes them before it lets go (a block's address
 * must leave the table before the allocator can hand it out again).
 * Holders wait for nothing but the arena, and a thread holds one shard at
 * a time (fork's prepare handler excepted). */
#define ASP_SAMPLE_SHARDS 64

struct shard {
	uintptr_t owner;
	struct asp_sample_block *blocks;
	size_t mask, count;
} __attribute__((aligned(ASP_CACHE_LINE)));

static struct shard g_shards[ASP_SAMPLE_SHARDS];

static inline struct shard *shard_of(uintptr_t p)
{
	return &g_shards[((p * 0x9E3779B97F4A7C15ull) >> 58) & (ASP_SAMPLE_SHARDS - 1)];
}

/* 1: taken; 0: the calling thread holds it already. */
static int lock_shard(struct shard *s)
{
	uintptr_t me = (uintptr_t)pthread_self(), none = 0;
	if (__atomic_compare_exchange_n(&s->owner, &none, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 1;
	if (none == me)
		return 0;
	for (unsigned spins = 0;; spins++) {
		while (asp_atomic_load_relaxed(&s->owner) != 0) {
			if (spins++ < 64)
				asp_cpu_relax();
			else
				sched_yield();
		}
		none = 0;
		if (__atomic_compare_exchange_n(&s->owner, &none, me, 0, __ATOMIC_ACQUIRE,
		                                __ATOMIC_RELAXED))
			return 1;
	}
}

static inline size_t home(uintptr_t p, size_t mask)
{
	return (size_t)((p * 0x9E3779B97F4A7C15ull) >> 20) & mask;
}

static int grow(struct shard *s)
{
	size_t slots = s->blocks ? (s->mask + 1) * 2 : 64;
	struct asp_sample_block *n = asp__pages_alloc(slots * sizeof *n);
	if (n == NULL)
		return -ENOMEM;
	for (size_t i = 0; s->blocks && i <= s->mask; i++) {
		if (s->blocks[i].ptr == 0)
			continue;
		size_t j = home(s->blocks[i].ptr, slots - 1);
		while (n[j].ptr != 0)
			j = (j + 1) & (slots - 1);
		n[j] = s->blocks[i];
	}
	if (s->blocks != NULL)
		asp__pages_free(s->blocks, (s->mask + 1) * sizeof *s->blocks);
	s->blocks = n;
	s->mask = slots - 1;
	return 0;
}

static void filter_add(uintptr_t p, int delta)
{
	uint8_t *f = &asp__sample_filter[asp__sample_slot(p)];
	uint8_t v = *f;
	if (v != 255)
		asp_atomic_store_relaxed(f, (uint8_t)(v + delta));
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

/* Lets go of s, after the frees that signal handlers left in t meanwhile
 * (blocks of s: a thread holds one shard at a time): their entries leave
 * it now, their blocks go back after. */
static void unlock_shard(struct shard *s, struct asp_thread *t)
{
	uintptr_t later[ASP_ARRAY_SIZE(t->sample_defer)];
	size_t n = 0;
	for (;;) {
		uint32_t k = asp_atomic_load_relaxed(&t->nsample_defer);
		if (k == 0)
			break;
		uintptr_t p = t->sample_defer[k - 1];
		remove_block(s, p, NULL);
		later[n++] = p;
		asp_atomic_store_relaxed(&t->nsample_defer, k - 1);
	}
	asp_atomic_store_release(&s->owner, 0);
	for (size_t i = 0; i < n; i++)
		asp__next.free((void *)later[i]);
}

void asp__sample_keep(struct asp_thread *t, uintptr_t p, uint64_t size, uintptr_t site)
{
	struct shard *s = shard_of(p);
	/* A signal handler's, inside the shard: its block goes untracked
	 * (it is in the stack's allocation estimates, not in its in-use). */
	if (!lock_shard(s))
		return;
	if (s->blocks == NULL || (s->count + 1) * 2 > s->mask + 1)
		if (grow(s) != 0)
			goto out;
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
out:
	unlock_shard(s, t);
}

int asp__sample_take(struct asp_thread *t, uintptr_t p, struct asp_sample_block *out, int defer)
{
	struct shard *s = shard_of(p);
	if (!lock_shard(s)) {
		uint32_t k = t->nsample_defer;
		if (!defer || k == ASP_ARRAY_SIZE(t->sample_defer))
			return 0;	/* the entry stays: an estimate a block too high */
		t->sample_defer[k] = p;
		asp_atomic_store_release(&t->nsample_defer, k + 1);
		return -1;
	}
	int found = remove_block(s, p, out);
	unlock_shard(s, t);
	return found;
}

void asp__sample_blocks(void (*fn)(void *arg, const struct asp_sample_block *b), void *arg)
{
	struct asp_thread *t = asp__thread_self();
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++) {
		struct shard *s = &g_shards[k];
		int own = lock_shard(s);
		for (size_t i = 0; s->blocks != NULL && i <= s->mask; i++)
			if (s->blocks[i].ptr != 0)
				fn(arg, &s->blocks[i]);
		if (own)
			unlock_shard(s, t);
	}
}

/* fork: the forking thread takes every shard, in order, but one it holds
 * already (a fork from a signal handler): its child goes on holding that
 * one, and lets go when the interrupted code does. */
static uint64_t g_fork_took;

void asp__sample_atfork_prepare(void)
{
	uint64_t took = 0;
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++)
		if (lock_shard(&g_shards[k]))
			took |= (uint64_t)1 << k;
	g_fork_took = took;
}

void asp__sample_atfork_release(void)
{
	for (size_t k = ASP_SAMPLE_SHARDS; k-- > 0;)
		if (g_fork_took & ((uint64_t)1 << k))
			asp_atomic_store_release(&g_shards[k].owner, 0);
	g_fork_took = 0;
}
