/* allocspy.h - header-only atomic reference counting, counted by allocspy.
 *
 * Needs no link flag and works without the shim. When liballocspy.so is
 * preloaded, every init, acquire and release is reported to it and counted
 * per thread; without the shim each call costs one well-predicted branch.
 * Usable from C (C11 or GNU C) and C++.
 */
#ifndef ALLOCSPY_H
#define ALLOCSPY_H

#include <stdbool.h>
#include <stddef.h>

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

#ifdef __cplusplus
}
#endif

#endif /* ALLOCSPY_H */
