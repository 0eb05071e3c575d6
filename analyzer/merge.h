/* merge - the merge command: the dumps of one program's many processes (a
 * forking server, a test suite, a fleet) added up into one dump that every
 * command and every export reads. */
#ifndef ASP_MERGE_H
#define ASP_MERGE_H

#include <stddef.h>

#include "load.h"

/* Merges the n dumps d[0..n) (n >= 1) into one, written as a dump's JSON
 * text into *text (malloc'd, ending in a newline). Notes (dumps of
 * different programs, parts only some of them have) go to stderr as
 * warnings. Returns 0; -EINVAL when dump d[*bad] cannot be merged with the
 * others, with the reason in err; -EPROTO when the result does not load
 * back, with the loader's reason in err; or -ENOMEM. */
int asp_merge(const asp_dump_t *d, size_t n, char **text, size_t *bad,
	      char err[ASP_ERR_MAX]);

#endif
