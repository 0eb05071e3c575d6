/* gate - what a CI run gates on: a dump's figures by name, sizes such as
 * 1M, and compare's --fail-if expressions (the check command's budgets are
 * in check.c). */
#include "gate.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

const struct asp_metric_info asp_metrics[ASP_M_COUNT] = {
	[ASP_M_ALLOCS] = { "allocs", ASP_U_COUNT },
	[ASP_M_FREES] = { "frees", ASP_U_COUNT },
	[ASP_M_BYTES] = { "bytes", ASP_U_BYTES },
	[ASP_M_IN_USE] = { "in_use", ASP_U_BYTES },
	[ASP_M_PEAK] = { "peak", ASP_U_BYTES },
	[ASP_M_LEAKED] = { "leaked", ASP_U_BYTES },
	[ASP_M_ERRORS] = { "errors", ASP_U_COUNT },
	[ASP_M_STRDUP_CALLS] = { "strdup_calls", ASP_U_COUNT },
	[ASP_M_STRDUP_BYTES] = { "strdup_bytes", ASP_U_BYTES },
	[ASP_M_REF_OPS] = { "ref_ops", ASP_U_COUNT },
	[ASP_M_TIME] = { "time", ASP_U_SECONDS },
	[ASP_M_USER_TIME] = { "user_time", ASP_U_SECONDS },
	[ASP_M_SYS_TIME] = { "sys_time", ASP_U_SECONDS },
};

const char *asp_metric_names(void)
{
	static char names[256];

	if (!names[0]) {
		size_t len = 0;

		for (int m = 0; m < ASP_M_COUNT && len < sizeof names; m++)
			len += (size_t)snprintf(names + len, sizeof names - len, "%s%s",
						m ? ", " : "", asp_metrics[m].name);
	}
	return names;
}

int asp_dump_figure(const asp_dump_t *d, enum asp_metric m, asp_figure_t *f,
		    char why[ASP_WHY_MAX])
{
	*f = (asp_figure_t){ 0 };
	switch (m) {
	case ASP_M_ALLOCS:
		f->n = d->allocs;
		return 0;
	case ASP_M_FREES:
		f->n = d->frees;
		return 0;
	case ASP_M_BYTES:
		f->n = d->bytes_allocated;
		return 0;
	case ASP_M_IN_USE:
	case ASP_M_PEAK:
		if (m == ASP_M_IN_USE ? !d->has_in_use_bytes : !d->has_peak) {
			snprintf(why, ASP_WHY_MAX, "%s unknown in count mode "
				 "(ALLOCSPY_MODE=count keeps no sizes of freed blocks)",
				 m == ASP_M_IN_USE ? "the bytes in use are" : "the peak is");
			return -1;
		}
		f->n = m == ASP_M_IN_USE ? d->in_use_bytes : d->peak_bytes;
		return 0;
	case ASP_M_LEAKED:
		if (d->has_leaks) {
			f->n = d->leaks[ASP_LEAK_DEFINITE].bytes + d->leaks[ASP_LEAK_INDIRECT].bytes;
			return 0;
		}
		/* Nothing in use at exit: nothing lost (the shim then runs
		 * no leak check), as compare counts it. */
		if (!d->count_mode && d->has_in_use_bytes && d->in_use_blocks == 0)
			return 0;
		snprintf(why, ASP_WHY_MAX, "the bytes leaked are unknown: no leak check in this dump (%s)",
			 d->count_mode ? "ALLOCSPY_MODE=count runs none" :
			 d->leak_check && !strcmp(d->leak_check, "no") ? "ALLOCSPY_LEAK_CHECK=no" :
			 "it did not run");
		return -1;
	case ASP_M_ERRORS:
		/* The heap errors of every context (a dump without them:
		 * none). The loader checked them. */
		f->n = d->heap_error_total;
		return 0;
	case ASP_M_STRDUP_CALLS:
	case ASP_M_STRDUP_BYTES:
		for (size_t i = 0; i < d->nfns; i++)
			if (d->fns[i].strdup_family)
				f->n += m == ASP_M_STRDUP_CALLS ? d->fns[i].calls : d->fns[i].bytes;
		return 0;
	case ASP_M_REF_OPS:
		f->n = d->refs.acquires + d->refs.releases;
		return 0;
	case ASP_M_TIME:
		f->s = d->wall_s;
		return 0;
	case ASP_M_USER_TIME:
		f->s = d->user_s;
		return 0;
	case ASP_M_SYS_TIME:
		f->s = d->sys_s;
		return 0;
	case ASP_M_COUNT:
		break;
	}
	snprintf(why, ASP_WHY_MAX, "no such figure");
	return -1;
}

/* digits into *out, at most ASP_DUMP_MAX; the first byte after them in
 * *end. 0, or -1 (no digit, or too large). */
static int digits(const char *s, uint64_t *out, const char **end)
{
	uint64_t v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (ASP_DUMP_MAX - (uint64_t)(*p - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	*out = v;
	*end = p;
	return p == s ? -1 : 0;
}

int asp_parse_size(const char *s, uint64_t *out)
{
	static const struct { const char *suffix; unsigned shift; } units[] = {
		{ "", 0 }, { "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 },
		{ "G", 30 }, { "GiB", 30 },
	};
	const char *end;
	uint64_t v;

	if (digits(s, &v, &end) < 0)
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof *units; i++) {
		if (strcmp(end, units[i].suffix) != 0)
			continue;
		if (v > ASP_DUMP_MAX >> units[i].shift)
			return -1;
		*out = v << units[i].shift;
		return 0;
	}
	return -1;
}

int asp_parse_count(const char *s, uint64_t *out)
{
	const char *end;

	return digits(s, out, &end) < 0 || *end ? -1 : 0;
}

/* --- compare --fail-if ------------------------------------------------------ */

int asp_gate_error(char *err, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, size, fmt, ap);
	va_end(ap);
	return -1;
}

/* A non-negative decimal number that is all of s ("5", "2.5"). */
static int decimal(const char *s, double *out)
{
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	*out = strtod(s, &end);
	return *end || errno || !isfinite(*out) ? -1 : 0;
}

static const char *threshold_help(enum asp_unit u)
{
	return u == ASP_U_BYTES ? "a percentage (+5%) or bytes (+1000, +64K, +1M, +1G)" :
	       u == ASP_U_SECONDS ? "a percentage (+5%) or seconds (+0.5)" :
	       "a percentage (+5%) or a count (+1000)";
}

/* One term, term[0..len), of expr into t. */
static int parse_term(asp_fail_term_t *t, const char *expr, const char *term, size_t len,
		      char *err, size_t size)
{
	char buf[256], *s = buf, *gt, *end, *th;
	int m;

	if (len >= sizeof buf)
		return asp_gate_error(err, size, "--fail-if: term too long: '%.40s...'", term);
	memcpy(buf, term, len);
	buf[len] = '\0';
	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	if (!*s)
		return asp_gate_error(err, size, "--fail-if: '%.100s': an empty term (terms are "
				      "separated by commas)", expr);
	snprintf(t->text, sizeof t->text, "%s", s);
	gt = strchr(s, '>');
	if (!gt)
		return asp_gate_error(err, size, "--fail-if: '%s': expected METRIC>+THRESHOLD, "
				      "as in peak>+5%%", t->text);
	for (end = gt; end > s && isspace((unsigned char)end[-1]); end--)
		;
	*end = '\0';
	for (m = 0; m < ASP_M_COUNT; m++)
		if (strcmp(s, asp_metrics[m].name) == 0)
			break;
	if (m == ASP_M_COUNT)
		return asp_gate_error(err, size, "--fail-if: '%s': unknown metric '%s'", t->text, s);
	t->metric = (enum asp_metric)m;
	for (th = gt + 1; isspace((unsigned char)*th); th++)
		;
	if (*th == '-')
		return asp_gate_error(err, size, "--fail-if: '%s': only a rise fails: a threshold "
				      "is +N or +N%%", t->text);
	if (*th != '+')
		return asp_gate_error(err, size, "--fail-if: '%s': the threshold needs a '+' (a "
				      "rise over the first dump): %s>+%s", t->text,
				      asp_metrics[m].name, th);
	th++;
	end = th + strlen(th);
	if (end > th && end[-1] == '%') {
		*--end = '\0';
		t->relative = true;
		if (decimal(th, &t->percent) == 0)
			return 0;
	} else if (asp_metrics[m].unit == ASP_U_SECONDS) {
		if (decimal(th, &t->amount.s) == 0)
			return 0;
	} else if ((asp_metrics[m].unit == ASP_U_BYTES ? asp_parse_size(th, &t->amount.n) :
		    asp_parse_count(th, &t->amount.n)) == 0) {
		return 0;
	}
	return asp_gate_error(err, size, "--fail-if: '%s': bad threshold '+%s%s': %s", t->text,
			      th, t->relative ? "%" : "", threshold_help(asp_metrics[m].unit));
}

int asp_fail_if_parse(asp_fail_if_t *f, const char *expr, char *err, size_t size)
{
	const char *p = expr;

	for (;;) {
		size_t len = strcspn(p, ",");

		if (f->n == f->cap) {
			size_t cap = f->cap * 2 + 8;
			asp_fail_term_t *v = realloc(f->v, cap * sizeof *v);

			if (!v)
				return -ENOMEM;
			f->v = v;
			f->cap = cap;
		}
		memset(&f->v[f->n], 0, sizeof f->v[f->n]);
		if (parse_term(&f->v[f->n], expr, p, len, err, size) < 0) {
			size_t used = strlen(err);

			snprintf(err + used, size - used, "; metrics: %s", asp_metric_names());
			return -1;
		}
		f->n++;
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

void asp_fail_if_free(asp_fail_if_t *f)
{
	free(f->v);
	memset(f, 0, sizeof *f);
}

static bool seconds(const asp_fail_term_t *t)
{
	return asp_metrics[t->metric].unit == ASP_U_SECONDS;
}

/* Whether b rose beyond t's threshold over a. From 0, any rise is more
 * than any percentage. */
static bool regressed(const asp_fail_term_t *t, asp_figure_t a, asp_figure_t b)
{
	if (seconds(t)) {
		if (!(b.s > a.s))
			return false;
		if (!t->relative)
			return b.s - a.s > t->amount.s;
		return a.s == 0 || (b.s - a.s) * 100 > t->percent * a.s;
	}
	if (b.n <= a.n)
		return false;
	if (!t->relative)
		return b.n - a.n > t->amount.n;
	return a.n == 0 || (long double)(b.n - a.n) * 100 > (long double)t->percent * a.n;
}

int asp_fail_if_eval(const asp_fail_if_t *f, const asp_dump_t *d, size_t n,
		     asp_regression_t **out, size_t *nout, size_t *bad, char *err, size_t size)
{
	asp_regression_t *r = NULL;
	size_t nr = 0;

	*out = NULL;
	*nout = 0;
	/* Every figure first: an unknown one is an error, whatever the rest. */
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < f->n; k++) {
			char why[ASP_WHY_MAX];
			asp_figure_t x;

			if (asp_dump_figure(&d[i], f->v[k].metric, &x, why) != 0) {
				*bad = i;
				return asp_gate_error(err, size, "--fail-if %s: %s",
						      f->v[k].text, why);
			}
		}
	}
	if (n > 1 && f->n) {
		r = calloc((n - 1) * f->n, sizeof *r);
		if (!r)
			return -ENOMEM;
	}
	for (size_t i = 1; i < n; i++) {
		for (size_t k = 0; k < f->n; k++) {
			char why[ASP_WHY_MAX];
			asp_figure_t a, b;

			asp_dump_figure(&d[0], f->v[k].metric, &a, why);
			asp_dump_figure(&d[i], f->v[k].metric, &b, why);
			if (regressed(&f->v[k], a, b))
				r[nr++] = (asp_regression_t){ k, i, a, b };
		}
	}
	*out = r;
	*nout = nr;
	return 0;
}

/* The change b - a ("+100") and its share of a ("+10.0%"; "" from 0). */
static void change(const asp_fail_term_t *t, asp_figure_t a, asp_figure_t b,
		   char *diff, size_t dsize, char *pct, size_t psize)
{
	char n[ASP_NUM_MAX];
	double share;

	if (seconds(t)) {
		/* as the two figures are shown, to the microsecond */
		snprintf(diff, dsize, "+%.6f", (double)(llround(b.s * 1e6) - llround(a.s * 1e6)) / 1e6);
		share = a.s ? 100 * (b.s - a.s) / a.s : -1;
	} else {
		snprintf(diff, dsize, "+%s", asp_fmt_count(n, b.n - a.n));
		share = a.n ? 100 * (double)(b.n - a.n) / (double)a.n : -1;
	}
	if (share < 0)
		snprintf(pct, psize, "from 0");
	else
		snprintf(pct, psize, "+%.1f%%", share);
}

void asp_fail_if_put(FILE *out, const asp_fail_if_t *f, const asp_dump_t *d,
		     const asp_regression_t *r, size_t nr)
{
	for (size_t i = 0; i < nr; i++) {
		const asp_fail_term_t *t = &f->v[r[i].term];
		char a[ASP_NUM_MAX + 8], b[ASP_NUM_MAX + 8], diff[ASP_NUM_MAX + 1], pct[32];
		const char *unit = asp_metrics[t->metric].unit == ASP_U_BYTES ? " bytes" :
				   seconds(t) ? " s" : "";

		if (seconds(t)) {
			/* the dump's times are to the microsecond */
			snprintf(a, sizeof a, "%.6f", r[i].first.s);
			snprintf(b, sizeof b, "%.6f", r[i].value.s);
		} else {
			asp_fmt_count(a, r[i].first.n);
			asp_fmt_count(b, r[i].value.n);
		}
		change(t, r[i].first, r[i].value, diff, sizeof diff, pct, sizeof pct);
		fputs("regression: ", out);
		asp_put_text(out, d[r[i].dump].file);
		fprintf(out, ": %s %s -> %s%s (%s, %s), over ", asp_metrics[t->metric].name,
			a, b, unit, diff, pct);
		asp_put_text(out, t->text);
		putc('\n', out);
	}
}

static json_t *figure_json(const asp_fail_term_t *t, asp_figure_t x)
{
	return seconds(t) ? json_real(x.s) : json_integer((json_int_t)x.n);
}

json_t *asp_fail_if_json(const asp_fail_if_t *f, const asp_dump_t *d,
			 const asp_regression_t *r, size_t nr)
{
	json_t *terms = json_array(), *regs = json_array();

	for (size_t k = 0; k < f->n; k++) {
		const asp_fail_term_t *t = &f->v[k];

		json_array_append_new(terms, json_pack("{s:o,s:s,s:s,s:o}",
			"term", asp_json_text(t->text),
			"metric", asp_metrics[t->metric].name,
			"threshold", t->relative ? "percent" : "amount",
			"value", t->relative ? json_real(t->percent) : figure_json(t, t->amount)));
	}
	for (size_t i = 0; i < nr; i++) {
		const asp_fail_term_t *t = &f->v[r[i].term];
		asp_figure_t a = r[i].first, b = r[i].value;
		double base = seconds(t) ? a.s : (double)a.n;
		double grew = seconds(t) ? b.s - a.s : (double)(b.n - a.n);

		json_array_append_new(regs, json_pack("{s:o,s:s,s:o,s:I,s:o,s:o,s:o}",
			"term", asp_json_text(t->text),
			"metric", asp_metrics[t->metric].name,
			"file", asp_json_text(d[r[i].dump].file),
			"dump", (json_int_t)r[i].dump,
			"first", figure_json(t, a),
			"value", figure_json(t, b),
			"percent", base ? json_real(100 * grew / base) : json_null()));
	}
	return json_pack("{s:o,s:o}", "terms", terms, "regressions", regs);
}
