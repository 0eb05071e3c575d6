/* thread.h - per-thread records: every counter the shim keeps, owned by
 * one thread and summed on read. A thread finds its record through a
 * pthread key in the descriptor's first block (no allocation, no TLS
 * module of the shim's own). */
#ifndef ASP_THREAD_H
#define ASP_THREAD_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "fns.h"
#include "glue.h"

/* The interposed functions (common/fns.h), in the order the dump lists
 * them; those before ASP_FN_ALLOC_END hand out blocks. */
enum asp_fn {
#define ASP_FN_ENUM(id, name, role, family, sym, a0, a1) ASP_FN_##id,
	ASP_FNS(ASP_FN_ENUM)
#undef ASP_FN_ENUM
	ASP_FN_COUNT,
	ASP_FN_ALLOC_END = ASP_FN_FREE,
};
#define ASP_FN_ROLE_CHECK(id, name, role, family, sym, a0, a1) \
	_Static_assert((ASP_FN_##id < ASP_FN_ALLOC_END) == (ASP_ROLE_##role == ASP_ROLE_ALLOC), \
	               "fns.h lists the allocation functions first: " name);
ASP_FNS(ASP_FN_ROLE_CHECK)
#undef ASP_FN_ROLE_CHECK

/* The blocks of each family as a mask of bits fn + 1 (the functions that
 * hand them out), constants: the table of live blocks keeps fn + 1. */
#define ASP_FN_MALLOC_BIT(id, name, role, family, sym, a0, a1) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_MALLOC ? 1u << (ASP_FN_##id + 1) : 0u)
#define ASP_FN_NEW_BIT(id, name, role, family, sym, a0, a1) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_NEW ? 1u << (ASP_FN_##id + 1) : 0u)
#define ASP_FN_NEW_ARR_BIT(id, name, role, family, sym, a0, a1) \
	| (ASP_FN_##id < ASP_FN_ALLOC_END && ASP_FAMILY_##family == ASP_FAMILY_NEW_ARR ? 1u << (ASP_FN_##id + 1) : 0u)
enum {
	ASP_FAMILY_MALLOC_WORDS = 0u ASP_FNS(ASP_FN_MALLOC_BIT),
	ASP_FAMILY_NEW_WORDS = 0u ASP_FNS(ASP_FN_NEW_BIT),
	ASP_FAMILY_NEW_ARR_WORDS = 0u ASP_FNS(ASP_FN_NEW_ARR_BIT),
};
#undef ASP_FN_MALLOC_BIT
#undef ASP_FN_NEW_BIT
#undef ASP_FN_NEW_ARR_BIT

/* fn's family: a constant where fn is. */
static inline enum asp_family asp_fn_family(unsigned fn)
{
	switch (fn) {
#define ASP_FN_CASE(id, name, role, family, sym, a0, a1) \
	case ASP_FN_##id: \
		return ASP_FAMILY_##family;
		ASP_FNS(ASP_FN_CASE)
#undef ASP_FN_CASE
	default:
		return ASP_FAMILY_NONE;
	}
}

/* Their names in the dump. */
extern ASP_HIDDEN const char *const asp__fn_names[ASP_FN_COUNT];

/* Bucket b >= 1 holds sizes in (2^(b-2), 2^(b-1)]; bucket 0 holds size 0. */
#define ASP_HIST_BUCKETS 66

static inline unsigned asp_hist_bucket(uint64_t size)
{
	return size <= 1 ? (unsigned)size : 65u - (unsigned)__builtin_clzll(size - 1);
}

struct asp_fn_stat {
	uint64_t calls;		/* every call, NULL frees excepted */
	uint64_t bytes;		/* requested (or, for frees, released) bytes */
	uint64_t failed;	/* allocations that returned NULL */
	uint64_t null;		/* free(NULL) and its kin */
	uint64_t temporary;	/* blocks freed by their thread before it
				 * allocated anything else (heaptrack's
				 * temporary allocations) */
};

/* Only uint64_t fields: records are summed as arrays of counters. The hot
 * path bumps as few as it can; the heap totals are derived (asp__totals). */
struct asp_counts {
	struct asp_fn_stat fn[ASP_FN_COUNT];
	uint64_t hist[ASP_HIST_BUCKETS];
	uint64_t realloc_frees;		/* reallocs that released their block */
	uint64_t realloc_freed_bytes;
	uint64_t realloc_free_only;	/* realloc(p, 0): a free and no alloc */
	uint64_t realloc_failed_moves;	/* failed realloc(p, n): valgrind counts
					 * an alloc (and a free: realloc_frees) */
	uint64_t invisible_blocks;	/* reallocarray's: not in the totals */
	uint64_t untracked_frees;	/* of blocks the table never saw */
	/* Ref operations by kind, one add each (refs.c, the order of
	 * allocspy.h's ASP_REF_*): objects created, acquires, releases that
	 * left other references, last releases. */
	uint64_t ref_ops[4];
	uint64_t ref_cross;
};

static inline uint64_t asp_ref_created(const struct asp_counts *c) { return c->ref_ops[0]; }
static inline uint64_t asp_ref_acquires(const struct asp_counts *c) { return c->ref_ops[1]; }
static inline uint64_t asp_ref_releases(const struct asp_counts *c)
{
	return c->ref_ops[2] + c->ref_ops[3];
}
static inline uint64_t asp_ref_destroyed(const struct asp_counts *c) { return c->ref_ops[3]; }

/* The heap figures of a set of counts. */
struct asp_totals {
	uint64_t allocs, frees, bytes_allocated, bytes_freed, failed;
};

void asp__totals(const struct asp_counts *c, struct asp_totals *out);

#define ASP_COUNTS_WORDS (sizeof(struct asp_counts) / sizeof(uint64_t))

enum { ASP_THREAD_ACTIVE, ASP_THREAD_DYING };

/* What one stack allocated (backtrace mode), in its thread's table. With
 * ALLOCSPY_SAMPLE, allocs, bytes and temporary count the sampled
 * allocations themselves, and est_* what they stand for (sample.h). */
struct asp_site_stat {
	uintptr_t site;		/* the stack id; 0: an empty slot */
	uint64_t allocs, bytes, temporary;
	double est_allocs, est_bytes, est_temporary;
};

/* A table operation a signal handler could not make because it landed
 * while its thread was inside the table: made at the thread's next one. */
enum {
	ASP_DEFER_FREE,		/* remove, count the free, then free the block */
	ASP_DEFER_INSERT,	/* insert (already counted) */
	ASP_DEFER_UNTRACK,	/* remove (realloc counted the free) */
};

struct asp_deferred {
	uintptr_t ptr;
	uint64_t size : 56;
	uint64_t fn : 8;
	uintptr_t site;
	int op;
};

#define ASP_MAX_DEFERRED 8
#define ASP_THREAD_STACK_MAX 66	/* ASP_MAX_BACKTRACE and two trampolines */

struct asp_stack_cache;
struct asp_sc_entry;
struct asp_site_use;

/* A block a thread freed: its address, its word in the table (live.h:
 * size, function, site index) and the free's caller. */
#define ASP_FREED_RING 512
struct asp_freed {
	uintptr_t ptr;
	uint64_t word;
	uintptr_t site;
};

/* A thread's cache of site indexes (sitemap.h). */
#define ASP_SITE_CACHE_BITS 6
struct asp_site_cache {
	uintptr_t site;
	uint32_t index;		/* 0: empty */
	struct asp_site_use *use;	/* the thread's entry for it (account.h);
					 * NULL: not known yet */
};

struct asp_thread {
	struct asp_counts c;
	int64_t net;		/* in-use bytes not yet published (track mode) */
	int64_t net_blocks;	/* and blocks */
	uint64_t volume;	/* bytes allocated and freed since then */
	/* How far net may grow before the published figures could show a
	 * new peak (peak_room), or reach the next peak detail (detail_room),
	 * as this thread last read them (account.h): the shared figures are
	 * read when net passes one, not at every operation. */
	int64_t peak_room;
	int64_t detail_room;
	int depth;		/* > 0: inside the shim: nothing is counted, and
				 * what is allocated is the shim's (inner heap)
				 * unless forward says otherwise */
	int forward;		/* > 0: calls are forwarded to the allocator
				 * uncounted: the caller counts the block */
	int stuck;		/* in a handler (fork's prepare, a fatal
				 * signal's report) that holds what it holds
				 * until it is done (live.h) */
	int in_reallocarray;	/* > 0: inside glibc's reallocarray, whose own
				 * realloc is no invalid one (account.c) */
	int in_loader;		/* > 0: where the loader's module list may be
				 * locked (libunwind, the dump's module list):
				 * fork waits for it (asp__loader_enter); 2:
				 * the shim's listing holds it */
	int unwinding;		/* inside one of the shim's walks, with
				 * every signal blocked (unwmask.c) */
	uint32_t unw_walks;	/* libunwind backtraces this thread made */
	uint32_t epoch;		/* the periodic-work epoch last seen */
	uint32_t ndefer;
	uint32_t flushing;	/* 1 while the thread makes its deferred
				 * operations: a handler that lands then makes
				 * its own directly, not the list again */
	uint32_t defer_done;	/* how many of them are made by then */
	struct asp_deferred defer[ASP_MAX_DEFERRED];
	/* > 0 while the thread changes the table and the counts that go with
	 * it (account.h, "Changes"): the depth, a signal handler's change
	 * inside the thread's own adding one. Whoever must see counts and
	 * table agree waits for it to be 0. */
	uint32_t chg;
	/* The site indexes it used last (sitemap.h). */
	struct asp_site_cache site_cache[1u << ASP_SITE_CACHE_BITS];
	/* Track mode: what each site holds of the heap, as this thread
	 * changed it (account.c, "Sites in use"): chunks of entries by site
	 * index, NULL until the first. Stays with the record. */
	struct asp_site_use **site_use;
	/* The site index of the block it freed last, and its entry there:
	 * frees from one site in a row find it without the chunks. */
	uint32_t free_site;
	struct asp_site_use *free_use;
	/* The stack this thread interned last (stack.c): the same again
	 * costs a comparison, not a lookup. */
	uint32_t stack_n;
	uint32_t stack_id;
	uint32_t stack_cut;	/* cut at ALLOCSPY_BACKTRACE frames (stack.c) */
	uintptr_t stack_frames[ASP_THREAD_STACK_MAX];
	struct asp_stack_cache *stack_cache;	/* stack.c; stays with the record */
	const struct asp_sc_entry *sc_hot;	/* its entry found or learnt last */
	uintptr_t stack_lo;	/* the lowest address of the thread's own stack, set
				 * where it starts (0: unknown; stack.c) */
	uintptr_t last;		/* the block this thread allocated last, while
				 * not freed: a free of it is temporary */
	uintptr_t last_site;
	unsigned last_fn;
	/* ALLOCSPY_SAMPLE (sample.h): bytes left to the next sample point
	 * (the allocation that takes it to 0 or below is sampled), the
	 * generator's state (0: not seeded yet) and the weight of the last
	 * sampled allocation (in count mode, last holds its block, tagged:
	 * account.h). */
	int64_t sample_left;
	uint64_t sample_rng;
	/* ALLOCSPY_GUARD (guard.h): allocations left to the next guarded
	 * one, and the generator of the draws (0: not seeded yet). */
	int64_t guard_left;
	uint64_t guard_rng;
	double sample_w;
	/* Count mode: > 0 inside the table of sampled blocks' code; the
	 * frees of sampled blocks that a signal handler made meanwhile and
	 * could not make at once, made by the thread once it is out
	 * (sample.c). */
	int in_sample;
	uint32_t nsample_defer;
	uintptr_t sample_defer[4];
	/* Per-stack totals (backtrace mode), owned by the thread: no lock.
	 * A replaced table is never unmapped, so the exit report may read
	 * it while its thread still runs. It stays with the record when a
	 * new thread reuses it: the report adds all records up anyway.
	 * sites[-1].site is its mask too (account.c, sites_grow). */
	struct asp_site_stat *sites;
	uint32_t site_mask, nsites;
	/* The entry site_of found last, and its stack id (0: none): a loop
	 * allocates from one stack again and again. */
	uintptr_t site_hot;
	struct asp_site_stat *site_hot_stat;
	/* Track mode: the blocks this thread freed last, for valgrind's
	 * description of a free of one of them again (errors.h): a ring,
	 * nfreed counting every one written. */
	uint32_t nfreed;
	struct asp_freed freed[ASP_FREED_RING];
	int state;
	pid_t tid;
	uint32_t serial;	/* 1, 2, ...: a small id for cross-thread checks */
	uint32_t summary;	/* index of the thread's line in the dump */
	uintptr_t self;		/* pthread_self() */
	uintptr_t start_sp;	/* the stack pointer its start routine began with */
	struct asp_thread *next;
} __attribute__((aligned(ASP_CACHE_LINE)));

/* A thread's line in the dump. */
struct asp_thread_summary {
	pid_t tid;
	int exited;
	char name[16];
	uint64_t allocs, frees, bytes_allocated, ref_acquires, ref_releases;
};

#define ASP_MAX_THREAD_SUMMARIES 4096

extern ASP_HIDDEN pthread_key_t asp__thread_key;
extern ASP_HIDDEN int asp__thread_key_ok;

int asp__thread_init(void);
struct asp_thread *asp__thread_self_slow(void);

/* Offset from the thread pointer of the key's value in the thread
 * descriptor (found at start-up), or 0: then pthread_getspecific is used. */
extern ASP_HIDDEN uintptr_t asp__thread_slot;

/* The calling thread's record when two loads find it, else NULL (then
 * asp__thread_self finds it). Calls nothing. */
static inline struct asp_thread *asp__thread_peek(void)
{
	if (ASP_LIKELY(asp__thread_slot != 0))
		return asp_thread_word(asp__thread_slot);
	return NULL;
}

/* The calling thread's record. Never NULL. */
static inline struct asp_thread *asp__thread_self(void)
{
	if (ASP_LIKELY(asp__thread_slot != 0)) {
		struct asp_thread *t = asp_thread_word(asp__thread_slot);
		return ASP_LIKELY(t != NULL) ? t : asp__thread_self_slow();
	}
	if (ASP_LIKELY(asp__thread_key_ok)) {
		struct asp_thread *t = pthread_getspecific(asp__thread_key);
		if (ASP_LIKELY(t != NULL))
			return t;
	}
	return asp__thread_self_slow();
}

/* How many threads have a live record now, and the most there were. */
extern ASP_HIDDEN int asp__threads_active;
extern ASP_HIDDEN int asp__threads_active_max;

/* Sums every record, folded or live, into out. */
void asp__threads_sum(struct asp_counts *out);

/* The same without the registry's lock, for a reader that must not wait
 * for it, from any thread or signal handler (allocspy.h's figures): the
 * counts of threads that run meanwhile are as far as they got (each
 * record's frees read before its allocations), and a
 * thread's exit or a record's reuse, which moves counts into the dead
 * total, makes it read again (yielding, then sleeping). 0, or -1 when
 * such moves kept coming for ASP_WAIT_NS (out may then count an exiting
 * thread's figures twice or not at all). */
int asp__threads_sum_nolock(struct asp_counts *out);

/* Copies the thread lines (live threads with their current counts) into
 * out, at most max; returns how many threads there were in all. */
size_t asp__threads_summaries(struct asp_thread_summary *out, size_t max);

/* Whether thread tid, still in the middle of a few instructions' work
 * that a waiter's deadline has passed for, is only behind: runnable
 * (running, or waiting for a core on a loaded machine) and with less than
 * ASP_WAIT_NS of CPU time since *cpu0 (its CPU time when first asked,
 * read then: 0 before). Such a thread ends its work once it runs. One
 * asleep or stopped (a signal handler that never returns), gone, or that
 * has run that long without ending it, is not behind. Reads /proc: for
 * waits past their deadline only. */
int asp__thread_behind(pid_t tid, uint64_t *cpu0);

/* Reads /proc/self/task/TID/NAME ("comm", "status") into buf, with a NUL
 * after it: the bytes read (0: none). */
size_t asp__task_file(pid_t tid, const char *name, char *buf, size_t size);

/* A thread's stack, for the leak scan. */
struct asp_thread_stack {
	pid_t tid;
	int live;
	uintptr_t start_sp;	/* 0: unknown */
};

/* Calls fn for every per-stack total of every record, with its thread. */
void asp__threads_sites(void (*fn)(void *arg, pid_t tid, const struct asp_site_stat *s), void *arg);

/* The stacks of every thread with a record; returns how many. */
size_t asp__threads_stacks(struct asp_thread_stack *out, size_t max);

/* Called by a thread's key destructor with its record, before it is folded
 * into the dead total (set by account.c: it publishes the record's in-use
 * delta). */
extern ASP_HIDDEN void (*asp__thread_exit_hook)(struct asp_thread *t);

/* Called in fork's child for each record of a thread that did not come
 * along (set by account.c: its deferred table operations are made and its
 * delta published; the child holds every lock then). */
extern ASP_HIDDEN void (*asp__thread_gone_hook)(struct asp_thread *t);

/* Whether the thread whose record is holder is stuck (live.h). */
int asp__thread_stuck(uintptr_t holder);

/* Every record, newest first, read without the registry's lock: records
 * are never unmapped, and the list only grows at its head. */
struct asp_thread *asp__threads_list(void);

/* A full memory fence in every running thread of the process (the kernel's
 * membarrier), for the rare side of a protocol whose common side keeps only
 * the compiler from reordering: 0, or -1 when the kernel has none (then
 * asp__fence_others_ok is 0 and such protocols must not be used). */
extern ASP_HIDDEN int asp__fence_others_ok;
void asp__fence_others(void);

/* The loader's module list lock (dl_iterate_phdr's) is not reset in a
 * fork child: a fork while another thread holds it leaves the child unable
 * to list modules, which its exit report must. So the shim's own listings
 * (libunwind's, the dump's) are bracketed by asp__loader_enter and
 * asp__loader_leave, and fork's prepare handler closes the gate first:
 * new listings wait for the fork, and the fork waits for those under way,
 * at most ASP_WAIT_NS while a listing waits for the list's lock (it can
 * wait for a lock the forking thread holds), and for as long as it takes
 * once it holds it: a fork then would leave the lock held in the child for
 * good.
 * The shim's dl_iterate_phdr (loader.c, which libunwind's calls reach
 * too) marks a listing inside the gate as holding it at its callback's
 * first call (asp__loader_holding); the callbacks then take no lock a
 * forking thread holds, so that wait ends: the dump's allocate nothing,
 * and libunwind's take only its own locks, with signals blocked (by the
 * shim around each of its walks: stack.c, walk_begin).
 * A thread inside the live table never waits (the fork waits for it). */
void asp__loader_enter(struct asp_thread *t);
void asp__loader_holding(struct asp_thread *t);
void asp__loader_leave(struct asp_thread *t);
void asp__loader_fork_close(const struct asp_thread *self);
void asp__loader_fork_open(void);

/* fork: the registry is held across it (prepare, then release in both);
 * the child first marks the records of the threads that did not come along
 * as dying. */
void asp__threads_atfork_prepare(void);
void asp__threads_atfork_release(void);
void asp__threads_atfork_child(void);

#endif
