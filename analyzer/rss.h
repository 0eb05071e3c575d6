/* rss - the rss command: the resident memory at exit, split into rows that
 * add up to it, from the dump's "rss" (the shim measures it at exit). */
#ifndef ASP_RSS_H
#define ASP_RSS_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "load.h"

#define ASP_RSS_ROWS 10

typedef struct asp_rss_row {
	const char *name;	/* the JSON name: "heap_in_use", ... */
	const char *label;	/* what the text calls it */
	int64_t bytes;		/* negative: taken off (not_resident, and
				 * unexplained when the rows are above) */
} asp_rss_row_t;

/* The rows of d, which must have "rss": the dump's figures, then
 * "unexplained", what is left of the resident size. Returns how many. */
size_t asp_rss_rows(const asp_dump_t *d, asp_rss_row_t out[ASP_RSS_ROWS]);

/* The table, and the peak, as text. */
void asp_rss_text(FILE *out, const asp_dump_t *d);

/* {"rss_bytes", "peak_rss_bytes", "rows": [{"name", "bytes"}...], ...};
 * NULL when memory ran out. */
json_t *asp_rss_json(const asp_dump_t *d);

#endif
