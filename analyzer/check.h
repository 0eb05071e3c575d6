/* check - the check command: budgets a dump must keep, for a CI run to
 * gate on (--max-peak=1M, --max-bytes=parse_header:64K). */
#ifndef ASP_CHECK_H
#define ASP_CHECK_H

#include <jansson.h>
#include <stdio.h>

#include "gate.h"
#include "load.h"

/* One budget: the whole program's figure, or, with function, the sum over
 * the stacks that pass through it, must not be above max. */
typedef struct asp_budget {
	enum asp_metric metric;
	char *function;		/* NULL: the whole program */
	uint64_t max;
	char *option;		/* as given: "--max-bytes=parse_header:1M" */
} asp_budget_t;

/* Reads option name's value into b: "1M", or "FUNCTION:1M" (the last
 * colon separates, so C++ names keep theirs). 0; -1 with the reason in
 * err, naming the option; -ENOMEM. name is one of asp_check_options. */
int asp_budget_parse(asp_budget_t *b, const char *name, const char *value, char *err,
		     size_t size);
void asp_budget_free(asp_budget_t *b);

/* The options that set budgets, NULL-terminated: "--max-peak", ... */
extern const char *const asp_check_options[];

/* Checks d against b[0..n). Writes one line per budget exceeded (text) or
 * the object of every budget (json). Returns how many were exceeded; -1
 * when the dump cannot answer a budget (a figure it does not know, no
 * stacks for a function's), with the reason in err; -ENOMEM. */
int asp_check_text(FILE *out, const asp_dump_t *d, const asp_budget_t *b, size_t n,
		   char *err, size_t size);
int asp_check_json(json_t **out, const asp_dump_t *d, const asp_budget_t *b, size_t n,
		   char *err, size_t size);

#endif
