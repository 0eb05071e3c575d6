/* html - the html command: one self-contained page of a dump, or of two
 * with what changed between them. The heap over time, the tables, the
 * heap errors and the leaks are static HTML and SVG that read without JavaScript; a small
 * embedded script draws the flame graphs and makes the rest interactive.
 * Nothing in the page is fetched from anywhere. */
#ifndef ASP_HTML_H
#define ASP_HTML_H

#include <stddef.h>
#include <stdio.h>

#include "load.h"

/* Where the page thins what a large dump holds (the page says so). */
#define ASP_HTML_SNAPSHOTS 1000	/* snapshots drawn; of more, the largest of each run */
#define ASP_HTML_RECORDS 1000	/* loss records listed: the largest */
#define ASP_HTML_ERRORS 1000	/* heap error contexts listed: the first */
#define ASP_HTML_FRAMES 100	/* frames listed of one stack */
#define ASP_HTML_THREADS 100	/* threads listed: those that allocated most */
#define ASP_HTML_PEAK_STACKS 10	/* stacks listed beside the heap's peak */
#define ASP_HTML_SITES 50	/* allocation sites listed that changed */
#define ASP_HTML_CMDLINE 2000	/* bytes of a command line shown */

/* Writes the page of d[0..n), n 1 or 2. Returns 0 or -ENOMEM. */
int asp_html_write(FILE *out, const asp_dump_t *d, size_t n);

#endif
