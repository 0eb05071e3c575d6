/* compare - the compare command: the figures of several dumps side by
 * side, with each later dump's ratio against the first. */
#ifndef ASP_COMPARE_H
#define ASP_COMPARE_H

#include <jansson.h>
#include <stdio.h>

#include "load.h"
#include "symbolize.h"

/* Columns are labelled by each dump's --label or file name, cut to this
 * many columns. */
#define ASP_COMPARE_LABEL_W 24

/* Room for a label (4 bytes a column, and " #N"). */
#define ASP_COMPARE_LABEL_SIZE (4 * ASP_COMPARE_LABEL_W + 4)

/* The label of dump i of d[0..n): its --label, or its file's base name
 * less ".json", or, when two dumps' are alike, its file name as given (the
 * end of it when it is long); " #2", " #3" after a label an earlier dump
 * has (one file given twice). */
const char *asp_compare_label(char buf[ASP_COMPARE_LABEL_SIZE], const asp_dump_t *d,
			      size_t n, size_t i);

/* d[0..n), n >= 1. Return 0, or -ENOMEM. */
int asp_compare_text(FILE *out, const asp_dump_t *d, size_t n);
json_t *asp_compare_json(const asp_dump_t *d, size_t n);

/* The same with sym, a symbolizer of each dump already open, or NULL. */
json_t *asp_compare_json_with(const asp_dump_t *d, asp_symbolizer_t *const *sym,
			      size_t n);

/* The "sites" of asp_compare_json: the allocation sites that changed, at
 * most max of them, those that changed most first, each with every
 * dump's figures (null: unknown) and the ratios against the first. sym:
 * a symbolizer of each dump already open, or NULL. */
json_t *asp_compare_sites_json(const asp_dump_t *d, asp_symbolizer_t *const *sym,
			       size_t n, size_t max);

#endif
