/* options.h - the ALLOCSPY_* environment, read once into plain fields
 * (stack buffers and static storage only: this runs inside malloc). */
#ifndef ASP_OPTIONS_H
#define ASP_OPTIONS_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "glue.h"

enum asp_mode { ASP_MODE_TRACK, ASP_MODE_COUNT };
enum asp_unwind { ASP_UNWIND_LIBUNWIND, ASP_UNWIND_FP };
enum asp_leak_check { ASP_LEAK_SUMMARY, ASP_LEAK_FULL, ASP_LEAK_NO };

/* Leak kinds as bits, for ALLOCSPY_ERRORS_FOR_LEAK_KINDS. */
enum {
	ASP_KIND_DEFINITE = 1,
	ASP_KIND_INDIRECT = 2,
	ASP_KIND_POSSIBLE = 4,
	ASP_KIND_REACHABLE = 8,
};

/* ALLOCSPY_FREERES, as bits. */
enum { ASP_FREERES_LIBC = 1, ASP_FREERES_CXX = 2 };

#define ASP_PATH_MAX 4096
#define ASP_MAX_BACKTRACE 64

struct asp_options {
	enum asp_mode mode;
	int backtrace;			/* frames; 0 none, 1 the caller */
	enum asp_unwind unwind;
	enum asp_leak_check leak_check;
	int quiet;
	int error_exitcode;		/* -1: unset */
	int error_children;		/* ALLOCSPY_ERROR_EXITCODE_CHILDREN */
	pid_t started;			/* this process's pid when it is the one the
					 * user started (its parent is not traced) */
	int error_kinds;
	char output[ASP_PATH_MAX];	/* absolute template, %e expanded; "" for none */
	char log_file[ASP_PATH_MAX];	/* absolute template or "" for stderr */
	char suppressions[ASP_PATH_MAX];
	int follow_children;		/* keep LD_PRELOAD for exec'd children */
	int interval_ms;		/* 0: no periodic dumps */
	int dump_on_signal;		/* report on SIGSEGV and kin, then re-raise */
	int ref_cross;			/* count cross-thread ref operations */
	int snapshots;			/* snapshots kept (track mode); 0: none */
	int freeres;			/* ASP_FREERES_* bits */
	uint64_t sample;		/* ALLOCSPY_SAMPLE: mean bytes between
					 * sampled stacks; 0: every stack */
	uint64_t sample_seed;		/* ALLOCSPY_SAMPLE_SEED */
	uint64_t guard;			/* ALLOCSPY_GUARD: mean allocations between
					 * two guarded ones; 0: off (guard.h) */
	int sample_seed_set;
	int secure;			/* AT_SECURE: no paths from the environment */
	int skipped;			/* ALLOCSPY_TRACE_CHILDREN_SKIP names this
					 * program: counted, never reported */
	int live;			/* ALLOCSPY_LIVE: the live view for allocspy top */
	char exe[PATH_MAX];		/* /proc/self/exe */
};

extern ASP_HIDDEN struct asp_options asp__opt;

/* Reads the environment. Bad values get one warning line each. */
void asp__options_init(void);

/* Expands %p (pid) and %% in a template into out. */
void asp__expand_pid(const char *tmpl, char *out, size_t size);

/* One line "allocspy: warning: ..." on the shim's stderr. */
void asp__warn(const char *a, const char *b, const char *c);

/* The shim's private duplicate of fd 2 (or 2 when it could not be made). */
extern ASP_HIDDEN int asp__err_fd;

#endif
