/* sample.h - ALLOCSPY_SAMPLE: a stack for only some allocations, picked by
 * a Poisson process over the bytes allocated, as tcmalloc's heap profiler
 * picks them, so that backtraces cost little enough for production.
 *
 * Each thread counts down the bytes left to its next sample point, drawn
 * from an exponential distribution of mean ALLOCSPY_SAMPLE bytes. An
 * allocation that reaches the point is sampled: its stack is captured and
 * it stands for 1/p of its kind, p = 1 - e^(-size/mean) being the chance
 * that an allocation of its size is sampled. The rest record their caller
 * only, as the default one-frame mode does. Totals, per-function and
 * per-thread counts, the live table and the leak check stay exact; the
 * per-stack figures are estimates (report.c writes them as est_*).
 *
 * A sampled block's site is its stack id with ASP_SITE_SAMPLED set; no
 * return address has that bit (x86-64 user addresses are below 2^47).
 *
 * In count mode, a table of the sampled blocks alone gives what is in use
 * per stack: a free looks at one byte of a filter first, so the frees of
 * blocks that were not sampled cost a load. The table's locks block no
 * signal (a system call each way would cost more than the rest of a
 * sample): they know their holder, as the live table's do (sample.c). */
#ifndef ASP_SAMPLE_H
#define ASP_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "thread.h"

#define ASP_SITE_SAMPLED ((uintptr_t)1 << 63)

/* The largest ALLOCSPY_SAMPLE: 1 TiB between samples on average. */
#define ASP_SAMPLE_MAX ((uint64_t)1 << 40)

/* The mean bytes between samples (0: sampling is off), and the seed the
 * threads' generators derive from (ALLOCSPY_SAMPLE_SEED, or random). */
extern ASP_HIDDEN uint64_t asp__sample_mean;
extern ASP_HIDDEN uint64_t asp__sample_seed;

/* Start-up, after the options: picks a seed when none was given. */
void asp__sample_init(void);

static inline int asp__site_sampled(uintptr_t site)
{
	return (site & ASP_SITE_SAMPLED) != 0;
}

/* A site's stack id (sampled) or its caller (not). */
static inline uintptr_t asp__site_plain(uintptr_t site)
{
	return site & ~ASP_SITE_SAMPLED;
}

/* The allocation of size bytes took its thread's countdown to 0 or below:
 * it reached the sample point (or the thread's first point is drawn). A
 * new point is drawn and the stack captured. Returns the site to record
 * (tagged stack id; site itself when the allocation was not sampled or
 * its stack could not be had); t->sample_w is its weight. */
uintptr_t asp__sample_hit(struct asp_thread *t, uintptr_t site, size_t size);

/* The site an allocation of size bytes records: its caller, or, when it
 * is sampled, its stack. */
static inline uintptr_t asp__sample_site(struct asp_thread *t, uintptr_t site, size_t size)
{
	int64_t left = t->sample_left - (int64_t)size;
	t->sample_left = left;
	return ASP_LIKELY(left > 0) ? site : asp__sample_hit(t, site, size);
}

/* A draw of an exponential variate of that mean, rounded up (at least 1),
 * from the generator *state (seeded from seed when it is 0): the count
 * down to the next event of a Poisson process (guard.c's too). */
uint64_t asp__draw_exponential(uint64_t *state, uint64_t seed, double mean);

/* 1 / (1 - e^(-size/mean)): how many allocations of size bytes one sampled
 * one stands for. 0 for size 0 (never sampled). */
double asp__sample_weight(uint64_t size);

/* Rounds an estimate to a count. */
static inline uint64_t asp__sample_round(double x)
{
	return x <= 0 ? 0 : x >= 9.2e18 ? (uint64_t)INT64_MAX : (uint64_t)(x + 0.5);
}

/* Count mode: the sampled blocks that are live --------------------------- */

/* One byte per slot: how many live sampled blocks hash there (saturating
 * at 255, then never lowered). In the shim's zeroed data: a page is
 * only backed once a block hashes there. */
#define ASP_SAMPLE_FILTER_BITS 18
extern ASP_HIDDEN uint8_t asp__sample_filter[1u << ASP_SAMPLE_FILTER_BITS];

static inline uint32_t asp__sample_slot(uintptr_t p)
{
	return (uint32_t)(asp_hash(p) >> (64 - ASP_SAMPLE_FILTER_BITS));
}

/* A live sampled block (count mode). */
struct asp_sample_block {
	uintptr_t ptr;		/* 0: an empty slot */
	uint64_t size;
	uintptr_t site;		/* the tagged stack id */
};

/* Count mode: p, sampled with site, was handed out by t's thread. */
void asp__sample_keep(struct asp_thread *t, uintptr_t p, uint64_t size, uintptr_t site);

/* Whether p may be a sampled block: its filter byte. */
static inline int asp__sample_maybe(uintptr_t p)
{
	return asp_atomic_load_relaxed(&asp__sample_filter[asp__sample_slot(p)]) != 0;
}

/* Count mode: p leaves the table of sampled blocks, if it is there:
 * 1 with its entry in *out (when not NULL), 0 when it is not there. With
 * defer set, -1 from a signal handler that landed inside the table's code
 * and found p's shard busy: p is left for its thread to free once it is
 * out (see sample.c). */
int asp__sample_take(struct asp_thread *t, uintptr_t p, struct asp_sample_block *out, int defer);

/* Count mode: p is about to be freed. Nonzero: its thread frees it later
 * (see asp__sample_take); the caller must not. */
static inline int asp__sample_forget(struct asp_thread *t, uintptr_t p)
{
	if (ASP_UNLIKELY(asp__sample_maybe(p)))
		return asp__sample_take(t, p, NULL, 1) < 0;
	return 0;
}

/* Calls fn for each live sampled block (count mode), each shard under its
 * lock (or as it is, in a signal handler that finds it busy). */
void asp__sample_blocks(void (*fn)(void *arg, const struct asp_sample_block *b), void *arg);

/* fork: the table's shards are held across it (but those held by self,
 * the forking thread's record, or by a stuck thread: the child rebuilds
 * those in asp__sample_atfork_child, before the release). */
void asp__sample_atfork_prepare(struct asp_thread *self);
void asp__sample_atfork_release(void);
void asp__sample_atfork_child(void);

#endif
