/* live.h - the exact table of live blocks: pointer -> requested size and
 * allocation site, in mmap'd memory, sharded by address so that threads
 * rarely meet on a lock. */
#ifndef ASP_LIVE_H
#define ASP_LIVE_H

#include <stddef.h>
#include <stdint.h>

struct asp_live_entry {
	uintptr_t ptr;		/* 0: an empty slot */
	uint64_t size : 56;	/* the size the program asked for */
	uint64_t fn : 8;	/* the function that handed it out (enum asp_fn) */
	uintptr_t site;		/* the caller, or a stack id with backtraces */
};

/* inflight is the calling thread's in-flight flag (or NULL): it is set
 * under the shard lock, and the caller clears it once it has counted the
 * operation, so that fork can wait for whole operations. It also tells a
 * thread's calls apart: a signal handler that allocates while its thread is
 * inside the same shard does not wait for itself.
 * 0; -ENOMEM when the table could not grow, -EDEADLK when the thread is
 * inside the same shard already (the block then goes untracked). */
int asp__live_insert(int *inflight, uintptr_t ptr, uint64_t size, unsigned fn, uintptr_t site);

/* 1 and the entry when ptr was live (it is removed), 0 when it was not,
 * -EDEADLK when self is inside the same shard already (try again later). */
int asp__live_remove(int *inflight, uintptr_t ptr, struct asp_live_entry *out);

/* 1 and the entry when ptr is live, else 0. */
int asp__live_find(uintptr_t ptr, struct asp_live_entry *out);

/* The number of live blocks and their bytes. */
void asp__live_totals(uint64_t *blocks, uint64_t *bytes);

/* Copies every entry into out (at most max) and returns how many there are.
 * Each shard is copied under its lock. */
size_t asp__live_snapshot(struct asp_live_entry *out, size_t max);

/* fork: all shard locks held across it. */
void asp__live_atfork_prepare(void);
void asp__live_atfork_parent(void);
void asp__live_atfork_child(void);

#endif
