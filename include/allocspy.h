/* allocspy.h - header-only atomic reference counting, counted by allocspy,
 * and the heap figures of the running program, for unit tests.
 *
 * Needs no link flag and works without the shim. When liballocspy.so is
 * preloaded, every init, acquire and release is reported to it and counted
 * per thread; without the shim each call costs one well-predicted branch.
 * asp_heap_figures asks the shim for this process's and this thread's
 * counts so far, and answers ASP_FIGURES_UNAVAILABLE without it.
 * Usable from C (C11 or GNU C) and C++.
 */
#ifndef ALLOCSPY_H
#define ALLOCSPY_H

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct asp_ref {
	unsigned int count;
} asp_ref_t;

/* The events the shim counts. */
enum asp_ref_op {
	ASP_REF_INIT = 0,	/* an object is created with one reference */
	ASP_REF_ACQUIRE = 1,	/* one more reference */
	ASP_REF_RELEASE = 2,	/* one reference fewer, others remain */
	ASP_REF_RELEASE_LAST = 3 /* the last reference is gone */
};

/* The shim defines asp_ref_event. The reference is weak: without the shim
 * it resolves to NULL and each call costs one well-predicted branch. ld.so
 * binds it at load time in position-independent code (PIE executables,
 * Debian's default, and shared libraries); a non-PIE executable is not
 * counted. */
extern void asp_ref_event(int op, const void *obj) __attribute__((weak));

static inline void asp__ref_note(int op, const void *obj)
{
	if (__builtin_expect(asp_ref_event != NULL, 0))
		asp_ref_event(op, obj);
}

/* Starts the count at 1. */
static inline void asp_ref_init(asp_ref_t *r)
{
	__atomic_store_n(&r->count, 1, __ATOMIC_RELAXED);
	asp__ref_note(ASP_REF_INIT, r);
}

/* Takes one more reference. */
static inline void asp_ref_acquire(asp_ref_t *r)
{
	__atomic_fetch_add(&r->count, 1, __ATOMIC_RELAXED);
	asp__ref_note(ASP_REF_ACQUIRE, r);
}

/* Drops one reference; true when it was the last one, so the caller frees
 * the object. The acquire-release ordering makes the object's last writes
 * visible to the thread that frees it. */
static inline bool asp_ref_release(asp_ref_t *r)
{
	bool last = __atomic_fetch_sub(&r->count, 1, __ATOMIC_ACQ_REL) == 1;
	asp__ref_note(last ? ASP_REF_RELEASE_LAST : ASP_REF_RELEASE, r);
	return last;
}

/* The current count (a snapshot; for diagnostics only). */
static inline unsigned int asp_ref_count(const asp_ref_t *r)
{
	return __atomic_load_n(&r->count, __ATOMIC_RELAXED);
}

/* Heap figures ------------------------------------------------------------ */

/* The counts so far, with valgrind's rules (allocspy.h(3)). A figure the
 * mode does not keep is -1: count mode (ALLOCSPY_MODE=count) knows no
 * sizes of freed blocks, so no bytes in use and no peak; no thread has a
 * peak of its own. */
typedef struct asp_heap_figures {
	uint64_t allocs;	/* blocks handed out */
	uint64_t frees;		/* blocks taken back (free, delete, realloc) */
	uint64_t bytes;		/* bytes allocated */
	int64_t in_use_bytes;	/* bytes allocated less bytes freed; -1: not known */
	int64_t in_use_blocks;	/* allocs less frees */
	int64_t peak_bytes;	/* the most bytes in use at once; -1: not known */
} asp_heap_figures_t;

/* What asp_heap_figures returns when liballocspy.so does not count this
 * process: it is not preloaded (or not first: another allocator's malloc
 * is the one the program calls), or its exit report has begun. */
#define ASP_FIGURES_UNAVAILABLE (-1)

/* glibc's RTLD_DEFAULT, which <dlfcn.h> names only with _GNU_SOURCE. */
#ifdef RTLD_DEFAULT
#define ASP__RTLD_DEFAULT RTLD_DEFAULT
#else
#define ASP__RTLD_DEFAULT ((void *)0)
#endif

typedef int (*asp__figures_fn)(struct asp_heap_figures *process,
			       struct asp_heap_figures *thread, size_t size);

/* Fills *process with this process's figures and *thread with the calling
 * thread's (either may be NULL). Returns 0, or ASP_FIGURES_UNAVAILABLE with
 * neither touched. The shim's function is looked up by name at the first
 * call, with dlsym (in libc itself since glibc 2.34: no -ldl), so it is
 * found in PIE and non-PIE programs alike. */
static inline int asp_heap_figures(struct asp_heap_figures *process,
				   struct asp_heap_figures *thread)
{
	static void *sym;
	static int looked;
	union { void *p; asp__figures_fn f; } u;

	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		__atomic_store_n(&sym, dlsym(ASP__RTLD_DEFAULT, "asp_heap_figures_read"),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	u.p = __atomic_load_n(&sym, __ATOMIC_RELAXED);
	if (u.p == NULL)
		return ASP_FIGURES_UNAVAILABLE;
	return u.f(process, thread, sizeof(struct asp_heap_figures));
}

#ifdef __cplusplus
}
#endif

#endif /* ALLOCSPY_H */
