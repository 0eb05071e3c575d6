/* refs.c - counting reference-count operations.
 *
 * Each thread counts its acquires, releases, objects created (init) and
 * destroyed (last release). A cross-thread operation is one on an object
 * whose previous operation came from another thread: the cache-line
 * handoffs that make a shared refcount slow. The last thread to touch each
 * object is kept in a direct-mapped table of 2^16 slots (address tag and
 * thread serial), read and written with plain relaxed accesses: no extra
 * read-modify-write beside the program's own atomic, and no store when the
 * same thread operates again. Concurrent operations on one object may race
 * on its slot, so cross_thread is exact only up to such races. Keeping the
 * slot moves a second cache line between the threads that share an object,
 * which about triples the cost of a contended refcount: it is done only
 * when ALLOCSPY_REF_CROSS=1 asks for it. */
#include <string.h>

#include "account.h"
#include "glue.h"
#include "next.h"
#include "options.h"
#include "refs.h"

#define ASP_REF_SLOTS (1u << 16)

enum { REF_INIT, REF_ACQUIRE, REF_RELEASE, REF_RELEASE_LAST };

static uint64_t g_last[ASP_REF_SLOTS];

ASP_NOINLINE static void cross_check(struct asp_thread *t, const void *obj, int op)
{
	uintptr_t a = (uintptr_t)obj;
	uint64_t *slot = &g_last[(uint64_t)(a >> 3) * 0x9E3779B97F4A7C15ull >> 48];
	uint64_t mine = (uint64_t)(uint32_t)(a >> 3) << 32 | t->serial;
	uint64_t seen = asp_atomic_load_relaxed(slot);
	if (op != REF_INIT && (seen >> 32) == (mine >> 32) && seen != mine)
		asp_owned_add(&t->c.ref_cross, 1);
	if (op == REF_RELEASE_LAST)
		mine = 0;
	if (seen != mine)
		asp_atomic_store_relaxed(slot, mine);
}

/* The record to count a ref operation in, or NULL when none is counted:
 * after the exit report began, or inside the shim. The first operation
 * before start-up starts the shim. */
ASP_COLD static struct asp_thread *ref_thread_slow(void)
{
	if (asp__fast == 0) {
		if (asp__state != 0)
			return NULL;
		asp__init();
	}
	return asp__thread_self();
}

static inline struct asp_thread *ref_thread(void)
{
	struct asp_thread *t = asp__fast != 0 ? asp__thread_peek() : NULL;
	if (ASP_UNLIKELY(t == NULL) && (t = ref_thread_slow()) == NULL)
		return NULL;
	return ASP_LIKELY(t->depth == 0) ? t : NULL;
}

/* Counts one operation in t, this thread's record: plain adds to counters
 * the thread owns. */
static inline void ref_count(struct asp_thread *t, int op, const void *obj)
{
	switch (op) {
	case REF_INIT:
		asp_owned_add(&t->c.ref_created, 1);
		break;
	case REF_ACQUIRE:
		asp_owned_add(&t->c.ref_acquires, 1);
		break;
	case REF_RELEASE:
		asp_owned_add(&t->c.ref_releases, 1);
		break;
	case REF_RELEASE_LAST:
		asp_owned_add(&t->c.ref_releases, 1);
		asp_owned_add(&t->c.ref_destroyed, 1);
		break;
	default:
		return;
	}
	if (ASP_UNLIKELY(asp__opt.ref_cross))
		cross_check(t, obj, op);
}

/* allocspy.h's events. The common case calls nothing: a few loads and
 * one add. */
void asp__ref_note(int op, const void *obj)
{
	struct asp_thread *t = ref_thread();
	if (t != NULL)
		ref_count(t, op, obj);
}

/* GLib ------------------------------------------------------------------- */

/* GLib's function under the shim: each wrapper has its own slot, filled at
 * its first call. Threads racing there look it up twice, to one value. */
ASP_COLD static void *gfn_resolve(struct asp_gsym *g)
{
	void *fn = asp__next_sym(g->name);
	asp_atomic_store_relaxed(&g->fn, fn);
	return fn;
}

static inline void *gfn(struct asp_gsym *g)
{
	void *fn = asp_atomic_load_relaxed(&g->fn);
	return ASP_LIKELY(fn != NULL) ? fn : gfn_resolve(g);
}

/* This thread's frees and mallocs so far: a release that freed something
 * was the last one; a "new" that allocated created an object. */
static inline uint64_t frees_of(const struct asp_thread *t)
{
	return t->c.fn[ASP_FN_FREE].calls + t->c.fn[ASP_FN_FREE].null;
}

static inline uint64_t allocs_of(const struct asp_thread *t)
{
	return t->c.fn[ASP_FN_MALLOC].calls + t->c.fn[ASP_FN_CALLOC].calls;
}

/* An init or an acquire is counted before it is forwarded: the call to
 * GLib is then the last thing the wrapper does. */
void asp__g_ref_init(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = ref_thread();
	if (t != NULL)
		ref_count(t, REF_INIT, rc);
	((void (*)(int *))gfn(g))(rc);
}

void asp__g_ref_inc(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = ref_thread();
	if (t != NULL)
		ref_count(t, REF_ACQUIRE, rc);
	((void (*)(int *))gfn(g))(rc);
}

int asp__g_ref_dec(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = ref_thread();
	int last = ((int (*)(int *))gfn(g))(rc);
	if (t != NULL)
		ref_count(t, last ? REF_RELEASE_LAST : REF_RELEASE, rc);
	return last;
}

void *asp__g_box_alloc(struct asp_gsym *g, size_t size)
{
	struct asp_thread *t = ref_thread();
	void *p = ((void *(*)(size_t))gfn(g))(size);
	if (p != NULL && t != NULL)
		ref_count(t, REF_INIT, p);
	return p;
}

void *asp__g_box_dup(struct asp_gsym *g, size_t size, const void *mem)
{
	struct asp_thread *t = ref_thread();
	void *p = ((void *(*)(size_t, const void *))gfn(g))(size, mem);
	if (p != NULL && t != NULL)
		ref_count(t, REF_INIT, p);
	return p;
}

void *asp__g_box_acquire(struct asp_gsym *g, void *mem)
{
	struct asp_thread *t = ref_thread();
	void *p = ((void *(*)(void *))gfn(g))(mem);
	if (t != NULL)
		ref_count(t, REF_ACQUIRE, mem);
	return p;
}

/* GLib frees the box (through the shim's free, which counts it in t) when
 * it drops the last reference. */
void asp__g_box_release(struct asp_gsym *g, void *mem, void (*clear)(void *))
{
	struct asp_thread *t = ref_thread();
	uint64_t before = t != NULL ? frees_of(t) : 0;
	if (clear != NULL)
		((void (*)(void *, void (*)(void *)))gfn(g))(mem, clear);
	else
		((void (*)(void *))gfn(g))(mem);
	if (t != NULL)
		ref_count(t, frees_of(t) != before ? REF_RELEASE_LAST : REF_RELEASE, mem);
}

/* A new ref string is allocated (through the shim's malloc, counted in t);
 * an interned one that already existed is only acquired. */
char *asp__g_ref_string_new(struct asp_gsym *g, const char *str, ssize_t len, int with_len)
{
	struct asp_thread *t = ref_thread();
	uint64_t before = t != NULL ? allocs_of(t) : 0;
	char *s = with_len ? ((char *(*)(const char *, ssize_t))gfn(g))(str, len)
	                   : ((char *(*)(const char *))gfn(g))(str);
	if (s != NULL && t != NULL)
		ref_count(t, allocs_of(t) != before ? REF_INIT : REF_ACQUIRE, s);
	return s;
}
