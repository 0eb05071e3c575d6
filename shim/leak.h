/* leak.h - the reachability scan at exit: every live block classified as
 * valgrind memcheck classifies it, and grouped into loss records. */
#ifndef ASP_LEAK_H
#define ASP_LEAK_H

#include <stddef.h>
#include <stdint.h>

#include "leakkinds.h"

struct asp_loss_record {
	enum asp_leak_kind kind;
	unsigned fn;			/* the allocating function (enum asp_fn) */
	uintptr_t site;			/* caller address or stack id */
	uint64_t bytes, blocks;		/* direct */
	uint64_t indirect_bytes, indirect_blocks;
	int suppressed;
	const char *suppression;	/* the matching entry's name */
};

struct asp_leak_result {
	uint64_t bytes[ASP_LEAK_RECORD_KINDS], blocks[ASP_LEAK_RECORD_KINDS];
	uint64_t suppressed_bytes, suppressed_blocks;
	/* Reachable only through one of memcheck's heuristics, in its order:
	 * stdstring, length64, newarray, multipleinheritance. */
	uint64_t heur_bytes[4], heur_blocks[4];
	struct asp_loss_record *records;	/* sorted as valgrind sorts them */
	size_t nrecords;
};

/* The frames valgrind shows above the program's for a block made by fn (or
 * for a call of fn, a free function):
 * "malloc", or "malloc", "strdup" (valgrind does not intercept strdup).
 * Returns how many names (at most 3) were put in out. */
int asp__fn_frames(unsigned fn, const char *out[3]);

/* The program's frames of a record's site: raw return addresses. */
size_t asp__site_frames(uintptr_t site, const uintptr_t **out, uintptr_t *one);

/* Runs the scan over the n live blocks e (the table, read by the caller,
 * whose blocks are not freed meanwhile). 0, or a negative errno when it
 * could not run. */
struct asp_live_entry;
int asp__leak_check(const struct asp_live_entry *e, size_t n, struct asp_leak_result *out);

/* Where main's frame ended (the frame main was called from), that main
 * returned, and the stack pointer exit() was called with: they bound the
 * live part of the main stack. */
void asp__leak_note_main_frame(uintptr_t sp);
void asp__leak_note_main_returned(void);
void asp__leak_note_exit(uintptr_t sp);
void asp__leak_note_handler(uintptr_t sp);

#endif
