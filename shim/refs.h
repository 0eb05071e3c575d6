/* refs.h - reference-count statistics: the asp_ref_* helpers' events and
 * GLib's refcount API, counted per thread with cross-thread handoffs. */
#ifndef ASP_REFS_H
#define ASP_REFS_H

#include <stddef.h>
#include <sys/types.h>

/* The events of include/allocspy.h (enum asp_ref_op). */
void asp__ref_note(int op, const void *obj);

/* A GLib function the shim wraps: its name, and the definition after the
 * shim, looked up at the wrapper's first call (NULL until then). Each
 * wrapper in override.c has one. */
struct asp_gsym {
	const char *name;
	void *fn;
};

/* GLib's refcount API: forwarded to g's function, and counted. */
void asp__g_ref_init(struct asp_gsym *g, int *rc);
void asp__g_ref_inc(struct asp_gsym *g, int *rc);
int asp__g_ref_dec(struct asp_gsym *g, int *rc);
void *asp__g_box_alloc(struct asp_gsym *g, size_t size);
void *asp__g_box_dup(struct asp_gsym *g, size_t size, const void *mem);
void *asp__g_box_acquire(struct asp_gsym *g, void *mem);
void asp__g_box_release(struct asp_gsym *g, void *mem, void (*clear)(void *));
char *asp__g_ref_string_new(struct asp_gsym *g, const char *str, ssize_t len, int with_len);

#endif
