/* peak - the dump's peak as every view and export gives it: heap.peak_bytes,
 * its bound and its time, said one way; the snapshot whose detail stands
 * for it, labelled with that snapshot's own figure and time when it holds
 * less; and the heap over time with the peak as a point of its own. */
#ifndef ASP_PEAK_H
#define ASP_PEAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "load.h"

/* Room for the phrases below. */
#define ASP_PEAK_TEXT_MAX 192

/* "7,818,463 ± 49,152 bytes in use at 0.012 s": heap.peak_bytes, its bound
 * when threads make the peak a range, and when it was reached when the
 * dump says. "? bytes in use (count mode tracks no sizes)" without one. */
const char *asp_peak_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d);

/* "(the true peak is between 7,818,463 and 7,867,615 bytes)", or "" when
 * the peak is exact. */
const char *asp_peak_range_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d);

/* Whether the dump's peak snapshot (with snapshots) holds the peak's bytes:
 * false when it was taken at a lower figure (the shim takes it at the first
 * free after the heap grew 5% past the last one), so that its detail is
 * not the peak's own. */
bool asp_peak_snapshot_exact(const asp_dump_t *d);

/* What the detail given for the peak is: "the peak (snapshot 41 of 83:
 * 10,489,856 bytes in 10,241 blocks at 1.544 s)" when the snapshot holds
 * the peak's bytes, else "snapshot 49 of 86, below the peak (7,555,172 bytes
 * in 4,942 blocks at 0.011 s)". */
const char *asp_peak_detail_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d);

/* One point of the heap over time: a snapshot of the dump, or the peak as
 * a point of its own when no snapshot holds it. */
typedef struct asp_point {
	double t_s;
	uint64_t in_use_bytes;
	uint64_t in_use_blocks;		/* 0 for the peak's own point */
	uint64_t bytes_allocated, bytes_freed;	/* made up for the peak's own */
	size_t snapshot;		/* its index, SIZE_MAX for the peak's own */
	bool peak;			/* the dump's peak */
	bool detail;			/* the snapshot has detail */
} asp_point_t;

/* The snapshots of d (which has some), oldest first, with the peak added
 * as a point of its own where the peak snapshot holds less: at the peak's
 * time (or the peak snapshot's, when the dump gives none), with the peak's
 * bytes, and as bytes allocated and freed so far the fewest that agree
 * with the snapshots around it and the peak. *n gets how many, *peak the
 * peak's index. NULL when memory ran out. */
asp_point_t *asp_peak_points(const asp_dump_t *d, size_t *n, size_t *peak);

#endif
