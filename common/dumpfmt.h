/* dumpfmt.h - the dump's format, once for its writer (shim/report.c), its
 * reader (analyzer/load.c) and allocspy-report's merge: the format's name
 * and version and the top-level keys, in the order the shim writes them.
 * liballocspy(7), THE DUMP, says what each holds; common/fns.h names the
 * keys of "functions" and common/leakkinds.h those of "leaks". */
#ifndef ASP_DUMPFMT_H
#define ASP_DUMPFMT_H

#define ASP_DUMP_FORMAT "allocspy-dump"	/* the value of "format" */
#define ASP_DUMP_VERSION 1		/* the value of "version" */

#define ASP_KEY_FORMAT "format"
#define ASP_KEY_VERSION "version"
#define ASP_KEY_DUMP "dump"
#define ASP_KEY_PROGRAM "program"
#define ASP_KEY_TIME "time"
#define ASP_KEY_OPTIONS "options"
#define ASP_KEY_HEAP "heap"
#define ASP_KEY_FUNCTIONS "functions"
#define ASP_KEY_HISTOGRAM "histogram"
#define ASP_KEY_THREADS "threads"
#define ASP_KEY_THREADS_OMITTED "threads_omitted"
#define ASP_KEY_REFS "refs"
#define ASP_KEY_SAMPLE "sample"
#define ASP_KEY_LEAKS "leaks"
#define ASP_KEY_ERRORS "errors"
#define ASP_KEY_ERROR_SUMMARY "error_summary"
#define ASP_KEY_GUARD "guard"
#define ASP_KEY_SNAPSHOTS "snapshots"
#define ASP_KEY_SNAPSHOT_INFO "snapshot_info"
#define ASP_KEY_RSS "rss"
#define ASP_KEY_MODULES "modules"
/* The arrays that grow with the program's stacks come last, streamed. */
#define ASP_KEY_LOSS_RECORDS "loss_records"
#define ASP_KEY_THREAD_STACKS "thread_stacks"
#define ASP_KEY_STACK_STATS "stack_stats"
#define ASP_KEY_STACKS "stacks"
#define ASP_KEY_TRUNCATED_STACKS "truncated_stacks"
/* Only in a dump allocspy-report merge wrote. */
#define ASP_KEY_PROCESSES "processes"
#define ASP_KEY_STACK_STATS_OMITTED "stack_stats_omitted"

#endif
