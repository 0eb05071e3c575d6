/* strtab - a table of strings, each kept once (its own copy) and numbered
 * from 0 in the order of first use: the names of compare's allocation
 * sites, of the flame graphs' frames and of a pprof profile's string
 * table. */
#ifndef ASP_STRTAB_H
#define ASP_STRTAB_H

#include <stddef.h>

/* Zeroed is empty. v and n are for reading: v[i] is string i. */
typedef struct asp_strtab {
	char **v;
	size_t n, cap;
	size_t *slot;		/* open addressing: index + 1, 0 empty */
	unsigned bits;		/* 2^bits slots, at least twice n */
} asp_strtab_t;

/* The number of s, which is copied in when new (the next number, n - 1
 * after the call); SIZE_MAX when memory ran out (t as it was). */
size_t asp_strtab_intern(asp_strtab_t *t, const char *s);

/* Frees the strings and the table; t is empty again. */
void asp_strtab_free(asp_strtab_t *t);

#endif
