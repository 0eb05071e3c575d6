/* suppress.h - valgrind .supp and LSan "leak:" suppressions, applied to
 * the loss records at exit (ALLOCSPY_SUPPRESSIONS). */
#ifndef ASP_SUPPRESS_H
#define ASP_SUPPRESS_H

#include "leak.h"

/* Marks the records that a suppression matches. */
void asp__suppress_apply(struct asp_leak_result *r);

#endif
