/* timeline - the timeline command: the heap in use over time as a chart,
 * in the terminal as ms_print draws massif's or as an SVG file, then the
 * stacks that held the memory at the peak. */
#ifndef ASP_TIMELINE_H
#define ASP_TIMELINE_H

#include <jansson.h>
#include <stdio.h>

#include "load.h"
#include "profile.h"

/* The chart's size in the terminal, as ms_print's. */
#define ASP_TIMELINE_COLS 72
#define ASP_TIMELINE_ROWS 20

/* Stacks listed at the peak. */
#define ASP_TIMELINE_STACKS 10

/* Each writes the timeline of d, which must have snapshots. They return 0,
 * or -ENOMEM. */
int asp_timeline_text(FILE *out, const asp_dump_t *d);
int asp_timeline_svg(FILE *out, const asp_dump_t *d);

/* The same as JSON; NULL when memory ran out. */
json_t *asp_timeline_json(const asp_dump_t *d);

/* The same from p, the profile of the dump, already built. */
json_t *asp_timeline_json_of(const asp_profile_t *p);

/* The same with the max largest stacks at the peak, and "more_stacks" in
 * "peak": how many more there are. */
json_t *asp_timeline_json_top(const asp_profile_t *p, size_t max);

#endif
