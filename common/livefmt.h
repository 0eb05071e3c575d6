/* livefmt.h - the live view a traced program publishes for `allocspy top`:
 * the file /dev/shm/allocspy.PID, one page, mapped shared by the shim and
 * rewritten in place by its ticker about once a second (shim/liveview.c),
 * read by the launcher (launcher/top.c). Both sides are the same machine
 * and build: the layout is native, checked by magic, version and size.
 *
 * A sequence lock: seq is odd while the ticker writes. A reader copies the
 * page and keeps the copy when seq was even before the copy and unchanged
 * after it. */
#ifndef ASP_LIVEFMT_H
#define ASP_LIVEFMT_H

#include <stdint.h>

#define ASP_LIVE_MAGIC "allocspy-live"	/* with its NUL: 14 of magic's 16 bytes */
#define ASP_LIVE_VERSION 1
#define ASP_LIVE_DIR "/dev/shm"
#define ASP_LIVE_PREFIX "allocspy."	/* then the pid */
#define ASP_LIVE_BYTES 4096
#define ASP_LIVE_SITES 48
#define ASP_LIVE_FRAMES 4

/* flags */
#define ASP_LIVE_TRACKED 1u	/* track mode: in_use_* and sites are known */
#define ASP_LIVE_ENDED 2u	/* the exit report began: no more updates */
#define ASP_LIVE_STACKS 4u	/* a site is a stack (ALLOCSPY_BACKTRACE > 1),
				 * not only the caller */

/* One allocation site: what its blocks hold now, and its innermost frames
 * (return addresses; frames[0] is the caller of malloc or new). */
struct asp_live_site {
	int64_t bytes, blocks;
	uint32_t nframes, pad;
	uint64_t frames[ASP_LIVE_FRAMES];
};

struct asp_live_view {
	char magic[16];
	uint32_t version, size;		/* ASP_LIVE_VERSION, sizeof(struct asp_live_view) */
	uint32_t seq;
	int32_t pid;
	uint64_t start_ns;		/* CLOCK_MONOTONIC when the shim started */
	uint64_t t_ns;			/* CLOCK_MONOTONIC of this update */
	uint64_t updates;		/* 1, 2, ...: one per update */
	uint32_t interval_ms;		/* between updates */
	uint32_t flags;
	int64_t in_use_bytes, in_use_blocks, peak_bytes;	/* -1: unknown */
	uint64_t allocs, frees, bytes_allocated;
	uint32_t nsites;		/* entries of sites, largest first */
	uint32_t sites_in_use;		/* sites that hold memory now, all of them */
	struct asp_live_site sites[ASP_LIVE_SITES];
};

_Static_assert(sizeof(struct asp_live_view) <= ASP_LIVE_BYTES, "the live view fits its page");

#endif
