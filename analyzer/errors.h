/* errors - the errors command: valgrind's heap errors of a track-mode dump
 * (invalid and mismatched frees, fishy sizes: liballocspy(7), "Heap
 * errors"), each context as the shim printed it at exit, symbolized, then
 * the ERROR SUMMARY; on request valgrind's suppressions of them. */
#ifndef ASP_ERRORS_H
#define ASP_ERRORS_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "load.h"
#include "symbolize.h"

/* Why d has no heap errors to show (it has no "errors": count mode, or a
 * dump written before the shim looked for them), for "no heap errors in
 * this dump (...)"; NULL when it has them. */
const char *asp_errors_missing(const asp_dump_t *d);

/* The error reports of d, byte for byte as the shim's exit text prints
 * them, with a suppression after each when gen_suppressions is set, then
 * the ERROR SUMMARY line. d has them (asp_errors_missing is NULL).
 * Returns 0, or -ENOMEM. */
int asp_errors_text(FILE *out, const asp_dump_t *d, bool gen_suppressions);

/* The same as JSON: {"file", "pid", "errors": [...], "error_summary"};
 * NULL when out of memory. */
json_t *asp_errors_json(const asp_dump_t *d, bool gen_suppressions);

/* The "errors" array alone, of the first max contexts, with s, a
 * symbolizer of d already open. */
json_t *asp_errors_json_with(const asp_dump_t *d, asp_symbolizer_t *s,
			     bool gen_suppressions, size_t max);

/* valgrind's line, without the prefix: "ERROR SUMMARY: 13 errors from 11
 * contexts (suppressed: 0 from 0)", into buf. */
const char *asp_error_summary_line(char *buf, size_t size, const asp_dump_t *d);

#endif
