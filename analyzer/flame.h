/* flame - flame graph trees: the samples of a profile merged by function
 * from the root down, each node weighing what its samples do, thinned so
 * that a page can draw them. */
#ifndef ASP_FLAME_H
#define ASP_FLAME_H

#include <jansson.h>
#include <stddef.h>

#include "export.h"
#include "profile.h"

/* A node weighing less than total / ASP_FLAME_MIN_FRACTION (0.1%) is
 * merged with its small siblings into one node of this name. */
#define ASP_FLAME_MIN_FRACTION 1000
#define ASP_FLAME_MERGED "[below 0.1%]"

/* The root's name. */
#define ASP_FLAME_ROOT "all"

typedef struct asp_flame asp_flame_t;

/* Strings shared by the trees of one page: a JSON array, each string once. */
typedef struct asp_flame_strings asp_flame_strings_t;

asp_flame_strings_t *asp_flame_strings_new(void);
/* The array; it stays owned by the table. */
json_t *asp_flame_strings_json(const asp_flame_strings_t *s);
void asp_flame_strings_free(asp_flame_strings_t *s);

/* The tree of what weight w counts, from the dump's best source of it:
 * stack_stats (through p's samples, which add up to the dump's totals);
 * for the bytes in use at the end without them, the loss records; for the
 * peak, the peak snapshot's detail. *source names the source ("stack_stats",
 * "loss_records", "snapshot detail"). *f is NULL when the dump has none, or
 * when every weight is 0. Returns 0 or -ENOMEM. */
int asp_flame_build(asp_flame_t **f, const asp_profile_t *p,
		    enum asp_export_weight w, const char **source);
/* The same for the bytes or blocks allocated, from thread_stacks, each
 * thread's stacks under a first frame "thread TID (NAME)"; what the
 * threads' stacks leave out of the dump's figure is ASP_PROFILE_OTHER. *f
 * is NULL for another weight, or when fewer than two threads allocated. */
int asp_flame_build_threads(asp_flame_t **f, const asp_profile_t *p,
			    enum asp_export_weight w);
void asp_flame_free(asp_flame_t *f);

/* The tree, root first, depth first, children heaviest first, as parallel
 * arrays: {"total", "nodes", "merged" (nodes merged away), "n" (name),
 * "l" (location: "file:line", the module, or -1), "v" (weight),
 * "d" (depth, the root's 0), "m" (how many nodes a merged one stands for,
 * else 0)}; names and locations are indexes into strings. NULL: no memory. */
json_t *asp_flame_json(const asp_flame_t *f, asp_flame_strings_t *strings);

#endif
