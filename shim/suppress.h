/* suppress.h - valgrind .supp and LSan "leak:" suppressions, applied to
 * the loss records at exit (ALLOCSPY_SUPPRESSIONS). */
#ifndef ASP_SUPPRESS_H
#define ASP_SUPPRESS_H

#include "errors.h"
#include "leak.h"

/* The frames the deepest entry of the ALLOCSPY_SUPPRESSIONS files needs
 * captured: its fun:/obj: lines after the leading allocation functions.
 * Reads the files with open/read and a fixed buffer, without malloc, so
 * it may run at start-up to choose the capture depth. 0 when none. */
int asp__suppress_max_frames(void);

/* Marks the records that a suppression matches. Warns once when an entry
 * needs more frames than ALLOCSPY_BACKTRACE captures. */
void asp__suppress_apply(struct asp_leak_result *r);

/* Marks the heap errors (errors.h) that a suppression matches:
 * Memcheck:Free the invalid and mismatched frees, Memcheck:FishyValue
 * (with its "malloc(size)" line) the fishy arguments. */
void asp__suppress_errors(struct asp_heap_error *v, size_t n);

#endif
