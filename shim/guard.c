/* guard.c - guarded sampling (guard.h).
 *
 * The pool is one mapping of ASP_GUARD_SLOTS slots, each a data page and a
 * guard page, every page inaccessible until a slot is handed out: then its
 * data page alone becomes readable and writable, and the block ends where
 * the guard page begins (its size rounded up to 16, malloc's alignment:
 * at most 15 bytes of slack after it). The bytes before the block, and
 * that slack, hold ASP_GUARD_FILL; its free checks them, makes the page
 * inaccessible again and keeps the slot's record: a later access faults,
 * and is told as a use after free with the block's stacks. The page keeps
 * its memory (at most ASP_GUARD_SLOTS pages in all): giving it back at each
 * free (MADV_DONTNEED) would cost a second flush of every thread's TLB and
 * a page fault at its reuse, and the slot is filled again when it is.
 *
 * Slots are handed out in turn (a counter every thread takes the next of),
 * so the one freed longest ago is the next reused; a slot whose block is
 * still live is passed over. Each thread counts down to its next guarded
 * allocation from a draw of a geometric distribution of mean
 * ALLOCSPY_GUARD (1: every allocation, while the pool lasts). Only blocks
 * of one page at most, asked with malloc's alignment, are guarded. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <ucontext.h>

#include "arena.h"
#include "errors.h"
#include "guard.h"
#include "live.h"
#include "options.h"
#include "sample.h"
#include "sitemap.h"

#define ASP_GUARD_FILL 0xAA
#define SLOT_BYTES (2 * ASP_GUARD_PAGE)

uint64_t asp__guard_mean;
uintptr_t asp__guard_lo, asp__guard_hi;

enum { SLOT_FREE, SLOT_LIVE, SLOT_FREED };

struct slot {
	uint32_t state;
	uint32_t size;		/* the block's */
	uint32_t fn;		/* the function that made it */
	uintptr_t alloc_site;	/* as a live block's site */
	uintptr_t free_site;	/* its free's caller */
};

static struct slot g_slots[ASP_GUARD_SLOTS];
static uint64_t g_next;		/* slots handed out so far */
static uint64_t g_seed;
static uint64_t g_guarded;

void asp__guard_init(void)
{
	if (asp__opt.guard == 0 || asp__opt.mode != ASP_MODE_TRACK)
		return;
	size_t bytes = (size_t)ASP_GUARD_SLOTS * SLOT_BYTES;
	int saved = errno;
	void *m = mmap(NULL, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	if (m == MAP_FAILED)
		return;
	asp__arena_adopt(m, bytes);
	asp__guard_lo = (uintptr_t)m;
	asp__guard_hi = (uintptr_t)m + bytes;
	if (getrandom(&g_seed, sizeof g_seed, GRND_NONBLOCK) != (ssize_t)sizeof g_seed)
		g_seed = asp_now_ns(CLOCK_REALTIME);
	errno = saved;
	asp__guard_mean = asp__opt.guard;
}

static inline uintptr_t page_of(size_t i)
{
	return asp__guard_lo + i * SLOT_BYTES;
}

static inline size_t slot_of(uintptr_t p)
{
	return (p - asp__guard_lo) / SLOT_BYTES;
}

/* Where a block of size bytes starts in its page. */
static inline uintptr_t block_at(size_t i, size_t size)
{
	return page_of(i) + ASP_GUARD_PAGE - ((size + 15) & ~(size_t)15);
}

/* The thread's next countdown, from a generator of its own (seeded from
 * the sampling seed, or a random one, and the thread's serial): an
 * exponential draw of mean asp__guard_mean; 1 for a mean of 1. */
static int64_t draw(struct asp_thread *t)
{
	if (asp__guard_mean <= 1)
		return 1;
	uint64_t n = asp__draw_exponential(&t->guard_rng, g_seed ^ t->serial,
	                                   (double)asp__guard_mean);
	return n > ((uint64_t)1 << 62) ? (int64_t)1 << 62 : (int64_t)n;
}

void *asp__guard_alloc_slow(struct asp_thread *t, size_t size, int zero)
{
	int first = t->guard_rng == 0;
	t->guard_left = draw(t);
	if (first && asp__guard_mean > 1)
		return NULL;	/* the thread's first turn is its draw's */
	if (size > ASP_GUARD_PAGE || t->depth != 0)
		return NULL;
	for (int tries = 0; tries < 8; tries++) {
		uint64_t n = asp_atomic_add_relaxed(&g_next, 1) - 1;
		size_t i = (size_t)(n % ASP_GUARD_SLOTS);
		uint32_t was = asp_atomic_load_relaxed(&g_slots[i].state);
		if (was == SLOT_LIVE || !__atomic_compare_exchange_n(&g_slots[i].state, &was, SLOT_LIVE,
		                                                   0, __ATOMIC_ACQ_REL,
		                                                   __ATOMIC_RELAXED))
			continue;
		int saved = errno;
		int r = mprotect((void *)page_of(i), ASP_GUARD_PAGE, PROT_READ | PROT_WRITE);
		errno = saved;
		if (r != 0) {
			asp_atomic_store_release(&g_slots[i].state, was);
			return NULL;
		}
		uintptr_t p = block_at(i, size);
		/* The page holds its last block's bytes, or zeros when new. */
		memset((void *)page_of(i), ASP_GUARD_FILL, p - page_of(i));
		memset((void *)(p + size), ASP_GUARD_FILL, page_of(i) + ASP_GUARD_PAGE - (p + size));
		memset((void *)p, zero ? 0 : ASP_GUARD_FILL, size);
		g_slots[i].size = (uint32_t)size;
		asp_atomic_add_relaxed(&g_guarded, 1);
		return (void *)p;
	}
	return NULL;
}

/* Notes who made the block at p (the allocation's path, once it knows the
 * site): the report of a fault names them. */
void asp__guard_note(const void *p, unsigned fn, uintptr_t site)
{
	struct slot *s = &g_slots[slot_of((uintptr_t)p)];
	s->fn = fn;
	s->alloc_site = site;
}

size_t asp__guard_size(const void *p)
{
	return g_slots[slot_of((uintptr_t)p)].size;
}

/* The first byte from a up to end that is not ASP_GUARD_FILL, or 0: a word
 * at a time where the words are whole. */
static uintptr_t first_unfilled(uintptr_t a, uintptr_t end)
{
	const uint64_t fill = 0x0101010101010101u * ASP_GUARD_FILL;
	for (; a < end && (a & 7) != 0; a++)
		if (*(const unsigned char *)a != ASP_GUARD_FILL)
			return a;
	for (; a + 8 <= end; a += 8) {
		uint64_t w;
		memcpy(&w, (const void *)a, 8);
		if (w != fill)
			break;
	}
	for (; a < end; a++)
		if (*(const unsigned char *)a != ASP_GUARD_FILL)
			return a;
	return 0;
}

/* The first byte around the block at p of size bytes in slot i that lost
 * its fill, or 0. */
static uintptr_t damaged(size_t i, uintptr_t p, size_t size)
{
	uintptr_t bad = first_unfilled(page_of(i), p);
	return bad != 0 ? bad : first_unfilled(p + size, page_of(i) + ASP_GUARD_PAGE);
}

void asp__guard_free(struct asp_thread *t, void *ptr, uintptr_t caller)
{
	uintptr_t p = (uintptr_t)ptr;
	size_t i = slot_of(p);
	struct slot *s = &g_slots[i];
	if (asp_atomic_load_acquire(&s->state) != SLOT_LIVE || p != block_at(i, s->size))
		return;		/* (the table said it was live: not reached) */
	uintptr_t bad = damaged(i, p, s->size);
	if (bad != 0 && t != NULL)
		asp__error_overwritten(t, bad, p, s->size, s->fn, s->alloc_site, caller);
	s->free_site = caller;
	int saved = errno;
	mprotect((void *)page_of(i), ASP_GUARD_PAGE, PROT_NONE);
	errno = saved;
	asp_atomic_store_release(&s->state, SLOT_FREED);
}

int asp__guard_fault(const siginfo_t *si, const void *ucontext)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	if (asp__guard_mean == 0 || !asp__guard_owns((void *)a))
		return 0;
	const ucontext_t *uc = ucontext;
	uintptr_t pc = asp_uc_pc(uc);
	uintptr_t fp = asp_uc_fp(uc);
	int write = asp_uc_fault_write(uc);
	unsigned size = asp__access_size((const unsigned char *)pc);
	/* The slot of the page the access touched: its own data page, or the
	 * guard page after the one before (past that block's end). */
	size_t i = slot_of(a);
	int guard_page = a - page_of(i) >= ASP_GUARD_PAGE;
	const struct slot *s = &g_slots[i];
	uint32_t state = asp_atomic_load_acquire(&s->state);
	asp__error_access(write, size, a, pc, fp, guard_page && state != SLOT_FREE ? ASP_AT_AFTER
	                  : state == SLOT_FREED ? ASP_AT_FREED : ASP_AT_ELSEWHERE,
	                  block_at(i, s->size), s->size, s->fn, s->alloc_site, s->free_site);
	return 1;
}

void asp__guard_figures(uint64_t *guarded, uint64_t *live)
{
	*guarded = asp_atomic_load_relaxed(&g_guarded);
	*live = 0;
	for (size_t i = 0; asp__guard_mean != 0 && i < ASP_GUARD_SLOTS; i++)
		*live += asp_atomic_load_relaxed(&g_slots[i].state) == SLOT_LIVE;
}
