/* account.h - what every interposed function does: forward to the
 * allocator underneath, then count the call in the thread's record and,
 * in track mode, the live table. override.c calls these and nothing else. */
#ifndef ASP_ACCOUNT_H
#define ASP_ACCOUNT_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "thread.h"

/* 0 before start-up, 1 while counting, 2 once the exit report began. */
extern int asp__state;

/* In-use bytes published by threads, and the largest total seen. */
extern int64_t asp__in_use;
extern int64_t asp__peak;

/* Publishes t's unpublished in-use delta. */
void asp__publish(struct asp_thread *t);

void *asp__alloc(enum asp_fn fn, size_t size, uintptr_t site);
void *asp__calloc(size_t n, size_t size, uintptr_t site);
void *asp__realloc(void *p, size_t size, uintptr_t site);
void *asp__reallocarray(void *p, size_t n, size_t size, uintptr_t site);
int asp__posix_memalign(void **out, size_t align, size_t size, uintptr_t site);
void *asp__memalign(enum asp_fn fn, size_t align, size_t size, uintptr_t site);
void asp__free(void *p, enum asp_fn fn);
size_t asp__usable_size(void *p);

char *asp__strdup(enum asp_fn fn, const char *s, uintptr_t site);
char *asp__strndup(enum asp_fn fn, const char *s, size_t n, uintptr_t site);
wchar_t *asp__wcsdup(const wchar_t *s, uintptr_t site);
void *asp__memdup(enum asp_fn fn, const void *mem, size_t size, uintptr_t site);

/* operator new: real is the libstdc++ function under the same name, used
 * when the plain path fails (new-handler, bad_alloc) or for alignment. */
void *asp__new(enum asp_fn fn, size_t size, uintptr_t site, const char *real);
void *asp__new_nothrow(enum asp_fn fn, size_t size, uintptr_t site, const char *real);
void *asp__new_aligned(enum asp_fn fn, size_t size, size_t align, int nothrow,
                       uintptr_t site, const char *real);

/* Makes sure the shim is set up (also the constructor's job). */
void asp__init(void);

/* The exit report, once: from the destructor or _exit. */
void asp__finish(void);

#endif
