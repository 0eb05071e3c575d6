/* gate - what a CI run gates on: a dump's figures by name, sizes such as
 * 1M, and compare's --fail-if expressions (the check command's budgets are
 * in check.h). */
#ifndef ASP_GATE_H
#define ASP_GATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "load.h"

/* The figures a budget or an expression names. */
enum asp_metric {
	ASP_M_ALLOCS,		/* heap.allocs */
	ASP_M_FREES,		/* heap.frees */
	ASP_M_BYTES,		/* heap.bytes_allocated */
	ASP_M_IN_USE,		/* heap.in_use_bytes */
	ASP_M_PEAK,		/* heap.peak_bytes */
	ASP_M_LEAKED,		/* definitely plus indirectly lost bytes */
	ASP_M_ERRORS,		/* the heap errors: asp_dump_t.heap_error_total */
	ASP_M_STRDUP_CALLS,	/* the strdup family's calls */
	ASP_M_STRDUP_BYTES,	/* and bytes */
	ASP_M_REF_OPS,		/* reference acquires plus releases */
	ASP_M_TIME,		/* wall seconds */
	ASP_M_USER_TIME,
	ASP_M_SYS_TIME,
	ASP_M_COUNT
};

enum asp_unit { ASP_U_COUNT, ASP_U_BYTES, ASP_U_SECONDS };

extern const struct asp_metric_info {
	const char *name;	/* as --fail-if names it: "in_use" */
	enum asp_unit unit;
} asp_metrics[ASP_M_COUNT];

/* "allocs, frees, bytes, ...": every metric's name, for messages. */
const char *asp_metric_names(void);

/* A figure: n for counts and bytes, s for seconds. */
typedef struct asp_figure {
	uint64_t n;
	double s;
} asp_figure_t;

/* Room for the reason a figure is unknown. */
#define ASP_WHY_MAX 160

/* The figure m of d into *f: 0; -1 when the dump does not know it (count
 * mode's bytes in use, a dump without a leak check), with the reason in
 * why. */
int asp_dump_figure(const asp_dump_t *d, enum asp_metric m, asp_figure_t *f,
		    char why[ASP_WHY_MAX]);

/* A size: digits with an optional K, M or G (KiB, MiB, GiB; "KiB", "MiB"
 * and "GiB" too), at most ASP_DUMP_MAX. 0, or -1. */
int asp_parse_size(const char *s, uint64_t *out);

/* A count: digits only, at most ASP_DUMP_MAX. 0, or -1. */
int asp_parse_count(const char *s, uint64_t *out);

/* Writes the message of a bad budget or expression into err (size bytes);
 * returns -1. */
int asp_gate_error(char *err, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- compare --fail-if ----------------------------------------------------- */

/* One term of an expression: metric > +threshold, the threshold a share of
 * the first dump's figure (relative) or an amount in the metric's unit. */
typedef struct asp_fail_term {
	enum asp_metric metric;
	bool relative;
	double percent;		/* relative */
	asp_figure_t amount;	/* absolute */
	char text[256];		/* the term as given */
} asp_fail_term_t;

typedef struct asp_fail_if {
	asp_fail_term_t *v;
	size_t n, cap;
} asp_fail_if_t;

/* Adds the terms of expr ("peak>+5%,allocs>+10%,in_use>+0") to f. 0; -1
 * with the reason in err (naming the term and, for an unknown metric,
 * listing the metrics); -ENOMEM. */
int asp_fail_if_parse(asp_fail_if_t *f, const char *expr, char *err, size_t size);
void asp_fail_if_free(asp_fail_if_t *f);

/* A term that held: the later dump's figure rose beyond its threshold. */
typedef struct asp_regression {
	size_t term;		/* index into asp_fail_if_t.v */
	size_t dump;		/* the later dump */
	asp_figure_t first, value;
} asp_regression_t;

/* Each later dump of d[0..n) against the first, term by term: the
 * regressions into *out (malloc'd, to free) and their number into *nout.
 * 0; -1 when a figure a term names is unknown in a dump (its index in
 * *bad, the reason in err); -ENOMEM. */
int asp_fail_if_eval(const asp_fail_if_t *f, const asp_dump_t *d, size_t n,
		     asp_regression_t **out, size_t *nout, size_t *bad, char *err, size_t size);

/* One line per regression: "regression: b.json: peak 1,000 -> 1,100 bytes
 * (+100, +10.0%), over peak>+5%". */
void asp_fail_if_put(FILE *out, const asp_fail_if_t *f, const asp_dump_t *d,
		     const asp_regression_t *r, size_t nr);

/* {"terms": [...], "regressions": [...]}; NULL when memory ran out. */
json_t *asp_fail_if_json(const asp_fail_if_t *f, const asp_dump_t *d,
			 const asp_regression_t *r, size_t nr);

#endif
