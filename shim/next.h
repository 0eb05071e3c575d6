/* next.h - the allocator underneath: every family function resolved once
 * with dlsym, all from the library that provides free, and the bootstrap
 * arena that serves the allocations dlsym itself makes meanwhile. */
#ifndef ASP_NEXT_H
#define ASP_NEXT_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "glue.h"

struct asp_next {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*reallocarray)(void *, size_t, size_t);
	void (*free)(void *);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*malloc_usable_size)(void *);
	void (*exit_)(int);
	void (*Exit_)(int);
};

extern ASP_HIDDEN struct asp_next asp__next;

/* Resolves asp__next. Returns 0, or -1 while a resolution is under way on
 * this path (the caller then uses the bootstrap arena). */
int asp__next_init(void);

/* The shim's memory inside its own data, never the program's heap: first
 * the bootstrap arena, zeroed memory for what dlsym and the loader
 * allocate for the shim (never freed), then the inner heap of
 * asp__heap_alloc (arena.h), for what runs inside the shim (libunwind).
 * The pages are the kernel's zero pages until used. */
#define ASP_BOOT_SIZE (256 * 1024)
#define ASP_INNER_SIZE (16u << 20)
extern ASP_HIDDEN unsigned char asp__boot[ASP_BOOT_SIZE + ASP_INNER_SIZE];

void *asp__boot_alloc(size_t size, size_t align);

static inline int asp__boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)asp__boot < ASP_BOOT_SIZE;
}

/* The bootstrap arena or the inner heap. */
static inline int asp__inner_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)asp__boot < ASP_BOOT_SIZE + ASP_INNER_SIZE;
}

size_t asp__boot_size(const void *p);

/* How much of the bootstrap arena is in use. */
size_t asp__boot_used(void);

/* Looks a symbol up in the objects after the shim (RTLD_NEXT), once. */
void *asp__next_sym(const char *name);

#endif
