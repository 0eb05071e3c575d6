/* account.c - counting each call: the per-thread counters, the live table
 * and the in-use total behind the peak.
 *
 * The fast path takes no lock and makes no shared read-modify-write in
 * count mode: it finds the thread's record, forwards the call, and bumps
 * counters the thread owns. Track mode adds one insert or remove in a
 * sharded table. The peak: each thread keeps the in-use delta it has not
 * published and publishes it in steps of ASP_PEAK_STEP bytes; the peak is
 * the largest "published total + own delta" any thread saw. It is exact
 * while one thread runs, and low by at most ASP_PEAK_STEP per other
 * running thread otherwise. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <wchar.h>

#include "account.h"
#include "arena.h"
#include "live.h"
#include "next.h"
#include "options.h"
#include "report.h"
#include "stack.h"
#include "start.h"

#define ASP_PEAK_STEP (64 * 1024)

int asp__state;
int asp__fast;
pid_t asp__scanning;
int64_t asp__in_use;
int64_t asp__peak;

/* Start-up ------------------------------------------------------------- */

/* Before fork: every shard, then no thread left between a table
 * operation and its counts (a thread that wants a shard now waits before
 * it counts anything), then the registry. The child's figures then agree:
 * allocs - frees is the blocks in its table. */
static void atfork_prepare(void)
{
	asp__live_atfork_prepare();
	asp__threads_quiesce();
	asp__threads_atfork_prepare();
}

static void atfork_parent(void)
{
	asp__threads_atfork_parent();
	asp__live_atfork_parent();
}

static void atfork_child(void)
{
	asp__threads_atfork_child();
	asp__live_atfork_child();
}

/* Returns with the shim counting (or finished); 0 while dlsym is still
 * resolving the allocator on this path: the caller uses the bootstrap arena. */
static ASP_COLD int init_slow(void)
{
	static int once;
	if (asp__next_init() < 0)
		return 0;
	int expected = 0;
	if (__atomic_compare_exchange_n(&once, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		asp__report_start();
		asp__options_init();
		asp__thread_init();
		pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
		asp__start_process();
		asp__fast = asp__opt.mode == ASP_MODE_COUNT ? ASP_FAST_COUNT
		          : asp__opt.backtrace > 1 ? ASP_FAST_STACKS : ASP_FAST_TRACK;
		asp_atomic_store_release(&asp__state, 1);
		/* dlopen of libunwind allocates: forward that uncounted. */
		struct asp_thread *t = asp__thread_self();
		t->depth++;
		asp__stack_init();
		t->depth--;
	} else {
		while (asp_atomic_load_acquire(&asp__state) == 0)
			asp_cpu_relax();
	}
	return 1;
}

void asp__init(void)
{
	if (asp_atomic_load_acquire(&asp__state) == 0)
		init_slow();
}

/* The record to count in, or NULL to forward without counting. */
static inline struct asp_thread *enter(void)
{
	if (ASP_UNLIKELY(asp__fast == 0))
		return NULL;
	struct asp_thread *t = asp__thread_self();
	return ASP_LIKELY(t->depth == 0) ? t : NULL;
}

/* While the leak scan reads the heap, frees wait: a block must not go
 * back to the allocator (or be unmapped) under the scan. */
static ASP_COLD void wait_scan(void)
{
	pid_t scanner = asp_atomic_load_acquire(&asp__scanning);
	if (scanner == 0 || scanner == asp_gettid())
		return;
	while (asp_atomic_load_acquire(&asp__scanning))
		sched_yield();
}

/* In-use total and peak ----------------------------------------------- */

void asp__publish(struct asp_thread *t)
{
	int64_t total = asp_atomic_add_relaxed(&asp__in_use, t->net);
	t->net = 0;
	int64_t peak = asp_atomic_load_relaxed(&asp__peak);
	while (total > peak && !asp_atomic_cas_relaxed(&asp__peak, &peak, total))
		;
}

static ASP_COLD void raise_peak(int64_t seen)
{
	int64_t peak = asp_atomic_load_relaxed(&asp__peak);
	while (seen > peak && !asp_atomic_cas_relaxed(&asp__peak, &peak, seen))
		;
}

static inline void net_add(struct asp_thread *t, int64_t delta)
{
	t->net += delta;
	if (delta > 0) {
		int64_t seen = asp_atomic_load_relaxed(&asp__in_use) + t->net;
		if (ASP_UNLIKELY(seen > asp_atomic_load_relaxed(&asp__peak)))
			raise_peak(seen);
	}
	if (ASP_UNLIKELY(t->net > ASP_PEAK_STEP || t->net < -ASP_PEAK_STEP))
		asp__publish(t);
}

/* Counting ------------------------------------------------------------- */

/* A block of size bytes was handed out by fn. */

static ASP_COLD void count_failed(struct asp_thread *t, enum asp_fn fn)
{
	asp_owned_add(&t->c.fn[fn].calls, 1);
	asp_owned_add(&t->c.fn[fn].failed, 1);
}

/* The result of an allocation function: counted when it is a block. */
static inline void count_result(struct asp_thread *t, enum asp_fn fn, void *p, size_t size,
                                uintptr_t site)
{
	if (ASP_LIKELY(p != NULL))
		asp__count_alloc(t, asp__fast, fn, p, size, site);
	else
		count_failed(t, fn);
}

/* Track mode: removes p from the table; its size, or -1 when untracked. */
/* A signal handler freed a block while its thread was inside the same
 * shard: the block leaves the table at the thread's next operation. */
static ASP_COLD int64_t untrack_later(struct asp_thread *t, void *p, struct asp_live_entry *e)
{
	if (t->npending < ASP_ARRAY_SIZE(t->pending))
		t->pending[t->npending++] = (uintptr_t)p;
	e->size = 0;
	return 0;
}

static ASP_COLD void flush_pending(struct asp_thread *t)
{
	struct asp_live_entry e;
	uint32_t n = t->npending;
	t->npending = 0;
	for (uint32_t i = 0; i < n; i++) {
		int found = asp__live_remove(&t->inflight, t->pending[i], &e);
		if (found == 1)
			net_add(t, -(int64_t)e.size);
		else if (found < 0 && t->npending < ASP_ARRAY_SIZE(t->pending))
			t->pending[t->npending++] = t->pending[i];
	}
}

/* Track mode: removes p from the table; its size, or -1 when untracked. */
static inline int64_t untrack(struct asp_thread *t, void *p, struct asp_live_entry *e)
{
	if (ASP_UNLIKELY(t->npending != 0))
		flush_pending(t);
	int found = asp__live_remove(&t->inflight, (uintptr_t)p, e);
	if (ASP_LIKELY(found >= 0))
		return found ? (int64_t)e->size : -1;
	return untrack_later(t, p, e);
}

/* p goes back to the allocator through fn. */
static inline void count_release(struct asp_thread *t, int fast, enum asp_fn fn, void *p)
{
	struct asp_fn_stat *st = &t->c.fn[fn];
	if (fast == ASP_FAST_COUNT) {
		asp_owned_add(&st->calls, 1);
		return;
	}
	struct asp_live_entry e;
	int64_t size = untrack(t, p, &e);
	asp_owned_add(&st->calls, 1);
	if (ASP_LIKELY(size >= 0)) {
		asp_owned_add(&st->bytes, (uint64_t)size);
		net_add(t, -size);
	} else {
		asp_owned_add(&t->c.untracked_frees, 1);
	}
	asp__op_done(t);
}

/* The allocation functions ------------------------------------------------ */

void *asp__alloc_slow(enum asp_fn fn, size_t size, uintptr_t site)
{
	if (asp__state == 0 && !init_slow())
		return asp__boot_alloc(size, 16);
	void *p = asp__next.malloc(size);
	struct asp_thread *t = enter();
	if (t != NULL)
		count_result(t, fn, p, size, site);
	return p;
}

void *asp__alloc_odd(struct asp_thread *t, enum asp_fn fn, void *p)
{
	if (t->depth == 0)
		count_failed(t, fn);
	return p;
}

/* Per-stack totals ------------------------------------------------------ */

static ASP_COLD int sites_grow(struct asp_thread *t)
{
	uint32_t slots = t->sites ? (t->site_mask + 1) * 2 : 1024;
	struct asp_site_stat *n = asp__pages_alloc((size_t)slots * sizeof *n);
	if (n == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; t->sites && i <= t->site_mask; i++) {
		const struct asp_site_stat *o = &t->sites[i];
		if (o->site == 0)
			continue;
		uint32_t j = (uint32_t)((o->site * 0x9E3779B97F4A7C15ull) >> 40) & (slots - 1);
		while (n[j].site != 0)
			j = (j + 1) & (slots - 1);
		n[j] = *o;
	}
	/* The old table stays mapped: the exit report may be reading it. */
	asp_atomic_store_relaxed(&t->site_mask, slots - 1);
	asp_atomic_store_release(&t->sites, n);
	return 0;
}

/* Adds one allocation to the thread's total for stack id site. */
static void site_add(struct asp_thread *t, uintptr_t site, size_t size)
{
	if (site == 0)
		return;
	if (t->sites == NULL || (t->nsites + 1) * 4 > (t->site_mask + 1) * 3)
		if (sites_grow(t) != 0)
			return;
	uint32_t j = (uint32_t)((site * 0x9E3779B97F4A7C15ull) >> 40) & t->site_mask;
	while (t->sites[j].site != 0 && t->sites[j].site != site)
		j = (j + 1) & t->site_mask;
	struct asp_site_stat *s = &t->sites[j];
	if (s->site == 0) {
		asp_atomic_store_relaxed(&s->site, site);
		t->nsites++;
	}
	asp_owned_add(&s->allocs, 1);
	asp_owned_add(&s->bytes, size);
}

/* Every ASP_TICK allocations of a thread: time for a periodic dump? */
#define ASP_TICK 4096

void asp__tick(struct asp_thread *t)
{
	t->tick = ASP_TICK;
	if (asp__opt.interval_ms > 0 && t->depth == 0)
		asp__report_tick(t);
}

void asp__track_alloc(struct asp_thread *t, int fast, enum asp_fn fn, void *p, size_t size,
                      uintptr_t site)
{
	if (fast == ASP_FAST_STACKS) {
		site = asp__stack_capture(t, site);
		site_add(t, site, size);
	}
	if (ASP_UNLIKELY(t->npending != 0))
		flush_pending(t);
	asp__live_insert(&t->inflight, (uintptr_t)p, size, fn, site);
	net_add(t, (int64_t)size);
}

void *asp__calloc(size_t n, size_t size, uintptr_t site)
{
	size_t bytes;
	int overflow = __builtin_mul_overflow(n, size, &bytes);
	if (ASP_UNLIKELY(asp__state == 0) && !init_slow())
		return overflow ? NULL : asp__boot_alloc(bytes, 16);
	void *p = asp__next.calloc(n, size);
	struct asp_thread *t = enter();
	if (ASP_LIKELY(t != NULL))
		count_result(t, ASP_FN_CALLOC, p, bytes, site);
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

/* realloc and reallocarray: 1 free and 1 alloc when p is not NULL. */
static void *resize(void *p, size_t n, size_t size, int array, uintptr_t site)
{
	enum asp_fn fn = array ? ASP_FN_REALLOCARRAY : ASP_FN_REALLOC;
	size_t bytes;
	int overflow = __builtin_mul_overflow(n, size, &bytes);
	if (ASP_UNLIKELY(asp__state == 0) && !init_slow()) {
		void *q = overflow ? NULL : asp__boot_alloc(bytes, 16);
		if (q && p)
			memcpy(q, p, asp__boot_size(p) < bytes ? asp__boot_size(p) : bytes);
		return q;
	}
	if (ASP_UNLIKELY(p != NULL && asp__boot_owns(p))) {
		/* A bootstrap block moves to the real heap: an alloc only. */
		void *q = asp__alloc(fn, bytes, site);
		if (q)
			memcpy(q, p, asp__boot_size(p) < bytes ? asp__boot_size(p) : bytes);
		return q;
	}
	struct asp_thread *t = enter();
	if (t == NULL || p == NULL) {
		if (t == NULL && p != NULL)
			wait_scan();
		void *q = array ? asp__next.reallocarray(p, n, size) : asp__next.realloc(p, bytes);
		if (t != NULL && array && q != NULL)
			count_invisible(t, fn, bytes);
		else if (t != NULL)
			count_result(t, fn, q, bytes, site);
		return q;
	}

	int fast = asp__fast;
	struct asp_live_entry e;
	int64_t old = fast == ASP_FAST_COUNT ? 0 : untrack(t, p, &e);
	void *q = array ? asp__next.reallocarray(p, n, size) : asp__next.realloc(p, bytes);
	if (q == NULL && (bytes != 0 || overflow)) {
		/* Failed: p is untouched and still live. valgrind counts the
		 * attempt as an alloc of the new size and a free. */
		if (old >= 0 && fast != ASP_FAST_COUNT)
			asp__live_insert(&t->inflight, (uintptr_t)p, e.size, e.fn, e.site);
		count_failed(t, fn);
		if (!array) {
			asp_owned_add(&t->c.fn[fn].bytes, bytes);
			asp_owned_add(&t->c.hist[asp_hist_bucket(bytes)], 1);
			asp_owned_add(&t->c.realloc_failed_moves, 1);
		}
		asp__op_done(t);
		return NULL;
	}
	if (!array)
		asp_owned_add(&t->c.realloc_frees, 1);
	if (old >= 0) {
		asp_owned_add(&t->c.realloc_freed_bytes, (uint64_t)old);
		if (fast != ASP_FAST_COUNT)
			net_add(t, -old);
	} else {
		asp_owned_add(&t->c.untracked_frees, 1);
	}
	if (q == NULL) {
		/* realloc(p, 0) freed p. */
		asp_owned_add(&t->c.fn[fn].calls, 1);
		asp_owned_add(&t->c.realloc_free_only, 1);
		asp__op_done(t);
		return NULL;
	}
	if (array)
		count_invisible(t, fn, bytes);
	else
		asp__count_alloc(t, fast, fn, q, bytes, site);
	asp__op_done(t);
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
	if (ASP_UNLIKELY(asp__state == 0) && !init_slow()) {
		*out = asp__boot_alloc(size, align);
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
	if (ASP_UNLIKELY(asp__state == 0) && !init_slow())
		return asp__boot_alloc(size, align > 4096 ? 4096 : align);
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
		struct asp_thread *t = enter();
		if (t != NULL)
			asp_owned_add(&t->c.fn[fn].null, 1);
		return;
	}
	if (asp__boot_owns(p))
		return;
	if (asp__state == 0)
		init_slow();
	wait_scan();
	asp__next.free(p);
}

void asp__track_release(struct asp_thread *t, enum asp_fn fn, void *p)
{
	count_release(t, asp__fast, fn, p);
}

size_t asp__usable_size(void *p)
{
	if (p == NULL)
		return 0;
	if (asp__boot_owns(p))
		return asp__boot_size(p);
	if (ASP_UNLIKELY(asp__state == 0))
		init_slow();
	struct asp_thread *t = enter();
	if (t != NULL)
		asp_owned_add(&t->c.fn[ASP_FN_USABLE_SIZE].calls, 1);
	return asp__next.malloc_usable_size(p);
}

/* The strdup family: one block, counted once, the same size libc asks for. */

char *asp__strdup(enum asp_fn fn, const char *s, uintptr_t site)
{
	size_t n = strlen(s) + 1;
	char *p = asp__alloc(fn, n, site);
	if (p != NULL)
		memcpy(p, s, n);
	return p;
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
	if (p != NULL)
		memcpy(p, s, n);
	return p;
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
	if (p != NULL)
		memcpy(p, mem, size);
	return p;
}

/* operator new ------------------------------------------------------------ */

static const char asp_nothrow_tag = 0;

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
	count_failed(c->t, c->fn);
}

static void *call_real_new(enum asp_fn fn, size_t size, size_t align, int kind,
                           uintptr_t site, const char *real)
{
	void *sym = asp__next_sym(real);
	struct asp_thread *t = enter();
	if (sym == NULL) {
		/* No C++ runtime under the shim: the plain path is all there is. */
		void *p = asp__next.malloc(size ? size : 1);
		if (t)
			count_result(t, fn, p, size, site);
		return p;
	}
	struct new_call c __attribute__((cleanup(new_call_end))) = { t, fn };
	if (t)
		t->depth++;
	void *p;
	switch (kind) {
	case 0: p = ((void *(*)(size_t))sym)(size); break;
	case 1: p = ((void *(*)(size_t, const void *))sym)(size, &asp_nothrow_tag); break;
	case 2: p = ((void *(*)(size_t, size_t))sym)(size, align); break;
	default: p = ((void *(*)(size_t, size_t, const void *))sym)(size, align, &asp_nothrow_tag); break;
	}
	if (t) {
		t->depth--;
		c.t = NULL;
		count_result(t, fn, p, size, site);
	}
	return p;
}

/* The first try of libstdc++'s operator new: malloc(size ? size : 1). */
static inline void *new_fast(enum asp_fn fn, size_t size, uintptr_t site)
{
	int fast = asp__fast;
	if (ASP_UNLIKELY(fast == 0))
		return NULL;
	void *p = asp__next.malloc(size ? size : 1);
	if (ASP_LIKELY(p != NULL)) {
		struct asp_thread *t = asp__thread_self();
		if (ASP_LIKELY(t->depth == 0))
			asp__count_alloc(t, fast, fn, p, size, site);
	}
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
