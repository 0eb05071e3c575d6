/* errors.h - valgrind's heap errors, found in track mode from the table of
 * live blocks: "Invalid free() / delete / delete[] / realloc()" (a free of
 * an address that is no live block: freed already, inside a block, on a
 * stack, in a global, or anywhere else), "Mismatched free() / delete /
 * delete []" (a block freed by a function of another family than the one
 * that made it) and "Argument 'size' of function malloc has a fishy
 * (possibly negative) value". As valgrind does, an invalid free is not
 * passed on to the allocator, so the program goes on as it would under
 * valgrind; a mismatched free is made.
 *
 * Each error is kept once per context, as valgrind groups them: the same
 * kind, function and call site; the exit text prints them before the HEAP
 * SUMMARY, with valgrind's ERROR SUMMARY line at the end. */
#ifndef ASP_ERRORS_H
#define ASP_ERRORS_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "live.h"
#include "thread.h"

enum asp_err_kind {
	ASP_ERR_INVALID_FREE,
	ASP_ERR_MISMATCHED_FREE,
	ASP_ERR_FISHY,
	/* ALLOCSPY_GUARD (guard.h): a fault on a guarded block, and bytes
	 * around one written, found at its free */
	ASP_ERR_INVALID_READ,
	ASP_ERR_INVALID_WRITE,
	ASP_ERR_OVERWRITTEN,
	ASP_ERR_KINDS
};

/* What an invalid free's address is. */
enum asp_err_where {
	ASP_AT_NONE,
	ASP_AT_BLOCK,		/* inside a live block */
	ASP_AT_FREED,		/* inside a block freed not long ago */
	ASP_AT_STACK,		/* on a thread's stack */
	ASP_AT_ELSEWHERE,	/* a global, or nothing known (told at exit) */
	ASP_AT_AFTER,		/* past the end of a block (guard.h) */
	ASP_AT_BEFORE,		/* before its start */
};

/* The frames of an access's stack (a fault's) kept. */
#define ASP_ERROR_FRAMES 16

/* The most contexts kept, as valgrind's default. */
#define ASP_ERRORS_MAX 1000

struct asp_heap_error {
	unsigned kind, where;
	unsigned fn;		/* the call: free, delete, realloc, malloc, ... */
	uintptr_t addr;
	uintptr_t site;		/* the call's site: its caller, or its stack id
				 * with ALLOCSPY_BACKTRACE of 2 or more */
	uint64_t count;		/* the errors of this context */
	/* The block it is about (ASP_AT_BLOCK, ASP_AT_FREED, a mismatch). */
	uintptr_t block;
	uint64_t size;
	unsigned block_fn;
	uintptr_t alloc_site;	/* as a live block's site */
	uintptr_t free_site;	/* ASP_AT_FREED: the free's caller */
	uint32_t thread;	/* ASP_AT_STACK: the thread's number, valgrind's */
	const char *arg;	/* ASP_ERR_FISHY: "size", "nmemb" */
	uint64_t value;
	unsigned access;	/* invalid read or write: its size (0: unknown) */
	uintptr_t pcs[ASP_ERROR_FRAMES];	/* an access's stack, its pc first */
	unsigned npcs;
	int suppressed;		/* at exit: a suppression matched (its name) */
	const char *suppression;
};

/* Reported by the frees of track mode (account.c). */
void asp__error_invalid_free(struct asp_thread *t, enum asp_fn fn, uintptr_t p, uintptr_t caller);
void asp__error_mismatch(struct asp_thread *t, enum asp_fn fn, const struct asp_live_entry *e,
                         uintptr_t caller);
/* An allocation's argument arg whose value, as a signed number, is
 * negative (valgrind's "fishy" value). */
void asp__error_fishy(struct asp_thread *t, enum asp_fn fn, const char *arg, uint64_t value,
                      uintptr_t caller);

/* A fault on a guarded block (guard.c): a read or write of size bytes at
 * addr, by the instruction at pc with frame pointer fp (the access's stack
 * is walked from them), where says what addr is (ASP_AT_AFTER, _BEFORE,
 * _FREED, _ELSEWHERE) about the block at block of size bytes made by fn at
 * alloc_site (and freed at free_site). Runs in the signal handler: takes
 * no lock, allocates nothing. */
void asp__error_access(int write, unsigned size, uintptr_t addr, uintptr_t pc, uintptr_t fp,
                       unsigned where, uintptr_t block, uint64_t bsize, unsigned fn,
                       uintptr_t alloc_site, uintptr_t free_site);
/* Bytes around a guarded block, from the first one at addr, were written:
 * found by the block's free from caller. */
void asp__error_overwritten(struct asp_thread *t, uintptr_t addr, uintptr_t block, uint64_t bsize,
                            unsigned fn, uintptr_t alloc_site, uintptr_t caller);

static inline int asp__fishy(uint64_t v)
{
	return (int64_t)v < 0;
}

/* The words of live.h whose block fn may free without a mismatch, as a
 * mask (bit fn + 1 of the functions of fn's family; the word keeps its
 * function + 1): a constant where fn is. */
static ASP_ALWAYS_INLINE uint32_t asp__family_words(unsigned fn)
{
	switch (asp_fn_family(fn)) {
	case ASP_FAMILY_MALLOC: return ASP_FAMILY_MALLOC_WORDS;
	case ASP_FAMILY_NEW: return ASP_FAMILY_NEW_WORDS;
	case ASP_FAMILY_NEW_ARR: return ASP_FAMILY_NEW_ARR_WORDS;
	default: return 0;
	}
}

/* Whether a block made by alloc may be freed by free without a mismatch. */
static inline int asp__families_match(unsigned alloc, unsigned free_)
{
	return asp_fn_family(alloc) == asp_fn_family(free_);
}

/* The errors so far: their contexts (in the order first seen), how many,
 * and the number of errors in all. */
struct asp_heap_error *asp__errors(size_t *n, uint64_t *total);

/* valgrind's ERROR SUMMARY of the heap errors: errors and contexts, and
 * those a suppression matched. */
void asp__errors_summary(uint64_t *errors, uint64_t *contexts, uint64_t *suppressed,
                         uint64_t *suppressed_contexts);

/* fork's child: a lock another thread held is free again. */
void asp__errors_atfork_child(void);

#endif
