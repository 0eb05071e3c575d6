/* check - the check command: budgets a dump must keep, for a CI run to
 * gate on (--max-peak=1M, --max-bytes=parse_header:64K). Each budget
 * exceeded is one line, with the stack that holds most of the figure when
 * the dump has stacks. */
#include "check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "msg.h"
#include "profile.h"

/* Frames of the top stack on a budget's line. */
#define FRAMES_SHOWN 6

static const struct budget_option {
	const char *name;
	enum asp_metric metric;
	bool function;		/* takes FUNCTION:SIZE */
	const char *what;	/* the figure, in a sentence */
} budget_options[] = {
	{ "--max-peak", ASP_M_PEAK, true, "bytes held at the peak" },
	{ "--max-in-use", ASP_M_IN_USE, true, "bytes in use" },
	{ "--max-leaked", ASP_M_LEAKED, true, "bytes leaked" },
	{ "--max-allocs", ASP_M_ALLOCS, true, "allocs" },
	{ "--max-bytes", ASP_M_BYTES, true, "bytes allocated" },
	{ "--max-errors", ASP_M_ERRORS, false, "errors" },
};
#define NOPTIONS (sizeof budget_options / sizeof *budget_options)

const char *const asp_check_options[NOPTIONS + 1] = {
	"--max-peak", "--max-in-use", "--max-leaked", "--max-allocs", "--max-bytes",
	"--max-errors", NULL
};

static const struct budget_option *option_of(enum asp_metric m)
{
	for (size_t i = 0; i < NOPTIONS; i++)
		if (budget_options[i].metric == m)
			return &budget_options[i];
	return &budget_options[0];
}

int asp_budget_parse(asp_budget_t *b, const char *name, const char *value, char *err,
		     size_t size)
{
	const struct budget_option *o = NULL;
	const char *colon = strrchr(value, ':'), *amount = colon ? colon + 1 : value;
	size_t len = strlen(name) + strlen(value) + 2;
	bool bytes;

	memset(b, 0, sizeof *b);
	for (size_t i = 0; i < NOPTIONS; i++)
		if (strcmp(name, budget_options[i].name) == 0)
			o = &budget_options[i];
	if (!o)
		return asp_gate_error(err, size, "%s is not a budget", name);
	if (colon && !o->function)
		return asp_gate_error(err, size, "%s=%s: %s takes no function, only a count",
				      name, value, name);
	if (colon == value)
		return asp_gate_error(err, size, "%s=%s: no function before the ':'", name, value);
	bytes = asp_metrics[o->metric].unit == ASP_U_BYTES;
	if (bytes ? asp_parse_size(amount, &b->max) : asp_parse_count(amount, &b->max))
		return asp_gate_error(err, size, "%s=%s: bad %s '%s': %s", name, value,
				      bytes ? "size" : "count", amount, bytes ?
				      "bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), "
				      "at most 2^63 - 1" : "a whole number, at most 2^63 - 1");
	b->metric = o->metric;
	b->option = malloc(len);
	if (colon)
		b->function = strndup(value, (size_t)(colon - value));
	if (!b->option || (colon && !b->function)) {
		asp_budget_free(b);
		return -ENOMEM;
	}
	snprintf(b->option, len, "%s=%s", name, value);
	return 0;
}

void asp_budget_free(asp_budget_t *b)
{
	free(b->function);
	free(b->option);
	memset(b, 0, sizeof *b);
}

/* --- what each stack holds ---------------------------------------------------- */

/* One stack's share of a figure. */
struct stack_fig {
	size_t stack;		/* index into the dump's stacks */
	uint64_t v;
};

/* The shares of one metric, one per stack. */
struct figs {
	bool done;
	bool have;		/* the dump has them */
	bool estimate;		/* a sampled dump's estimates */
	bool stats;		/* from stack_stats */
	const char *source;	/* where they come from, or why there are none */
	struct stack_fig *v;
	size_t n;
};

static int by_stack(const void *pa, const void *pb)
{
	const struct stack_fig *a = pa, *b = pb;

	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Adds v to stack's share (f->v has room). */
static void add(struct figs *f, size_t stack, uint64_t v)
{
	f->v[f->n++] = (struct stack_fig){ stack, v };
}

/* One entry per stack: loss records repeat a stack, one per kind. */
static void merge_stacks(struct figs *f)
{
	size_t w = 0;

	if (f->n)
		qsort(f->v, f->n, sizeof *f->v, by_stack);
	for (size_t i = 0; i < f->n; i++) {
		if (w && f->v[w - 1].stack == f->v[i].stack)
			f->v[w - 1].v = asp_add_sat(f->v[w - 1].v, f->v[i].v);
		else
			f->v[w++] = f->v[i];
	}
	f->n = w;
}

/* No block was left: the shim then runs no leak check and writes no loss
 * records, and no stack holds anything. */
static bool nothing_in_use(const asp_dump_t *d)
{
	return !d->count_mode && d->has_in_use_bytes && d->in_use_blocks == 0;
}

/* The shares of metric m: the figures of "stack_stats" when the dump has
 * them; for the bytes in use, else the loss records (every kind); for
 * the peak, else the peak snapshot's detail; for the bytes leaked, the
 * definitely and indirectly lost records that were not suppressed. */
static int stack_figures(const asp_dump_t *d, enum asp_metric m, struct figs *f)
{
	const asp_snapshot_t *peak = d->nsnapshots ? &d->snapshots[d->peak_snapshot] : NULL;
	bool stats = d->nstack_stats > 0, stats_peak = stats;
	size_t room = d->nstack_stats + d->nrecords + (peak ? peak->ndetail : 0);

	f->done = true;
	for (size_t i = 0; i < d->nstack_stats; i++)
		stats_peak = stats_peak && d->stack_stats[i].has_peak;
	f->v = calloc(room ? room : 1, sizeof *f->v);
	if (!f->v)
		return -ENOMEM;
	switch (m) {
	case ASP_M_ALLOCS:
	case ASP_M_BYTES:
	case ASP_M_IN_USE:
	case ASP_M_PEAK:
		if (stats && (m != ASP_M_PEAK || stats_peak)) {
			f->have = f->stats = true;
			f->estimate = d->sampled;
			f->source = "stack_stats";
			for (size_t i = 0; i < d->nstack_stats; i++) {
				const asp_stack_stat_t *s = &d->stack_stats[i];

				add(f, s->stack, m == ASP_M_ALLOCS ? s->allocs : m == ASP_M_BYTES ?
				    s->bytes : m == ASP_M_IN_USE ? s->in_use_bytes : s->peak_bytes);
			}
		} else if (m == ASP_M_IN_USE && d->has_records) {
			f->have = true;
			f->source = "the loss records";
			for (size_t i = 0; i < d->nrecords; i++)
				add(f, d->records[i].stack, d->records[i].bytes);
		} else if (m == ASP_M_IN_USE && nothing_in_use(d)) {
			f->have = true;
			f->source = "nothing in use";
		} else if (m == ASP_M_PEAK && peak && peak->has_detail) {
			f->have = true;
			f->estimate = d->sampled;
			f->source = "the peak snapshot";
			for (size_t i = 0; i < peak->ndetail; i++)
				add(f, peak->detail[i].stack, peak->detail[i].bytes);
		} else {
			f->source = m == ASP_M_PEAK ? "no stacks held at the peak (they come "
				    "with ALLOCSPY_SNAPSHOTS or ALLOCSPY_BACKTRACE of 2 or more)" :
				    m == ASP_M_IN_USE ? "no stacks of the blocks in use (they come "
				    "with a leak check or ALLOCSPY_BACKTRACE of 2 or more)" :
				    "no per-stack totals (they come with ALLOCSPY_BACKTRACE of 2 "
				    "or more)";
		}
		break;
	case ASP_M_LEAKED:
		if (d->has_records) {
			f->have = true;
			f->source = "the loss records";
			for (size_t i = 0; i < d->nrecords; i++) {
				const asp_record_t *r = &d->records[i];

				if (!r->suppressed && (r->kind == ASP_LEAK_DEFINITE ||
						       r->kind == ASP_LEAK_INDIRECT))
					add(f, r->stack, r->bytes);
			}
		} else if (nothing_in_use(d)) {
			f->have = true;
			f->source = "nothing in use";
		} else {
			f->source = "no loss records (they come with a leak check)";
		}
		break;
	default:
		f->source = "no stacks";
		break;
	}
	merge_stacks(f);
	return 0;
}

/* --- functions in stacks ------------------------------------------------------- */

/* name without its parameter list: "ns::f(int) const" -> "ns::f"; NULL
 * when it has none. buf holds the result. */
static const char *without_params(const char *name, char *buf, size_t size)
{
	size_t len = strlen(name);
	int depth = 0;

	if (len > 6 && strcmp(name + len - 6, " const") == 0)
		len -= 6;
	if (len == 0 || name[len - 1] != ')')
		return NULL;
	for (size_t i = len; i-- > 0;) {
		if (name[i] == ')')
			depth++;
		else if (name[i] == '(' && --depth == 0) {
			if (i == 0 || i >= size)
				return NULL;
			memcpy(buf, name, i);
			buf[i] = '\0';
			return buf;
		}
	}
	return NULL;
}

/* Whether a line of the stack names fn: its function as the reports show
 * it, that without its parameter list, or the symbol as the object has it. */
static bool passes_through(const asp_pstack_t *ps, const char *fn)
{
	char buf[1024];

	for (size_t j = 0; j < ps->n; j++) {
		const asp_loc_t *loc = ps->locs[j];

		for (size_t k = 0; k < loc->nlines; k++) {
			const asp_line_t *l = &loc->lines[k];
			const char *base;

			if ((l->fn && strcmp(l->fn, fn) == 0) || (l->raw && strcmp(l->raw, fn) == 0))
				return true;
			base = l->fn ? without_params(l->fn, buf, sizeof buf) : NULL;
			if (base && strcmp(base, fn) == 0)
				return true;
		}
	}
	return false;
}

/* --- checking -------------------------------------------------------------------- */

struct result {
	uint64_t value;
	bool exceeded;
	bool estimate;		/* a function's figure, from a sampled dump's stacks */
	bool top_estimate;	/* the top stack's, from a sampled dump */
	bool has_top;
	size_t top;		/* the stack that holds most of value */
	uint64_t top_value;
	bool matched;		/* a function's budget: some stack of the dump
				 * passes through it */
};

struct checker {
	const asp_dump_t *d;
	struct figs figs[ASP_M_COUNT];
	asp_profile_t p;
	bool have_profile;
};

static int profile(struct checker *c)
{
	if (c->have_profile)
		return 0;
	if (asp_profile_build(&c->p, c->d) < 0)
		return -ENOMEM;
	c->have_profile = true;
	return 0;
}

static void checker_free(struct checker *c)
{
	for (int m = 0; m < ASP_M_COUNT; m++)
		free(c->figs[m].v);
	if (c->have_profile)
		asp_profile_free(&c->p);
}

static int check_one(struct checker *c, const asp_budget_t *b, struct result *r,
		     char *err, size_t size)
{
	struct figs *f = &c->figs[b->metric];
	char why[ASP_WHY_MAX];
	asp_figure_t x;
	int rc;

	memset(r, 0, sizeof *r);
	if (!b->function) {
		rc = asp_dump_figure(c->d, b->metric, &x, why);
		if (rc != 0)
			return asp_gate_error(err, size, "%s: %s", b->option, why);
		r->value = x.n;
	}
	if (!f->done && stack_figures(c->d, b->metric, f) < 0)
		return -ENOMEM;
	if (b->function && !f->have)
		return asp_gate_error(err, size, "%s: the dump has %s", b->option, f->source);
	if (f->have && (b->function || f->n) && profile(c) < 0)
		return -ENOMEM;
	for (size_t i = 0; f->have && i < f->n; i++) {
		const struct stack_fig *s = &f->v[i];

		if (b->function) {
			if (!passes_through(&c->p.stacks[s->stack], b->function))
				continue;
			r->matched = true;
			r->value = asp_add_sat(r->value, s->v);
		}
		if (s->v && (!r->has_top || s->v > r->top_value)) {
			r->has_top = true;
			r->top = s->stack;
			r->top_value = s->v;
		}
	}
	/* A function no stack of the dump names at all is most likely
	 * misspelt: notes() says so. */
	for (size_t i = 0; b->function && !r->matched && i < c->d->nstacks; i++)
		r->matched = passes_through(&c->p.stacks[i], b->function);
	r->estimate = f->estimate && b->function;
	r->top_estimate = f->estimate;
	r->exceeded = r->value > b->max;
	return 0;
}

/* Every budget's result into r, or an error: nothing is written before
 * every budget could be answered. */
static int check_all(struct checker *c, const asp_budget_t *b, size_t n, struct result *r,
		     char *err, size_t size)
{
	int exceeded = 0;

	for (size_t i = 0; i < n; i++) {
		int rc = check_one(c, &b[i], &r[i], err, size);

		if (rc < 0)
			return rc;
		exceeded += r[i].exceeded;
	}
	return exceeded;
}

/* Notes on stderr for what the lines cannot say. */
static void notes(const struct checker *c, const asp_budget_t *b, size_t n,
		  const struct result *r)
{
	const asp_dump_t *d = c->d;
	char x[ASP_NUM_MAX], y[ASP_NUM_MAX];
	bool estimate = false, omitted = false;

	for (size_t i = 0; i < n; i++) {
		if (b[i].function && !r[i].matched)
			asp_note(d->file, "%s: no stack of the dump passes through %s, so its "
				 "figure is 0", b[i].option, b[i].function);
		if (b[i].metric == ASP_M_PEAK && !b[i].function && !r[i].exceeded &&
		    d->peak_bytes_bound && d->peak_bytes + d->peak_bytes_bound > b[i].max)
			asp_note(d->file, "%s: the true peak may be up to %s bytes above %s "
				 "(heap.peak_bytes_bound): within the budget as measured",
				 b[i].option, asp_fmt_count(x, d->peak_bytes_bound),
				 asp_fmt_count(y, d->peak_bytes));
		estimate = estimate || r[i].estimate;
		omitted = omitted || (b[i].function && c->figs[b[i].metric].stats);
	}
	if (estimate)
		asp_note(d->file, "the figures of functions are estimates from sampled "
			 "allocations (ALLOCSPY_SAMPLE: one per %s bytes on average)",
			 asp_fmt_count(x, d->sample_bytes));
	if (omitted && d->stack_stats_omitted)
		asp_note(d->file, "%s stacks are left out of stack_stats: the figures of "
			 "functions may be low", asp_fmt_count(x, d->stack_stats_omitted));
}

/* "parse (p.c:3) < main (p.c:9)": the stack innermost first, as timeline
 * names its frames, on one line. */
static void put_stack(FILE *out, const asp_profile_t *p, const asp_pstack_t *ps)
{
	size_t shown = 0;

	for (size_t j = 0; j < ps->n; j++) {
		const asp_loc_t *loc = ps->locs[j];

		for (size_t k = 0; k < loc->nlines; k++) {
			if (shown == FRAMES_SHOWN) {
				fputs(" < ...", out);
				return;
			}
			if (shown++)
				fputs(" < ", out);
			asp_profile_put_frame(out, p, loc, &loc->lines[k], asp_put_text);
		}
	}
	if (shown == 0)
		fputs("(no frames)", out);
}

int asp_check_text(FILE *out, const asp_dump_t *d, const asp_budget_t *b, size_t n,
		   char *err, size_t size)
{
	struct checker c = { .d = d };
	struct result *r = calloc(n ? n : 1, sizeof *r);
	int exceeded;

	if (!r)
		return -ENOMEM;
	exceeded = check_all(&c, b, n, r, err, size);
	if (exceeded >= 0)
		notes(&c, b, n, r);
	for (size_t i = 0; exceeded > 0 && i < n; i++) {
		const char *what = option_of(b[i].metric)->what;
		char v[ASP_NUM_MAX], m[ASP_NUM_MAX], t[ASP_NUM_MAX];

		if (!r[i].exceeded)
			continue;
		asp_put_text(out, b[i].option);
		fprintf(out, ": %s%s %s", r[i].estimate ? "about " : "",
			asp_fmt_count(v, r[i].value), what);
		if (b[i].function) {
			fputs(" from stacks through ", out);
			asp_put_text(out, b[i].function);
		}
		fprintf(out, ", over the budget of %s", asp_fmt_count(m, b[i].max));
		if (r[i].has_top && c.have_profile) {
			fprintf(out, "; top stack: %s%s %s at ", r[i].top_estimate ? "about " : "",
				asp_fmt_count(t, r[i].top_value),
				asp_metrics[b[i].metric].unit == ASP_U_BYTES ? "bytes" : what);
			put_stack(out, &c.p, &c.p.stacks[r[i].top]);
		}
		putc('\n', out);
	}
	checker_free(&c);
	free(r);
	return exceeded;
}

int asp_check_json(json_t **out, const asp_dump_t *d, const asp_budget_t *b, size_t n,
		   char *err, size_t size)
{
	struct checker c = { .d = d };
	struct result *r = calloc(n ? n : 1, sizeof *r);
	json_t *a;
	int exceeded;

	*out = NULL;
	if (!r)
		return -ENOMEM;
	exceeded = check_all(&c, b, n, r, err, size);
	if (exceeded < 0) {
		checker_free(&c);
		free(r);
		return exceeded;
	}
	notes(&c, b, n, r);
	a = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:o,s:s,s:o,s:I,s:I,s:b,s:b,s:o}",
			"option", asp_json_text(b[i].option),
			"metric", asp_metrics[b[i].metric].name,
			"function", asp_json_text(b[i].function),
			"budget", (json_int_t)b[i].max,
			"value", (json_int_t)r[i].value,
			"exceeded", r[i].exceeded,
			"estimate", r[i].estimate,
			"top_stack", r[i].has_top && c.have_profile ? json_pack("{s:I,s:b,s:o}",
				"value", (json_int_t)r[i].top_value,
				"estimate", r[i].top_estimate,
				"frames", asp_profile_frames_json(&c.p, &c.p.stacks[r[i].top], true)) :
				json_null()));
	*out = json_pack("{s:o,s:I,s:i,s:o}", "file", asp_json_text(d->file),
			 "pid", (json_int_t)d->pid, "exceeded", exceeded, "budgets", a);
	checker_free(&c);
	free(r);
	return *out ? exceeded : -ENOMEM;
}
