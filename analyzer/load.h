/* load - reads an allocspy dump (common/dumpfmt.h),
 * validates every key the reports use, and holds it as a C model. */
#ifndef ASP_LOAD_H
#define ASP_LOAD_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dumpfmt.h"
#include "leakkinds.h"

/* The largest count or size accepted (2^60): anything above is absurd, and
 * sums of a few such values cannot overflow. */
#define ASP_DUMP_MAX ((uint64_t)INT64_MAX)

/* The largest size of an invalid read or write: a page, far above the
 * widest load or store. */
#define ASP_ACCESS_MAX 4096

/* The largest ALLOCSPY_GUARD (2^40). */
#define ASP_GUARD_MEAN_MAX ((uint64_t)1 << 40)

/* Longest strings accepted, in bytes. */
#define ASP_PATH_MAX 4096	/* paths, names */
#define ASP_ARG_MAX 131072	/* one argument (Linux MAX_ARG_STRLEN) */

/* Room for a load error message. */
#define ASP_ERR_MAX 512

/* What a function in "functions" does: hands out blocks, takes them back,
 * or only answers a question. */
enum asp_fn_class { ASP_FN_ALLOC, ASP_FN_FREE, ASP_FN_QUERY };

typedef struct asp_fn {
	const char *name;
	enum asp_fn_class cls;
	bool strdup_family;	/* counted in compare's strdup rows */
	int order;		/* position in the canonical list; unknown last */
	uint64_t calls;
	uint64_t bytes;		/* ASP_FN_ALLOC */
	uint64_t failed;	/* ASP_FN_ALLOC */
	uint64_t null;		/* ASP_FN_FREE: calls with NULL */
	bool has_temporary;	/* ASP_FN_ALLOC, when the dump says */
	uint64_t temporary;
} asp_fn_t;

typedef struct asp_thread {
	int64_t tid;
	const char *name;
	uint64_t allocs, frees, bytes_allocated;
	uint64_t ref_acquires, ref_releases;
	bool has_exited, exited;	/* "exited", when the dump says */
	bool has_pid;		/* a merged dump's: the thread's process */
	int64_t pid;
} asp_thread_t;

typedef struct asp_bucket {
	uint64_t le;		/* 0, a power of two, or UINT64_MAX */
	uint64_t count;
} asp_bucket_t;

typedef struct asp_amount {
	uint64_t bytes, blocks;
} asp_amount_t;

#define ASP_ALLOC_STACK_MAX 4

typedef struct asp_record {
	enum asp_leak_kind kind;
	uint64_t bytes, blocks;
	uint64_t indirect_bytes, indirect_blocks;
	size_t stack;		/* index into asp_dump_t.stacks */
	bool suppressed;
	const char *suppression;	/* the entry that suppressed it, or NULL */
	const char *alloc_fn;	/* NULL when the dump does not say */
	uint64_t alloc_pc;	/* the shim's interposer; 0 when not said */
	/* The allocation frames valgrind would show ("malloc", "strdup"). */
	const char *alloc_stack[ASP_ALLOC_STACK_MAX];
	size_t nalloc_stack;
	bool unsampled;		/* a sampled dump's record of blocks whose stack
				 * was not sampled: it is their caller only */
} asp_record_t;

/* The heap errors valgrind reports at a free or an allocation ("errors":
 * liballocspy(7), "Heap errors"), and those of ALLOCSPY_GUARD's guarded
 * blocks ("Guarded blocks"), in the dump's order. */
enum asp_herr_kind {
	ASP_HERR_INVALID_FREE,	/* "Invalid free() / delete / delete[] / realloc()" */
	ASP_HERR_MISMATCHED_FREE,	/* "Mismatched free() / delete / delete []" */
	ASP_HERR_FISHY_VALUE,	/* "Argument 'size' of function malloc has a fishy ..." */
	ASP_HERR_INVALID_READ,	/* "Invalid read of size 8": a fault on a guarded block */
	ASP_HERR_INVALID_WRITE,	/* "Invalid write of size 8" */
	ASP_HERR_OVERWRITTEN,	/* "Bytes after a block were written (found at its free)" */
	ASP_HERR_NKINDS
};

/* "invalid_free", "mismatched_free", "fishy_value", "invalid_read",
 * "invalid_write", "overwritten". */
extern const char *const asp_herr_kind_name[ASP_HERR_NKINDS];

/* An invalid read or write: a fault, whose stack is the access's, with no
 * function called. */
static inline bool asp_herr_is_access(enum asp_herr_kind k)
{
	return k == ASP_HERR_INVALID_READ || k == ASP_HERR_INVALID_WRITE;
}

/* What the address of an error is ("where"). */
enum asp_herr_where {
	ASP_WHERE_NONE,		/* a fishy value: no address */
	ASP_WHERE_BLOCK,	/* inside a live block (a mismatch: the block) */
	ASP_WHERE_FREED,	/* inside a block freed not long ago */
	ASP_WHERE_STACK,	/* on the calling thread's stack */
	ASP_WHERE_GLOBAL,	/* inside a variable of the program or a library */
	ASP_WHERE_UNKNOWN,	/* nothing known */
	ASP_WHERE_AFTER,	/* past a guarded block's end */
	ASP_WHERE_BEFORE,	/* before a guarded block's start */
	ASP_WHERE_N
};

/* "", "block", "freed", "stack", "global", "unknown", "after", "before". */
extern const char *const asp_herr_where_name[ASP_WHERE_N];

/* Whether an error at where is about a block (has "block"). */
static inline bool asp_herr_has_block(enum asp_herr_where w)
{
	return w == ASP_WHERE_BLOCK || w == ASP_WHERE_FREED || w == ASP_WHERE_AFTER ||
	       w == ASP_WHERE_BEFORE;
}

/* A call of one of the shim's interposers, as valgrind shows its own
 * replacement above the program's frames: "at 0x...: free", or "at
 * malloc" then "by strdup" (the dump's PREFIX_pc and PREFIX_frames). */
typedef struct asp_call {
	uint64_t pc;		/* the interposer's address; 0 when not said */
	const char *frames[ASP_ALLOC_STACK_MAX];	/* symbols, innermost first */
	size_t nframes;
} asp_call_t;

/* One context of heap errors: the errors of one kind, function and call
 * stack, with what the first of them was about. */
typedef struct asp_heap_error {
	enum asp_herr_kind kind;
	uint64_t count;		/* its errors, 1 or more */
	const char *function;	/* as "functions" names it: "free", "delete[]";
				 * NULL for an invalid read or write */
	size_t stack;		/* the call's stack: index into asp_dump_t.stacks;
				 * an invalid read's or write's is the access's,
				 * its first frame one past the instruction */
	asp_call_t call;	/* none for an invalid read or write */
	uint64_t access_size;	/* an invalid read or write: its bytes, 0 unknown */
	/* ASP_HERR_FISHY_VALUE */
	const char *argument;	/* "size", "nmemb" */
	int64_t value;		/* negative */
	/* The frees */
	enum asp_herr_where where;
	uint64_t address;	/* the address freed */
	uint64_t thread;	/* ASP_WHERE_STACK: valgrind's number, 1 for main */
	const char *symbol;	/* ASP_WHERE_GLOBAL: the variable's symbol */
	uint64_t offset;	/* ASP_WHERE_GLOBAL: the address's offset in it */
	/* ASP_WHERE_BLOCK, _FREED, _AFTER, _BEFORE: the block; the offset
	 * is negative before it, at least its size after it */
	uint64_t block_address, block_size;
	int64_t block_offset;
	const char *block_function;	/* the function that made it */
	size_t alloc_stack;	/* index into asp_dump_t.stacks */
	asp_call_t alloc;
	size_t free_stack;	/* ASP_WHERE_FREED: the free's caller alone */
	asp_call_t free;	/* ASP_WHERE_FREED */
} asp_heap_error_t;

/* What one stack allocated (a backtrace run's "stack_stats"). In a
 * sampled dump (asp_dump_t.sampled) the figures are the estimates, read
 * from the est_* keys, and samples says how many allocations they rest on. */
typedef struct asp_stack_stat {
	size_t stack;		/* index into asp_dump_t.stacks */
	uint64_t samples;	/* sampled dumps only */
	uint64_t allocs, bytes, in_use_blocks, in_use_bytes;
	bool has_temporary;	/* the keys below, when the dump has them */
	uint64_t temporary;
	bool has_peak;
	uint64_t peak_bytes, peak_blocks;	/* held in the peak snapshot */
} asp_stack_stat_t;

/* What one thread allocated from one stack ("thread_stacks"; estimates in
 * a sampled dump). */
typedef struct asp_thread_stack {
	int64_t tid;
	size_t stack;		/* index into asp_dump_t.stacks */
	uint64_t samples;	/* sampled dumps only */
	uint64_t allocs, bytes;
	bool has_pid;		/* a merged dump's: the thread's process */
	int64_t pid;
} asp_thread_stack_t;

/* Who held the memory of a snapshot: one stack's blocks (estimates in a
 * sampled dump). */
typedef struct asp_detail {
	size_t stack;		/* index into asp_dump_t.stacks */
	uint64_t bytes, blocks;
} asp_detail_t;

/* The heap at one moment ("snapshots"). */
typedef struct asp_snapshot {
	double t_s;		/* wall seconds since start */
	uint64_t bytes_allocated, bytes_freed;	/* cumulative */
	uint64_t in_use_bytes, in_use_blocks;
	bool peak;		/* the one peak snapshot */
	bool has_detail;
	asp_detail_t *detail;	/* largest first */
	size_t ndetail;
} asp_snapshot_t;

/* Why the dump was written ("dump.reason"). */
enum asp_reason {
	ASP_REASON_EXIT,	/* also a dump without "dump" */
	ASP_REASON_INTERVAL,	/* a periodic dump during the run */
	ASP_REASON_SIGNAL	/* a fatal signal */
};

typedef struct asp_stack {
	size_t n;
	const uint64_t *frames;	/* return addresses, innermost first */
	bool truncated;		/* cut at the depth limit ("truncated_stacks"):
				 * its outermost frame is not a root */
} asp_stack_t;

typedef struct asp_module {
	const char *path;
	uint64_t base;		/* load bias (dlpi_addr) */
	uint64_t end;		/* 0 when the dump does not say */
	bool has_start;
	uint64_t start;		/* its lowest segment's start, when the dump says */
	const char *build_id;	/* lower-case hex, NULL when absent */
} asp_module_t;

typedef struct asp_refs {
	uint64_t acquires, releases, created, destroyed, cross_thread;
	bool has_cross_thread;	/* false: not counted (null in the dump) */
} asp_refs_t;

/* The resident memory at exit ("rss"), by what holds it. Every figure is
 * in bytes but the three counts at the end. */
typedef struct asp_rss {
	uint64_t rss_bytes, peak_rss_bytes;
	const char *allocator;	/* "glibc" or "other" */
	const char *pages_from;	/* "pagemap" or "mincore" */
	uint64_t heap_in_use, slack, not_resident, allocator_free, large_blocks;
	uint64_t thread_stacks, allocspy, other_anonymous, file;
	uint64_t arena_heaps, nlarge_blocks, nthread_stacks;
} asp_rss_t;

/* The options a dump was written with that no report reads ("options":
 * ALLOCSPY_UNWIND, _OUTPUT, _FREERES, _SNAPSHOTS, _INTERVAL_MS, _SAMPLE
 * and _GUARD), kept for merge to write again: NULL or has_ false where
 * the dump does not say. */
typedef struct asp_options {
	const char *unwind, *output, *freeres;
	bool has_snapshots, has_interval_ms, has_sample, has_guard;
	uint64_t snapshots, interval_ms, sample, guard;
} asp_options_t;

struct asp_process;
struct asp_kept;

typedef struct asp_dump {
	const char *file;	/* the name it was loaded from */
	const char *label;	/* compare's and html's name for it (--label),
				 * or NULL: its file name */
	struct asp_kept *kept;	/* holds every string below (load.c) */

	int64_t pid;
	bool has_ppid;
	int64_t ppid;
	const char *exe;
	const char **argv;
	size_t argc;
	bool count_mode;	/* options.mode is "count" */
	bool sampled;		/* "sample": the per-stack figures (stack_stats,
				 * thread_stacks, snapshot detail) are estimates */
	uint64_t sample_bytes;	/* sample.mean_bytes */
	bool has_sample_seed;	/* false in a merged dump */
	uint64_t sample_seed;	/* sample.seed */
	enum asp_reason reason;
	bool has_dump_t;
	double dump_t_s;	/* dump.t_s */
	int signal;		/* ASP_REASON_SIGNAL: its number and name */
	const char *signal_name;
	bool has_freeres, freeres;	/* dump.freeres: at exit, whether the
					 * libraries' memory was freed */
	const char *leak_check;	/* options.leak_check, or NULL */
	uint64_t backtrace;	/* options.backtrace: the most frames a stack
				 * keeps; 0 when the dump does not say */
	asp_options_t options;
	double wall_s, user_s, sys_s;
	bool has_start_unix;
	double start_unix;	/* time.start_unix: its start, seconds since 1970 */

	uint64_t allocs, frees, bytes_allocated, in_use_blocks;
	bool has_failed, has_untracked_frees;	/* heap.failed, .untracked_frees */
	uint64_t failed, untracked_frees;
	bool has_in_use_bytes, has_peak;	/* false: null (count mode) */
	uint64_t in_use_bytes, peak_bytes;
	bool has_peak_bytes_bound;
	uint64_t peak_bytes_bound;	/* 0: exact, or absent */
	bool has_peak_t;
	double peak_t_s;
	bool has_temporary;
	uint64_t temporary;	/* heap.temporary */

	asp_fn_t *fns;		/* canonical order */
	size_t nfns;
	asp_bucket_t *hist;	/* le ascending */
	size_t nhist;
	asp_thread_t *threads;	/* order of first activity */
	size_t nthreads;
	uint64_t threads_omitted;
	asp_refs_t refs;

	bool has_leaks;
	asp_amount_t leaks[ASP_LEAK_NKINDS];
	bool has_error_summary;	/* "error_summary" (track mode) */
	uint64_t errors, error_contexts, errors_suppressed, error_contexts_suppressed;
	bool has_heap_errors;	/* "errors" (track mode), with error_summary */
	bool has_guard;		/* "guard": ALLOCSPY_GUARD's pool */
	uint64_t guard_mean, guard_slots, guard_guarded, guard_live;
	asp_heap_error_t *heap_errors;	/* the contexts, in the order first seen */
	size_t nheap_errors;
	uint64_t heap_error_total;	/* the errors of every context */
	bool has_records;
	asp_record_t *records;
	size_t nrecords;
	asp_stack_t *stacks;
	size_t nstacks;
	bool has_stack_stats, has_thread_stacks;	/* the keys, maybe empty */
	asp_stack_stat_t *stack_stats;	/* largest first, as the dump lists them */
	size_t nstack_stats;
	uint64_t stack_stats_omitted;	/* stacks left out of stack_stats */
	asp_thread_stack_t *thread_stacks;
	size_t nthread_stacks;
	asp_snapshot_t *snapshots;	/* oldest first */
	size_t nsnapshots;
	size_t peak_snapshot;	/* index of the peak one; with snapshots */
	asp_detail_t *details;	/* storage for every snapshot's detail */
	bool has_snapshot_info;
	uint64_t snapshot_max;	/* snapshot_info.max */
	bool detail_callers;	/* snapshot_info.detail is "callers" */
	bool has_rss;		/* "rss": written at exit in track mode */
	asp_rss_t rss;
	uint64_t *frames;	/* storage for every stack's frames */
	asp_module_t *modules;
	size_t nmodules;
	struct asp_process *processes;	/* a merged dump's ("processes") */
	size_t nprocesses;
	struct asp_dump *process_dumps;	/* storage for their parts */
} asp_dump_t;

/* One process of a merged dump: the parts of its own dump that
 * "processes" keeps (its pid, ppid, exe and argv, file, heap, time, dump
 * and guard; the rest of d is empty), and when it started. */
typedef struct asp_process {
	const asp_dump_t *d;
	double start_s;		/* seconds after the first process's start */
} asp_process_t;

/* Loads FILE into d. Returns 0, or a negative errno (-EINVAL: not a valid
 * dump) with a one-line reason in err, without the file name; d then holds
 * nothing to free. */
int asp_dump_load(asp_dump_t *d, const char *file, char err[ASP_ERR_MAX]);

/* The same from a buffer in memory (file only names it). */
int asp_dump_parse(asp_dump_t *d, const char *file, const char *buf, size_t len,
		   char err[ASP_ERR_MAX]);

void asp_dump_free(asp_dump_t *d);

/* The entry of "functions" called name, or NULL. */
const asp_fn_t *asp_dump_fn(const asp_dump_t *d, const char *name);

/* Orders functions as the reports list them: canonical order, then by name. */
int asp_fn_cmp(const asp_fn_t *a, const asp_fn_t *b);

/* The symbol the shim interposes for the function the dump calls name
 * (valgrind's name for it: "_Znwm" for "new"), or name when it is none of
 * them. */
const char *asp_fn_symbol(const char *name);

/* The base name of the dump's executable. */
const char *asp_dump_exe_name(const asp_dump_t *d);

#endif
