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
#include <dlfcn.h>
#include <string.h>

#include "account.h"
#include "glue.h"
#include "next.h"
#include "options.h"
#include "refs.h"

#define ASP_REF_SLOTS (1u << 16)

enum { REF_INIT, REF_ACQUIRE, REF_RELEASE, REF_RELEASE_LAST };

static uint64_t g_last[ASP_REF_SLOTS];

static inline void cross_check(struct asp_thread *t, const void *obj, int op)
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

void asp__ref_note(int op, const void *obj)
{
	if (ASP_UNLIKELY(asp__fast == 0)) {
		if (asp__state != 0)
			return;
		asp__init();
	}
	struct asp_thread *t = asp__thread_self();
	if (t->depth != 0)
		return;
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
	if (asp__opt.ref_cross)
		cross_check(t, obj, op);
}

/* GLib ------------------------------------------------------------------- */

/* The GLib function under the shim, looked up once per name. */
struct gsym {
	const char *name;
	void *fn;
};

static struct gsym g_syms[32];

static void *gfn(const char *name)
{
	for (size_t i = 0; i < ASP_ARRAY_SIZE(g_syms); i++) {
		const char *n = asp_atomic_load_acquire(&g_syms[i].name);
		if (n == name)
			return asp_atomic_load_relaxed(&g_syms[i].fn);
		if (n == NULL) {
			void *fn = asp__next_sym(name);
			asp_atomic_store_relaxed(&g_syms[i].fn, fn);
			/* A race may fill two slots for one name: harmless. */
			asp_atomic_store_release(&g_syms[i].name, name);
			return fn;
		}
	}
	return asp__next_sym(name);
}

/* This thread's frees and mallocs so far: a release that freed something
 * was the last one; a "new" that allocated created an object. */
static uint64_t frees_so_far(void)
{
	if (asp__fast == 0)
		return 0;
	struct asp_thread *t = asp__thread_self();
	return t->c.fn[ASP_FN_FREE].calls + t->c.fn[ASP_FN_FREE].null;
}

static uint64_t allocs_so_far(void)
{
	if (asp__fast == 0)
		return 0;
	struct asp_thread *t = asp__thread_self();
	return t->c.fn[ASP_FN_MALLOC].calls + t->c.fn[ASP_FN_CALLOC].calls;
}

void asp__g_ref_init(const char *name, int *rc)
{
	((void (*)(int *))gfn(name))(rc);
	asp__ref_note(REF_INIT, rc);
}

void asp__g_ref_inc(const char *name, int *rc)
{
	((void (*)(int *))gfn(name))(rc);
	asp__ref_note(REF_ACQUIRE, rc);
}

int asp__g_ref_dec(const char *name, int *rc)
{
	int last = ((int (*)(int *))gfn(name))(rc);
	asp__ref_note(last ? REF_RELEASE_LAST : REF_RELEASE, rc);
	return last;
}

void *asp__g_box_alloc(const char *name, size_t size)
{
	void *p = ((void *(*)(size_t))gfn(name))(size);
	if (p != NULL)
		asp__ref_note(REF_INIT, p);
	return p;
}

void *asp__g_box_dup(const char *name, size_t size, const void *mem)
{
	void *p = ((void *(*)(size_t, const void *))gfn(name))(size, mem);
	if (p != NULL)
		asp__ref_note(REF_INIT, p);
	return p;
}

void *asp__g_box_acquire(const char *name, void *mem)
{
	void *p = ((void *(*)(void *))gfn(name))(mem);
	asp__ref_note(REF_ACQUIRE, mem);
	return p;
}

void asp__g_box_release(const char *name, void *mem, void (*clear)(void *))
{
	uint64_t before = frees_so_far();
	if (clear != NULL)
		((void (*)(void *, void (*)(void *)))gfn(name))(mem, clear);
	else
		((void (*)(void *))gfn(name))(mem);
	asp__ref_note(frees_so_far() != before ? REF_RELEASE_LAST : REF_RELEASE, mem);
}

char *asp__g_ref_string_new(const char *name, const char *str, ssize_t len, int with_len)
{
	uint64_t before = allocs_so_far();
	char *s = with_len ? ((char *(*)(const char *, ssize_t))gfn(name))(str, len)
	                   : ((char *(*)(const char *))gfn(name))(str);
	if (s != NULL)
		asp__ref_note(allocs_so_far() != before ? REF_INIT : REF_ACQUIRE, s);
	return s;
}
