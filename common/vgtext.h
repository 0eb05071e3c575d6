/* vgtext.h - valgrind's summary text, drawn once for the shim's exit text
 * and for allocspy-report's copy of it: the HEAP, LEAK, ERROR and REF
 * SUMMARY and the first line of a loss record, with the numbers as
 * valgrind writes them (4,379). Each line goes to the caller's put, with
 * its newline and without the "==PID== " before it, from a buffer on the
 * stack: the shim draws them in its exit report, which takes no memory
 * and uses no stdio. */
#ifndef ASP_VGTEXT_H
#define ASP_VGTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "leakkinds.h"

/* Room for any uint64_t with its commas, and the NUL. */
#define ASP_COMMAS_MAX 27

/* v with a comma every three digits ("4,379") into buf; returns its
 * length. */
size_t asp_commas(char buf[ASP_COMMAS_MAX], uint64_t v);

/* Takes one line, its newline included. */
typedef void asp_vg_put(void *arg, const char *line);

struct asp_vg_heap {
	const char *when;	/* "exit", or "0.500 s": "in use at WHEN" */
	int bytes_known;	/* 0: "?" bytes in use (count mode) */
	uint64_t in_use_bytes, in_use_blocks;
	uint64_t allocs, frees, bytes_allocated;
};

/* "HEAP SUMMARY:", the bytes and blocks in use, the total heap usage, and
 * without sizes (count mode) the line saying leaks are not looked for. */
void asp_vg_heap_summary(asp_vg_put *put, void *arg, const struct asp_vg_heap *h);

/* valgrind's line in place of the LEAK SUMMARY when no block is left. */
#define ASP_VG_ALL_FREED "All heap blocks were freed -- no leaks are possible\n"

/* memcheck's heuristics, in its order. */
#define ASP_VG_HEURISTICS 4

struct asp_vg_leaks {
	uint64_t bytes[ASP_LEAK_NKINDS], blocks[ASP_LEAK_NKINDS];
	/* Of the still reachable blocks, those reachable only through one
	 * of memcheck's heuristics (stdstring, length64, newarray,
	 * multipleinheritance); zero where they are not known. */
	uint64_t heur_bytes[ASP_VG_HEURISTICS], heur_blocks[ASP_VG_HEURISTICS];
};

/* "LEAK SUMMARY:", then each kind, the suppressed last. */
void asp_vg_leak_summary(asp_vg_put *put, void *arg, const struct asp_vg_leaks *l);

/* "ERROR SUMMARY: 2 errors from 2 contexts (suppressed: 0 from 0)" */
void asp_vg_error_summary(asp_vg_put *put, void *arg, uint64_t errors, uint64_t contexts,
			  uint64_t suppressed, uint64_t suppressed_contexts);

struct asp_vg_refs {
	uint64_t acquires, releases, created, destroyed;
	int has_cross;		/* ALLOCSPY_REF_CROSS: the cross-thread line */
	uint64_t cross;
};

/* allocspy's REF SUMMARY, in valgrind's style. */
void asp_vg_ref_summary(asp_vg_put *put, void *arg, const struct asp_vg_refs *r);

/* "80 (16 direct, 64 indirect) bytes in 1 blocks are definitely lost in
 * loss record 2 of 3": record i (from 1) of n. */
void asp_vg_loss_record(asp_vg_put *put, void *arg, uint64_t bytes, uint64_t indirect_bytes,
			uint64_t blocks, enum asp_leak_kind kind, uint64_t i, uint64_t n);

#endif
