/* live.h - the exact table of live blocks: pointer -> requested size and
 * allocation site, in mmap'd memory, sharded by address so that threads
 * rarely meet on a lock. */
#ifndef ASP_LIVE_H
#define ASP_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"

struct asp_live_entry {
	uintptr_t ptr;		/* 0: an empty slot */
	uint64_t size : 56;	/* the size the program asked for */
	uint64_t fn : 8;	/* the function that handed it out (enum asp_fn) */
	uintptr_t site;		/* the caller, or a stack id with backtraces */
};

#define ASP_SHARDS 64

struct asp_shard;

/* A shard's lock remembers its holder: self is the caller's identity (its
 * thread record; 0 for none). The table's users count an operation while
 * they hold the shard, so whoever holds every shard (fork, the exit report)
 * sees counts and table agree, and never waits for a thread that waits for
 * it: a holder of a shard waits for nothing but the arena's leaf lock.
 *
 * Takes the shard of ptr. With nested set (a signal handler may have
 * interrupted this thread inside the table) it only tries once, so a
 * thread never holds one shard while it waits for another. NULL when the
 * shard cannot be had now: self holds it already, or nested and busy. */
struct asp_shard *asp__live_lock(uintptr_t ptr, uintptr_t self, int nested);
void asp__live_unlock(struct asp_shard *s);

/* The shard of ptr, for a caller that holds every shard (fork's child). */
struct asp_shard *asp__live_shard(uintptr_t ptr);

/* With s held: 0, or -ENOMEM when the table could not grow. The same
 * address again replaces its entry (it was freed behind the shim's back). */
int asp__live_insert(struct asp_shard *s, uintptr_t ptr, uint64_t size, unsigned fn,
                     uintptr_t site);

/* With s held: 1 and the entry when ptr was live (it is removed), else 0. */
int asp__live_remove(struct asp_shard *s, uintptr_t ptr, struct asp_live_entry *out);

/* Whether the thread whose identity is holder is stuck: in a signal
 * handler (fork's prepare, a fatal signal's report) that landed while it
 * was inside the table, so that it lets go of its shard only when the
 * handler is done, and may be waiting for the caller. Set by thread.c. */
extern ASP_HIDDEN int (*asp__live_stuck)(uintptr_t holder);

/* The readers take each shard in turn as self; a shard self holds already
 * (asp__live_lock_all, or a signal handler inside the table), or a stuck
 * thread holds, is read as it is. */

/* 1 and the entry when ptr is live, else 0. */
int asp__live_find(uintptr_t ptr, struct asp_live_entry *out, uintptr_t self);

/* The number of live blocks and their bytes. */
void asp__live_totals(uint64_t *blocks, uint64_t *bytes, uintptr_t self);

/* Copies every entry into out (at most max) and returns how many there are. */
size_t asp__live_snapshot(struct asp_live_entry *out, size_t max, uintptr_t self);

/* Every shard, in order, for whoever must see the whole table still: fork's
 * prepare handler and the exit report. Shards self holds already are left
 * alone; so are those a stuck thread holds (it may be waiting for this
 * one): they go into *skipped. Returns the set it took (bit i: shard i),
 * for unlock_all. */
uint64_t asp__live_lock_all(uintptr_t self, uint64_t *skipped);
void asp__live_unlock_all(uint64_t taken);

/* fork's child: the shards another forking thread held (skipped by
 * lock_all) are rebuilt from their slots and free. */
void asp__live_repair(uint64_t skipped);

#endif
