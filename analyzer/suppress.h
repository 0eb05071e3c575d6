/* suppress - writes a loss record's stack as a valgrind suppression. */
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

#endif
