/* pprof - a dump as a gzipped profile.proto, the format of pprof and of
 * the continuous-profiling services that take its files. */
#ifndef ASP_PPROF_H
#define ASP_PPROF_H

#include <stdio.h>

#include "profile.h"

/* Writes p as a gzipped profile.proto with the sample types
 * alloc_objects/count, alloc_space/bytes, inuse_objects/count and
 * inuse_space/bytes. Returns 0, or -ENOMEM. */
int asp_pprof_write(FILE *out, const asp_profile_t *p);

#endif
