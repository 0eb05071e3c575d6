/* refs.h - reference-count statistics: the asp_ref_* helpers' events and
 * GLib's refcount API, counted per thread with cross-thread handoffs. */
#ifndef ASP_REFS_H
#define ASP_REFS_H

#include <stddef.h>
#include <sys/types.h>

#include "account.h"
#include "glue.h"
#include "options.h"
#include "thread.h"

/* The kinds of ref operation, in the order of include/allocspy.h's enum
 * asp_ref_op and of a thread's counters (thread.h, ref_ops). */
enum { REF_INIT, REF_ACQUIRE, REF_RELEASE, REF_RELEASE_LAST };

struct asp_thread *asp__ref_thread_slow(void);
void asp__ref_cross(struct asp_thread *t, const void *obj, int op);
void asp__ref_note_slow(int op, const void *obj);

/* The record to count a ref operation in, or NULL when none is counted:
 * after the exit report began, inside the shim, or when the thread has no
 * record yet (asp__ref_thread_slow makes it, and starts the shim at the
 * first operation before start-up). */
static inline struct asp_thread *asp__ref_thread(void)
{
	struct asp_thread *t = asp__state > 0 ? asp__thread_peek() : NULL;
	if (ASP_UNLIKELY(t == NULL) && (t = asp__ref_thread_slow()) == NULL)
		return NULL;
	return ASP_LIKELY(t->depth == 0) ? t : NULL;
}

/* Counts one operation in t, this thread's record: one plain add to the
 * operation's counter, which the thread owns (the totals are made from
 * these at the report: thread.h). An unknown op is not counted. */
static inline void asp__ref_count(struct asp_thread *t, int op, const void *obj)
{
	if (ASP_UNLIKELY((unsigned)op > REF_RELEASE_LAST))
		return;
	asp_owned_add(&t->c.ref_ops[op], 1);
	if (ASP_UNLIKELY(asp__opt.ref_cross))
		asp__ref_cross(t, obj, op);
}

/* The events of include/allocspy.h (enum asp_ref_op): a few loads and one
 * add, inline in the exported function; a thread without its record yet
 * takes asp__ref_note_slow. */
static inline void asp__ref_note(int op, const void *obj)
{
	struct asp_thread *t = asp__state > 0 ? asp__thread_peek() : NULL;
	if (ASP_UNLIKELY(t == NULL)) {
		asp__ref_note_slow(op, obj);
		return;
	}
	if (ASP_UNLIKELY(t->depth != 0))
		return;
	/* a branch on op, not an index: op hangs on the program's atomic
	 * (the last release or not), and a store whose address waits for it
	 * slows a contended refcount */
	if (op == REF_ACQUIRE)
		asp__ref_count(t, REF_ACQUIRE, obj);
	else if (op == REF_RELEASE)
		asp__ref_count(t, REF_RELEASE, obj);
	else
		asp__ref_count(t, op, obj);
}

/* A GLib function the shim wraps: its name, and the definition after the
 * shim, looked up at the wrapper's first call (NULL until then). Each
 * wrapper in override.c has one. */
struct asp_gsym {
	const char *name;
	void *fn;
};

void *asp__gfn_resolve(struct asp_gsym *g);

/* g's function: GLib's definition after the shim's. */
static inline void *asp__gfn(struct asp_gsym *g)
{
	void *fn = asp_atomic_load_relaxed(&g->fn);
	return ASP_LIKELY(fn != NULL) ? fn : asp__gfn_resolve(g);
}

/* GLib's refcount API: forwarded to g's function, and counted, inline in
 * the wrappers (override.c). An init or an acquire is counted before it
 * is forwarded: the call to GLib is then the last thing the wrapper does. */
static inline void asp__g_ref_init(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = asp__ref_thread();
	if (t != NULL)
		asp__ref_count(t, REF_INIT, rc);
	((void (*)(int *))asp__gfn(g))(rc);
}

static inline void asp__g_ref_inc(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = asp__ref_thread();
	if (t != NULL)
		asp__ref_count(t, REF_ACQUIRE, rc);
	((void (*)(int *))asp__gfn(g))(rc);
}

static inline int asp__g_ref_dec(struct asp_gsym *g, int *rc)
{
	struct asp_thread *t = asp__ref_thread();
	int last = ((int (*)(int *))asp__gfn(g))(rc);
	if (t != NULL) {
		if (last)
			asp__ref_count(t, REF_RELEASE_LAST, rc);
		else
			asp__ref_count(t, REF_RELEASE, rc);
	}
	return last;
}

void *asp__g_box_alloc(struct asp_gsym *g, size_t size);
void *asp__g_box_dup(struct asp_gsym *g, size_t size, const void *mem);
void *asp__g_box_acquire(struct asp_gsym *g, void *mem);
void asp__g_box_release(struct asp_gsym *g, void *mem, void (*clear)(void *));
char *asp__g_ref_string_new(struct asp_gsym *g, const char *str, ssize_t len, int with_len);

#endif
