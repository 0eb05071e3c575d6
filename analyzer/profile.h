/* profile - a dump's stacks symbolized once, with what each of them
 * allocated: the model the timeline and every export draw from. */
#ifndef ASP_PROFILE_H
#define ASP_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "load.h"
#include "symbolize.h"

/* The name of the frame that stands for what no stack in the dump holds
 * (stacks left out of "stack_stats", blocks allocated with no stack). */
#define ASP_PROFILE_OTHER "[other stacks]"

/* The frame put at the root of a stack cut at the dump's backtrace depth
 * (asp_pstack_t.truncated) in flame graphs, folded and speedscope output,
 * so that such stacks sit under one frame instead of looking like roots of
 * their own. */
#define ASP_PROFILE_TRUNCATED "[truncated]"

/* Room for a frame's name made up from its module (asp_profile_name). */
#define ASP_NAME_MAX 96

/* One return address and the source lines it stands for: with inlining,
 * the inlined functions innermost first, then the function they are in. */
typedef struct asp_loc {
	uint64_t addr;
	asp_line_t *lines;
	size_t nlines;		/* at least 1 */
	long module;		/* index into the dump's modules, -1: none */
	size_t id;		/* 1, 2, ... in the order of first use */
} asp_loc_t;

/* A symbolized stack: innermost first, ending at main as valgrind's do. */
typedef struct asp_pstack {
	asp_loc_t **locs;
	size_t n;
	/* Cut at the depth limit: the dump's stack has options.backtrace
	 * frames, none of them main, and the outermost is no root frame
	 * (_start, clone, start_thread, "(below main)"). */
	bool truncated;
} asp_pstack_t;

/* What one stack allocated; the figures of stack_stats. */
typedef struct asp_sample {
	const asp_pstack_t *stack;	/* NULL: ASP_PROFILE_OTHER */
	size_t stack_index;		/* into the dump's stacks */
	uint64_t allocs, bytes, in_use_blocks, in_use_bytes;
	uint64_t temporary, peak_bytes, peak_blocks;
} asp_sample_t;

typedef struct asp_profile {
	const asp_dump_t *d;
	asp_symbolizer_t *sym;
	asp_pstack_t *stacks;	/* one per stack of the dump */
	asp_loc_t **locs;	/* every location, by id - 1 */
	size_t nlocs;
	asp_sample_t *samples;	/* stack_stats' order, then the rest */
	size_t nsamples;
	bool has_peak;		/* the samples' peak figures are known */
	/* The hash table of locations by address. */
	asp_loc_t **table;
	size_t table_size;
} asp_profile_t;

/* Symbolizes every stack of d and builds one sample per entry of
 * stack_stats, plus one named ASP_PROFILE_OTHER for what the heap totals
 * hold beyond them, so that the samples add up to heap.allocs,
 * bytes_allocated, in_use_blocks, in_use_bytes, temporary and, at the peak
 * snapshot, its in-use bytes. Returns 0 or -ENOMEM. */
int asp_profile_build(asp_profile_t *p, const asp_dump_t *d);
void asp_profile_free(asp_profile_t *p);

/* The compact name of line l, the one every view and export that names a
 * frame by a name alone gives it: its function, or for a frame without a
 * symbol "module+0xOFFSET" (the module's base name, the return address's
 * offset from its load bias), or "0xADDR" outside every module. Frames
 * written valgrind's way, with their address (leaks, massif's trees), say
 * "??? (in /path/to/module)" instead. */
const char *asp_profile_name(const asp_profile_t *p, const asp_loc_t *loc,
			     const asp_line_t *l, char buf[ASP_NAME_MAX]);

/* Writes l's name, as above, then " (file:line)" or, for a function
 * without its line, " (in module)": a frame as the timeline and check list
 * it, its text written by put (asp_put_text, asp_put_xml). */
void asp_profile_put_frame(FILE *out, const asp_profile_t *p, const asp_loc_t *loc,
			   const asp_line_t *l, void (*put)(FILE *, const char *));

/* The frames of ps, innermost first with the lines inlined into each: an
 * array of objects with "address", "function" (the symbol, or null),
 * "name" (the compact name above), "file", "line", "module" and
 * "inlined"; with names, "function" is the compact name and there is no
 * "name". NULL when memory ran out. */
json_t *asp_profile_frames_json(const asp_profile_t *p, const asp_pstack_t *ps, bool names);

/* The same for a line the symbolizer gave for one of d's addresses. */
const char *asp_frame_name(const asp_dump_t *d, const asp_line_t *l,
			   char buf[ASP_NAME_MAX]);

/* a + b, or UINT64_MAX when that overflows. */
static inline uint64_t asp_add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* The base name of a path. */
const char *asp_base_name(const char *path);

#endif
