/* dump_write - the analyzer's one writer of a dump: a model (load.h) as
 * the JSON text the loader reads back into the same model, in the shim's
 * key order and layout: the parts of a fixed size indented, then the
 * arrays that grow with the stacks (loss_records, thread_stacks,
 * stack_stats, stacks) one element a line. merge writes the dump it makes
 * with it. */
#ifndef ASP_DUMP_WRITE_H
#define ASP_DUMP_WRITE_H

#include <stdio.h>

#include "load.h"

/* Writes d to out, ending in a newline: every part of the model but
 * "rss" (the resident memory at one process's exit, which no merged dump
 * has), and "processes" when d has them. Returns 0, or -ENOMEM; a failed
 * write is out's error (ferror). */
int asp_dump_write(FILE *out, const asp_dump_t *d);

#endif
