/* leaks - the leaks command: valgrind-style loss records with symbolized
 * stacks and, on request, suppressions; then the LEAK SUMMARY. */
#ifndef ASP_LEAKS_H
#define ASP_LEAKS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "load.h"
#include "symbolize.h"

/* A set of leak kinds: one bit per enum asp_leak_kind. */
#define ASP_KIND_BIT(k) (1u << (k))
#define ASP_KINDS_DEFAULT (ASP_KIND_BIT(ASP_LEAK_DEFINITE) | \
			   ASP_KIND_BIT(ASP_LEAK_POSSIBLE))

/* The printed lines of one stack, grown as needed. */
typedef struct asp_lines {
	asp_line_t *v;
	size_t n, cap;
} asp_lines_t;

/* Symbolizes st into ls. As valgrind does by default, the stack ends at
 * main, or in a program without main's symbol at "(below main)": what lies
 * below is libc's start-up; the shim's own frames are left out. Returns 0 or -ENOMEM. */
int asp_stack_lines(asp_symbolizer_t *s, const asp_stack_t *st, asp_lines_t *ls);

/* "   at 0x10914A: main (prog.c:12)", as valgrind writes a frame ("by"
 * unless first), after the prefix. */
void asp_put_line(FILE *out, const asp_line_t *l, bool first);

/* A line as the --json outputs give a frame: address, function, name,
 * symbol, file, line, module, inlined. */
json_t *asp_line_json(const asp_dump_t *d, const asp_line_t *l);

/* Reads a --show-leak-kinds value: "all", "none", or a comma-separated list
 * of definite, indirect, possible, reachable. Returns 0, or -EINVAL when it
 * is not one. */
int asp_leaks_parse_kinds(const char *spec, unsigned *kinds);

/* The records of the kinds in kinds, not suppressed, in the dump's order. */
void asp_leaks_text(FILE *out, const asp_dump_t *d, unsigned kinds,
		    bool gen_suppressions);
json_t *asp_leaks_json(const asp_dump_t *d, unsigned kinds,
		       bool gen_suppressions);

/* The same with s, a symbolizer of d already open. */
json_t *asp_leaks_json_with(const asp_dump_t *d, asp_symbolizer_t *s,
			    unsigned kinds, bool gen_suppressions);

/* The same for the records i whose chosen[i] is set alone (shown or not by
 * their kind): a page of 1,000 of a dump's 100,000 symbolizes 1,000. */
json_t *asp_leaks_json_chosen(const asp_dump_t *d, asp_symbolizer_t *s,
			      const bool *chosen);

#endif
