/* errors.c - valgrind's heap errors (errors.h): what an invalid free's
 * address is, and the contexts kept for the exit text and the dump.
 *
 * What an address is, as valgrind's description: a block freed not long
 * ago (the freeing thread's recent frees first, then every other
 * thread's: each record keeps its last ASP_FREED_RING, account.c), a live
 * block it points into (the table's words before it, up to 64 KiB back),
 * the calling thread's stack, or, told at exit from the modules, a global
 * or nothing. Errors are rare: all of this runs on the error's own path,
 * under a lock taken with signals blocked, never on the frees that are
 * right. */
#include <pthread.h>
#include <string.h>

#include "arena.h"
#include "errors.h"
#include "lock.h"
#include "options.h"
#include "sample.h"
#include "stack.h"

static asp_lock_t g_lock = ASP_LOCK_INIT;
static struct asp_heap_error *g_errors;	/* ASP_ERRORS_MAX of them */
static size_t g_n;
static uint64_t g_total;

/* The site of the call: a stack, when stacks are taken; its caller else. */
static uintptr_t call_site(struct asp_thread *t, uintptr_t caller)
{
	if (asp__opt.backtrace > 1 && asp__sample_mean == 0) {
		uintptr_t id = asp__stack_capture(t, caller);
		if (id != 0)
			return id;
	}
	return caller;
}

/* Where a freed block's entry is: x's recent frees, newest first; exact
 * asks for p to be the block's start, else anywhere inside it. */
static const struct asp_freed *freed_in(const struct asp_thread *x, uintptr_t p, int exact)
{
	uint32_t n = asp_atomic_load_acquire(&x->nfreed);
	uint32_t most = n < ASP_FREED_RING ? n : ASP_FREED_RING;
	for (uint32_t k = 1; k <= most; k++) {
		const struct asp_freed *f = &x->freed[(n - k) & (ASP_FREED_RING - 1)];
		uint64_t size = asp__live_word_size(f->word);
		if (f->ptr == p || (!exact && p > f->ptr && p - f->ptr < size))
			return f;
	}
	return NULL;
}

static const struct asp_freed *freed_find(const struct asp_thread *self, uintptr_t p, int exact)
{
	const struct asp_freed *f = freed_in(self, p, exact);
	for (const struct asp_thread *x = asp__threads_list(); f == NULL && x != NULL; x = x->next)
		if (x != self)
			f = freed_in(x, p, exact);
	return f;
}

/* The live block p points into, from the table's words before p. */
static int live_around(uintptr_t p, struct asp_live_entry *out)
{
	const uintptr_t span = 64 * 1024;
	uintptr_t lo = p > span ? p - span : 0;
	for (uintptr_t g = p & ~(uintptr_t)31; g >= lo && g != 0; g -= 32) {
		uint64_t v = asp__live_read_granule(g);
		if (v == 0)
			continue;
		uintptr_t start = g | (uintptr_t)((v & 3) << 3);
		uint64_t size = asp__live_word_size(v);
		if (start <= p && p - start < size) {
			*out = (struct asp_live_entry){ start, size, asp__live_word_fn(v),
			                                asp__site_of(asp__live_word_site(v)) };
			return 1;
		}
		if (start <= p)
			return 0;	/* the block before p ends before it */
	}
	return 0;
}

/* Keeps e as one more error of its context. */
static void record(const struct asp_heap_error *e)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	g_total++;
	if (g_errors == NULL)
		g_errors = asp__arena_alloc_quiet(ASP_ERRORS_MAX * sizeof *g_errors);
	size_t i = 0;
	for (; g_errors != NULL && i < g_n; i++) {
		const struct asp_heap_error *c = &g_errors[i];
		if (c->kind == e->kind && c->fn == e->fn && c->site == e->site &&
		    c->where == e->where && c->arg == e->arg)
			break;
	}
	if (g_errors != NULL && i < g_n) {
		g_errors[i].count++;
	} else if (g_errors != NULL && g_n < ASP_ERRORS_MAX) {
		g_errors[g_n] = *e;
		g_errors[g_n].count = 1;
		g_n++;
	}
	asp_unlock_nosig(&g_lock, &old);
}

void asp__error_invalid_free(struct asp_thread *t, enum asp_fn fn, uintptr_t p, uintptr_t caller)
{
	struct asp_heap_error e = { .kind = ASP_ERR_INVALID_FREE, .fn = fn, .addr = p };
	struct asp_live_entry b;
	const struct asp_freed *f = freed_find(t, p, 1);
	if (f == NULL && !live_around(p, &b))
		f = freed_find(t, p, 0);
	if (f != NULL) {
		e.where = ASP_AT_FREED;
		e.block = f->ptr;
		e.size = asp__live_word_size(f->word);
		e.block_fn = asp__live_word_fn(f->word);
		e.alloc_site = asp__site_of(asp__live_word_site(f->word));
		e.free_site = f->site;
	} else if (live_around(p, &b)) {
		e.where = ASP_AT_BLOCK;
		e.block = b.ptr;
		e.size = b.size;
		e.block_fn = b.fn;
		e.alloc_site = b.site;
	} else {
		uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
		uintptr_t high = asp__fp_high(t->self, sp);
		if (p >= sp && p < high) {
			e.where = ASP_AT_STACK;
			e.thread = t->serial;
		} else {
			e.where = ASP_AT_ELSEWHERE;
		}
	}
	e.site = call_site(t, caller);
	record(&e);
}

void asp__error_mismatch(struct asp_thread *t, enum asp_fn fn, const struct asp_live_entry *b,
                         uintptr_t caller)
{
	struct asp_heap_error e = { .kind = ASP_ERR_MISMATCHED_FREE, .fn = fn, .addr = b->ptr,
	                            .where = ASP_AT_BLOCK, .block = b->ptr, .size = b->size,
	                            .block_fn = b->fn, .alloc_site = b->site };
	e.site = call_site(t, caller);
	record(&e);
}

/* The access's stack, by frame pointers from the interrupted frame: what
 * a handler can walk without a lock or a call into libunwind. */
static unsigned access_stack(uintptr_t pc, uintptr_t fp, uintptr_t *out)
{
	int max = asp__opt.backtrace > 1 ? asp__opt.backtrace : 1;
	if (max > ASP_ERROR_FRAMES)
		max = ASP_ERROR_FRAMES;
	out[0] = pc + 1;	/* named as the instruction at pc, as a return address */
	if (fp == 0)
		return 1;
	return 1 + (unsigned)asp__fp_chain(fp, asp__fp_high((uintptr_t)pthread_self(), fp), out + 1,
	                                   max - 1);
}

void asp__error_access(int write, unsigned size, uintptr_t addr, uintptr_t pc, uintptr_t fp,
                       unsigned where, uintptr_t block, uint64_t bsize, unsigned fn,
                       uintptr_t alloc_site, uintptr_t free_site)
{
	struct asp_heap_error e = { .kind = write ? ASP_ERR_INVALID_WRITE : ASP_ERR_INVALID_READ,
	                            .fn = ASP_FN_COUNT, .addr = addr, .where = where,
	                            .block = block, .size = bsize, .block_fn = fn,
	                            .alloc_site = alloc_site, .free_site = free_site,
	                            .access = size };
	e.npcs = access_stack(pc, fp, e.pcs);
	e.site = e.pcs[0];
	if (where == ASP_AT_AFTER && addr < block)
		e.where = ASP_AT_BEFORE;
	/* In the fatal signal's handler, every signal blocked: the lock is
	 * free unless this thread was inside record, which takes no fault. */
	record(&e);
}

void asp__error_overwritten(struct asp_thread *t, uintptr_t addr, uintptr_t block, uint64_t bsize,
                            unsigned fn, uintptr_t alloc_site, uintptr_t caller)
{
	struct asp_heap_error e = { .kind = ASP_ERR_OVERWRITTEN, .fn = ASP_FN_FREE, .addr = addr,
	                            .where = addr < block ? ASP_AT_BEFORE : ASP_AT_AFTER,
	                            .block = block, .size = bsize, .block_fn = fn,
	                            .alloc_site = alloc_site };
	e.site = call_site(t, caller);
	record(&e);
}

void asp__error_fishy(struct asp_thread *t, enum asp_fn fn, const char *arg, uint64_t value,
                      uintptr_t caller)
{
	struct asp_heap_error e = { .kind = ASP_ERR_FISHY, .fn = fn, .arg = arg, .value = value };
	e.site = call_site(t, caller);
	record(&e);
}

struct asp_heap_error *asp__errors(size_t *n, uint64_t *total)
{
	*n = asp_atomic_load_acquire(&g_n);
	*total = asp_atomic_load_relaxed(&g_total);
	return g_errors;
}

void asp__errors_summary(uint64_t *errors, uint64_t *contexts, uint64_t *suppressed,
                         uint64_t *suppressed_contexts)
{
	size_t n;
	uint64_t total, counted = 0;
	const struct asp_heap_error *v = asp__errors(&n, &total);
	*errors = *contexts = *suppressed = *suppressed_contexts = 0;
	for (size_t i = 0; v != NULL && i < n; i++) {
		counted += v[i].count;
		if (v[i].suppressed) {
			*suppressed += v[i].count;
			(*suppressed_contexts)++;
		} else {
			*errors += v[i].count;
			(*contexts)++;
		}
	}
	/* past ASP_ERRORS_MAX contexts: counted, in no context */
	*errors += total - counted;
}

void asp__errors_atfork_child(void)
{
	asp_lock_reset(&g_lock);
}
