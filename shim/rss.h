/* rss.h - the resident memory at exit, split into what holds it: the
 * program's blocks, the allocator's slack and free memory, large blocks'
 * mappings, thread stacks, the shim's own memory, other anonymous memory
 * and file mappings (rss.c). */
#ifndef ASP_RSS_H
#define ASP_RSS_H

#include <jansson.h>
#include <stddef.h>

#include "live.h"

/* Measures, once, at the exit report (track mode): entries are the live
 * blocks the report gathered (n of them), read before the leak scan reads
 * their contents. Reads /proc/self/smaps, the pages' residency and the
 * blocks' headers; allocates only from the shim's scratch memory. */
void asp__rss_measure(const struct asp_live_entry *entries, size_t n);

/* The dump's "rss" object, or NULL when nothing was measured. Called with
 * signals blocked, as the rest of the dump is built. */
json_t *asp__rss_json(void);

#endif
