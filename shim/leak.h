/* leak.h - the reachability scan at exit: every live block classified as
 * valgrind memcheck classifies it, and grouped into loss records. */
#ifndef ASP_LEAK_H
#define ASP_LEAK_H

#include <stddef.h>
#include <stdint.h>

enum asp_leak_kind {
	ASP_LEAK_DEFINITE,
	ASP_LEAK_INDIRECT,
	ASP_LEAK_POSSIBLE,
	ASP_LEAK_REACHABLE,
	ASP_LEAK_KINDS
};

struct asp_loss_record {
	enum asp_leak_kind kind;
	uintptr_t site;			/* caller address or stack id */
	uint64_t bytes, blocks;		/* direct */
	uint64_t indirect_bytes, indirect_blocks;
	int suppressed;
	const char *suppression;	/* the matching entry's name */
};

struct asp_leak_result {
	uint64_t bytes[ASP_LEAK_KINDS], blocks[ASP_LEAK_KINDS];
	uint64_t suppressed_bytes, suppressed_blocks;
	struct asp_loss_record *records;	/* sorted as valgrind sorts them */
	size_t nrecords;
};

/* Runs the scan. 0, or a negative errno when it could not run. */
int asp__leak_check(struct asp_leak_result *out);

/* Records __libc_start_main's frame: main's stack ends there. */
void asp__leak_note_main_frame(uintptr_t sp);

#endif
