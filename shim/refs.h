/* refs.h - reference-count statistics: the asp_ref_* helpers' events and
 * GLib's refcount API, counted per thread with cross-thread handoffs. */
#ifndef ASP_REFS_H
#define ASP_REFS_H

#include <stddef.h>
#include <sys/types.h>

/* The events of include/allocspy.h (enum asp_ref_op). */
void asp__ref_note(int op, const void *obj);

/* GLib's refcount API, resolved lazily from the objects after the shim. */
void asp__g_ref_init(const char *name, int *rc);
void asp__g_ref_inc(const char *name, int *rc);
int asp__g_ref_dec(const char *name, int *rc);
void *asp__g_box_alloc(const char *name, size_t size);
void *asp__g_box_dup(const char *name, size_t size, const void *mem);
void *asp__g_box_acquire(const char *name, void *mem);
void asp__g_box_release(const char *name, void *mem, void (*clear)(void *));
char *asp__g_ref_string_new(const char *name, const char *str, ssize_t len, int with_len);

#endif
