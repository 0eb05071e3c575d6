/* suppress - writes a loss record's or a heap error's stack as a valgrind
 * suppression. */
#ifndef ASP_SUPPRESS_H
#define ASP_SUPPRESS_H

#include <stddef.h>

#include "load.h"
#include "symbolize.h"

/* The suppression for rec, whose stack printed as lines[0..n), as
 * malloc'd text ("{\n   <insert_a_suppression_name_here>\n ... }\n"), or
 * NULL when out of memory. */
char *asp_suppression(const asp_record_t *rec, const asp_line_t *lines,
		      size_t n);

/* The suppression for the heap error e, whose call's stack printed as
 * lines[0..n) below the interposer's lines: Memcheck:Free for the frees,
 * Memcheck:FishyValue with its "malloc(size)" line for a fishy value,
 * Memcheck:Addr1 to Addr32 for an invalid read or write of that size (its
 * access's stack alone), as valgrind writes them with --gen-suppressions;
 * allocspy:Addr for an access of no such size, allocspy:Overwritten for
 * bytes written around a guarded block. malloc'd, or NULL when out of
 * memory. */
char *asp_error_suppression(const asp_heap_error_t *e, const asp_line_t *lines,
			    size_t n);

#endif
