/* account.c - counting each call: the per-thread counters, the live table
 * and the in-use total behind the peak.
 *
 * The fast path takes no lock and makes no shared read-modify-write in
 * any mode: it finds the thread's record, forwards the call, and bumps
 * counters the thread owns. Track mode adds one store to the block's word
 * of the table (live.h: the shadow, a word per 32-byte granule, found
 * from the address), made with the counts inside a change (account.h):
 * whoever gathers (fork, the exit report) sees counts and table agree,
 * allocs - frees == blocks in the table. A thread frees a block another
 * one allocated the same way: the program's own synchronisation, and the
 * allocator's, order the two.
 *
 * What the shadow cannot hold goes to the side table under a shard's lock
 * (live.h). A signal handler that lands inside its thread's change and
 * finds that thread holding the shard it needs never waits for it: its
 * operation waits in the thread's record for the thread's next one. A
 * deferred free keeps its block from the allocator until then, so its
 * address cannot be handed out again meanwhile.
 *
 * Sites in use (account.h): what each site holds, kept by each thread for
 * the blocks it allocates and frees, so that a snapshot's detail reads the
 * sites, not the blocks.
 *
 * The peak: each thread keeps the in-use delta it has not published and
 * publishes it in steps of ASP_PEAK_STEP bytes; the peak is the largest
 * "published total + own delta" any thread saw, reading the published
 * total when it publishes and when its delta passes the room to the peak
 * it read then (asp__peak_check). It is exact while one thread runs; with
 * several, low by at most ASP_PEAK_STEP per thread running at the same
 * time: the others' unpublished deltas, and what they published since this
 * one read the total, which is at most its own delta (asp__peak_bound). */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <wchar.h>

#include "account.h"
#include "arena.h"
#include "errors.h"
#include "live.h"
#include "sitemap.h"
#include "next.h"
#include "options.h"
#include "process.h"
#include "report.h"
#include "sample.h"
#include "snapshot.h"
#include "stack.h"


int asp__state;

int asp__fast_mode(void)
{
	int sample = asp__sample_mean != 0;
	if (asp__opt.mode == ASP_MODE_COUNT)
		return sample ? ASP_FAST_COUNT_SAMPLE : ASP_FAST_COUNT;
	return sample ? ASP_FAST_SAMPLE : asp__opt.backtrace > 1 ? ASP_FAST_STACKS : ASP_FAST_TRACK;
}
pid_t asp__frozen;
uint32_t asp__epoch;
struct asp_figures asp__figures;

/* The record to count in, or NULL to forward without counting. */
static inline struct asp_thread *enter(void)
{
	if (ASP_UNLIKELY(asp__state <= 0))
		return NULL;
	struct asp_thread *t = asp__thread_self();
	return ASP_LIKELY(t->depth == 0) ? t : NULL;
}

void asp__wait_frozen(void)
{
	pid_t reader = asp_atomic_load_acquire(&asp__frozen);
	if (reader == 0 || reader == asp_gettid())
		return;
	while (asp_atomic_load_acquire(&asp__frozen) != 0)
		sched_yield();
}

/* In-use total and peak ----------------------------------------------- */

uint64_t asp__peak_bound(void)
{
	int most = asp_atomic_load_relaxed(&asp__threads_active_max);
	return most > 1 ? (uint64_t)most * ASP_PEAK_STEP : 0;
}

static ASP_COLD void raise_peak(int64_t seen)
{
	int64_t peak = asp_atomic_load_relaxed(&asp__figures.peak);
	while (seen > peak && !asp_atomic_cas_relaxed(&asp__figures.peak, &peak, seen))
		;
	/* A growing heap sets a new peak at nearly every allocation: its time
	 * is taken each time it has grown by 1/64 since. */
	int64_t last = asp_atomic_load_relaxed(&asp__figures.peak_timed);
	if (seen > peak && seen - last >= last / 64) {
		asp_atomic_store_relaxed(&asp__figures.peak_timed, seen);
		asp_atomic_store_relaxed(&asp__figures.peak_ns, asp_now_ns(CLOCK_MONOTONIC));
	}
}

void asp__peak_at_least(int64_t bytes)
{
	if (bytes > asp_atomic_load_relaxed(&asp__figures.peak))
		raise_peak(bytes);
}

/* t's rooms from a total in use read now (see asp__peak_check). */
static void rooms_from(struct asp_thread *t, int64_t in_use)
{
	t->peak_room = asp_atomic_load_relaxed(&asp__figures.peak) - in_use;
	int64_t next = asp_atomic_load_relaxed(&asp__snapshot_peak_next);
	t->detail_room = next == INT64_MAX ? INT64_MAX : next - in_use;
}

void asp__publish(struct asp_thread *t)
{
	/* Between the two counts the change is in both t's record and the
	 * total: asp__in_use_read tries again over such a moment. */
	__atomic_add_fetch(&asp__figures.pub_begun, 1, __ATOMIC_SEQ_CST);
	int64_t total = asp_atomic_add_relaxed(&asp__figures.in_use, t->net);
	asp_atomic_add_relaxed(&asp__figures.in_use_blocks, t->net_blocks);
	uint64_t volume = t->volume;
	asp_atomic_store_relaxed(&t->net, 0);
	asp_atomic_store_relaxed(&t->net_blocks, 0);
	__atomic_add_fetch(&asp__figures.pub_done, 1, __ATOMIC_RELEASE);
	t->volume = 0;
	if (total > asp_atomic_load_relaxed(&asp__figures.peak))
		raise_peak(total);
	asp__snapshot_note(t, volume, total);
	rooms_from(t, total);
}

/* t's net change passed its room to the peak: the published total is read
 * again, and the peak raised when the total and t's change are above it.
 * Between two checks the shared figures are not read at all, so that
 * threads that publish often do not make every other thread's operations
 * miss the cache (10 threads on 2 cores: thread_perf in track mode 3.65x ->
 * 3.25x). Alone, a thread's rooms are exact (only it publishes); with
 * others, what they published since it read the total is unseen until its
 * delta passes the room or ASP_PEAK_STEP: the bound counts every thread. */
void asp__peak_check(struct asp_thread *t, int64_t net)
{
	int64_t in_use = asp_atomic_load_relaxed(&asp__figures.in_use);
	if (in_use + net > asp_atomic_load_relaxed(&asp__figures.peak))
		raise_peak(in_use + net);
	rooms_from(t, in_use);
}

/* Counting ------------------------------------------------------------- */

ASP_COLD void asp__count_failed(struct asp_thread *t, enum asp_fn fn)
{
	asp_owned_add(&t->c.fn[fn].calls, 1);
	asp_owned_add(&t->c.fn[fn].failed, 1);
}

ASP_COLD void asp__count_failed_arg(struct asp_thread *t, enum asp_fn fn, const char *arg,
                                    uint64_t value, uintptr_t site)
{
	asp__count_failed(t, fn);
	if (arg != NULL && asp__fishy(value) && asp__state >= ASP_FAST_TRACK)
		asp__error_fishy(t, fn, arg, value, site);
}

ASP_COLD void *asp__count_null(struct asp_thread *t, enum asp_fn fn)
{
	asp__count_failed(t, fn);
	return NULL;
}

/* Per-stack totals ------------------------------------------------------ */

static inline uint32_t site_slot(uintptr_t site, uint32_t mask)
{
	return (uint32_t)(asp_hash(site) >> 40) & mask;
}

/* A thread's first table fits a page (most threads allocate from a few
 * stacks, and a page's first touch costs a fault: some 12 us on a virtual
 * machine); it doubles from there. An entry before the table holds its
 * mask in its site field: another thread reads the table and its mask
 * from the one pointer (asp__threads_sites). */
#define ASP_SITES_FIRST 64

static ASP_COLD int sites_grow(struct asp_thread *t)
{
	uint32_t slots = t->sites ? (t->site_mask + 1) * 2 : ASP_SITES_FIRST;
	struct asp_site_stat *n = asp__pages_alloc((size_t)(slots + 1) * sizeof *n);
	if (n == NULL)
		return -ENOMEM;
	n->site = slots - 1;
	n++;
	for (uint32_t i = 0; t->sites && i <= t->site_mask; i++) {
		const struct asp_site_stat *o = &t->sites[i];
		if (o->site == 0)
			continue;
		uint32_t j = site_slot(o->site, slots - 1);
		while (n[j].site != 0)
			j = (j + 1) & (slots - 1);
		n[j] = *o;
	}
	/* The old table stays mapped: the exit report may be reading it. */
	t->site_hot = 0;
	t->site_mask = slots - 1;
	asp_atomic_store_release(&t->sites, n);
	return 0;
}

/* The thread's totals for stack id site (not 0), made on first use; NULL
 * when memory runs out. */
static ASP_NOINLINE struct asp_site_stat *site_find(struct asp_thread *t, uintptr_t site)
{
	if (t->sites == NULL || (t->nsites + 1) * 4 > (t->site_mask + 1) * 3)
		if (sites_grow(t) != 0)
			return NULL;
	uint32_t j = site_slot(site, t->site_mask);
	while (t->sites[j].site != 0 && t->sites[j].site != site)
		j = (j + 1) & t->site_mask;
	struct asp_site_stat *s = &t->sites[j];
	if (s->site == 0) {
		asp_atomic_store_relaxed(&s->site, site);
		t->nsites++;
	}
	t->site_hot = site;
	t->site_hot_stat = s;
	return s;
}

static inline struct asp_site_stat *site_of(struct asp_thread *t, uintptr_t site)
{
	if (ASP_LIKELY(site == t->site_hot && site != 0))
		return t->site_hot_stat;
	return site != 0 ? site_find(t, site) : NULL;
}

void asp__site_add(struct asp_thread *t, uintptr_t site, size_t size)
{
	struct asp_site_stat *s = site_of(t, site);
	if (s != NULL) {
		asp_owned_add(&s->allocs, 1);
		asp_owned_add(&s->bytes, size);
	}
}

/* A sampled allocation (sample.h): what it stands for, with the weight
 * asp__sample_hit left in t->sample_w. */
static void site_add_sampled(struct asp_thread *t, uintptr_t site, size_t size)
{
	struct asp_site_stat *s = site_of(t, site);
	if (s != NULL) {
		asp_owned_add(&s->allocs, 1);
		asp_owned_add(&s->bytes, size);
		s->est_allocs += t->sample_w;
		s->est_bytes += t->sample_w * (double)size;
	}
}

/* A free of the block this thread allocated last, before it allocated
 * anything else: a temporary allocation. */
void asp__count_temporary(struct asp_thread *t)
{
	asp_owned_add(&t->c.fn[t->last_fn].temporary, 1);
	uintptr_t site = t->last_site;
	/* (count mode with ALLOCSPY_SAMPLE: asp__count_temporary_sampled) */
	if (site != 0 && (asp__state == ASP_FAST_STACKS ||
	                  (asp__state == ASP_FAST_SAMPLE && asp__site_sampled(site)))) {
		struct asp_site_stat *s = site_of(t, site);
		if (s != NULL) {
			asp_owned_add(&s->temporary, 1);
			if (asp__site_sampled(site))
				s->est_temporary += t->sample_w;
		}
	}
	t->last = 0;
}

/* Count mode with ALLOCSPY_SAMPLE: the allocation reached the thread's
 * sample point. */
void *asp__count_sample_hit(struct asp_thread *t, void *p, size_t size, uintptr_t site)
{
	site = asp__sample_hit(t, site, size);
	if (asp__site_sampled(site)) {
		site_add_sampled(t, site, size);
		asp__sample_keep(t, (uintptr_t)p, size, site);
		t->last_site = site;
		t->last = (uintptr_t)p | 1;
	}
	asp__check_epoch(t);
	return p;
}

int asp__count_temporary_sampled(struct asp_thread *t, void *p)
{
	asp_owned_add(&t->c.fn[t->last_fn].temporary, 1);
	t->last = 0;
	struct asp_site_stat *s = site_of(t, t->last_site);
	if (s != NULL) {
		asp_owned_add(&s->temporary, 1);
		s->est_temporary += t->sample_w;
	}
	return asp__sample_take(t, (uintptr_t)p, NULL, 1) < 0;
}

/* Changes and gatherers (account.h) ---------------------------------------- */

int asp__gathering;

void asp__gather_begin(const struct asp_thread *self)
{
	asp_atomic_add_relaxed(&asp__gathering, 1);
	asp__fence_others();
	uint64_t deadline = 0;
	for (struct asp_thread *x = asp__threads_list(); x != NULL; x = x->next) {
		uint64_t cpu0 = 0;
		while (x != self && asp_atomic_load_acquire(&x->chg) != 0) {
			uint64_t now = asp_now_ns(CLOCK_MONOTONIC);
			if (deadline == 0)
				deadline = now + ASP_WAIT_NS;
			if (now < deadline) {
				sched_yield();
				continue;
			}
			/* a thread that only waits for a core is waited for, in
			 * sleeps that leave it the core */
			if (now - deadline >= ASP_WAIT_BEHIND_NS || !asp__thread_behind(x->tid, &cpu0))
				break;
			struct timespec pause = { 0, 100000 };
			nanosleep(&pause, NULL);
		}
	}
}

void asp__gather_end(void)
{
	asp_atomic_add_relaxed(&asp__gathering, -1);
}

/* A change that could not begin (a gatherer reads): begun once the
 * gatherer is done. Returns whether it is nested in one of the thread's
 * own (a signal handler's). */
static int change_enter(struct asp_thread *t)
{
	int nested = t->chg != 0;
	while (!asp__change_begin(t))
		while (asp_atomic_load_acquire(&asp__gathering) != 0)
			sched_yield();
	return nested;
}

void asp__in_use_read(int64_t *bytes, int64_t *blocks)
{
	/* A handler that interrupted its own thread's publish would see it
	 * halfway at every try: the tries are bounded. */
	for (int tries = 0; tries < 64; tries++) {
		uint64_t done = __atomic_load_n(&asp__figures.pub_done, __ATOMIC_ACQUIRE);
		int64_t b = asp_atomic_load_acquire(&asp__figures.in_use);
		int64_t n = asp_atomic_load_acquire(&asp__figures.in_use_blocks);
		for (const struct asp_thread *x = asp__threads_list(); x != NULL;
		     x = asp_atomic_load_acquire(&x->next)) {
			b += asp_atomic_load_acquire(&x->net);
			n += asp_atomic_load_acquire(&x->net_blocks);
		}
		*bytes = b;
		*blocks = n;
		if (__atomic_load_n(&asp__figures.pub_begun, __ATOMIC_SEQ_CST) == done)
			return;
		asp_cpu_relax();
	}
}

uint64_t asp__in_use_blocks(void)
{
	int64_t bytes, n;
	asp__in_use_read(&bytes, &n);
	return n > 0 ? (uint64_t)n : 0;
}

/* Sites in use (account.h) ------------------------------------------------ */

#define SITE_USE_DIR ((size_t)(ASP_SITE_INDEX_MAX + 1) >> ASP_SITE_USE_CHUNK_BITS)

/* t's entry for site index i, made when it has none; NULL without memory.
 * Outside any change: the arena's lock may be taken. */
static ASP_NOINLINE struct asp_site_use *site_use_make(struct asp_thread *t, uint32_t i)
{
	struct asp_site_use *u = asp__site_use(t, i);
	if (u != NULL)
		return u;
	struct asp_site_use **dir = t->site_use;
	if (dir == NULL) {
		/* reserved, backed where used: a page per 512 chunks */
		int saved = errno;
		size_t bytes = SITE_USE_DIR * sizeof(struct asp_site_use *);
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		errno = saved;
		if (m == MAP_FAILED)
			return NULL;
		asp__arena_adopt(m, bytes);
		dir = m;
		asp_atomic_store_release(&t->site_use, dir);
	}
	struct asp_site_use *c = asp__arena_alloc(ASP_SITE_USE_CHUNK * sizeof *c);
	if (c == NULL)
		return NULL;
	asp_atomic_store_release(&dir[i >> ASP_SITE_USE_CHUNK_BITS], c);
	return &c[i & (ASP_SITE_USE_CHUNK - 1)];
}

/* A block of size bytes more (sign 1) or less (-1) for the site whose
 * entry is u (NULL: none), with its estimate when it was sampled. */
static inline void site_use_add(struct asp_site_use *u, uintptr_t site, uint64_t size, int sign)
{
	if (u == NULL)
		return;
	asp_owned_add(&u->bytes, (int64_t)size * sign);
	asp_owned_add(&u->blocks, sign);
	if (ASP_UNLIKELY(asp__site_sampled(site))) {
		double w = asp__sample_weight(size);
		u->est_bytes += sign * w * (double)size;
		u->est_blocks += sign * w;
	}
}

void asp__site_use_sum(void (*fn)(void *arg, uint32_t index, const struct asp_site_use *u),
                       void *arg)
{
	uint32_t n = asp_atomic_load_acquire(&asp__site_count);
	for (const struct asp_thread *x = asp__threads_list(); x != NULL; x = x->next) {
		struct asp_site_use **dir = asp_atomic_load_acquire(&x->site_use);
		if (dir == NULL)
			continue;
		for (uint32_t c = 0; c <= (n >> ASP_SITE_USE_CHUNK_BITS); c++) {
			const struct asp_site_use *chunk = asp_atomic_load_acquire(&dir[c]);
			for (uint32_t k = 0; chunk != NULL && k < ASP_SITE_USE_CHUNK; k++)
				if (chunk[k].blocks != 0 || chunk[k].bytes != 0)
					fn(arg, (c << ASP_SITE_USE_CHUNK_BITS) | k, &chunk[k]);
		}
	}
}

/* Deferred table operations ------------------------------------------------
 *
 * A signal handler that lands inside its thread's change, and must reach
 * a side shard that thread holds, leaves its operation in the record: the
 * thread makes it at its next one. A deferred free keeps its block from
 * the allocator until then, so its address cannot be handed out again. */

static int defer(struct asp_thread *t, uintptr_t ptr, uint64_t size, unsigned fn, uintptr_t site,
                 int op)
{
	uint32_t n = t->ndefer;
	if (n == ASP_MAX_DEFERRED)
		return -1;
	t->defer[n] = (struct asp_deferred){ ptr, size, fn, site, op };
	asp_atomic_store_release(&t->ndefer, n + 1);
	return 0;
}

/* A free of a block the table held (found) or not, in the counters. */
static void release_counted(struct asp_thread *t, enum asp_fn fn, int found,
                            const struct asp_live_entry *e)
{
	struct asp_fn_stat *st = &t->c.fn[fn];
	asp_owned_add(&st->calls, 1);
	if (found)
		asp_owned_add(&st->bytes, e->size);
	else
		asp_owned_add(&t->c.untracked_frees, 1);
}

/* A deferred operation, made inside a change of the thread's own, or by
 * fork's child, which holds everything. Returns the size of the block it
 * took out of the table, or -1 when it took none. */
static int64_t deferred_op(struct asp_thread *t, const struct asp_deferred *d)
{
	struct asp_live_entry e;
	uint32_t si = 0;
	if (d->op == ASP_DEFER_INSERT) {
		asp__live_insert(d->ptr, d->size, (unsigned)d->fn, d->site,
		                 asp__site_index_slow(NULL, d->site), (uintptr_t)t, 0);
		return -1;
	}
	int found = asp__live_remove(d->ptr, &e, &si, (uintptr_t)t, 0) == 1;
	if (found)
		site_use_add(asp__site_use(t, si), e.site, e.size, -1);
	if (d->op == ASP_DEFER_FREE) {
		release_counted(t, (enum asp_fn)d->fn, found, &e);
	} else if (found) {
		/* realloc counted it as a free of an unknown block */
		asp_owned_add(&t->c.untracked_frees, (uint64_t)-1);
		asp_owned_add(&t->c.realloc_freed_bytes, e.size);
	}
	return found ? (int64_t)e.size : -1;
}

/* Makes the table operations a signal handler left, in their order. Only
 * outside any change: then every side shard can be waited for. A handler
 * that lands between two of them is outside any change too: it makes its
 * own operations directly and leaves the list to this loop, which would
 * otherwise be made twice, each free too. One that lands inside this
 * loop's change may add to the list: the loop reads its length again. */
static ASP_COLD void flush_deferred(struct asp_thread *t)
{
	if (t->flushing)
		return;
	asp_atomic_store_relaxed(&t->flushing, 1);
	for (uint32_t i = 0; i < asp_atomic_load_acquire(&t->ndefer); i++) {
		struct asp_deferred d = t->defer[i];
		change_enter(t);
		int64_t released = deferred_op(t, &d);
		t->defer_done = i + 1;	/* fork's child goes on from there */
		asp__change_end(t);
		if (released >= 0)
			asp__net_shrink(t, (uint64_t)released);
		if (d.op == ASP_DEFER_FREE) {
			asp__wait_frozen();
			asp__free_block(t, (void *)d.ptr, 0);
		}
	}
	asp_atomic_store_release(&t->ndefer, 0);
	t->defer_done = 0;
	asp_atomic_store_release(&t->flushing, 0);
}

/* A thread's end (its key destructor): what it deferred is made, and its
 * delta published. */
void asp__account_thread_exit(struct asp_thread *t)
{
	if (t->ndefer != 0 && t->chg == 0)
		flush_deferred(t);
	if (t->chg != 0)	/* a handler that interrupted a change ended the thread */
		asp_atomic_store_release(&t->chg, 0);
	asp__publish(t);
}

/* fork's child, for a record whose thread did not come along. The child
 * holds everything: the operations are made directly, and the delta
 * added without a snapshot. */
void asp__account_thread_gone(struct asp_thread *t)
{
	t->chg = 0;
	/* a free made between two of them is left: the block stays the
	 * child's (a free made twice would be worse) */
	for (uint32_t i = t->flushing ? t->defer_done : 0; i < t->ndefer; i++) {
		struct asp_deferred d = t->defer[i];
		int64_t released = deferred_op(t, &d);
		if (released >= 0)
			t->net -= released, t->net_blocks--;
		if (d.op == ASP_DEFER_FREE)
			asp__free_block(NULL, (void *)d.ptr, 0);
	}
	t->ndefer = t->defer_done = t->flushing = 0;
	asp__figures.in_use += t->net;
	asp__figures.in_use_blocks += t->net_blocks;
	t->net = t->net_blocks = 0;
}

/* Track mode --------------------------------------------------------------- */

/* The per-stack totals and estimates of an allocation from site. */
static inline void site_counted(struct asp_thread *t, int fast, uintptr_t site, size_t size)
{
	if (fast == ASP_FAST_STACKS)
		asp__site_add(t, site, size);
	else if (ASP_UNLIKELY(asp__site_sampled(site)))
		site_add_sampled(t, site, size);
}

/* The whole path, once the site is known. */
static ASP_NOINLINE void track_put(struct asp_thread *t, int fast, enum asp_fn fn, void *p,
                                   size_t size, uintptr_t site)
{
	if (ASP_UNLIKELY(t->ndefer != 0) && t->chg == 0)
		flush_deferred(t);
	uint32_t si = asp__site_index(t, site);
	struct asp_site_use *u = asp__site_use(t, si);
	if (ASP_UNLIKELY(u == NULL) && t->chg == 0)
		u = site_use_make(t, si);
	/* the fast path's next time: the entry beside the index it cached */
	struct asp_site_cache *c = &t->site_cache[asp__site_cache_slot(site)];
	if (u != NULL && c->site == site && c->index == si && (si != 0 || site == 0))
		c->use = u;
	int nested = change_enter(t);
	int r = asp__live_insert((uintptr_t)p, size, fn, site, si, (uintptr_t)t, nested);
	if (ASP_UNLIKELY(r == -EAGAIN))
		defer(t, (uintptr_t)p, size, fn, site, ASP_DEFER_INSERT);
	asp__count_block(t, fn, size);
	site_counted(t, fast, site, size);
	site_use_add(u, site, size, 1);
	asp__change_end(t);
	asp__last_set(t, (uintptr_t)p, fn);
	t->last_site = site;
	asp__net_grow(t, size);
	asp__check_epoch(t);
}

static ASP_ALWAYS_INLINE void track_alloc(struct asp_thread *t, int fast, enum asp_fn fn, void *p,
                                         size_t size, uintptr_t site)
{
	if (fast == ASP_FAST_STACKS)
		site = asp__stack_take(t, site);
	else if (fast == ASP_FAST_SAMPLE)
		site = asp__sample_site(t, site, size);
	if (fast == ASP_FAST_SAMPLE ||
	    !asp__track_put_fast(t, fn, p, size, site, fast == ASP_FAST_STACKS))
		track_put(t, fast, fn, p, size, site);
}

void asp__track_alloc(struct asp_thread *t, int fast, enum asp_fn fn, void *p, size_t size,
                      uintptr_t site)
{
	track_alloc(t, fast, fn, p, size, site);
}

/* Before a free: the heap may be at its peak, and who holds it is read
 * before it shrinks. */
static inline void peak_before_free(struct asp_thread *t)
{
	if (ASP_UNLIKELY(t->net >= t->detail_room)) {
		int64_t in_use = asp_atomic_load_relaxed(&asp__figures.in_use);
		if (in_use + t->net >= asp_atomic_load_relaxed(&asp__snapshot_peak_next))
			asp__snapshot_peak(t, in_use + t->net);
		rooms_from(t, in_use);
	}
}

/* A free found no live block at p (r is 0): an invalid free, reported as
 * valgrind reports it, unless the shim itself frees (depth > 0). */
static inline int invalid_free(struct asp_thread *t, enum asp_fn fn, void *p, uintptr_t caller)
{
	if (t->depth != 0)
		return 0;
	asp__error_invalid_free(t, fn, (uintptr_t)p, caller);
	return 1;
}

int asp__track_release(struct asp_thread *t, enum asp_fn fn, void *p, uintptr_t caller)
{
	if (ASP_UNLIKELY(t->ndefer != 0) && t->chg == 0)
		flush_deferred(t);
	peak_before_free(t);
	struct asp_live_entry e;
	uint32_t si = 0;
	int nested = change_enter(t);
	int r = asp__live_remove((uintptr_t)p, &e, &si, (uintptr_t)t, nested);
	if (ASP_UNLIKELY(r == -EAGAIN)) {
		asp__change_end(t);
		/* A handler inside its thread's side shard: p waits in the
		 * record, still allocated; when that is full it is freed now
		 * and its entry stays (counted as freed: the totals stay
		 * right). */
		if (t->depth == 0 && defer(t, (uintptr_t)p, 0, fn, 0, ASP_DEFER_FREE) == 0)
			return 1;
		if (t->depth == 0)
			release_counted(t, fn, 0, NULL);
		return 0;
	}
	int found = r == 1;
	/* The shim's own frees (depth > 0) count only when the block is the
	 * program's: a signal handler's, landing inside the shim. */
	if (t->depth == 0 || found)
		release_counted(t, fn, found, &e);
	if (found)
		site_use_add(asp__site_use(t, si), e.site, e.size, -1);
	asp__change_end(t);
	if (!found)
		return invalid_free(t, fn, p, caller);
	asp__freed_note(t, (uintptr_t)p, asp__live_pack((uintptr_t)p, e.size, e.fn, si), caller);
	if (!asp__families_match(e.fn, fn) && t->depth == 0)
		asp__error_mismatch(t, fn, &e, caller);
	asp__last_freed(t, (uintptr_t)p, 1);
	asp__net_shrink(t, e.size);
	if (ASP_UNLIKELY(asp_atomic_load_relaxed(&asp__frozen) != 0))
		asp__wait_frozen();
	return 0;
}

/* realloc's first half: p leaves the table and the free is counted.
 * Returns its entry's size with *e filled; -1: p is no live block (an
 * invalid realloc, reported: the caller leaves p alone and returns NULL,
 * as valgrind does); -2: the caller goes on without it (a signal handler
 * inside its thread's side shard, or reallocarray's own block). */
static int64_t untrack_realloc(struct asp_thread *t, void *p, struct asp_live_entry *e, int array,
                               uintptr_t caller)
{
	if (ASP_UNLIKELY(t->ndefer != 0) && t->chg == 0)
		flush_deferred(t);
	uint32_t si = 0;
	int nested = change_enter(t);
	int r = asp__live_remove((uintptr_t)p, e, &si, (uintptr_t)t, nested);
	if (r == -EAGAIN)
		defer(t, (uintptr_t)p, 0, ASP_FN_REALLOC, 0, ASP_DEFER_UNTRACK);
	int found = r == 1;
	if (!array)
		asp_owned_add(&t->c.realloc_frees, 1);
	if (found) {
		asp_owned_add(&t->c.realloc_freed_bytes, e->size);
		site_use_add(asp__site_use(t, si), e->site, e->size, -1);
	} else {
		asp_owned_add(&t->c.untracked_frees, 1);
	}
	asp__change_end(t);
	if (found) {
		if ((uintptr_t)p == t->last)
			t->last = 0;
		asp__freed_note(t, (uintptr_t)p, asp__live_pack((uintptr_t)p, e->size, e->fn, si),
		                caller);
		if (!asp__families_match(e->fn, ASP_FN_FREE))
			asp__error_mismatch(t, array ? ASP_FN_REALLOCARRAY : ASP_FN_REALLOC, e, caller);
		asp__net_shrink(t, e->size);
	} else if (r == 0 && !array && t->in_reallocarray == 0) {
		asp__error_invalid_free(t, ASP_FN_REALLOC, (uintptr_t)p, caller);
	}
	if (ASP_UNLIKELY(asp_atomic_load_relaxed(&asp__frozen) != 0))
		asp__wait_frozen();
	/* (valgrind 3.19 never sees reallocarray: the blocks it made are
	 * no live blocks to the table, and go on to the allocator) */
	return found ? (int64_t)e->size : r == 0 && !array && t->in_reallocarray == 0 ? -1 : -2;
}

/* A failed realloc leaves p where it was: back into the table, and the
 * attempt counted as valgrind does (an alloc of the new size). */
static void retrack_realloc(struct asp_thread *t, void *p, const struct asp_live_entry *e,
                            int64_t old, size_t bytes, int array, uintptr_t site)
{
	enum asp_fn fn = array ? ASP_FN_REALLOCARRAY : ASP_FN_REALLOC;
	if (!array && asp__fishy(bytes))
		asp__error_fishy(t, fn, "size", bytes, site);
	uint32_t si = old >= 0 ? asp__site_index(t, e->site) : 0;
	int nested = change_enter(t);
	if (old >= 0) {
		if (asp__live_insert((uintptr_t)p, e->size, e->fn, e->site, si, (uintptr_t)t,
		                     nested) == -EAGAIN)
			defer(t, (uintptr_t)p, e->size, e->fn, e->site, ASP_DEFER_INSERT);
		site_use_add(asp__site_use(t, si), e->site, e->size, 1);
	}
	asp__count_failed(t, fn);
	if (!array) {
		asp_owned_add(&t->c.fn[fn].bytes, bytes);
		asp_owned_add(&t->c.hist[asp_hist_bucket(bytes)], 1);
		asp_owned_add(&t->c.realloc_failed_moves, 1);
	}
	asp__change_end(t);
	if (old >= 0)
		asp__net_grow(t, (uint64_t)old);
}

/* The allocation functions ------------------------------------------------ */

/* The result of an allocation function: counted when it is a block. */
static inline void count_result(struct asp_thread *t, enum asp_fn fn, void *p, size_t size,
                                uintptr_t site)
{
	if (ASP_LIKELY(p != NULL))
		asp__count_alloc(t, asp__state, fn, p, size, site);
	else
		asp__count_failed_arg(t, fn, fn == ASP_FN_CALLOC ? NULL : "size", size, site);
}

/* The wrappers' paths (account.h). Count mode's, taken when the wrapper
 * saw asp__state say count, count mode with ALLOCSPY_SAMPLE's and track
 * mode's; their rare cases take every mode's. */
void *asp__malloc_count(size_t size)
{
	void *p;
	if (ASP_LIKELY(asp__alloc_counted(ASP_FN_MALLOC, size, &p, 0)))
		return p;
	return asp__malloc_any(size, 0);
}

void *asp__malloc_csample(size_t size)
{
	void *p;
	if (ASP_LIKELY(asp__alloc_counted(ASP_FN_MALLOC, size, &p, 1)))
		return p;
	return asp__malloc_any(size, (uintptr_t)__builtin_return_address(0));
}

/* Track mode's malloc, with stacks (fast ASP_FAST_STACKS) or not
 * (ASP_FAST_TRACK), the common case: 1 when it applied (*out set), 0 for
 * a thread without its record yet or inside the shim. What asp__alloc
 * does when it reads that mode, with the mode and fn known here. */
static ASP_ALWAYS_INLINE int alloc_tracked(int fast, enum asp_fn fn, size_t size, void **out,
                                           uintptr_t site)
{
	struct asp_thread *t = asp__thread_peek();
	if (ASP_UNLIKELY(t == NULL || t->depth != 0))
		return 0;
	void *p = asp__guard_alloc(t, size, 0);
	if (ASP_LIKELY(p == NULL))
		p = asp__next.malloc(size);
	*out = p;
	if (ASP_UNLIKELY(p == NULL))
		asp__count_failed_arg(t, fn, "size", size, site);
	else if (fast == ASP_FAST_STACKS)
		track_alloc(t, ASP_FAST_STACKS, fn, p, size, site);
	else if (!asp__track_put_fast(t, fn, p, size, site, 0))
		track_put(t, ASP_FAST_TRACK, fn, p, size, site);
	if (p != NULL)
		asp__guard_made(t, p, fn);
	return 1;
}

void *asp__malloc_track(size_t size, uintptr_t site)
{
	void *p;
	if (ASP_LIKELY(alloc_tracked(ASP_FAST_TRACK, ASP_FN_MALLOC, size, &p, site)))
		return p;
	return asp__malloc_any(size, site);
}

void *asp__malloc_stacks(size_t size, uintptr_t site)
{
	void *p;
	if (ASP_LIKELY(alloc_tracked(ASP_FAST_STACKS, ASP_FN_MALLOC, size, &p, site)))
		return p;
	return asp__malloc_any(size, site);
}

void *asp__malloc_any(size_t size, uintptr_t site)
{
	return asp__alloc(ASP_FN_MALLOC, size, site);
}

void asp__free_count(void *p)
{
	if (ASP_UNLIKELY(!asp__free_counted(p, ASP_FN_FREE, 0)))
		asp__free_any(p);
}

void asp__free_csample(void *p)
{
	if (ASP_UNLIKELY(!asp__free_counted(p, ASP_FN_FREE, 1)))
		asp__free_any(p);
}

/* Track mode's free and delete, with stacks or not: the common case of
 * asp__free_tracked, every mode's path for the rest. */
static ASP_ALWAYS_INLINE void release_tracked(void *p, enum asp_fn fn, int stacks)
{
	int r = asp__free_tracked(p, fn, stacks);
	if (ASP_LIKELY(r > 0))
		asp__free_block(asp__thread_peek(), p, (uintptr_t)__builtin_return_address(0));
	else if (r < 0)
		asp__delete_any(p, fn);
}

void asp__free_track(void *p)
{
	release_tracked(p, ASP_FN_FREE, 0);
}

void asp__free_stacks(void *p)
{
	release_tracked(p, ASP_FN_FREE, 1);
}

void asp__free_any(void *p)
{
	asp__free(p, ASP_FN_FREE);
}

void asp__delete_count(void *p, enum asp_fn fn)
{
	if (ASP_UNLIKELY(!asp__free_counted(p, fn, 0)))
		asp__delete_any(p, fn);
}

void asp__delete_csample(void *p, enum asp_fn fn)
{
	if (ASP_UNLIKELY(!asp__free_counted(p, fn, 1)))
		asp__delete_any(p, fn);
}

void asp__delete_track(void *p, enum asp_fn fn)
{
	release_tracked(p, fn, 0);
}

void asp__delete_stacks(void *p, enum asp_fn fn)
{
	release_tracked(p, fn, 1);
}

void asp__delete_any(void *p, enum asp_fn fn)
{
	asp__free(p, fn);
}

void *asp__alloc_slow(enum asp_fn fn, size_t size, uintptr_t site)
{
	if (asp__state == ASP_STATE_START && !asp__init_slow())
		return asp__boot_alloc(size, 16);
	void *p = asp__next.malloc(size);
	struct asp_thread *t = enter();
	if (t != NULL)
		count_result(t, fn, p, size, site);
	return p;
}

/* An allocation inside the shim: forwarded uncounted for a caller that
 * counts it, else the shim's own (libunwind's, say). */
void *asp__alloc_inside(struct asp_thread *t, size_t size)
{
	if (t->forward != 0)
		return asp__next.malloc(size);
	void *p = asp__heap_alloc(size ? size : 1);
	if (p == NULL)
		errno = ENOMEM;
	return p;
}

/* The record of a thread inside the shim that allocates its own memory
 * (not forwarding), or NULL. */
static inline struct asp_thread *inside(void)
{
	if (ASP_UNLIKELY(asp__state <= 0))
		return NULL;
	struct asp_thread *t = asp__thread_self();
	return t->depth != 0 && t->forward == 0 ? t : NULL;
}

/* The thread-vector slots the shim's own libraries added (libunwind has
 * TLS), and the loader's text, where every thread's vector is allocated. */
int asp__dtv_extra;
uintptr_t asp__ldso_lo, asp__ldso_hi;

/* ld.so callocs each new thread's DTV: one 16-byte slot per TLS module
 * and 16 more. A module of the shim's makes it larger than in the same
 * program without the shim; the block is counted at the size the program
 * alone would ask for (the allocator still gets the real request). */
static size_t program_size(size_t n, size_t size, size_t bytes, uintptr_t site)
{
	if (ASP_LIKELY(asp__dtv_extra == 0) || size != 16 || n < 16 + (size_t)asp__dtv_extra ||
	    site < asp__ldso_lo || site >= asp__ldso_hi)
		return bytes;
	return bytes - 16 * (size_t)asp__dtv_extra;
}

void *asp__calloc(size_t n, size_t size, uintptr_t site)
{
	size_t bytes;
	int overflow = __builtin_mul_overflow(n, size, &bytes);
	if (ASP_UNLIKELY(asp__state == ASP_STATE_START) && !asp__init_slow())
		return overflow ? NULL : asp__boot_alloc(bytes, 16);
	if (ASP_UNLIKELY(inside() != NULL)) {
		void *q = overflow ? NULL : asp__heap_alloc(bytes ? bytes : 1);
		if (q != NULL)
			memset(q, 0, bytes);
		return q;
	}
	struct asp_thread *t = enter();
	void *p = t != NULL && !overflow ? asp__guard_alloc(t, bytes, 1) : NULL;
	if (ASP_LIKELY(p == NULL))
		p = asp__next.calloc(n, size);
	/* (valgrind refuses an overflowing product before it looks) */
	if (ASP_UNLIKELY(p == NULL) && t != NULL && asp__state >= ASP_FAST_TRACK && !overflow) {
		if (asp__fishy(n))
			asp__error_fishy(t, ASP_FN_CALLOC, "nmemb", n, site);
		if (asp__fishy(size))
			asp__error_fishy(t, ASP_FN_CALLOC, "size", size, site);
	}
	if (ASP_LIKELY(t != NULL))
		count_result(t, ASP_FN_CALLOC, p, overflow ? bytes : program_size(n, size, bytes, site),
		             site);
	return p;
}

/* A block valgrind 3.19 never sees: glibc's reallocarray reaches its
 * allocator without passing valgrind's realloc. It is counted in the
 * function's calls and bytes, not in the heap totals nor the table; the
 * block it releases is no free either. A later free() of its block counts
 * as valgrind counts it: a free of an unknown block. */
static void count_invisible(struct asp_thread *t, enum asp_fn fn, size_t size)
{
	asp_owned_add(&t->c.fn[fn].calls, 1);
	asp_owned_add(&t->c.fn[fn].bytes, size);
	asp_owned_add(&t->c.invisible_blocks, 1);
}

/* realloc of a guarded block (guard.h): a new block from the allocator,
 * the old one's bytes copied, the old one back to the pool, as realloc
 * does; NULL (the old block kept) when the allocator has none. */
static void *guard_realloc(struct asp_thread *t, void *p, size_t bytes, uintptr_t site)
{
	if (bytes == 0) {
		asp__guard_free(t, p, site);
		return NULL;
	}
	void *q = asp__next.malloc(bytes);
	if (q != NULL) {
		size_t have = asp__guard_size(p);
		memcpy(q, p, have < bytes ? have : bytes);
		asp__guard_free(t, p, site);
	}
	return q;
}

/* realloc and reallocarray: 1 free and 1 alloc when p is not NULL. */
static void *resize(void *p, size_t n, size_t size, int array, uintptr_t site)
{
	enum asp_fn fn = array ? ASP_FN_REALLOCARRAY : ASP_FN_REALLOC;
	size_t bytes;
	int overflow = __builtin_mul_overflow(n, size, &bytes);
	if (ASP_UNLIKELY(asp__state == ASP_STATE_START) && !asp__init_slow()) {
		void *q = overflow ? NULL : asp__boot_alloc(bytes, 16);
		if (q && p)
			memcpy(q, p, asp__boot_size(p) < bytes ? asp__boot_size(p) : bytes);
		return q;
	}
	if (ASP_UNLIKELY(p != NULL && asp__inner_owns(p))) {
		size_t have = asp__boot_owns(p) ? asp__boot_size(p) : asp__heap_size(p);
		if (!asp__boot_owns(p) && inside() != NULL)
			return overflow ? NULL : asp__heap_realloc(p, bytes);
		/* A block of the shim's moves to the real heap: an alloc only. */
		void *q = asp__alloc(fn, bytes, site);
		if (q)
			memcpy(q, p, have < bytes ? have : bytes);
		return q;
	}
	if (ASP_UNLIKELY(p == NULL && inside() != NULL))
		return overflow ? NULL : asp__heap_alloc(bytes ? bytes : 1);
	struct asp_thread *t = enter();
	if (t == NULL || p == NULL) {
		if (t == NULL && p != NULL)
			asp__wait_frozen();
		void *q = array ? asp__next.reallocarray(p, n, size) : asp__next.realloc(p, bytes);
		if (t != NULL && array && q != NULL)
			count_invisible(t, fn, bytes);
		else if (t != NULL)
			count_result(t, fn, q, bytes, site);
		/* realloc(NULL, n) counts as a realloc, and its block is
		 * malloc's, as valgrind names it at the top of its stack */
		if (t != NULL && !array && p == NULL && q != NULL && asp__state >= ASP_FAST_TRACK)
			asp__live_set_fn((uintptr_t)q, ASP_FN_MALLOC);
		return q;
	}

	int fast = asp__state;
	struct asp_live_entry e;
	struct asp_sample_block was = { 0, 0, 0 };
	int64_t old;
	if (fast <= ASP_FAST_COUNT_SAMPLE) {
		old = 0;
		if (!array)
			asp_owned_add(&t->c.realloc_frees, 1);
		if (((uintptr_t)p | 1) == (t->last | 1))
			t->last = 0;
		/* before realloc can hand the address out again (a signal
		 * handler's realloc while its thread holds the table leaves
		 * the entry: not deferred) */
		if (fast == ASP_FAST_COUNT_SAMPLE && asp__sample_maybe((uintptr_t)p))
			asp__sample_take(t, (uintptr_t)p, &was, 0);
	} else {
		old = untrack_realloc(t, p, &e, array, site);
		if (old == -1) {
			/* No live block: reported, left alone, counted as valgrind
			 * counts a realloc it refuses (an alloc of the size asked
			 * and a free), and NULL. */
			retrack_realloc(t, p, &e, -1, bytes, array, site);
			return NULL;
		}
	}
	/* glibc's reallocarray calls realloc, the shim's: that realloc of
	 * the block just taken out of the table is no invalid one */
	t->in_reallocarray += array;
	void *q = ASP_UNLIKELY(asp__guard_mean != 0) && asp__guard_owns(p)
	        ? guard_realloc(t, p, overflow ? SIZE_MAX : bytes, site)
	        : array ? asp__next.reallocarray(p, n, size) : asp__next.realloc(p, bytes);
	t->in_reallocarray -= array;
	if (q == NULL && (bytes != 0 || overflow)) {
		/* Failed: p is untouched and still live. */
		if (fast <= ASP_FAST_COUNT_SAMPLE) {
			if (was.ptr != 0)
				asp__sample_keep(t, was.ptr, was.size, was.site);
			asp__count_failed(t, fn);
			if (!array) {
				asp_owned_add(&t->c.fn[fn].bytes, bytes);
				asp_owned_add(&t->c.hist[asp_hist_bucket(bytes)], 1);
				asp_owned_add(&t->c.realloc_failed_moves, 1);
			}
		} else {
			retrack_realloc(t, p, &e, old, bytes, array, site);
		}
		return NULL;
	}
	if (q == NULL) {
		/* realloc(p, 0) freed p. */
		asp_owned_add(&t->c.fn[fn].calls, 1);
		asp_owned_add(&t->c.realloc_free_only, 1);
		return NULL;
	}
	if (array)
		count_invisible(t, fn, bytes);
	else
		asp__count_alloc(t, fast, fn, q, bytes, site);
	return q;
}

void *asp__realloc(void *p, size_t size, uintptr_t site)
{
	return resize(p, 1, size, 0, site);
}

void *asp__reallocarray(void *p, size_t n, size_t size, uintptr_t site)
{
	return resize(p, n, size, 1, site);
}

int asp__posix_memalign(void **out, size_t align, size_t size, uintptr_t site)
{
	if (ASP_UNLIKELY(asp__state == ASP_STATE_START) && !asp__init_slow()) {
		*out = asp__boot_alloc(size, align);
		return *out ? 0 : ENOMEM;
	}
	if (ASP_UNLIKELY(inside() != NULL) && align <= 16) {
		*out = asp__heap_alloc(size ? size : 1);
		return *out ? 0 : ENOMEM;
	}
	int err = asp__next.posix_memalign(out, align, size);
	struct asp_thread *t = enter();
	if (ASP_LIKELY(t != NULL))
		count_result(t, ASP_FN_POSIX_MEMALIGN, err == 0 ? *out : NULL, size, site);
	return err;
}

void *asp__memalign(enum asp_fn fn, size_t align, size_t size, uintptr_t site)
{
	if (ASP_UNLIKELY(asp__state == ASP_STATE_START) && !asp__init_slow())
		return asp__boot_alloc(size, align > 4096 ? 4096 : align);
	if (ASP_UNLIKELY(inside() != NULL) && align <= 16 && fn != ASP_FN_VALLOC &&
	    fn != ASP_FN_PVALLOC)
		return asp__heap_alloc(size ? size : 1);
	void *p;
	switch (fn) {
	case ASP_FN_ALIGNED_ALLOC: p = asp__next.aligned_alloc(align, size); break;
	case ASP_FN_VALLOC: p = asp__next.valloc(size); break;
	case ASP_FN_PVALLOC: p = asp__next.pvalloc(size); break;
	default: p = asp__next.memalign(align, size); break;
	}
	struct asp_thread *t = enter();
	if (ASP_LIKELY(t != NULL))
		count_result(t, fn, p, size, site);
	return p;
}

void asp__free_slow(void *p, enum asp_fn fn)
{
	if (p == NULL) {
		/* freeres's free(NULL)s are not the program's. */
		struct asp_thread *t = enter();
		if (t != NULL && !asp__in_freeres())
			asp_owned_add(&t->c.fn[fn].null, 1);
		return;
	}
	if (asp__inner_owns(p)) {
		if (!asp__boot_owns(p))
			asp__heap_free(p);
		return;
	}
	if (asp__state == ASP_STATE_START)
		asp__init_slow();
	asp__wait_frozen();
	/* (a guarded block freed after the report: back to the pool quietly) */
	asp__free_block(NULL, p, 0);
}

size_t asp__usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (asp__boot_owns(p))
		return asp__boot_size(p);
	if (asp__inner_owns(p))
		return asp__heap_size(p);
	if (ASP_UNLIKELY(asp__state == ASP_STATE_START))
		asp__init_slow();
	struct asp_thread *t = enter();
	if (t != NULL)
		asp_owned_add(&t->c.fn[ASP_FN_USABLE_SIZE].calls, 1);
	if (ASP_UNLIKELY(asp__guard_mean != 0) && asp__guard_owns(p))
		return asp__guard_size(p);
	return asp__next.malloc_usable_size(p);
}

/* The strdup family: one block, counted once, the same size libc asks for.
 * Each ends in a tail call to memcpy, which returns the block: a call and
 * return less around the copy, which costs more here than the count. */

char *asp__strdup(enum asp_fn fn, const char *s, uintptr_t site)
{
	size_t n = strlen(s) + 1;
	char *p = asp__alloc(fn, n, site);
	return p != NULL ? memcpy(p, s, n) : NULL;
}

/* Count mode's strdup, with ALLOCSPY_SAMPLE or without: the common case
 * of asp__alloc_counted, as malloc's. */
static ASP_ALWAYS_INLINE char *strdup_counted(enum asp_fn fn, const char *s, int sampled)
{
	size_t n = strlen(s) + 1;
	void *p;
	if (ASP_UNLIKELY(!asp__alloc_counted(fn, n, &p, sampled)))
		p = asp__alloc(fn, n, (uintptr_t)__builtin_return_address(0));
	return p != NULL ? memcpy(p, s, n) : NULL;
}

char *asp__strdup_count(enum asp_fn fn, const char *s)
{
	return strdup_counted(fn, s, 0);
}

char *asp__strdup_csample(enum asp_fn fn, const char *s)
{
	return strdup_counted(fn, s, 1);
}

/* Track mode's strdup, with stacks or not: the common case of
 * alloc_tracked, as malloc's. */
static ASP_ALWAYS_INLINE char *strdup_tracked(int fast, enum asp_fn fn, const char *s,
                                              uintptr_t site)
{
	size_t n = strlen(s) + 1;
	void *p;
	if (ASP_UNLIKELY(!alloc_tracked(fast, fn, n, &p, site)))
		p = asp__alloc(fn, n, site);
	return p != NULL ? memcpy(p, s, n) : NULL;
}

char *asp__strdup_track(enum asp_fn fn, const char *s, uintptr_t site)
{
	return strdup_tracked(ASP_FAST_TRACK, fn, s, site);
}

char *asp__strdup_stacks(enum asp_fn fn, const char *s, uintptr_t site)
{
	return strdup_tracked(ASP_FAST_STACKS, fn, s, site);
}

char *asp__strndup(enum asp_fn fn, const char *s, size_t n, uintptr_t site)
{
	size_t len = strnlen(s, n);
	char *p = asp__alloc(fn, len + 1, site);
	if (p != NULL) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

wchar_t *asp__wcsdup(const wchar_t *s, uintptr_t site)
{
	size_t n = (wcslen(s) + 1) * sizeof(wchar_t);
	wchar_t *p = asp__alloc(ASP_FN_WCSDUP, n, site);
	return p != NULL ? memcpy(p, s, n) : NULL;
}

/* g_strndup: GLib allocates n + 1 bytes whatever the string's length. */
char *asp__g_strndup(const char *s, size_t n, uintptr_t site)
{
	char *p = asp__alloc(ASP_FN_G_STRNDUP, n + 1, site);
	if (p != NULL) {
		strncpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

void *asp__memdup(enum asp_fn fn, const void *mem, size_t size, uintptr_t site)
{
	void *p = asp__alloc(fn, size, site);
	return p != NULL ? memcpy(p, mem, size) : NULL;
}

/* operator new ------------------------------------------------------------ */

static const char asp_nothrow_tag = 0;

/* libgcc_s's personality routine and _Unwind_Resume serve the clean-up of
 * call_real_new when an exception leaves the real operator new. They are
 * weak, so that the shim does not load libgcc_s into a program that does
 * not: glibc loads it at the first pthread_exit, pthread_cancel or
 * backtrace, allocating as it does, and valgrind counts that. A C++
 * program has it loaded (libstdc++ needs it); without it the clean-up
 * would not run, and call_real_new lets no exception through. */
extern void __gcc_personality_v0(void);
#pragma weak __gcc_personality_v0
__asm__(".weak _Unwind_Resume");	/* called by the compiler's code: no pragma reaches it */

/* The libstdc++ operator under the shim, called with this thread's calls
 * forwarded uncounted; the result is counted once, as fn. A throw passes
 * through (the guard's clean-up runs) and counts as a failed call. */
struct new_call {
	struct asp_thread *t;
	enum asp_fn fn;
};

static void new_call_end(struct new_call *c)
{
	if (c->t == NULL)
		return;
	c->t->depth--;
	c->t->forward--;
	asp__count_failed(c->t, c->fn);
}

/* The operator sym: kind 0 new(size), 1 new(size, nothrow), 2 new(size,
 * align), 3 new(size, align, nothrow). */
static void *call_operator(void *sym, int kind, size_t size, size_t align)
{
	switch (kind) {
	case 0: return ((void *(*)(size_t))sym)(size);
	case 1: return ((void *(*)(size_t, const void *))sym)(size, &asp_nothrow_tag);
	case 2: return ((void *(*)(size_t, size_t))sym)(size, align);
	default: return ((void *(*)(size_t, size_t, const void *))sym)(size, align, &asp_nothrow_tag);
	}
}

static void *call_real_new(enum asp_fn fn, size_t size, size_t align, int kind,
                           uintptr_t site, const char *real)
{
	struct asp_thread *t = enter();
	/* The lookups are the shim's own calls: a dlsym that fails allocates
	 * its message, which is not the program's. */
	if (t)
		t->depth++;
	void *sym = asp__next_sym(real);
	if (t)
		t->depth--;
	if (sym == NULL) {
		/* No C++ runtime after the shim (none loaded, or only in a
		 * library's own scope: C++ code a C program dlopened without
		 * RTLD_GLOBAL): what libstdc++'s operators ask of the allocator,
		 * once. An aligned form keeps its alignment: aligned_alloc of
		 * the size rounded up to it, as libstdc++'s. */
		size_t n = size ? size : 1;
		void *p;
		if (kind >= 2) {
			size_t rounded = (n + align - 1) & ~(align - 1);
			p = rounded >= n ? asp__next.aligned_alloc(align, rounded) : NULL;
		} else {
			p = asp__next.malloc(n);
		}
		if (t)
			count_result(t, fn, p, size, site);
		return p;
	}
	/* No unwinder for the clean-up (libstdc++ came by dlopen into a
	 * program that had no libgcc_s): no exception may leave the operator
	 * while the thread's state is changed. Called from inside another
	 * operator (libstdc++'s nothrow form calls the throwing one), t is
	 * NULL and nothing is changed. Otherwise the throwing forms become
	 * the nothrow form, and the throw, of std::bad_alloc, is made here
	 * once the state is back. (A new-handler's own exception then becomes
	 * bad_alloc.) */
	void (*throw_bad_alloc)(void) = NULL;
	void (*personality)(void) = __gcc_personality_v0;
	__asm__("" : "+r"(personality));	/* weak: may be NULL */
	if (personality == NULL && t != NULL && (kind == 0 || kind == 2)) {
		t->depth++;	/* (the lookups are the shim's, as above) */
		char name[64];
		int len = snprintf(name, sizeof name, "%sRKSt9nothrow_t", real);
		throw_bad_alloc = (void (*)(void))asp__next_sym("_ZSt17__throw_bad_allocv");
		void *nothrow = len > 0 && len < (int)sizeof name ? asp__next_sym(name) : NULL;
		if (nothrow != NULL && throw_bad_alloc != NULL) {
			sym = nothrow;
			kind++;
		} else {
			throw_bad_alloc = NULL;
		}
		t->depth--;
	}
	struct new_call c __attribute__((cleanup(new_call_end))) = { t, fn };
	if (t) {
		t->depth++;
		t->forward++;
	}
	void *p = call_operator(sym, kind, size, align);
	if (t) {
		t->depth--;
		t->forward--;
		c.t = NULL;
		count_result(t, fn, p, size, site);
	}
	if (p == NULL && throw_bad_alloc != NULL)
		throw_bad_alloc();
	return p;
}

/* The first try of libstdc++'s operator new: malloc(size ? size : 1). */
static inline void *new_fast(enum asp_fn fn, size_t size, uintptr_t site)
{
	int fast = asp__state;
	if (ASP_UNLIKELY(fast <= 0))
		return NULL;
	struct asp_thread *t = asp__thread_self();
	void *p = t->depth == 0 ? asp__guard_alloc(t, size ? size : 1, 0) : NULL;
	if (ASP_LIKELY(p == NULL))
		p = asp__next.malloc(size ? size : 1);
	if (ASP_LIKELY(p != NULL) && ASP_LIKELY(t->depth == 0))
		asp__count_alloc(t, fast, fn, p, size, site);
	return p;
}

void *asp__new(enum asp_fn fn, size_t size, uintptr_t site, const char *real)
{
	/* libstdc++'s operator new is malloc(size ? size : 1) in a loop that
	 * runs the new-handler; the first try is done here directly. */
	void *p = new_fast(fn, size, site);
	if (ASP_LIKELY(p != NULL))
		return p;
	asp__init();
	return call_real_new(fn, size, 0, 0, site, real);
}

void *asp__new_nothrow(enum asp_fn fn, size_t size, uintptr_t site, const char *real)
{
	void *p = new_fast(fn, size, site);
	if (ASP_LIKELY(p != NULL))
		return p;
	asp__init();
	return call_real_new(fn, size, 0, 1, site, real);
}

void *asp__new_aligned(enum asp_fn fn, size_t size, size_t align, int nothrow,
                       uintptr_t site, const char *real)
{
	asp__init();
	return call_real_new(fn, size, align, nothrow ? 3 : 2, site, real);
}
