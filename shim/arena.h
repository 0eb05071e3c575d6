/* arena.h - the shim's own memory, straight from mmap: it never takes
 * memory from the program's heap, so the program's figures stay its own. */
#ifndef ASP_ARENA_H
#define ASP_ARENA_H

#include <stddef.h>

/* Zeroed pages, or NULL. errno is preserved. */
void *asp__pages_alloc(size_t size);
void asp__pages_free(void *p, size_t size);

/* The same, for a large array (4 MiB or more) most of whose pages will be
 * written: in huge pages where the system has them, each backed whole at
 * its first write (pages never written still cost nothing). Given back
 * with asp__pages_free. */
void *asp__pages_alloc_dense(size_t size);

/* A mapping made for the shim by a library it calls (libunwind's caches)
 * is listed as the shim's, so that the leak scan leaves it out; it leaves
 * the list before it is unmapped. errno is preserved. */
void asp__arena_adopt(void *p, size_t size);
void asp__arena_disown(const void *p, size_t size);

/* Zeroed pages for a dump's work (dense, as above), given back with the
 * same size: a few are kept for the next dump instead of unmapped. */
void *asp__scratch_alloc(size_t size);
void asp__scratch_free(void *p, size_t size);

/* Zeroed, 64-byte aligned memory that lives as long as the process. The
 * quiet one, for a caller that has blocked every signal itself: no system
 * call on the way but the mapping of a new chunk. */
void *asp__arena_alloc(size_t size);
void *asp__arena_alloc_quiet(size_t size);

/* A small heap of the shim's own, for the libraries it runs inside the
 * program (jansson): malloc's semantics, memory from the arena, safe to call
 * with the program's allocator in any state (a signal handler's report). */
void *asp__heap_alloc(size_t size);
void asp__heap_free(void *p);
void *asp__heap_realloc(void *p, size_t size);
size_t asp__heap_size(const void *p);

/* The same, for a caller that has blocked every signal itself: no system
 * call on the way. */
void *asp__heap_alloc_quiet(size_t size);
void asp__heap_free_quiet(void *p);

/* fork: the arena's lock is held across it. */
void asp__arena_atfork_prepare(void);
void asp__arena_atfork_release(void);

/* Calls fn for every range this module has mapped and not unmapped (on a
 * snapshot: fn may map memory; not thread-safe against other callers). */
void asp__arena_ranges(void (*fn)(void *arg, const void *start, size_t len), void *arg);

#endif
