/* account.h - what every interposed function does: forward to the
 * allocator underneath, then count the call in the thread's record and,
 * in track mode, the live table. override.c calls these and nothing else.
 *
 * The paths, by mode (asp__state):
 *   count          malloc, free, delete, strdup: the wrapper jumps to
 *                  asp__malloc_count / asp__free_count / ... (account.c),
 *                  which are asp__alloc_counted and asp__free_counted:
 *                  the thread's counters and its last block.
 *   count sampled  the same with the countdown to the next sample point
 *                  (asp__count_sample_hit: a stack, sample.c's table).
 *   track          asp__malloc_track -> asp__track_put_fast: the block's
 *                  slot, the counts and its site's figures in one change;
 *                  asp__free_track -> asp__track_release_fast. What they
 *                  do not take goes to asp__track_alloc and
 *                  asp__track_release (account.c): the side table,
 *                  deferred operations, the peak's detail, a gatherer.
 *   track, stacks  asp__malloc_stacks -> asp__track_alloc (the stack, then
 *                  per-stack totals); frees as track mode.
 *   track sampled  every mode's path (asp__malloc_any, asp__free_any):
 *                  asp__count_alloc -> asp__track_alloc with the sampled
 *                  site; asp__free -> asp__track_release.
 * Every other function (calloc, realloc, the memalign family, new) counts
 * its result with asp__count_alloc, which takes the same path by mode.
 * The rules each path keeps are written once: asp__count_block (a block
 * in the counters), asp__last_set and asp__last_freed (temporary
 * allocations), asp__change_begin and _end (table and counts together),
 * asp__net_grow and _shrink (the in-use figures and the peak). */
#ifndef ASP_ACCOUNT_H
#define ASP_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "errors.h"
#include "glue.h"
#include "guard.h"
#include "live.h"
#include "next.h"
#include "sample.h"
#include "sitemap.h"
#include "snapshot.h"
#include "thread.h"

/* The process's state under the shim, in one variable that only
 * process.c's functions change (process.h: asp__counting_start, _stop and
 * _restart): ASP_STATE_START before start-up; while counting, what the
 * allocation paths do: count only (with sampled stacks: ALLOCSPY_SAMPLE),
 * track blocks, track blocks with their stacks, or track blocks with
 * sampled stacks; ASP_STATE_STOPPED once the exit report began (or in a
 * fatal signal's copy of the process): nothing is counted any more. So
 * asp__state > 0 while counting, and the count modes come first:
 * asp__state <= ASP_FAST_COUNT_SAMPLE keeps no table. */
enum {
	ASP_STATE_STOPPED = -1,
	ASP_STATE_START = 0,
	ASP_FAST_COUNT = 1,
	ASP_FAST_COUNT_SAMPLE = 2,
	ASP_FAST_TRACK = 3,
	ASP_FAST_STACKS = 4,
	ASP_FAST_SAMPLE = 5,
};
extern ASP_HIDDEN int asp__state;

/* The mode the options ask for, once counting starts. */
int asp__fast_mode(void);

/* The tid of the thread that reads the heap for the exit report, from the
 * moment it holds the whole table until it is done: other threads' frees
 * wait, so that no block it reads goes back to the allocator meanwhile. */
extern ASP_HIDDEN pid_t asp__frozen;

/* Bumped by the ticker (process.c) when periodic work is due: a thread
 * that sees it change does that work at its next allocation. */
extern ASP_HIDDEN uint32_t asp__epoch;

/* The in-use figures threads have published, the largest total any thread
 * saw, and when (account.c). Threads write them: they have a cache line of
 * their own, away from the flags every operation reads. */
struct asp_figures {
	int64_t in_use;
	int64_t in_use_blocks;
	int64_t peak;
	uint64_t peak_ns;
	int64_t peak_timed;	/* the peak when peak_ns was last taken */
	/* The traffic published so far, bytes allocated plus bytes freed
	 * (snapshot.c's clock): in the line a publish has already made its
	 * own, so that it moves one cache line between cores, not two. */
	uint64_t volume;
	/* Publishes begun and done: a reader that adds the threads' unpublished
	 * changes to in_use saw no publish halfway when no publish began
	 * between its reading done and begun (asp__in_use_read). */
	uint64_t pub_begun, pub_done;
} __attribute__((aligned(ASP_CACHE_LINE)));
extern ASP_HIDDEN struct asp_figures asp__figures;

/* The TLS modules the shim's own libraries added, and the loader's text
 * (stack.c sets them when it loads libunwind). */
extern ASP_HIDDEN int asp__dtv_extra;
extern ASP_HIDDEN uintptr_t asp__ldso_lo, asp__ldso_hi;

/* Raises the peak to bytes, when it is below (a figure read exactly). */
void asp__peak_at_least(int64_t bytes);

/* Publishes t's unpublished in-use delta. */
void asp__publish(struct asp_thread *t);

/* The largest error of the peak: every thread that was running beside
 * others may hold up to ASP_PEAK_STEP unseen. */
uint64_t asp__peak_bound(void);

/* Out-of-line paths; the fast paths below are inline, so that each
 * interposed function carries its own. */
void *asp__alloc_slow(enum asp_fn fn, size_t size, uintptr_t site);
void *asp__alloc_inside(struct asp_thread *t, size_t size);
void asp__track_alloc(struct asp_thread *t, int fast, enum asp_fn fn, void *p, size_t size,
                      uintptr_t site);
/* Count mode with ALLOCSPY_SAMPLE: the allocation p reached its thread's
 * sample point. When it is sampled, t->last holds it with its low bit set
 * (the tag; blocks are at least 2-aligned), so that the next allocation's
 * store of t->last clears the mark as well. Checks the epoch, as
 * asp__count_sampled would next; returns p. */
void *asp__count_sample_hit(struct asp_thread *t, void *p, size_t size, uintptr_t site);

static inline int asp__last_sampled(const struct asp_thread *t, uintptr_t p)
{
	return (p | 1) == t->last;
}

/* Track mode: p, freed by fn called from caller, leaves the table.
 * Returns 0 when the caller frees p now, 1 when it must not: p's free was
 * deferred (a signal handler inside the table), or p is no live block (an
 * invalid free, which valgrind does not pass on either). */
int asp__track_release(struct asp_thread *t, enum asp_fn fn, void *p, uintptr_t caller);
void asp__free_slow(void *p, enum asp_fn fn);
void asp__count_temporary(struct asp_thread *t);
/* ... and the free of p, that block, before any other allocation: a
 * temporary one. Nonzero when its free was left to the thread (sample.h:
 * the caller must not free it). */
int asp__count_temporary_sampled(struct asp_thread *t, void *p);
void asp__count_failed(struct asp_thread *t, enum asp_fn fn);
/* The same, for an argument arg of that value, which is reported when it
 * is fishy (errors.h), in track mode, with the call's site. */
void asp__count_failed_arg(struct asp_thread *t, enum asp_fn fn, const char *arg, uint64_t value,
                           uintptr_t site);
/* The same, returning NULL. */
void *asp__count_null(struct asp_thread *t, enum asp_fn fn);
void asp__account_thread_exit(struct asp_thread *t);

/* In-use totals: a thread's net change since it last published, and the
 * peak (account.c). A thread publishes when its net change passes
 * ASP_PEAK_STEP either way, so the peak is exact within that per thread
 * that ran beside others (asp__peak_bound). */
#define ASP_PEAK_STEP (16 * 1024)

void asp__publish(struct asp_thread *t);
void asp__peak_at_least(int64_t bytes);
void asp__peak_check(struct asp_thread *t, int64_t net);
void asp__periodic(struct asp_thread *t);
void asp__account_thread_gone(struct asp_thread *t);

/* Waits while another thread reads the heap for the exit report. */
void asp__wait_frozen(void);

/* A block of size bytes in use more (grow) or less (shrink), in t's net
 * change; each also counts size in t's traffic. */
static inline void asp__net_grow(struct asp_thread *t, uint64_t size)
{
	int64_t net = t->net + (int64_t)size;
	t->net = net;
	t->net_blocks++;
	t->volume += size;
	if (ASP_UNLIKELY(net > t->peak_room))
		asp__peak_check(t, net);
	if (ASP_UNLIKELY(net > ASP_PEAK_STEP || t->volume > asp__snapshot_volume_step))
		asp__publish(t);
}

static inline void asp__net_shrink(struct asp_thread *t, uint64_t size)
{
	int64_t net = t->net - (int64_t)size;
	t->net = net;
	t->net_blocks--;
	t->volume += size;
	if (ASP_UNLIKELY(net < -ASP_PEAK_STEP || t->volume > asp__snapshot_volume_step))
		asp__publish(t);
}

/* Changes -------------------------------------------------------------------
 *
 * A thread changes the table of live blocks and the counts that go with it
 * inside a change: no lock, no read-modify-write, a store to its own
 * record each way (t->chg, the depth). Whoever must see counts and table
 * agree (the exit report, a dump, fork) is a gatherer: it raises
 * asp__gathering, makes every thread fence (membarrier: the thread's side
 * keeps only the compiler from reordering), then waits, briefly and never
 * forever, for every other thread's chg to be 0. A thread that begins a
 * change and sees the flag raised leaves it and waits for the flag to go
 * down. A signal handler that lands inside its thread's change (chg > 0)
 * makes its own inside it, without looking at the flag: the gatherer is
 * still waiting for the outer one then. */
extern ASP_HIDDEN int asp__gathering;

static ASP_ALWAYS_INLINE int asp__change_begin(struct asp_thread *t)
{
	uint32_t d = t->chg;
	asp_atomic_store_relaxed(&t->chg, d + 1);
	if (d != 0)
		return 1;
	if (ASP_LIKELY(asp__fence_others_ok))
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ASP_LIKELY(asp_atomic_load_relaxed(&asp__gathering) == 0))
		return 1;
	asp_atomic_store_release(&t->chg, t->chg - 1);
	return 0;
}

static ASP_ALWAYS_INLINE void asp__change_end(struct asp_thread *t)
{
	asp_atomic_store_release(&t->chg, t->chg - 1);
}

/* The gatherers: asp__gather_begin, then the side table's shards
 * (live.h, asp__live_lock_all), the reading, and asp__gather_end. A
 * thread still inside its change after ASP_WAIT_NS (100 ms) is read as it
 * is when it is asleep or stopped there (a handler that never returns) or
 * has run 100 ms more without ending it; one that has only not had a core
 * (a loaded machine: asp__thread_behind) is waited for, up to
 * ASP_WAIT_BEHIND_NS more. */
void asp__gather_begin(const struct asp_thread *self);
void asp__gather_end(void);

/* The bytes and blocks in use now: what threads published and what each
 * has not yet, read without a lock and without waiting for anyone (a
 * signal handler may call it). Exact while gathered; otherwise a total
 * that was true at some moment of the read, or, when publishes kept
 * overlapping it, the last try's. */
void asp__in_use_read(int64_t *bytes, int64_t *blocks);

/* The blocks in use now by the counts: exact while gathered. */
uint64_t asp__in_use_blocks(void);

/* Sites in use ---------------------------------------------------------------
 *
 * Track mode: what each site holds of the heap, bytes and blocks, by site
 * index (sitemap.h), in chunks each thread owns: a thread adds what it
 * allocates and takes off what it frees, whoever allocated it, and the
 * threads' figures add up to each site's. The detail of a snapshot (who
 * holds the heap) reads them, never the table: its cost is the number of
 * sites, not of blocks. With ALLOCSPY_SAMPLE, the estimates of the
 * sampled blocks too. */
struct asp_site_use {
	int64_t bytes, blocks;
	double est_bytes, est_blocks;
};

#define ASP_SITE_USE_CHUNK_BITS 7
#define ASP_SITE_USE_CHUNK (1u << ASP_SITE_USE_CHUNK_BITS)

/* Calls fn with every thread's entry of every site index (a site's figure
 * is the sum of its entries), read as they are. */
void asp__site_use_sum(void (*fn)(void *arg, uint32_t index, const struct asp_site_use *u),
                       void *arg);

/* t's entry for site index i, or NULL while it has none. */
static ASP_ALWAYS_INLINE struct asp_site_use *asp__site_use(const struct asp_thread *t, uint32_t i)
{
	struct asp_site_use **dir = t->site_use;
	struct asp_site_use *c;
	if (ASP_LIKELY(dir != NULL) && ASP_LIKELY((c = dir[i >> ASP_SITE_USE_CHUNK_BITS]) != NULL))
		return &c[i & (ASP_SITE_USE_CHUNK - 1)];
	return NULL;
}

/* A block of size bytes handed out by fn, in the thread's counters. */
static inline void asp__count_block(struct asp_thread *t, enum asp_fn fn, size_t size)
{
	asp_owned_add(&t->c.fn[fn].calls, 1);
	asp_owned_add(&t->c.fn[fn].bytes, size);
	asp_owned_add(&t->c.hist[asp_hist_bucket(size)], 1);
}

/* Periodic work (dumps, snapshots) is looked at once per allocation: one
 * load of a line that is written a few times a second at most. */
static inline void asp__check_epoch(struct asp_thread *t)
{
	if (ASP_UNLIKELY(t->epoch != asp_atomic_load_relaxed(&asp__epoch)))
		asp__periodic(t);
}

/* The thread's last block ------------------------------------------------
 * A block its thread frees before allocating anything else is a temporary
 * allocation (heaptrack's). Every path that hands out a block notes it
 * (asp__last_set; track mode notes its site too, t->last_site, for the
 * per-stack totals), and every path that frees one asks asp__last_freed. */
static ASP_ALWAYS_INLINE void asp__last_set(struct asp_thread *t, uintptr_t p, enum asp_fn fn)
{
	t->last = p;
	t->last_fn = fn;
}

/* p is freed: 1 when it was the thread's last block, the temporary
 * counted (with stacks set, in its stack's totals too:
 * asp__count_temporary); else 0. */
static ASP_ALWAYS_INLINE int asp__last_freed(struct asp_thread *t, uintptr_t p, int stacks)
{
	if (p != t->last)
		return 0;
	if (stacks) {
		asp__count_temporary(t);
	} else {
		asp_owned_add(&t->c.fn[t->last_fn].temporary, 1);
		t->last = 0;
	}
	return 1;
}

/* Backtrace mode: an allocation of size bytes in its stack's totals. */
void asp__site_add(struct asp_thread *t, uintptr_t site, size_t size);

/* Track mode, with stacks or not, the common case of asp__track_alloc
 * inlined, once site is known (with stacks set, counted in its stack's
 * totals too): p goes into its slot of the shadow, whole (glibc's
 * allocator: a slot has one owner), its site already has an index and t an
 * entry for it, and no handler's work waits. 0: not taken (the caller
 * calls asp__track_alloc: a block no slot can hold, say). */
static ASP_ALWAYS_INLINE int asp__track_put_fast(struct asp_thread *t, enum asp_fn fn, void *p,
                                                 size_t size, uintptr_t site, int stacks)
{
	const struct asp_site_cache *c = &t->site_cache[asp__site_cache_slot(site)];
	struct asp_site_use *u = c->use;
	uint32_t *sl = asp__live_slot((uintptr_t)p);
	uint32_t v = asp__slot_pack((uintptr_t)p, size, fn, c->index);
	/* the site's index and the thread's entry known (its cache), a slot
	 * that holds the block whole: no handler's work waiting, glibc's
	 * allocator */
	if (ASP_UNLIKELY(c->site != site || u == NULL || sl == NULL || v == 0 ||
	                 (t->ndefer | (unsigned)asp__live_shared) != 0))
		return 0;
	if (ASP_UNLIKELY(!asp__change_begin(t)))
		return 0;
	asp_atomic_store_relaxed(sl, v);
	asp__count_block(t, fn, size);
	if (stacks)
		asp__site_add(t, site, size);
	asp_owned_add(&u->bytes, size);
	asp_owned_add(&u->blocks, 1);
	asp__change_end(t);
	asp__last_set(t, (uintptr_t)p, fn);
	t->last_site = site;
	asp__net_grow(t, size);
	asp__check_epoch(t);
	return 1;
}

/* Track mode: p, whose word was w, freed from caller, among the thread's
 * recent frees (errors.h tells a free of it again from them). */
static ASP_ALWAYS_INLINE void asp__freed_note(struct asp_thread *t, uintptr_t p, uint64_t w,
                                             uintptr_t caller)
{
	uint32_t n = t->nfreed;
	struct asp_freed *f = &t->freed[n & (ASP_FREED_RING - 1)];
	f->ptr = p;
	f->word = w;
	f->site = caller;
	asp_atomic_store_release(&t->nfreed, n + 1);
}

/* Track mode, with stacks or not, the common case of asp__track_release
 * inlined: p's slot holds it whole (glibc's allocator), t has an entry for its
 * site, no handler's work waits and the heap is below the next peak
 * detail. 0: not taken (the caller calls asp__track_release); 1: counted,
 * the caller frees p. */
static ASP_ALWAYS_INLINE int asp__track_release_fast(struct asp_thread *t, enum asp_fn fn, void *p,
                                                   int stacks, uintptr_t caller)
{
	if (ASP_UNLIKELY(t->ndefer != 0 || asp__live_shared || t->net >= t->detail_room))
		return 0;
	uint32_t *sl = asp__live_slot((uintptr_t)p);
	if (ASP_UNLIKELY(sl == NULL))
		return 0;
	/* The allocator reads the block's header next: both misses at once
	 * (a program that frees blocks all over its heap pays one each). */
	__builtin_prefetch((const char *)p - 16);
	uint32_t s = asp_atomic_load_relaxed(sl);
	uint32_t si = asp__slot_site(s);
	struct asp_site_use *u = si == t->free_site ? t->free_use : asp__site_use(t, si);
	/* a block of another family (free of new's): a mismatch, reported */
	if (ASP_UNLIKELY(!asp__slot_holds(s, (uintptr_t)p) || u == NULL ||
	                 !((asp__family_words(fn) >> (asp__slot_fn(s) + 1)) & 1)))
		return 0;
	t->free_site = si;
	t->free_use = u;
	if (ASP_UNLIKELY(!asp__change_begin(t)))
		return 0;
	uint64_t size = asp__slot_size(s);
	uint64_t v = asp__slot_word(s, (uintptr_t)p);
	asp_atomic_store_relaxed(sl, 0);
	asp_owned_add(&t->c.fn[fn].calls, 1);
	asp_owned_add(&t->c.fn[fn].bytes, size);
	asp_owned_add(&u->bytes, -size);
	asp_owned_add(&u->blocks, -1);
	asp__change_end(t);
	asp__freed_note(t, (uintptr_t)p, v, caller);
	asp__last_freed(t, (uintptr_t)p, stacks);
	asp__net_shrink(t, size);
	if (ASP_UNLIKELY(asp_atomic_load_relaxed(&asp__frozen) != 0))
		asp__wait_frozen();
	return 1;
}

/* Count mode with ALLOCSPY_SAMPLE: the thread's countdown to its next
 * sample point (sample.h); an allocation that reaches it gets its stack. */
static inline void asp__count_sampled(struct asp_thread *t, enum asp_fn fn, void *p,
                                      size_t size, uintptr_t site)
{
	asp__count_block(t, fn, size);
	/* tagged by asp__count_sample_hit when this one is sampled */
	asp__last_set(t, (uintptr_t)p, fn);
	int64_t left = t->sample_left - (int64_t)size;
	t->sample_left = left;
	if (ASP_UNLIKELY(left <= 0))
		asp__count_sample_hit(t, p, size, site);
	else
		asp__check_epoch(t);
}

/* A block p of size bytes handed out by fn. */
static ASP_ALWAYS_INLINE void asp__count_alloc(struct asp_thread *t, int fast, enum asp_fn fn, void *p,
                                    size_t size, uintptr_t site)
{
	if (fast != ASP_FAST_COUNT) {
		if (fast == ASP_FAST_COUNT_SAMPLE)
			asp__count_sampled(t, fn, p, size, site);
		else if (fast != ASP_FAST_TRACK || !asp__track_put_fast(t, fn, p, size, site, 0))
			asp__track_alloc(t, fast, fn, p, size, site);
		asp__guard_made(t, p, fn);
		return;
	}
	asp__count_block(t, fn, size);
	asp__last_set(t, (uintptr_t)p, fn);
	asp__check_epoch(t);
}

/* malloc and the functions that are malloc underneath (strdup, new). */
static inline void *asp__alloc(enum asp_fn fn, size_t size, uintptr_t site)
{
	int fast = asp__state;
	if (ASP_UNLIKELY(fast <= 0))
		return asp__alloc_slow(fn, size, site);
	struct asp_thread *t = asp__thread_self();
	if (ASP_UNLIKELY(t->depth != 0))
		return asp__alloc_inside(t, size);
	void *p = asp__guard_alloc(t, size, 0);
	if (ASP_LIKELY(p == NULL))
		p = asp__next.malloc(size);
	if (ASP_LIKELY(p != NULL))
		asp__count_alloc(t, fast, fn, p, size, site);
	else
		asp__count_failed_arg(t, fn, "size", size, site);
	return p;
}

/* p, counted, goes back to the allocator, or to the pool of guarded
 * blocks (guard.h) when it is one of them. */
static ASP_ALWAYS_INLINE void asp__free_block(struct asp_thread *t, void *p, uintptr_t caller)
{
	if (ASP_UNLIKELY(asp__guard_mean != 0) && asp__guard_owns(p))
		asp__guard_free(t, p, caller);
	else
		asp__next.free(p);
}

/* free and delete. Nothing here touches errno but the allocator. Inlined
 * into each wrapper: a call less on every free. */
static ASP_ALWAYS_INLINE void asp__free(void *p, enum asp_fn fn)
{
	int fast = asp__state;
	if (ASP_UNLIKELY(fast <= 0 || p == NULL || asp__inner_owns(p))) {
		asp__free_slow(p, fn);
		return;
	}
	struct asp_thread *t = asp__thread_self();
	if (fast <= ASP_FAST_COUNT_SAMPLE) {
		if (ASP_LIKELY(t->depth == 0)) {
			asp_owned_add(&t->c.fn[fn].calls, 1);
			/* The thread's last block: whether it was sampled is
			 * known without the filter (its tag). No site to count
			 * it in when it was not. */
			if (asp__last_freed(t, (uintptr_t)p, 0)) {
				asp__next.free(p);
				return;
			}
			if (fast == ASP_FAST_COUNT_SAMPLE &&
			    ASP_UNLIKELY(asp__last_sampled(t, (uintptr_t)p))) {
				if (asp__count_temporary_sampled(t, p) == 0)
					asp__next.free(p);
				return;
			}
		}
		/* before the block can be handed out again */
		if (fast == ASP_FAST_COUNT_SAMPLE && asp__sample_forget(t, (uintptr_t)p) != 0)
			return;
	} else {
		/* one copy of the fast path for each mode that has one */
		uintptr_t caller = (uintptr_t)__builtin_return_address(0);
		int taken = fast == ASP_FAST_TRACK ? asp__track_release_fast(t, fn, p, 0, caller)
		          : fast == ASP_FAST_STACKS && asp__track_release_fast(t, fn, p, 1, caller);
		if (!taken && asp__track_release(t, fn, p, caller) != 0)
			return;
		asp__free_block(t, p, caller);
		return;
	}
	asp__next.free(p);
}

/* Count mode's malloc and free, the common case: 1 when it applied (*out
 * set), 0 for a thread without its record yet or inside the shim. With
 * sampled set (ALLOCSPY_SAMPLE), the thread counts down to its next sample
 * point too, as asp__count_sampled does. Inlined into the function a
 * wrapper jumps to, whose return address is the program's: the call site
 * is read there when a sample needs it, not passed on every call. */
static ASP_ALWAYS_INLINE int asp__alloc_counted(enum asp_fn fn, size_t size, void **out,
                                              int sampled)
{
	struct asp_thread *t = asp__thread_peek();
	if (ASP_UNLIKELY(t == NULL || t->depth != 0))
		return 0;
	void *p = asp__next.malloc(size);
	*out = p;
	if (ASP_UNLIKELY(p == NULL)) {
		/* (a tail call: its return shares no code with the rest) */
		*out = asp__count_null(t, fn);
		return 1;
	}
	asp__count_block(t, fn, size);
	asp__last_set(t, (uintptr_t)p, fn);
	if (sampled) {
		int64_t left = t->sample_left - (int64_t)size;
		t->sample_left = left;
		if (ASP_UNLIKELY(left <= 0)) {
			/* (and the epoch's check: a tail call here) */
			*out = asp__count_sample_hit(t, p, size,
			                             (uintptr_t)__builtin_return_address(0));
			return 1;
		}
	}
	asp__check_epoch(t);
	return 1;
}

/* With sampled set, a block that may be a sampled one (its filter byte
 * set, or the thread's last block with its tag) goes the general way,
 * which takes it out of the sampled table. The thread's last block, not
 * sampled, is not looked for in the filter. */
static ASP_ALWAYS_INLINE int asp__free_counted(void *p, enum asp_fn fn, int sampled)
{
	struct asp_thread *t = asp__thread_peek();
	if (ASP_UNLIKELY(p == NULL || asp__inner_owns(p) || t == NULL || t->depth != 0))
		return 0;
	uintptr_t last = t->last;	// cppcheck-suppress nullPointer
	if (sampled && (uintptr_t)p != last &&
	    (ASP_UNLIKELY(asp__sample_maybe((uintptr_t)p)) ||
	     ASP_UNLIKELY(asp__last_sampled(t, (uintptr_t)p))))
		return 0;
	asp_owned_add(&t->c.fn[fn].calls, 1);
	/* count mode: no site to count a temporary in */
	asp__last_freed(t, (uintptr_t)p, 0);
	asp__next.free(p);
	return 1;
}

/* Track mode's free and delete, with stacks or not, as asp__free with
 * ASP_FAST_STACKS or ASP_FAST_TRACK: 1 when p is counted and now the
 * caller's to free, 0 when it is not the caller's to free (the table kept
 * it for later); -1: the common case did not apply (every mode's path
 * then). */
static ASP_ALWAYS_INLINE int asp__free_tracked(void *p, enum asp_fn fn, int stacks)
{
	if (ASP_UNLIKELY(p == NULL || asp__inner_owns(p)))
		return -1;
	struct asp_thread *t = asp__thread_peek();
	if (t == NULL)
		return -1;
	uintptr_t caller = (uintptr_t)__builtin_return_address(0);
	if (asp__track_release_fast(t, fn, p, stacks, caller))
		return 1;
	return asp__track_release(t, fn, p, caller) == 0;
}

/* The wrappers of malloc, free and delete (override.c) are a few tests
 * of asp__state and one jump: to count mode's path, track mode's (with
 * stacks or not), or every mode's, all out of line here, so that the wrapper has no frame and
 * each path saves only the registers it needs. */
void *asp__malloc_count(size_t size);
void *asp__malloc_csample(size_t size);
void *asp__malloc_track(size_t size, uintptr_t site);
void *asp__malloc_stacks(size_t size, uintptr_t site);
void *asp__malloc_any(size_t size, uintptr_t site);
void asp__free_count(void *p);
void asp__free_csample(void *p);
void asp__free_track(void *p);
void asp__free_stacks(void *p);
void asp__free_any(void *p);
void asp__delete_count(void *p, enum asp_fn fn);
void asp__delete_csample(void *p, enum asp_fn fn);
void asp__delete_track(void *p, enum asp_fn fn);
void asp__delete_stacks(void *p, enum asp_fn fn);
void asp__delete_any(void *p, enum asp_fn fn);

void *asp__calloc(size_t n, size_t size, uintptr_t site);
void *asp__realloc(void *p, size_t size, uintptr_t site);
void *asp__reallocarray(void *p, size_t n, size_t size, uintptr_t site);
int asp__posix_memalign(void **out, size_t align, size_t size, uintptr_t site);
void *asp__memalign(enum asp_fn fn, size_t align, size_t size, uintptr_t site);
size_t asp__usable_size(void *p);

char *asp__strdup(enum asp_fn fn, const char *s, uintptr_t site);
char *asp__strdup_count(enum asp_fn fn, const char *s);
char *asp__strdup_csample(enum asp_fn fn, const char *s);
char *asp__strdup_track(enum asp_fn fn, const char *s, uintptr_t site);
char *asp__strdup_stacks(enum asp_fn fn, const char *s, uintptr_t site);
char *asp__strndup(enum asp_fn fn, const char *s, size_t n, uintptr_t site);
wchar_t *asp__wcsdup(const wchar_t *s, uintptr_t site);
char *asp__g_strndup(const char *s, size_t n, uintptr_t site);
void *asp__memdup(enum asp_fn fn, const void *mem, size_t size, uintptr_t site);

/* operator new: real is the libstdc++ function under the same name, used
 * when the plain path fails (new-handler, bad_alloc) or for alignment. */
void *asp__new(enum asp_fn fn, size_t size, uintptr_t site, const char *real);
void *asp__new_nothrow(enum asp_fn fn, size_t size, uintptr_t site, const char *real);
void *asp__new_aligned(enum asp_fn fn, size_t size, size_t align, int nothrow,
                       uintptr_t site, const char *real);

/* The shim's own interposer of fn (override.c). */
const void *asp__fn_address(unsigned fn);

/* Counting starts and stops (process.c): asp__init makes sure the shim is
 * set up; asp__init_slow returns 0 while this thread may not count yet
 * (dlsym or the shim's own set-up runs): the caller uses the bootstrap
 * arena then. */
void asp__init(void);
int asp__init_slow(void);

/* The exit report, once: from the last exit handler or from _exit. */
void asp__finish(void);


#endif
