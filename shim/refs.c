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

static uint64_t g_last[ASP_REF_SLOTS];

/* ALLOCSPY_REF_CROSS=1: counts op on obj as cross-thread when the object's
 * last operation came from another thread (its slot, above). */
void asp__ref_cross(struct asp_thread *t, const void *obj, int op)
{
	uintptr_t a = (uintptr_t)obj;
	uint64_t *slot = &g_last[asp_hash(a >> 3) >> 48];
	uint64_t mine = (uint64_t)(uint32_t)(a >> 3) << 32 | t->serial;
	uint64_t seen = asp_atomic_load_relaxed(slot);
	if (op != REF_INIT && (seen >> 32) == (mine >> 32) && seen != mine)
		asp_owned_add(&t->c.ref_cross, 1);
	if (op == REF_RELEASE_LAST)
		mine = 0;
	if (seen != mine)
		asp_atomic_store_relaxed(slot, mine);
}

ASP_COLD struct asp_thread *asp__ref_thread_slow(void)
{
	if (asp__state <= 0) {
		if (asp__state == ASP_STATE_STOPPED)
			return NULL;
		asp__init();
	}
	return asp__thread_self();
}

/* allocspy.h's event from a thread without its record yet. */
ASP_COLD void asp__ref_note_slow(int op, const void *obj)
{
	struct asp_thread *t = asp__ref_thread_slow();
	if (t != NULL && t->depth == 0)
		asp__ref_count(t, op, obj);
}

/* GLib ------------------------------------------------------------------- */

/* GLib's function under the shim, looked up at its wrapper's first call
 * (refs.h, asp__gfn). Threads racing there look it up twice, to one
 * value. */
ASP_COLD void *asp__gfn_resolve(struct asp_gsym *g)
{
	void *fn = asp__next_sym(g->name);
	asp_atomic_store_relaxed(&g->fn, fn);
	return fn;
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

void *asp__g_box_alloc(struct asp_gsym *g, size_t size)
{
	struct asp_thread *t = asp__ref_thread();
	void *p = ((void *(*)(size_t))asp__gfn(g))(size);
	if (p != NULL && t != NULL)
		asp__ref_count(t, REF_INIT, p);
	return p;
}

void *asp__g_box_dup(struct asp_gsym *g, size_t size, const void *mem)
{
	struct asp_thread *t = asp__ref_thread();
	void *p = ((void *(*)(size_t, const void *))asp__gfn(g))(size, mem);
	if (p != NULL && t != NULL)
		asp__ref_count(t, REF_INIT, p);
	return p;
}

void *asp__g_box_acquire(struct asp_gsym *g, void *mem)
{
	struct asp_thread *t = asp__ref_thread();
	void *p = ((void *(*)(void *))asp__gfn(g))(mem);
	if (t != NULL)
		asp__ref_count(t, REF_ACQUIRE, mem);
	return p;
}

/* GLib frees the box (through the shim's free, which counts it in t) when
 * it drops the last reference. */
void asp__g_box_release(struct asp_gsym *g, void *mem, void (*clear)(void *))
{
	struct asp_thread *t = asp__ref_thread();
	uint64_t before = t != NULL ? frees_of(t) : 0;
	if (clear != NULL)
		((void (*)(void *, void (*)(void *)))asp__gfn(g))(mem, clear);
	else
		((void (*)(void *))asp__gfn(g))(mem);
	if (t != NULL)
		asp__ref_count(t, frees_of(t) != before ? REF_RELEASE_LAST : REF_RELEASE, mem);
}

/* A new ref string is allocated (through the shim's malloc, counted in t);
 * an interned one that already existed is only acquired. */
char *asp__g_ref_string_new(struct asp_gsym *g, const char *str, ssize_t len, int with_len)
{
	struct asp_thread *t = asp__ref_thread();
	uint64_t before = t != NULL ? allocs_of(t) : 0;
	char *s = with_len ? ((char *(*)(const char *, ssize_t))asp__gfn(g))(str, len)
	                   : ((char *(*)(const char *))asp__gfn(g))(str);
	if (s != NULL && t != NULL)
		asp__ref_count(t, allocs_of(t) != before ? REF_INIT : REF_ACQUIRE, s);
	return s;
}
