/* symbolize - turns a dump's return addresses into function, file and line
 * through the dump's module map, with the symbolizer the shim shares
 * (common/dwsym.c) and libdw linked in. */
#ifndef ASP_SYMBOLIZE_H
#define ASP_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* One line of a printed stack. An address inside inlined code gives several
 * lines with the same address: the inlined functions, innermost first, then
 * the function they were inlined into. The strings live as long as the
 * symbolizer. */
typedef struct asp_line {
	uint64_t addr;		/* as in the dump */
	const char *fn;		/* demangled, as valgrind shows it; NULL: unknown */
	const char *raw;	/* the symbol as in the object (mangled); NULL: unknown */
	const char *file;	/* base name; NULL: unknown */
	unsigned line;		/* with file */
	const char *module;	/* path of the module; NULL: in none */
	bool inlined;		/* fn was inlined into the next line's */
} asp_line_t;

typedef struct asp_symbolizer asp_symbolizer_t;

/* Opens nothing yet: each module's file is read the first time one of its
 * addresses is looked up. Warnings (a file that cannot be read, a build-id
 * that differs from the dump's) go to stderr once per module. */
asp_symbolizer_t *asp_symbolizer_new(const asp_dump_t *d);
void asp_symbolizer_free(asp_symbolizer_t *s);

/* The lines of the return address addr, at most max of them (max >= 1),
 * into out; returns how many. A return address points after its call, so
 * addr - 1 is what is looked up. */
size_t asp_symbolize(asp_symbolizer_t *s, uint64_t addr, asp_line_t *out,
		     size_t max);

/* Whether the return address addr is in liballocspy.so itself: its frames
 * (the thread trampoline, interposers) are left out of every stack. */
bool asp_symbolize_is_shim(asp_symbolizer_t *s, uint64_t addr);

/* The demangled form of a symbol, malloc'd, or NULL when it is not a C++
 * symbol. */
char *asp_demangle(const char *name);

#endif
