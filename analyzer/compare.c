/* compare - the compare command: the figures of several dumps side by
 * side, with each later dump's ratio against the first, then the
 * allocation sites that changed most. */
#include "compare.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "profile.h"
#include "strtab.h"
#include "symbolize.h"

enum unit { COUNT, SECONDS };

#define LABEL_SIZE ASP_COMPARE_LABEL_SIZE

struct cell {
	bool known;		/* false: "?" (count mode has no sizes) */
	uint64_t n;		/* COUNT */
	double s;		/* SECONDS */
};

struct row {
	char name[512];
	enum unit unit;
	bool heading;		/* a site's name: no cells */
	struct cell *cells;	/* one per dump */
};

struct table {
	size_t ndumps, nrows;
	struct row *rows;
};

/* The rows every comparison has, in order. */
enum {
	R_ALLOCS, R_FREES, R_BYTES, R_IN_USE, R_PEAK,
	R_DEF_BYTES, R_DEF_BLOCKS, R_IND_BYTES, R_IND_BLOCKS,
	R_POS_BYTES, R_POS_BLOCKS, R_REACH_BYTES, R_REACH_BLOCKS,
	R_SUPP_BYTES, R_SUPP_BLOCKS, R_ERRORS,
	R_STRDUP_CALLS, R_STRDUP_BYTES, R_REF_ACQ, R_REF_REL, R_CROSS, R_WALL,
	R_USER, R_SYS, R_FIXED
};

static const struct {
	const char *name;
	enum unit unit;
} fixed_rows[R_FIXED] = {
	[R_ALLOCS] = {"allocs", COUNT},
	[R_FREES] = {"frees", COUNT},
	[R_BYTES] = {"bytes allocated", COUNT},
	[R_IN_USE] = {"in use at exit (bytes)", COUNT},
	[R_PEAK] = {"peak (bytes)", COUNT},
	[R_DEF_BYTES] = {"definitely lost (bytes)", COUNT},
	[R_DEF_BLOCKS] = {"definitely lost (blocks)", COUNT},
	[R_IND_BYTES] = {"indirectly lost (bytes)", COUNT},
	[R_IND_BLOCKS] = {"indirectly lost (blocks)", COUNT},
	[R_POS_BYTES] = {"possibly lost (bytes)", COUNT},
	[R_POS_BLOCKS] = {"possibly lost (blocks)", COUNT},
	[R_REACH_BYTES] = {"still reachable (bytes)", COUNT},
	[R_REACH_BLOCKS] = {"still reachable (blocks)", COUNT},
	[R_SUPP_BYTES] = {"suppressed (bytes)", COUNT},
	[R_SUPP_BLOCKS] = {"suppressed (blocks)", COUNT},
	[R_ERRORS] = {"heap errors", COUNT},
	[R_STRDUP_CALLS] = {"strdup calls", COUNT},
	[R_STRDUP_BYTES] = {"strdup bytes", COUNT},
	[R_REF_ACQ] = {"ref acquires", COUNT},
	[R_REF_REL] = {"ref releases", COUNT},
	[R_CROSS] = {"cross-thread ref ops", COUNT},
	[R_WALL] = {"wall time (s)", SECONDS},
	[R_USER] = {"user time (s)", SECONDS},
	[R_SYS] = {"sys time (s)", SECONDS},
};

static struct cell count(uint64_t n)
{
	return (struct cell){ .known = true, .n = n };
}

static struct cell seconds(double s)
{
	return (struct cell){ .known = true, .s = s };
}

/* The fixed rows' cells of one dump. */
static void fixed_cells(const asp_dump_t *d, struct cell c[R_FIXED])
{
	uint64_t calls = 0, bytes = 0;

	for (size_t i = 0; i < d->nfns; i++) {
		if (d->fns[i].strdup_family) {
			calls += d->fns[i].calls;
			bytes += d->fns[i].bytes;
		}
	}
	c[R_ALLOCS] = count(d->allocs);
	c[R_FREES] = count(d->frees);
	c[R_BYTES] = count(d->bytes_allocated);
	c[R_IN_USE] = d->has_in_use_bytes ? count(d->in_use_bytes) :
		      (struct cell){ .known = false };
	c[R_PEAK] = d->has_peak ? count(d->peak_bytes) :
		    (struct cell){ .known = false };
	/* Nothing in use at exit: nothing lost. No leak check (count mode,
	 * ALLOCSPY_LEAK_CHECK=no): "?". */
	bool nothing = !d->count_mode && d->has_in_use_bytes && d->in_use_blocks == 0;
	for (int k = 0; k < ASP_LEAK_NKINDS; k++) {
		c[R_DEF_BYTES + 2 * k] = d->has_leaks ? count(d->leaks[k].bytes) :
					 nothing ? count(0) : (struct cell){ .known = false };
		c[R_DEF_BLOCKS + 2 * k] = d->has_leaks ? count(d->leaks[k].blocks) :
					  nothing ? count(0) : (struct cell){ .known = false };
	}
	/* valgrind's heap errors (track mode): "?" where the dump does not
	 * look for them. */
	c[R_ERRORS] = d->has_heap_errors ? count(d->heap_error_total) :
		      (struct cell){ .known = false };
	c[R_STRDUP_CALLS] = count(calls);
	c[R_STRDUP_BYTES] = count(bytes);
	c[R_REF_ACQ] = count(d->refs.acquires);
	c[R_REF_REL] = count(d->refs.releases);
	c[R_CROSS] = d->refs.has_cross_thread ? count(d->refs.cross_thread) :
		     (struct cell){ .known = false };
	c[R_WALL] = seconds(d->wall_s);
	c[R_USER] = seconds(d->user_s);
	c[R_SYS] = seconds(d->sys_s);
}

static int fn_ptr_cmp(const void *a, const void *b)
{
	return asp_fn_cmp(*(const asp_fn_t *const *)a, *(const asp_fn_t *const *)b);
}

/* Every function called in any dump, once each, in report order; *n gets
 * how many. NULL when out of memory. */
static const asp_fn_t **function_union(const asp_dump_t *d, size_t nd, size_t *n)
{
	size_t total = 0, k = 0, u = 0;
	const asp_fn_t **all;

	for (size_t i = 0; i < nd; i++)
		total += d[i].nfns;
	/* An array of pointers: sizeof *all is a pointer's size. */
	all = malloc((total ? total : 1) * sizeof *all); // NOLINT(bugprone-sizeof-expression)
	if (!all)
		return NULL;
	for (size_t i = 0; i < nd; i++)
		for (size_t j = 0; j < d[i].nfns; j++)
			all[k++] = &d[i].fns[j];
	qsort(all, total, sizeof *all, fn_ptr_cmp); // NOLINT(bugprone-sizeof-expression)
	for (k = 0; k < total; k++)
		if (u == 0 || strcmp(all[u - 1]->name, all[k]->name) != 0)
			all[u++] = all[k];
	*n = u;
	return all;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows; i++)
		free(t->rows[i].cells);
	free(t->rows);
}

static int table_build(struct table *t, const asp_dump_t *d, size_t nd)
{
	size_t nfn = 0;
	const asp_fn_t **fns = function_union(d, nd, &nfn);

	memset(t, 0, sizeof *t);
	t->ndumps = nd;
	if (!fns)
		return -ENOMEM;
	t->rows = calloc(R_FIXED + nfn, sizeof *t->rows);
	if (!t->rows) {
		free(fns);
		return -ENOMEM;
	}
	t->nrows = R_FIXED + nfn;
	for (size_t r = 0; r < t->nrows; r++) {
		t->rows[r].cells = calloc(nd, sizeof *t->rows[r].cells);
		if (!t->rows[r].cells) {
			free(fns);
			table_free(t);
			return -ENOMEM;
		}
	}
	for (size_t r = 0; r < R_FIXED; r++) {
		snprintf(t->rows[r].name, sizeof t->rows[r].name, "%s",
			 fixed_rows[r].name);
		t->rows[r].unit = fixed_rows[r].unit;
	}
	for (size_t i = 0; i < nd; i++) {
		struct cell c[R_FIXED];

		fixed_cells(&d[i], c);
		for (size_t r = 0; r < R_FIXED; r++)
			t->rows[r].cells[i] = c[r];
	}
	for (size_t f = 0; f < nfn; f++) {
		struct row *row = &t->rows[R_FIXED + f];

		snprintf(row->name, sizeof row->name, "calls: %s", fns[f]->name);
		row->unit = COUNT;
		for (size_t i = 0; i < nd; i++) {
			const asp_fn_t *fn = asp_dump_fn(&d[i], fns[f]->name);

			row->cells[i] = count(fn ? fn->calls : 0);
		}
	}
	free(fns);
	return 0;
}

static const char *cell_text(char buf[ASP_NUM_MAX], const struct row *r,
			     size_t i)
{
	const struct cell *c = &r->cells[i];

	if (!c->known)
		return "?";
	if (r->unit == SECONDS)
		return asp_fmt_seconds(buf, c->s);
	return asp_fmt_count(buf, c->n);
}

static double cell_value(const struct row *r, size_t i)
{
	return r->unit == SECONDS ? r->cells[i].s : (double)r->cells[i].n;
}

static const char *ratio_text(char buf[ASP_NUM_MAX], const struct row *r,
			      size_t i)
{
	if (!r->cells[0].known || !r->cells[i].known)
		return "-";
	return asp_fmt_ratio(buf, cell_value(r, 0), cell_value(r, i));
}

/* buf: s cut to ASP_COMPARE_LABEL_W columns, keeping its end ("...ns/b/x")
 * when keep_end, else its start ("a long la..."). */
static const char *cut_label(char buf[LABEL_SIZE], const char *s, bool keep_end)
{
	const char *tail = s + strlen(s);
	char cut[LABEL_SIZE];

	if (!keep_end || asp_text_width(s) <= ASP_COMPARE_LABEL_W)
		return asp_fmt_label(buf, LABEL_SIZE, s, ASP_COMPARE_LABEL_W);
	for (size_t cols = 0; tail > s && cols < ASP_COMPARE_LABEL_W - 3;)
		if (((unsigned char)*--tail & 0xc0) != 0x80)
			cols++;
	snprintf(cut, sizeof cut, "...%s", tail);
	return asp_fmt_label(buf, LABEL_SIZE, cut, ASP_COMPARE_LABEL_W);
}

/* A dump's short name: its --label, or its file's base name less ".json"
 * ("strdup" for runs/strdup.json); never its command line, which two
 * runs of one program share. */
static const char *short_label(char buf[LABEL_SIZE], const asp_dump_t *d)
{
	char base[ASP_PATH_MAX];
	size_t len;

	if (d->label)
		return cut_label(buf, d->label, false);
	snprintf(base, sizeof base, "%s", asp_base_name(d->file));
	len = strlen(base);
	if (len > 5 && strcmp(base + len - 5, ".json") == 0)
		base[len - 5] = '\0';
	return cut_label(buf, base, true);
}

/* A dump's name among d[0..nd): its short one, or, when another file
 * has the same and neither was given a --label, its file name as given. */
static const char *own_label(char buf[LABEL_SIZE], const asp_dump_t *d, size_t nd,
			     size_t i)
{
	char other[LABEL_SIZE];

	short_label(buf, &d[i]);
	for (size_t j = 0; j < nd && !d[i].label; j++)
		if (j != i && !d[j].label && strcmp(d[j].file, d[i].file) != 0 &&
		    strcmp(short_label(other, &d[j]), buf) == 0)
			return cut_label(buf, d[i].file, true);
	return buf;
}

/* Dump i's name, with " #2", " #3" after one an earlier dump has (the
 * same file given twice). */
const char *asp_compare_label(char buf[LABEL_SIZE], const asp_dump_t *d, size_t nd,
			      size_t i)
{
	char other[LABEL_SIZE];
	size_t same = 1;

	own_label(buf, d, nd, i);
	for (size_t j = 0; j < i; j++)
		same += strcmp(own_label(other, d, nd, j), buf) == 0;
	if (same > 1) {
		size_t len = strlen(buf);

		snprintf(buf + len, LABEL_SIZE - len, " #%zu", same);
	}
	return buf;
}

/* Whether the dumps' programs differ; their base names into names. */
static bool different_programs(const asp_dump_t *d, size_t nd, char *names,
			       size_t size)
{
	bool differ = false;
	size_t len = 0;

	names[0] = '\0';
	for (size_t i = 0; i < nd; i++) {
		const char *name = asp_dump_exe_name(&d[i]);
		bool seen = false;

		for (size_t j = 0; j < i; j++)
			if (strcmp(asp_dump_exe_name(&d[j]), name) == 0)
				seen = true;
		if (seen)
			continue;
		if (i > 0)
			differ = true;
		if (len < size)
			len += (size_t)snprintf(names + len, size - len, "%s%s",
						i ? ", " : "", name);
	}
	return differ;
}

/* The text table's column widths and labels. */
struct layout {
	size_t namew;
	size_t *width;		/* per dump: its values' column */
	size_t *rwidth;		/* per dump: its ratio column */
	char (*labels)[LABEL_SIZE];
};

static int layout(struct layout *l, const struct table *t, const asp_dump_t *d)
{
	char buf[ASP_NUM_MAX];
	size_t nd = t->ndumps;

	l->namew = 0;
	l->width = calloc(nd, sizeof *l->width);
	l->rwidth = calloc(nd, sizeof *l->rwidth);
	l->labels = calloc(nd, sizeof *l->labels);
	if (!l->width || !l->rwidth || !l->labels)
		return -ENOMEM;
	for (size_t i = 0; i < nd; i++) {
		asp_compare_label(l->labels[i], d, nd, i);
		l->width[i] = asp_text_width(l->labels[i]);
		l->rwidth[i] = strlen("ratio");
	}
	for (size_t r = 0; r < t->nrows; r++) {
		size_t w = asp_text_width(t->rows[r].name);

		if (t->rows[r].heading)
			continue;	/* printed on a line of its own */
		l->namew = w > l->namew ? w : l->namew;
		for (size_t i = 0; i < nd; i++) {
			w = strlen(cell_text(buf, &t->rows[r], i));
			l->width[i] = w > l->width[i] ? w : l->width[i];
			w = strlen(ratio_text(buf, &t->rows[r], i));
			l->rwidth[i] = w > l->rwidth[i] ? w : l->rwidth[i];
		}
	}
	return 0;
}

static void layout_free(struct layout *l)
{
	free(l->width);
	free(l->rwidth);
	free(l->labels);
}

static void put_table(FILE *out, const struct table *t, const struct layout *l)
{
	char buf[ASP_NUM_MAX];

	asp_put_left(out, "", l->namew);
	for (size_t i = 0; i < t->ndumps; i++) {
		fputs("  ", out);
		asp_put_right(out, l->labels[i], l->width[i]);
		if (i > 0) {
			fputs("  ", out);
			asp_put_right(out, "ratio", l->rwidth[i]);
		}
	}
	putc('\n', out);
	for (size_t r = 0; r < t->nrows; r++) {
		if (t->rows[r].heading) {
			asp_put_text(out, t->rows[r].name);
			putc('\n', out);
			continue;
		}
		asp_put_left(out, t->rows[r].name, l->namew);
		for (size_t i = 0; i < t->ndumps; i++) {
			fputs("  ", out);
			asp_put_right(out, cell_text(buf, &t->rows[r], i),
				      l->width[i]);
			if (i > 0) {
				fputs("  ", out);
				asp_put_right(out, ratio_text(buf, &t->rows[r], i),
					      l->rwidth[i]);
			}
		}
		putc('\n', out);
	}
}

/* Allocation sites ---------------------------------------------------------- */

/* Sites listed in the section of those that changed most. */
#define SITES_SHOWN 10

enum { S_CALLS, S_BYTES, S_IN_USE, S_METRICS };

static const char *const site_metric[S_METRICS] = {
	[S_CALLS] = "calls", [S_BYTES] = "bytes", [S_IN_USE] = "in use at exit (bytes)",
};
static const char *const site_key[S_METRICS] = {
	[S_CALLS] = "calls", [S_BYTES] = "bytes", [S_IN_USE] = "in_use_bytes",
};

/* One allocation site, by its symbolized function and file:line, with
 * each dump's figures. */
struct site {
	const char *name;	/* the sites' names hold it */
	uint64_t *v;		/* [dump * S_METRICS + metric] */
	uint64_t change;	/* largest change of bytes or bytes in use */
	uint64_t call_change;
};

struct sites {
	struct site *v;		/* v[i] is called names.v[i] until sorted */
	size_t n, cap;
	asp_strtab_t names;
	size_t nd;
	bool (*known)[S_METRICS];	/* per dump */
	size_t more;		/* sites that changed beyond those kept */
};

/* The site called name, added when new; NULL when out of memory. */
static struct site *site_get(struct sites *ss, const char *name)
{
	size_t i = asp_strtab_intern(&ss->names, name);
	struct site *x;

	if (i < ss->n)
		return &ss->v[i];
	/* SIZE_MAX, or a name kept when its site could not be: no memory. */
	if (i != ss->n)
		return NULL;
	if (ss->n == ss->cap) {
		size_t cap = ss->cap * 2 + 64;
		struct site *v = realloc(ss->v, cap * sizeof *v);

		if (!v)
			return NULL;
		ss->v = v;
		ss->cap = cap;
	}
	x = &ss->v[ss->n];
	memset(x, 0, sizeof *x);
	x->name = ss->names.v[i];
	x->v = calloc(ss->nd * S_METRICS, sizeof *x->v);
	if (!x->v)
		return NULL;
	ss->n++;
	return x;
}

static void sites_free(struct sites *ss)
{
	for (size_t i = 0; i < ss->n; i++)
		free(ss->v[i].v);
	free(ss->v);
	asp_strtab_free(&ss->names);
	free(ss->known);
}

/* "make_pair (leaky.c:10)": the innermost frame of st that is not the
 * shim's, as valgrind would show it; the function alone when the object
 * has no line info (paths differ between builds, names do not). */
static void site_name(const asp_dump_t *d, asp_symbolizer_t *sym,
		      const asp_stack_t *st, char *buf, size_t size)
{
	snprintf(buf, size, "(no frames)");
	for (size_t j = 0; sym && j < st->n; j++) {
		char name[ASP_NAME_MAX];
		asp_line_t l[64];

		if (asp_symbolize_is_shim(sym, st->frames[j]))
			continue;
		asp_symbolize(sym, st->frames[j], l, 64);
		if (l[0].fn && l[0].file)
			snprintf(buf, size, "%s (%s:%u)", l[0].fn, l[0].file, l[0].line);
		else
			snprintf(buf, size, "%s", asp_frame_name(d, &l[0], name));
		return;
	}
}

/* Adds dump i's sites: from stack_stats (calls, bytes, bytes in use),
 * else from its loss records (bytes in use). With its symbolizer, or
 * one of its own when given none. */
static int sites_add(struct sites *ss, const asp_dump_t *d, size_t i,
		     asp_symbolizer_t *given)
{
	asp_symbolizer_t *sym = given ? given : asp_symbolizer_new(d);
	char name[512];
	int rc = 0;

	if (!sym)
		return -ENOMEM;
	if (d->nstack_stats) {
		for (int m = 0; m < S_METRICS; m++)
			ss->known[i][m] = true;
		for (size_t k = 0; k < d->nstack_stats && rc == 0; k++) {
			const asp_stack_stat_t *st = &d->stack_stats[k];
			struct site *x;

			site_name(d, sym, &d->stacks[st->stack], name, sizeof name);
			x = site_get(ss, name);
			if (!x) {
				rc = -ENOMEM;
				break;
			}
			x->v[i * S_METRICS + S_CALLS] += st->allocs;
			x->v[i * S_METRICS + S_BYTES] += st->bytes;
			x->v[i * S_METRICS + S_IN_USE] += st->in_use_bytes;
		}
	} else if (d->nrecords) {
		ss->known[i][S_IN_USE] = true;
		for (size_t k = 0; k < d->nrecords && rc == 0; k++) {
			const asp_record_t *rec = &d->records[k];
			struct site *x;

			site_name(d, sym, &d->stacks[rec->stack], name, sizeof name);
			x = site_get(ss, name);
			if (!x)
				rc = -ENOMEM;
			else
				x->v[i * S_METRICS + S_IN_USE] += rec->bytes;
		}
	}
	if (!given)
		asp_symbolizer_free(sym);
	return rc;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

static int by_change(const void *pa, const void *pb)
{
	const struct site *a = pa, *b = pb;

	if (a->change != b->change)
		return a->change > b->change ? -1 : 1;
	if (a->call_change != b->call_change)
		return a->call_change > b->call_change ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Every dump's sites, those that changed most first; ss->n is how many
 * changed (at most max). */
static int sites_build(struct sites *ss, const asp_dump_t *d,
		       asp_symbolizer_t *const *sym, size_t nd, size_t max)
{
	size_t w = 0;

	memset(ss, 0, sizeof *ss);
	ss->nd = nd;
	ss->known = calloc(nd, sizeof *ss->known);
	if (!ss->known)
		return -ENOMEM;
	for (size_t i = 0; i < nd; i++)
		if (sites_add(ss, &d[i], i, sym ? sym[i] : NULL) < 0)
			return -ENOMEM;
	for (size_t k = 0; k < ss->n; k++) {
		struct site *x = &ss->v[k];

		for (size_t i = 1; i < nd; i++) {
			for (int m = 0; m < S_METRICS; m++) {
				uint64_t c;

				if (!ss->known[0][m] || !ss->known[i][m])
					continue;
				c = diff(x->v[m], x->v[i * S_METRICS + m]);
				if (m == S_CALLS && c > x->call_change)
					x->call_change = c;
				if (m != S_CALLS && c > x->change)
					x->change = c;
			}
		}
	}
	if (ss->n)
		qsort(ss->v, ss->n, sizeof *ss->v, by_change);
	while (w < ss->n && w < max &&
	       (ss->v[w].change || ss->v[w].call_change))
		w++;
	for (size_t k = w; k < ss->n; k++)
		ss->more += ss->v[k].change || ss->v[k].call_change;
	for (size_t k = w; k < ss->n; k++)
		free(ss->v[k].v);
	ss->n = w;
	return 0;
}

/* The sites as table rows: the site's name, then one row per metric that
 * some dump knows. */
static int sites_table(struct table *t, const struct sites *ss)
{
	size_t nrows = 0;
	int metrics = 0;

	memset(t, 0, sizeof *t);
	t->ndumps = ss->nd;
	for (int m = 0; m < S_METRICS; m++)
		for (size_t i = 0; i < ss->nd; i++)
			if (ss->known[i][m]) {
				metrics |= 1 << m;
				break;
			}
	t->rows = calloc(ss->n * (1 + S_METRICS) + 1, sizeof *t->rows);
	if (!t->rows)
		return -ENOMEM;
	for (size_t k = 0; k < ss->n; k++) {
		for (int m = -1; m < S_METRICS; m++) {
			struct row *row;

			if (m >= 0 && !(metrics & (1 << m)))
				continue;
			row = &t->rows[nrows++];
			t->nrows = nrows;
			row->cells = calloc(ss->nd ? ss->nd : 1, sizeof *row->cells);
			if (!row->cells)
				return -ENOMEM;
			row->unit = COUNT;
			if (m < 0) {
				row->heading = true;
				snprintf(row->name, sizeof row->name, "%s", ss->v[k].name);
				continue;
			}
			snprintf(row->name, sizeof row->name, "  %s", site_metric[m]);
			for (size_t i = 0; i < ss->nd; i++)
				row->cells[i] = ss->known[i][m] ?
					count(ss->v[k].v[i * S_METRICS + m]) :
					(struct cell){ .known = false };
		}
	}
	return 0;
}

static int put_sites(FILE *out, const asp_dump_t *d, size_t nd)
{
	struct layout l = {0};
	struct sites ss;
	struct table t = {0};
	int rc = sites_build(&ss, d, NULL, nd, SITES_SHOWN);

	if (rc == 0 && ss.n)
		rc = sites_table(&t, &ss);
	if (rc == 0 && ss.n)
		rc = layout(&l, &t, d);
	if (rc == 0 && ss.n) {
		fputs("\nAllocation sites that changed most (by function and file:line)\n", out);
		for (size_t i = 0; i < nd; i++)
			if (d[i].sampled) {
				fputs("  (a sampled dump's figures are estimates: ALLOCSPY_SAMPLE)\n", out);
				break;
			}
		put_table(out, &t, &l);
		if (ss.more) {
			char n[ASP_NUM_MAX];

			fprintf(out, "... and %s more site%s that changed\n",
				asp_fmt_count(n, ss.more), ss.more == 1 ? "" : "s");
		}
	}
	layout_free(&l);
	table_free(&t);
	sites_free(&ss);
	return rc;
}

int asp_compare_text(FILE *out, const asp_dump_t *d, size_t nd)
{
	struct layout l = {0};
	char names[512];
	struct table t;
	int rc;

	if (table_build(&t, d, nd) < 0)
		return -ENOMEM;
	rc = layout(&l, &t, d);
	if (rc == 0) {
		if (different_programs(d, nd, names, sizeof names)) {
			fputs("note: the dumps come from different programs (", out);
			asp_put_text(out, names);
			fputs(")\n\n", out);
		}
		put_table(out, &t, &l);
	}
	layout_free(&l);
	table_free(&t);
	if (rc == 0)
		rc = put_sites(out, d, nd);
	return rc;
}

static json_t *cell_json(const struct row *r, size_t i)
{
	if (!r->cells[i].known)
		return json_null();
	if (r->unit == SECONDS)
		return json_real(r->cells[i].s);
	return json_integer((json_int_t)r->cells[i].n);
}

static json_t *dumps_json(const asp_dump_t *d, size_t nd)
{
	json_t *a = json_array();

	for (size_t i = 0; i < nd; i++) {
		char label[LABEL_SIZE];
		json_t *argv = json_array();

		for (size_t j = 0; j < d[i].argc; j++)
			json_array_append_new(argv, asp_json_text(d[i].argv[j]));
		json_array_append_new(a, json_pack("{s:o,s:o,s:I,s:o,s:o,s:s,s:o}",
			"file", asp_json_text(d[i].file),
			"label", asp_json_text(asp_compare_label(label, d, nd, i)),
			"pid", (json_int_t)d[i].pid,
			"exe", asp_json_text(d[i].exe),
			"argv", argv,
			"mode", d[i].count_mode ? "count" : "track",
			"sample", d[i].sampled ? json_integer((json_int_t)d[i].sample_bytes) :
			json_null()));
	}
	return a;
}

json_t *asp_compare_sites_json(const asp_dump_t *d, asp_symbolizer_t *const *sym,
			       size_t nd, size_t max)
{
	json_t *a = json_array();
	struct sites ss;

	if (sites_build(&ss, d, sym, nd, max) == 0) {
		for (size_t k = 0; k < ss.n; k++) {
			json_t *values = json_object(), *ratios = json_object();

			for (int m = 0; m < S_METRICS; m++) {
				json_t *v = json_array(), *r = json_array();

				for (size_t i = 0; i < nd; i++) {
					uint64_t x = ss.v[k].v[i * S_METRICS + m];
					uint64_t x0 = ss.v[k].v[m];
					bool known = ss.known[i][m];

					json_array_append_new(v, known ? json_integer((json_int_t)x) : json_null());
					if (i == 0)
						continue;
					json_array_append_new(r, known && ss.known[0][m] && x0 ?
						json_real((double)x / (double)x0) : json_null());
				}
				json_object_set_new(values, site_key[m], v);
				json_object_set_new(ratios, site_key[m], r);
			}
			json_array_append_new(a, json_pack("{s:o,s:o,s:o}",
				"site", asp_json_text(ss.v[k].name),
				"values", values, "ratios", ratios));
		}
	}
	sites_free(&ss);
	return a;
}

json_t *asp_compare_json(const asp_dump_t *d, size_t nd)
{
	return asp_compare_json_with(d, NULL, nd);
}

json_t *asp_compare_json_with(const asp_dump_t *d, asp_symbolizer_t *const *sym,
			      size_t nd)
{
	char names[512];
	json_t *rows;
	struct table t;
	bool differ = different_programs(d, nd, names, sizeof names);

	if (table_build(&t, d, nd) < 0)
		return NULL;
	rows = json_array();
	for (size_t r = 0; r < t.nrows; r++) {
		const struct row *row = &t.rows[r];
		json_t *values = json_array(), *ratios = json_array();

		for (size_t i = 0; i < nd; i++) {
			json_array_append_new(values, cell_json(row, i));
			if (i == 0)
				continue;
			if (row->cells[0].known && row->cells[i].known &&
			    cell_value(row, 0) != 0)
				json_array_append_new(ratios, json_real(
					cell_value(row, i) / cell_value(row, 0)));
			else
				json_array_append_new(ratios, json_null());
		}
		json_array_append_new(rows, json_pack("{s:s,s:s,s:o,s:o}",
			"name", row->name,
			"unit", row->unit == SECONDS ? "seconds" : "count",
			"values", values, "ratios", ratios));
	}
	table_free(&t);
	return json_pack("{s:o,s:b,s:o,s:o}", "dumps", dumps_json(d, nd),
			 "different_programs", differ, "rows", rows,
			 "sites", asp_compare_sites_json(d, sym, nd, SITES_SHOWN));
}
