/* symbols.h - naming code addresses inside the process at exit, with the
 * symbolizer the analyzer shares (common/dwsym.c): the function as valgrind
 * names it (demangled when the program has libstdc++ loaded), and file:line
 * with one line per inlined call when libdw.so.1 can be dlopen'd and the
 * object has debug info; else the function from the object's symbol table
 * and its path. Only used once counting has stopped. */
#ifndef ASP_SYMBOLS_H
#define ASP_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dwsym.h"

/* The lines of the code address pc (the call itself: a return address
 * minus one), at most max (>= 1), innermost inlined call first. Returns
 * how many (at least 1). The strings live until the process ends. */
size_t asp__symbolize_lines(uintptr_t pc, asp_dwline_t *out, size_t max);

/* Whether pc is inside liballocspy.so: such frames are never shown. */
bool asp__symbols_is_shim(uintptr_t pc);

/* The path of the object that holds pc, or NULL. */
const char *asp__symbols_object(uintptr_t pc);

/* The data symbol (a global or static variable) that holds addr, as its
 * object's symbol table names it, with its start in *start; NULL when
 * none does. */
const char *asp__symbols_data(uintptr_t addr, uintptr_t *start);

/* name demangled when it is a C++ symbol and a demangler is loaded, else
 * name itself. The result lives until the process ends. */
const char *asp__symbols_demangle(const char *name);

#endif
