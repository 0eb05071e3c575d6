/* snapshot.h - the heap over time (track mode): in-use bytes and blocks at
 * moments spread over the run, thinned as massif thins them, the peak's
 * always kept, and for the peak and every tenth one, who held the memory. */
#ifndef ASP_SNAPSHOT_H
#define ASP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"

struct asp_thread;

/* Threads publish at least every this many bytes allocated and freed
 * (UINT64_MAX: snapshots are off). */
extern ASP_HIDDEN uint64_t asp__snapshot_volume_step;

/* A free that sees the heap at or above this takes the peak's detail
 * first (INT64_MAX: off). */
extern ASP_HIDDEN int64_t asp__snapshot_peak_next;

/* Reads ALLOCSPY_SNAPSHOTS (from the options); once, at start-up. */
void asp__snapshot_init(void);

/* t published volume more bytes; the heap held in_use bytes then. */
void asp__snapshot_note(struct asp_thread *t, uint64_t volume, int64_t in_use);

/* The heap is at seen bytes, at least asp__snapshot_peak_next: who holds it? */
void asp__snapshot_peak(struct asp_thread *t, int64_t seen);

struct asp_snap_detail {
	uintptr_t site;		/* a stack id, or the caller with 1 frame */
	uint64_t bytes, blocks;	/* with ALLOCSPY_SAMPLE: the estimates */
};

struct asp_snapshot {
	uint64_t t_ns;		/* CLOCK_MONOTONIC */
	uint64_t allocated, freed;	/* cumulative bytes */
	int64_t in_use, blocks;
	int peak;
	uint32_t ndetail;
	struct asp_snap_detail *detail;
};

/* A copy of the snapshots, the caller's. */
struct asp_snapshot_list {
	struct asp_snapshot *v;	/* in time order, the peak's among them */
	size_t n;
	const struct asp_snapshot *peak;	/* the one marked peak in v, or NULL */
	struct asp_snap_detail *details;	/* v's detail lives here */
};

/* Copies the snapshots into l, then a last one of the heap as the report
 * read it at t_ns, from its ne blocks e; that one is the peak when no
 * earlier one held as much. Leaves the snapshots as they were: any number
 * of reports may read them, while other threads take more. Returns 0 (l
 * empty) when there are none or no memory; asp__snapshots_free frees l. */
struct asp_live_entry;
int asp__snapshots(struct asp_snapshot_list *l, uint64_t t_ns, uint64_t allocated, uint64_t freed,
                   const struct asp_live_entry *e, size_t ne);
void asp__snapshots_free(struct asp_snapshot_list *l);

/* fork: the snapshot lock is held across it. */
void asp__snapshot_atfork_prepare(void);
void asp__snapshot_atfork_release(void);
void asp__snapshot_atfork_child(void);

#endif
