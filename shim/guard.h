/* guard.h - guarded sampling (ALLOCSPY_GUARD=N): about one allocation in
 * N, at random, gets a page of its own from a pool, its block pushed
 * against the inaccessible page that follows, so that a read or write past
 * its end faults at once; the bytes left before it and between its end and
 * the guard page hold a pattern that its free checks. A freed slot is
 * made inaccessible and stays so until the pool comes round to it again
 * (oldest first), so that a use after free faults too. A fault on the
 * pool is reported in valgrind's words ("Invalid write of size 8",
 * "Address 0x... is 0 bytes after a block of size 128 alloc'd", or "...
 * inside a block of size 128 free'd", with the access's stack and the
 * block's), then the program dies of it as it would have. The blocks
 * count and sit in the table of live blocks as any other. */
#ifndef ASP_GUARD_H
#define ASP_GUARD_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "thread.h"

/* The pool: its slots, each a data page and a guard page. */
#define ASP_GUARD_SLOTS 1024
#define ASP_GUARD_PAGE ASP_PAGE

/* The largest ALLOCSPY_GUARD. */
#define ASP_GUARD_MAX ((uint64_t)1 << 40)

/* 0 when off; else the mean number of allocations between two guarded. */
extern ASP_HIDDEN uint64_t asp__guard_mean;
extern ASP_HIDDEN uintptr_t asp__guard_lo, asp__guard_hi;

/* Start-up, after the options: maps the pool (reserved, inaccessible). */
void asp__guard_init(void);

static inline int asp__guard_owns(const void *p)
{
	return (uintptr_t)p - asp__guard_lo < asp__guard_hi - asp__guard_lo;
}

/* A block of size bytes from the pool when this allocation is the thread's
 * turn and a slot is free (zeroed when zero is set), else NULL: the
 * caller allocates as usual. */
void *asp__guard_alloc_slow(struct asp_thread *t, size_t size, int zero);

static ASP_ALWAYS_INLINE void *asp__guard_alloc(struct asp_thread *t, size_t size, int zero)
{
	if (ASP_LIKELY(asp__guard_mean == 0) || --t->guard_left > 0)
		return NULL;
	return asp__guard_alloc_slow(t, size, zero);
}

/* The allocation's path, once it knows the block's function and site:
 * the report of a fault names them. */
void asp__guard_note(const void *p, unsigned fn, uintptr_t site);

/* The same from t's last block's site, when p is a guarded block. */
static ASP_ALWAYS_INLINE void asp__guard_made(const struct asp_thread *t, const void *p,
                                             unsigned fn)
{
	if (ASP_UNLIKELY(asp__guard_mean != 0) && asp__guard_owns(p))
		asp__guard_note(p, fn, t->last_site);
}

/* The free of a pool block p (asp__guard_owns): its slot made
 * inaccessible; bytes written around it are reported (errors.h), with
 * caller the free's site (t NULL: the shim's own free, not reported). */
void asp__guard_free(struct asp_thread *t, void *p, uintptr_t caller);

/* A pool block's size (its usable size). */
size_t asp__guard_size(const void *p);

/* A SIGSEGV or SIGBUS whose address is in the pool: 1 when it was the
 * pool's, its error then recorded (errors.h) for the fatal signal's
 * report; 0 when it is none of the shim's. */
int asp__guard_fault(const siginfo_t *si, const void *ucontext);

/* The pool's figures for the dump: slots used so far, live, and the
 * blocks guarded. */
void asp__guard_figures(uint64_t *guarded, uint64_t *live);

#endif
