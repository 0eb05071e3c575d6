/* summary - the default report: the exit text the shim prints (HEAP, LEAK
 * and REF SUMMARY), then the function, thread, size, peak and time tables. */
#ifndef ASP_SUMMARY_H
#define ASP_SUMMARY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "load.h"
#include "vgtext.h"

/* How many threads the text table lists. */
#define ASP_SUMMARY_TOP_THREADS 20

/* "==PID== ", the start of every line of the exit text and of the loss
 * records. */
void asp_summary_prefix(FILE *out, const asp_dump_t *d);

/* Where the lines of valgrind's text (common/vgtext.h) go: asp_summary_put
 * writes one to out, after d's "==PID== ". */
struct asp_summary_out {
	FILE *out;
	const asp_dump_t *d;
};
void asp_summary_put(void *arg, const char *line);

/* The exit text, byte for byte as the shim writes it. */
void asp_summary_exit_text(FILE *out, const asp_dump_t *d);

/* Whether the exit text has a leak part: a leak check ran, or would have
 * run had any block been left. */
bool asp_summary_has_leak_part(const asp_dump_t *d);

/* The leak part of the exit text: "All heap blocks were freed -- no leaks
 * are possible" when no block is in use, else the LEAK SUMMARY (the leaks
 * command ends with it). */
void asp_summary_leak_text(FILE *out, const asp_dump_t *d);

/* {"definitely_lost": {"bytes", "blocks"}, ...}, or JSON null. */
json_t *asp_summary_leak_json(const asp_dump_t *d);

/* The whole report, as text or as JSON. */
void asp_summary_text(FILE *out, const asp_dump_t *d);
json_t *asp_summary_json(const asp_dump_t *d);

#endif
