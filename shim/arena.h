/* arena.h - the shim's own memory, straight from mmap: it never takes
 * memory from the program's heap, so the program's figures stay its own. */
#ifndef ASP_ARENA_H
#define ASP_ARENA_H

#include <stddef.h>

/* Zeroed pages, or NULL. errno is preserved. */
void *asp__pages_alloc(size_t size);
void asp__pages_free(void *p, size_t size);

/* Zeroed, 64-byte aligned memory that lives as long as the process. */
void *asp__arena_alloc(size_t size);

/* Calls fn for every range this module has mapped and not unmapped (on a
 * snapshot: fn may map memory; not thread-safe against other callers). */
void asp__arena_ranges(void (*fn)(void *arg, const void *start, size_t len), void *arg);

#endif
