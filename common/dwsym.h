/* dwsym - one symbolizer for the analyzer and the shim: an address becomes
 * the lines valgrind prints for it (function, file:line, one line per
 * inlined call), with valgrind's choice among the names that share an
 * address, demangled by the C++ runtime.
 *
 * This file is compiled twice: into allocspy-report, which links libdw and
 * libstdc++ and fills the function table directly, and into
 * liballocspy.so, which links neither: at exit it fills the table with
 * dlsym from a dlopen'd libdw.so.1, and finds __cxa_demangle only when the
 * program already has libstdc++ loaded. */
#ifndef ASP_DWSYM_H
#define ASP_DWSYM_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every libdw function the symbolizer calls, once: X(name) for each. */
#define ASP_DW_FUNCS(X) \
	X(dwfl_begin) X(dwfl_end) X(dwfl_errmsg) X(dwfl_report_begin) \
	X(dwfl_report_elf) X(dwfl_report_end) X(dwfl_addrmodule) \
	X(dwfl_module_getsymtab) X(dwfl_module_getsym_info) \
	X(dwfl_module_getsrc) X(dwfl_lineinfo) X(dwfl_module_addrdie) \
	X(dwfl_module_getelf) X(dwfl_module_build_id) \
	X(dwfl_build_id_find_elf) X(dwfl_standard_find_debuginfo) \
	X(dwfl_offline_section_address) \
	X(dwarf_getscopes) X(dwarf_getscopes_die) X(dwarf_tag) X(dwarf_attr) \
	X(dwarf_attr_integrate) X(dwarf_formstring) X(dwarf_formudata) \
	X(dwarf_diecu) X(dwarf_getsrcfiles) X(dwarf_filesrc)

typedef char *asp_demangle_fn(const char *mangled, char *buf, size_t *len,
			      int *status);

/* The functions, by their libdw names. */
typedef struct asp_dw_api {
#define ASP_DW_FIELD(f) __typeof__(f) *f;
	ASP_DW_FUNCS(ASP_DW_FIELD)
#undef ASP_DW_FIELD
	asp_demangle_fn *demangle;	/* __cxa_demangle; NULL: names stay mangled */
} asp_dw_api_t;

/* One printed line of a frame. An address inside inlined code gives
 * several lines with the same address: the inlined functions, innermost
 * first, then the function they were inlined into. The strings live as
 * long as the symbolizer. */
typedef struct asp_dwline {
	const char *fn;		/* as valgrind shows it (demangled); NULL: unknown */
	const char *raw;	/* the symbol as written in the object; NULL: unknown */
	const char *file;	/* base name; NULL: unknown */
	unsigned line;		/* with file */
	const char *module;	/* path of the object; NULL: in none */
	bool inlined;		/* fn was inlined into the next line's */
} asp_dwline_t;

/* A symbol of an object: where it starts, its size, its name. */
typedef struct asp_dwcand {
	uint64_t start, size;
	const char *name;
} asp_dwcand_t;

typedef struct asp_dwsym asp_dwsym_t;

/* api may be NULL, or have no libdw functions (dwfl_begin NULL): then only the ELF symbol tables given with
 * asp_dwsym_set_symbols name addresses. */
asp_dwsym_t *asp_dwsym_new(const asp_dw_api_t *api);
void asp_dwsym_free(asp_dwsym_t *s);

/* Adds an object loaded at bias base (its addresses run up to end, 0 when
 * unknown), with a tag for the caller. path is copied. Returns 0 or
 * -ENOMEM. Indexes of modules change as modules are added. */
int asp_dwsym_add(asp_dwsym_t *s, const char *path, uint64_t base,
		  uint64_t end, const void *tag);
size_t asp_dwsym_count(const asp_dwsym_t *s);
const void *asp_dwsym_tag(const asp_dwsym_t *s, int i);
/* Whether module i was opened already (or failed to be). */
bool asp_dwsym_tried(const asp_dwsym_t *s, int i);

/* Whether the object at path is liballocspy.so itself, whose frames
 * (interposers, the thread trampoline) are never shown. */
bool asp_dwsym_is_shim(const char *path);

/* The module's index whose range holds addr (largest base at or below
 * it), or -1. */
int asp_dwsym_find(asp_dwsym_t *s, uint64_t addr);

/* Opens module i with libdw (once). Returns 0, -ENOSYS when the table
 * has no libdw functions, or another negative errno with a reason in *why
 * (a static or libdw string) or NULL (nothing worth a warning). */
int asp_dwsym_open(asp_dwsym_t *s, int i, const char **why);

/* The build-id of module i as lower-case hex into hex (2 * 128 + 1
 * bytes); returns its length in bytes, or 0 when it has none. */
int asp_dwsym_build_id(asp_dwsym_t *s, int i, char *hex);

/* The path module i was added with. */
const char *asp_dwsym_path(const asp_dwsym_t *s, int i);

/* Sorts symbols as asp_dwsym_set_symbols and asp_dwsym_choose want them:
 * by start, then size. */
void asp_dwsym_sort(asp_dwcand_t *c, size_t n);

/* For a caller without libdw: module i's function symbols, sorted, which
 * must stay valid as long as s. */
void asp_dwsym_set_symbols(asp_dwsym_t *s, int i, const asp_dwcand_t *c,
			   size_t n);

/* valgrind's name for the C library's functions that call main
 * (__libc_start_call_main, __libc_start_main): a stack that does not reach
 * main (a stripped program's) ends at the first of them, as one that does
 * ends at main. */
#define ASP_DW_BELOW_MAIN "(below main)"

/* Whether a line named fn ends a stack as valgrind shows it: main, or the
 * first function below it. */
static inline bool asp_dwsym_ends_stack(const char *fn)
{
	return fn != NULL && (__builtin_strcmp(fn, "main") == 0 ||
			      __builtin_strcmp(fn, ASP_DW_BELOW_MAIN) == 0);
}

/* The lines of code address pc (the call itself: a return address minus
 * one), at most max (max >= 1), into out; returns how many (at least 1).
 * Results are cached per address. glibc's __clone3 is named clone, as
 * valgrind (whose threads are made with clone) names the frame that
 * starts every thread; the functions that call main are named
 * ASP_DW_BELOW_MAIN. */
size_t asp_dwsym_lookup(asp_dwsym_t *s, uint64_t pc, asp_dwline_t *out,
			size_t max);

/* valgrind's choice between two names of one address: true when a is
 * preferred to b. PMPI_foo over MPI_foo, a non-empty and non-blank name,
 * then the shorter name not counting a version ("@GLIBC_2.2.5"), then a
 * versioned name, then the alphabetically first. */
bool asp_dwsym_prefer(const char *a, const char *b);

/* Of the symbols c[0..n), the name valgrind shows for address a, with
 * the symbol's start into *start; NULL when none holds a. */
const char *asp_dwsym_choose(const asp_dwcand_t *c, size_t n, uint64_t a,
			     uint64_t *start);

/* The demangled form of name, malloc'd, or NULL when name is not a C++
 * symbol (or no demangler is known). A version suffix is kept. */
char *asp_dwsym_demangle(const asp_dw_api_t *api, const char *name);

#endif
