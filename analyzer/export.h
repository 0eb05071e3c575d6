/* export - the export command: a dump in the file formats of the tools
 * people already use (pprof, gperftools, massif, callgrind, heaptrack,
 * folded stacks, speedscope). */
#ifndef ASP_EXPORT_H
#define ASP_EXPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "load.h"
#include "profile.h"

enum asp_export_format {
	ASP_EXPORT_PPROF, ASP_EXPORT_GPERFTOOLS, ASP_EXPORT_MASSIF,
	ASP_EXPORT_CALLGRIND, ASP_EXPORT_HEAPTRACK, ASP_EXPORT_FOLDED,
	ASP_EXPORT_SPEEDSCOPE
};

/* What the folded stacks count. */
enum asp_export_weight {
	ASP_WEIGHT_ALLOC_BYTES,	/* bytes allocated over the run */
	ASP_WEIGHT_ALLOCS,	/* blocks allocated over the run */
	ASP_WEIGHT_INUSE_BYTES,	/* bytes in use when the dump was written */
	ASP_WEIGHT_PEAK_BYTES,	/* bytes in use at the peak */
	ASP_WEIGHT_TEMPORARY	/* temporary allocations over the run */
};

/* Parse "--format=" and "--weight=" values; 0 or -EINVAL. */
int asp_export_parse_format(const char *s, enum asp_export_format *f);
int asp_export_parse_weight(const char *s, enum asp_export_weight *w);

/* The names --format and --weight take, in the order --help gives them. */
const char *const *asp_export_format_names(size_t *n);
const char *const *asp_export_weight_names(size_t *n);

/* Whether the format is binary (refused on a terminal). */
bool asp_export_binary(enum asp_export_format f);

/* What sample s counts for weight w. */
uint64_t asp_export_weight(const asp_sample_t *s, enum asp_export_weight w);

/* Calls fn for each frame of sample s, root first: a location's lines from
 * the function the others were inlined into, to the innermost; the sample
 * of ASP_PROFILE_OTHER has one frame of that name. The frames the folded
 * format and every flame graph are made of. */
typedef void asp_frame_fn(void *arg, const asp_loc_t *loc, const asp_line_t *l);
void asp_export_frames(const asp_sample_t *s, asp_frame_fn *fn, void *arg);

/* Writes d in format f to out. Returns 0; -EINVAL when the dump lacks what
 * the format needs, with the reason in err; or -ENOMEM. */
int asp_export(FILE *out, const asp_dump_t *d, enum asp_export_format f,
	       enum asp_export_weight w, char err[ASP_ERR_MAX]);

#endif
