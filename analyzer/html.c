/* html - the html command: one self-contained page of a dump, or of two
 * with what changed between them. The heap over time, the tables, the
 * heap errors and the leaks are static HTML and SVG that read without JavaScript; a small
 * embedded script draws the flame graphs and makes the rest interactive.
 * Nothing in the page is fetched from anywhere. */
#include "html.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "compare.h"
#include "errors.h"
#include "export.h"
#include "flame.h"
#include "fmt.h"
#include "html-assets.h"
#include "leaks.h"
#include "peak.h"
#include "profile.h"
#include "rss.h"
#include "summary.h"
#include "timeline.h"

/* The chart of the heap over time, in pixels. */
#define TL_W 760
#define TL_LEFT 86
#define TL_RIGHT 18
#define TL_TOP 14
#define TL_PLOT_H 230
#define TL_H (TL_TOP + TL_PLOT_H + 46)

/* Frames shown of each stack beside the peak. */
#define PEAK_FRAMES 12

/* The flame graphs, in the order the page offers them. */
static const struct {
	enum asp_export_weight w;
	const char *key, *title, *unit;
} flames[] = {
	{ ASP_WEIGHT_ALLOC_BYTES, "alloc_bytes", "bytes allocated", "bytes" },
	{ ASP_WEIGHT_ALLOCS, "allocs", "allocations", "allocations" },
	{ ASP_WEIGHT_TEMPORARY, "temporary", "temporary allocations", "allocations" },
	{ ASP_WEIGHT_INUSE_BYTES, "inuse_bytes", "bytes in use at the end", "bytes" },
	{ ASP_WEIGHT_PEAK_BYTES, "peak_bytes", "bytes at the peak", "bytes" },
};
#define NFLAMES (sizeof flames / sizeof *flames)

/* One dump's part of the page. */
struct part {
	const asp_dump_t *d;
	size_t i;		/* its index: ids are "d0-...", "d1-..." */
	asp_profile_t p;
	bool have_p;
	json_t *data;		/* what the script reads: flames, timeline */
};

/* --- small writers ------------------------------------------------------------ */

static void put_count(FILE *out, uint64_t v)
{
	char buf[ASP_NUM_MAX];

	fputs(asp_fmt_count(buf, v), out);
}

static uint64_t jget(const json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));

	return v > 0 ? (uint64_t)v : 0;
}

/* A number cell: the value with separators, sortable by data-v; "?" for
 * null (unknown), "-" when absent (does not apply). */
static void td_json(FILE *out, const json_t *v)
{
	if (json_is_integer(v)) {
		json_int_t n = json_integer_value(v);

		fprintf(out, "<td class=\"n\" data-v=\"%" PRId64 "\">", (int64_t)n);
		put_count(out, n > 0 ? (uint64_t)n : 0);
		fputs("</td>", out);
	} else if (json_is_real(v)) {
		fprintf(out, "<td class=\"n\" data-v=\"%.9g\">%.3f</td>",
			json_real_value(v), json_real_value(v));
	} else {
		fprintf(out, "<td class=\"n\">%s</td>", v ? "?" : "-");
	}
}

static void td_count(FILE *out, uint64_t v)
{
	fprintf(out, "<td class=\"n\" data-v=\"%" PRIu64 "\">", v);
	put_count(out, v);
	fputs("</td>", out);
}

/* "prog arg1 arg2", at most ASP_HTML_CMDLINE bytes of it. */
static void put_cmdline(FILE *out, const asp_dump_t *d)
{
	size_t left = ASP_HTML_CMDLINE;
	bool cut_off = false;

	for (size_t i = 0; i < d->argc && !cut_off; i++) {
		size_t len = strlen(d->argv[i]);
		char *cut;

		if (i)
			putc(' ', out);
		if (len <= left) {
			asp_put_xml(out, d->argv[i]);
			left -= len;
			continue;
		}
		cut = strndup(d->argv[i], left);
		if (cut)
			asp_put_xml(out, cut);
		free(cut);
		cut_off = true;
	}
	if (cut_off)
		fputs(" \u2026", out);
	if (d->argc == 0)
		asp_put_xml(out, d->exe);
}

/* Writes v (an object or array) as the text of a <script> element: JSON
 * with '<', '>' and '&' as \u escapes, which can appear only inside its
 * strings, so that no text of the dump can end the element. */
static int put_script_json(FILE *out, const json_t *v)
{
	char *s = json_dumps(v, JSON_COMPACT);

	if (!s)
		return -ENOMEM;
	for (const char *c = s; *c; c++) {
		if (*c == '<')
			fputs("\\u003c", out);
		else if (*c == '>')
			fputs("\\u003e", out);
		else if (*c == '&')
			fputs("\\u0026", out);
		else
			putc(*c, out);
	}
	free(s);
	return 0;
}

/* A frame as valgrind writes it: "fn (file:line)", "fn (in module)". */
static void put_frame_json(FILE *out, const json_t *f)
{
	const char *fn = json_string_value(json_object_get(f, "function"));
	const char *file = json_string_value(json_object_get(f, "file"));
	const char *mod = json_string_value(json_object_get(f, "module"));

	fputs("<span class=\"fn\">", out);
	asp_put_xml(out, fn ? fn : "???");
	fputs("</span>", out);
	if (file) {
		fputs(" <span class=\"loc\">(", out);
		asp_put_xml(out, file);
		fprintf(out, ":%" PRIu64 ")</span>", jget(f, "line"));
	} else if (mod) {
		fputs(" <span class=\"loc\">(in ", out);
		asp_put_xml(out, mod);
		fputs(")</span>", out);
	}
}

/* The frames of a stack as a list, at most max of them. */
static void put_frames(FILE *out, const json_t *frames, size_t max,
		       const char *first)
{
	size_t n = json_array_size(frames);

	fputs("<ol class=\"frames\">", out);
	if (first) {
		fputs("<li>at <span class=\"fn\">", out);
		asp_put_xml(out, first);
		fputs("</span></li>", out);
	}
	for (size_t k = 0; k < n && k < max; k++) {
		const json_t *f = json_array_get(frames, k);
		const char *addr = json_string_value(json_object_get(f, "address"));

		fprintf(out, "<li>%s ", k == 0 && !first ? "at" : "by");
		if (addr) {
			asp_put_xml(out, addr);
			fputs(": ", out);
		}
		put_frame_json(out, f);
		fputs("</li>", out);
	}
	if (n > max)
		fprintf(out, "<li class=\"more\">(%zu more frames)</li>", n - max);
	if (n == 0 && !first)
		fputs("<li class=\"more\">(no frames)</li>", out);
	fputs("</ol>", out);
}

/* --- the head of a dump's part ---------------------------------------------------- */

static const char *reason_text(const asp_dump_t *d)
{
	switch (d->reason) {
	case ASP_REASON_EXIT: return "at exit";
	case ASP_REASON_INTERVAL: return "during the run";
	case ASP_REASON_SIGNAL: return "on a fatal signal";
	}
	return "";
}

static void put_meta(FILE *out, const asp_dump_t *d)
{
	char a[ASP_NUM_MAX];

	fputs("<dl class=\"meta\"><dt>command</dt><dd><code>", out);
	put_cmdline(out, d);
	fputs("</code></dd><dt>program</dt><dd><code>", out);
	asp_put_xml(out, d->exe);
	fprintf(out, "</code>, pid %lld</dd><dt>dump</dt><dd><code>", (long long)d->pid);
	asp_put_xml(out, d->file);
	fprintf(out, "</code>, written %s", reason_text(d));
	if (d->has_dump_t)
		fprintf(out, " at %s s", asp_fmt_seconds(a, d->dump_t_s));
	if (d->reason == ASP_REASON_SIGNAL) {
		fprintf(out, " (signal %d, ", d->signal);
		asp_put_xml(out, d->signal_name);
		putc(')', out);
	}
	fprintf(out, "; %s mode%s</dd></dl>\n",
		d->count_mode ? "count" : "track",
		d->nstacks ? ", with stacks" : "");
}

static void put_exit_text(FILE *out, const asp_dump_t *d)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	if (!mem)
		return;
	asp_summary_exit_text(mem, d);
	if (fclose(mem) == 0 && text) {
		fputs("<pre class=\"exit\">", out);
		for (char *line = text, *nl; *line; line = nl + 1) {
			if (!(nl = strchr(line, '\n')))
				nl = line + strlen(line) - 1;
			else
				*nl = '\0';
			asp_put_xml(out, line);
			putc('\n', out);
		}
		fputs("</pre>\n", out);
	}
	free(text);
}

/* --- the heap over time ------------------------------------------------------------- */

/* The points drawn (asp_peak_points: the snapshots, and the peak when no
 * snapshot holds it): all, or when there are more than ASP_HTML_SNAPSHOTS,
 * the one holding most of each run of consecutive ones, and always the
 * peak. */
static size_t *chosen_points(const asp_point_t *pts, size_t total, size_t peak, size_t *n)
{
	size_t want = total < ASP_HTML_SNAPSHOTS ? total : ASP_HTML_SNAPSHOTS;
	size_t *v = malloc((want ? want : 1) * sizeof *v);

	if (!v)
		return NULL;
	for (size_t b = 0; b < want; b++) {
		size_t lo = b * total / want, hi = (b + 1) * total / want, best = lo;

		for (size_t i = lo; i < hi; i++) {
			if (i == peak) {
				best = i;
				break;
			}
			if (pts[i].in_use_bytes > pts[best].in_use_bytes)
				best = i;
		}
		v[b] = best;
	}
	*n = want;
	return v;
}

/* The figures of point s, as its hover title says them: a snapshot's, or
 * the peak's own as every view says it. */
static void point_title(FILE *out, const asp_dump_t *d, const asp_point_t *s)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], t[ASP_NUM_MAX], p[ASP_PEAK_TEXT_MAX];

	if (s->snapshot == SIZE_MAX) {
		fputs("<title>the peak: ", out);
		asp_put_xml(out, asp_peak_text(p, d));
		fputs("</title>", out);
		return;
	}
	fprintf(out, "<title>snapshot %zu of %zu%s: %s s, %s bytes in use in %s blocks, ",
		s->snapshot + 1, d->nsnapshots, s->peak ? " (the peak)" : "",
		asp_fmt_seconds(t, s->t_s), asp_fmt_count(a, s->in_use_bytes),
		asp_fmt_count(b, s->in_use_blocks));
	fprintf(out, "%s bytes allocated so far</title>", asp_fmt_count(a, s->bytes_allocated));
}

/* One of the page's two charts, by time or by bytes allocated, and over
 * it a band per point to hover over. */
static void chart_group(FILE *out, asp_chart_t *c)
{
	fprintf(out, "<g class=\"%s\">", c->by_alloc ? "tl-alloc" : "tl-time");
	asp_chart_svg(out, c);
	fputs("<g class=\"bands\">", out);
	for (size_t k = 0; k < c->n; k++) {
		double x = asp_chart_x(c, k);
		double lo = k ? (asp_chart_x(c, k - 1) + x) / 2 : TL_LEFT;
		double hi = k + 1 < c->n ? (x + asp_chart_x(c, k + 1)) / 2 : TL_W - TL_RIGHT;

		fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" "
			"data-k=\"%zu\" data-x=\"%.2f\" data-y=\"%.2f\">", lo, TL_TOP,
			hi > lo ? hi - lo : 0, TL_PLOT_H, k, x, asp_chart_y(c, k));
		if (!c->by_alloc)
			point_title(out, c->d, &c->pts[c->ix[k]]);
		fputs("</rect>", out);
	}
	fputs("</g></g>\n", out);
}

/* What the script needs to tell the drawn points' figures: "index" is a
 * snapshot's, -1 for the peak's own point, whose text is "peak_text". */
static json_t *timeline_data(const asp_chart_t *c)
{
	json_t *ix = json_array(), *t = json_array(), *u = json_array(),
	       *b = json_array(), *a = json_array(), *f = json_array();
	char text[ASP_PEAK_TEXT_MAX];

	for (size_t k = 0; k < c->n; k++) {
		const asp_point_t *s = &c->pts[c->ix[k]];

		json_array_append_new(ix, json_integer(s->snapshot == SIZE_MAX ? -1 :
						       (json_int_t)s->snapshot));
		json_array_append_new(t, json_real(s->t_s));
		json_array_append_new(u, json_integer((json_int_t)s->in_use_bytes));
		json_array_append_new(b, json_integer((json_int_t)s->in_use_blocks));
		json_array_append_new(a, json_integer((json_int_t)s->bytes_allocated));
		json_array_append_new(f, json_integer((json_int_t)s->bytes_freed));
	}
	return json_pack("{s:I,s:I,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
			 "count", (json_int_t)c->d->nsnapshots,
			 "peak", (json_int_t)c->peak, "index", ix, "t_s", t,
			 "in_use_bytes", u, "in_use_blocks", b,
			 "bytes_allocated", a, "bytes_freed", f,
			 "peak_text", asp_json_text(asp_peak_text(text, c->d)));
}

/* Beside the chart: the stacks that held the peak, from the timeline's
 * own account of them. */
static void peak_stacks(FILE *out, const asp_dump_t *d, const json_t *tl)
{
	const json_t *peak = json_object_get(tl, "peak");
	const json_t *stacks = json_object_get(peak, "stacks");
	size_t n = json_array_size(stacks) + (size_t)jget(peak, "more_stacks");
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], text[ASP_PEAK_TEXT_MAX];

	fputs("<div class=\"tl-stacks\"><h4>Peak: ", out);
	asp_put_xml(out, asp_peak_text(text, d));
	if (*asp_peak_range_text(text, d)) {
		putc(' ', out);
		asp_put_xml(out, text);
	}
	fputs("</h4><p class=\"note\">Stacks at ", out);
	asp_put_xml(out, asp_peak_detail_text(text, d));
	fputs(":</p>", out);
	if (n == 0)
		fputs("<p class=\"note\">The dump does not say which stacks held it.</p>", out);
	fputs("<ol class=\"stacks\">", out);
	for (size_t i = 0; i < n && i < ASP_HTML_PEAK_STACKS; i++) {
		const json_t *s = json_array_get(stacks, i);

		fprintf(out, "<li><span class=\"pct\">%.1f%%</span> %s bytes in %s blocks",
			json_real_value(json_object_get(s, "percent")),
			asp_fmt_count(a, jget(s, "bytes")), asp_fmt_count(b, jget(s, "blocks")));
		put_frames(out, json_object_get(s, "frames"), PEAK_FRAMES, NULL);
		fputs("</li>", out);
	}
	fputs("</ol>", out);
	if (n > ASP_HTML_PEAK_STACKS)
		fprintf(out, "<p class=\"note\">... and %s more stacks; the %d largest are listed.</p>",
			asp_fmt_count(a, n - ASP_HTML_PEAK_STACKS), ASP_HTML_PEAK_STACKS);
	fputs("</div>", out);
}

static int put_timeline(FILE *out, struct part *pt)
{
	const asp_dump_t *d = pt->d;
	asp_chart_t c = {
		.kind = ASP_CHART_PAGE, .width = TL_W, .left = TL_LEFT, .right = TL_RIGHT,
		.top = TL_TOP, .plot_h = TL_PLOT_H, .d = d,
	};
	asp_point_t *pts;
	json_t *tl;
	size_t *ix, peak = 0;

	fprintf(out, "<section id=\"d%zu-timeline\"><h3>The heap over time</h3>\n", pt->i);
	if (d->nsnapshots == 0) {
		fprintf(out, "<p class=\"note\">No snapshots in this dump (%s).</p></section>\n",
			d->count_mode ? "ALLOCSPY_MODE=count takes none" :
			"it was written without them");
		return 0;
	}
	if (!(pts = asp_peak_points(d, &c.npts, &peak)))
		return -ENOMEM;
	c.pts = pts;
	if (!(ix = chosen_points(pts, c.npts, peak, &c.n))) {
		free(pts);
		return -ENOMEM;
	}
	c.ix = ix;
	for (size_t k = 0; k < c.n; k++)
		if (ix[k] == peak)
			c.peak = k;
	tl = asp_timeline_json_top(&pt->p, ASP_HTML_PEAK_STACKS);
	if (!tl || json_object_set_new(pt->data, "timeline", timeline_data(&c)) < 0) {
		json_decref(tl);
		free(ix);
		free(pts);
		return -ENOMEM;
	}
	fputs("<div class=\"tl-wrap\"><div class=\"tl-chart\">", out);
	fprintf(out, "<div class=\"controls js-only\">x axis: "
		"<button type=\"button\" class=\"tl-mode on\" data-mode=\"time\">time</button>"
		"<button type=\"button\" class=\"tl-mode\" data-mode=\"alloc\">bytes allocated</button>"
		"<span class=\"tl-info\" aria-live=\"polite\"></span></div>\n");
	fprintf(out, "<svg class=\"timeline\" id=\"d%zu-tl\" xmlns=\"http://www.w3.org/2000/svg\" "
		"viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
		"aria-label=\"bytes in use over time\" data-top=\"%d\" data-bottom=\"%d\">\n",
		pt->i, TL_W, TL_H, TL_W, TL_H, TL_TOP, TL_TOP + TL_PLOT_H);
	chart_group(out, &c);
	c.by_alloc = true;
	chart_group(out, &c);
	fputs("</svg>", out);
	fprintf(out, "<p class=\"note\">%zu snapshots", d->nsnapshots);
	if (c.n < c.npts)
		fprintf(out, "; %zu are drawn, each the largest of a run of consecutive "
			"ones (the page draws at most %d)", c.n, ASP_HTML_SNAPSHOTS);
	fputs(". The peak is marked in red", out);
	if (pts[peak].snapshot == SIZE_MAX)
		fputs(", a point of its own: no snapshot holds it", out);
	fputs(".</p></div>\n", out);
	peak_stacks(out, d, tl);
	fputs("</div></section>\n", out);
	json_decref(tl);
	free(ix);
	free(pts);
	return 0;
}

/* --- flame graphs ---------------------------------------------------------------------- */

static int put_flames(FILE *out, struct part *pt)
{
	asp_flame_strings_t *strings = asp_flame_strings_new();
	json_t *list = json_array();
	size_t nthreaded = 0;
	int rc = strings && list ? 0 : -ENOMEM;

	fprintf(out, "<section id=\"d%zu-flame\"><h3>Flame graphs</h3>\n", pt->i);
	/* Each graph, then the same split by thread when the dump can. */
	for (size_t k = 0; rc == 0 && k < 2 * NFLAMES; k++) {
		bool by_thread = k % 2;
		char title[ASP_PEAK_TEXT_MAX + 16], text[ASP_PEAK_TEXT_MAX];
		asp_flame_t *f = NULL;
		const char *source = "thread_stacks";
		json_t *j;

		rc = by_thread ? asp_flame_build_threads(&f, &pt->p, flames[k / 2].w) :
		     asp_flame_build(&f, &pt->p, flames[k / 2].w, &source);
		if (rc < 0 || !f)
			continue;
		j = asp_flame_json(f, strings);
		asp_flame_free(f);
		nthreaded += by_thread;
		/* The stacks at the peak come from the peak snapshot: named so
		 * when it holds less than the peak. */
		if (flames[k / 2].w == ASP_WEIGHT_PEAK_BYTES && !asp_peak_snapshot_exact(pt->d))
			snprintf(title, sizeof title, "bytes at %s",
				 asp_peak_detail_text(text, pt->d));
		else
			snprintf(title, sizeof title, "%s", flames[k / 2].title);
		if (!j || json_object_set_new(j, "key", json_string(flames[k / 2].key)) < 0 ||
		    json_object_set_new(j, "title", json_string(title)) < 0 ||
		    json_object_set_new(j, "unit", json_string(flames[k / 2].unit)) < 0 ||
		    json_object_set_new(j, "source", json_string(source)) < 0 ||
		    json_object_set_new(j, "by_thread", json_boolean(by_thread)) < 0 ||
		    json_array_append_new(list, j) < 0)
			rc = -ENOMEM;
	}
	if (rc == 0 && (json_object_set_new(pt->data, "flames", list) < 0 ||
			json_object_set_new(pt->data, "strings",
					    asp_flame_strings_json(strings)) < 0))
		rc = -ENOMEM;
	else if (rc < 0)
		json_decref(list);
	asp_flame_strings_free(strings);
	if (rc < 0)
		return rc;
	if (json_array_size(list) == 0) {
		fputs("<p class=\"note\">No stacks in this dump: run with "
		      "ALLOCSPY_BACKTRACE=2 or more for flame graphs.</p></section>\n", out);
		return 0;
	}
	if (pt->d->sampled) {
		char n[ASP_NUM_MAX];

		fprintf(out, "<p class=\"note\">Sampled: one stack per %s bytes allocated on "
			"average (ALLOCSPY_SAMPLE); the graphs are estimates.</p>\n",
			asp_fmt_count(n, pt->d->sample_bytes));
	}
	fprintf(out, "<div class=\"flame\" data-dump=\"%zu\">"
		"<div class=\"controls js-only\"><label>graph <select class=\"fg-weight\">", pt->i);
	for (size_t k = 0; k < json_array_size(list); k++) {
		const json_t *j = json_array_get(list, k);

		if (!json_is_true(json_object_get(j, "by_thread")))
			fprintf(out, "<option value=\"%s\">%s</option>",
				json_string_value(json_object_get(j, "key")),
				json_string_value(json_object_get(j, "title")));
	}
	fputs("</select></label> ", out);
	if (nthreaded)
		fputs("<label><input type=\"checkbox\" class=\"fg-threads\"> by thread</label> ", out);
	fputs("<label>search <input type=\"search\" class=\"fg-search\" "
	      "placeholder=\"function or file\" spellcheck=\"false\"></label> "
	      "<button type=\"button\" class=\"fg-reset\">reset zoom</button> "
	      "<span class=\"fg-match\" aria-live=\"polite\"></span></div>\n"
	      "<div class=\"fg-box\"></div><div class=\"fg-info\" aria-live=\"polite\">"
	      "&#160;</div>\n", out);
	fprintf(out, "<p class=\"note\">Callers above callees, the widest first; click a "
		"frame to zoom into it, and the root (or reset zoom) to come back. "
		"A frame below 0.1%% of the graph's total is merged with its small "
		"siblings into one frame named <q>%s</q>, and what lies below it is "
		"left out: this keeps a dump of 100,000 stacks to a page of a few "
		"thousand frames. <span class=\"fg-thin\"></span></p>\n"
		"<noscript><p class=\"note\">The flame graphs are drawn by the page's "
		"script: allow JavaScript to see them.</p></noscript></div></section>\n",
		ASP_FLAME_MERGED);
	return 0;
}

/* --- heap errors --------------------------------------------------------------------------- */

/* One context as the errors command prints it: the heading, then, opened,
 * the call's frames, what the address is and the block's frames. */
static void put_error(FILE *out, const json_t *e)
{
	static const char *const label[ASP_HERR_NKINDS] = {
		"invalid free", "mismatched free", "fishy value", "invalid read", "invalid write",
		"overwritten"
	};
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *what = json_string_value(json_object_get(e, "description"));
	const json_t *b = json_object_get(e, "block");
	const json_t *freed = json_object_get(b, "free_frames");
	uint64_t count = jget(e, "count");
	char a[ASP_NUM_MAX];
	int k = 0;

	while (k < ASP_HERR_NKINDS - 1 && (!kind || strcmp(kind, asp_herr_kind_name[k]) != 0))
		k++;
	fprintf(out, "<details class=\"err k-%s\"><summary><span class=\"kind\">%s</span> ",
		asp_herr_kind_name[k], label[k]);
	asp_put_xml(out, json_string_value(json_object_get(e, "heading")));
	if (count > 1)
		fprintf(out, " <span class=\"count\">(%s errors)</span>", asp_fmt_count(a, count));
	fputs("</summary>", out);
	put_frames(out, json_object_get(e, "frames"), ASP_HTML_FRAMES, NULL);
	if (what) {
		fputs("<p class=\"addr\">", out);
		asp_put_xml(out, what);
		fputs("</p>", out);
	}
	if (freed) {
		put_frames(out, freed, ASP_HTML_FRAMES, NULL);
		fputs("<p class=\"addr\">Block was alloc'd at</p>", out);
	}
	if (b)
		put_frames(out, json_object_get(b, "alloc_frames"), ASP_HTML_FRAMES, NULL);
	fputs("</details>\n", out);
}

/* ALLOCSPY_GUARD's pool, when the run had one: how many blocks it
 * guarded, the ones whose overflows and uses after free fault. */
static void put_guard(FILE *out, const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], c[ASP_NUM_MAX], e[ASP_NUM_MAX];

	if (!d->has_guard)
		return;
	fprintf(out, "<p class=\"note guard\">Guarded blocks (<code>ALLOCSPY_GUARD=%s</code>): "
		"%s, %s of them live, in a pool of %s slots.</p>\n",
		asp_fmt_count(a, d->guard_mean), asp_fmt_count(b, d->guard_guarded),
		asp_fmt_count(c, d->guard_live), asp_fmt_count(e, d->guard_slots));
}

static int put_errors(FILE *out, struct part *pt)
{
	const asp_dump_t *d = pt->d;
	const char *why = asp_errors_missing(d);
	char line[128], a[ASP_NUM_MAX];
	json_t *errs;

	fprintf(out, "<section id=\"d%zu-errors\"><h3>Heap errors</h3>\n", pt->i);
	if (why) {
		fputs("<p class=\"note\">No heap errors in this dump (", out);
		asp_put_xml(out, why);
		fputs(").</p>\n", out);
		put_guard(out, d);
		fputs("</section>\n", out);
		return 0;
	}
	asp_error_summary_line(line, sizeof line, d);
	if (d->nheap_errors == 0) {
		fprintf(out, "<p class=\"ok\">No heap errors.</p>\n<p class=\"err-summary\">"
			"<code>%s</code></p>\n", line);
		put_guard(out, d);
		fputs("</section>\n", out);
		return 0;
	}
	errs = asp_errors_json_with(d, pt->p.sym, false, ASP_HTML_ERRORS);
	if (!errs)
		return -ENOMEM;
	fprintf(out, "<p class=\"note\">%s contexts of heap errors, as the program printed "
		"them at exit, in the order first seen; those the shim suppressed are left out",
		asp_fmt_count(a, d->nheap_errors));
	if (json_array_size(errs) < d->nheap_errors)
		fprintf(out, "; the first %zu are listed", json_array_size(errs));
	fputs(". Open one to see its stacks.</p>\n<div class=\"controls js-only\">"
	      "<button type=\"button\" class=\"rec-open\">open all</button>"
	      "<button type=\"button\" class=\"rec-close\">close all</button></div>\n"
	      "<div class=\"records\">\n", out);
	for (size_t i = 0; i < json_array_size(errs); i++)
		put_error(out, json_array_get(errs, i));
	fprintf(out, "</div>\n<p class=\"err-summary\"><code>%s</code></p>\n", line);
	put_guard(out, d);
	fputs("</section>\n", out);
	json_decref(errs);
	return 0;
}

/* --- leaks --------------------------------------------------------------------------------- */

static void leak_summary_table(FILE *out, const asp_dump_t *d)
{
	fputs("<table class=\"leak-summary\"><thead><tr><th>LEAK SUMMARY</th>"
	      "<th class=\"n\">bytes</th><th class=\"n\">blocks</th></tr></thead><tbody>", out);
	for (int k = 0; k < ASP_LEAK_NKINDS; k++) {
		fprintf(out, "<tr class=\"k-%s\"><td>%s</td>", asp_leak_kind_name[k],
			asp_leak_phrase[k]);
		td_count(out, d->leaks[k].bytes);
		td_count(out, d->leaks[k].blocks);
		fputs("</tr>", out);
	}
	fputs("</tbody></table>\n", out);
}

/* Records by their total bytes, largest first; ties in the dump's order. */
static int by_total_desc(const void *pa, const void *pb, void *arg)
{
	const asp_record_t *r = arg;
	size_t i = *(const size_t *)pa, j = *(const size_t *)pb;
	uint64_t a = asp_add_sat(r[i].bytes, r[i].indirect_bytes);
	uint64_t b = asp_add_sat(r[j].bytes, r[j].indirect_bytes);

	if (a != b)
		return a > b ? -1 : 1;
	return i < j ? -1 : 1;
}

static void put_record(FILE *out, const json_t *r)
{
	const char *kind = json_string_value(json_object_get(r, "kind"));
	const char *phrase = "lost";
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], c[ASP_NUM_MAX];

	for (int k = 0; k < ASP_LEAK_SUPPRESSED; k++)
		if (kind && strcmp(kind, asp_leak_kind_name[k]) == 0)
			phrase = asp_leak_phrase[k];
	fprintf(out, "<details class=\"rec k-%s\"><summary><span class=\"kind\">%s</span> ",
		kind ? kind : "", kind ? kind : "");
	if (jget(r, "indirect_bytes"))
		fprintf(out, "%s (%s direct, %s indirect) bytes",
			asp_fmt_count(a, jget(r, "total_bytes")),
			asp_fmt_count(b, jget(r, "bytes")),
			asp_fmt_count(c, jget(r, "indirect_bytes")));
	else
		fprintf(out, "%s bytes", asp_fmt_count(a, jget(r, "bytes")));
	fprintf(out, " in %s blocks are %s in loss record %s",
		asp_fmt_count(b, jget(r, "blocks")), phrase,
		asp_fmt_count(c, jget(r, "record")));
	fprintf(out, " of %s</summary>", asp_fmt_count(a, jget(r, "of")));
	put_frames(out, json_object_get(r, "frames"), ASP_HTML_FRAMES,
		   json_string_value(json_object_get(r, "alloc_function")));
	fputs("</details>\n", out);
}

static int put_leaks(FILE *out, struct part *pt)
{
	const asp_dump_t *d = pt->d;
	unsigned all = ASP_KIND_BIT(ASP_LEAK_DEFINITE) | ASP_KIND_BIT(ASP_LEAK_INDIRECT) |
		       ASP_KIND_BIT(ASP_LEAK_POSSIBLE) | ASP_KIND_BIT(ASP_LEAK_REACHABLE);
	json_t *lj, *recs;
	size_t n, shown, *ix;
	bool *chosen;

	fprintf(out, "<section id=\"d%zu-leaks\"><h3>Leaks</h3>\n", pt->i);
	if (!asp_summary_has_leak_part(d)) {
		fprintf(out, "<p class=\"note\">No leak check in this dump (%s).</p></section>\n",
			d->count_mode ? "ALLOCSPY_MODE=count runs none" :
			d->leak_check && !strcmp(d->leak_check, "no") ?
			"ALLOCSPY_LEAK_CHECK=no" : "it did not run");
		return 0;
	}
	if (d->in_use_blocks == 0) {
		fputs("<p class=\"ok\">All heap blocks were freed -- no leaks are possible.</p>"
		      "</section>\n", out);
		return 0;
	}
	leak_summary_table(out, d);
	if (!d->has_records) {
		fputs("<p class=\"note\">The dump has no loss records.</p></section>\n", out);
		return 0;
	}
	/* The largest records of every kind the shim did not suppress, in
	 * the dump's order: only those are symbolized. */
	ix = malloc((d->nrecords ? d->nrecords : 1) * sizeof *ix);
	chosen = calloc(d->nrecords ? d->nrecords : 1, sizeof *chosen);
	if (!ix || !chosen) {
		free(ix);
		free(chosen);
		return -ENOMEM;
	}
	n = 0;
	for (size_t i = 0; i < d->nrecords; i++)
		if (!d->records[i].suppressed && (all & ASP_KIND_BIT(d->records[i].kind)))
			ix[n++] = i;
	shown = n < ASP_HTML_RECORDS ? n : ASP_HTML_RECORDS;
	if (shown < n)
		qsort_r(ix, n, sizeof *ix, by_total_desc, d->records);
	for (size_t i = 0; i < shown; i++)
		chosen[ix[i]] = true;
	free(ix);
	lj = asp_leaks_json_chosen(d, pt->p.sym, chosen);
	free(chosen);
	if (!lj)
		return -ENOMEM;
	recs = json_object_get(lj, "loss_records");
	fprintf(out, "<p class=\"note\">%zu loss records of every kind, in the dump's "
		"order (by size); those the shim suppressed are left out", n);
	if (shown < n)
		fprintf(out, "; the %zu largest are listed (the page lists at most %d)",
			shown, ASP_HTML_RECORDS);
	fputs(". Open one to see its stack.</p>\n<div class=\"controls js-only\">"
	      "<button type=\"button\" class=\"rec-open\">open all</button>"
	      "<button type=\"button\" class=\"rec-close\">close all</button></div>\n", out);
	fputs("<div class=\"records\">\n", out);
	for (size_t i = 0; i < json_array_size(recs); i++)
		put_record(out, json_array_get(recs, i));
	fputs("</div></section>\n", out);
	json_decref(lj);
	return 0;
}

/* --- the summary tables ------------------------------------------------------------------- */

static void functions_table(FILE *out, const json_t *fns, bool temporary)
{
	fputs("<h4>Functions</h4><table class=\"sortable\"><thead><tr><th>function</th>"
	      "<th class=\"n\">calls</th><th class=\"n\">bytes</th><th class=\"n\">failed</th>"
	      "<th class=\"n\">null</th>", out);
	if (temporary)
		fputs("<th class=\"n\">temporary</th>", out);
	fputs("</tr></thead><tbody>", out);
	for (size_t i = 0; i < json_array_size(fns); i++) {
		const json_t *f = json_array_get(fns, i);

		fputs("<tr><td><code>", out);
		asp_put_xml(out, json_string_value(json_object_get(f, "name")));
		fputs("</code></td>", out);
		td_json(out, json_object_get(f, "calls"));
		td_json(out, json_object_get(f, "bytes"));
		td_json(out, json_object_get(f, "failed"));
		td_json(out, json_object_get(f, "null"));
		if (temporary)
			td_json(out, json_object_get(f, "temporary"));
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

static void threads_table(FILE *out, const json_t *threads, uint64_t omitted)
{
	size_t n = json_array_size(threads);
	uint64_t more = omitted + (n > ASP_HTML_THREADS ? n - ASP_HTML_THREADS : 0);

	fputs("<h4>Threads</h4><table class=\"sortable\"><thead><tr><th class=\"n\">tid</th>"
	      "<th>name</th><th class=\"n\">allocs</th><th class=\"n\">frees</th>"
	      "<th class=\"n\">bytes allocated</th><th class=\"n\">ref acquires</th>"
	      "<th class=\"n\">ref releases</th></tr></thead><tbody>", out);
	for (size_t i = 0; i < n && i < ASP_HTML_THREADS; i++) {
		const json_t *t = json_array_get(threads, i);
		const char *name = json_string_value(json_object_get(t, "name"));

		fprintf(out, "<tr><td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>",
			jget(t, "tid"), jget(t, "tid"));
		fputs("<td>", out);
		asp_put_xml(out, name ? name : "");
		fputs("</td>", out);
		td_json(out, json_object_get(t, "allocs"));
		td_json(out, json_object_get(t, "frees"));
		td_json(out, json_object_get(t, "bytes_allocated"));
		td_json(out, json_object_get(t, "ref_acquires"));
		td_json(out, json_object_get(t, "ref_releases"));
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
	if (more) {
		char a[ASP_NUM_MAX];

		fprintf(out, "<p class=\"note\">%s more threads: the %d that allocated most "
			"are listed.</p>\n", asp_fmt_count(a, more), ASP_HTML_THREADS);
	}
}

static void sizes_table(FILE *out, const json_t *hist)
{
	uint64_t max = 0;

	for (size_t i = 0; i < json_array_size(hist); i++)
		if (jget(json_array_get(hist, i), "count") > max)
			max = jget(json_array_get(hist, i), "count");
	fputs("<h4>Sizes</h4><table><thead><tr><th class=\"n\">bytes</th>"
	      "<th class=\"n\">blocks</th><th></th></tr></thead><tbody>", out);
	for (size_t i = 0; i < json_array_size(hist); i++) {
		const json_t *b = json_array_get(hist, i);
		json_int_t hi = json_integer_value(json_object_get(b, "max"));
		uint64_t lo = jget(b, "min"), count = jget(b, "count");

		fputs("<tr><td class=\"n\">", out);
		put_count(out, lo);
		if (hi < 0) {
			fputs(" and more", out);
		} else if ((uint64_t)hi != lo) {
			fputs(" \u2013 ", out);
			put_count(out, (uint64_t)hi);
		}
		fputs("</td>", out);
		td_count(out, count);
		fprintf(out, "<td><svg class=\"bar\" width=\"200\" height=\"10\"><rect "
			"width=\"%.1f\" height=\"10\"/></svg></td></tr>\n",
			max ? 200.0 * (double)count / (double)max : 0.0);
	}
	if (json_array_size(hist) == 0)
		fputs("<tr><td colspan=\"3\">(no blocks)</td></tr>", out);
	fputs("</tbody></table>\n", out);
}

static void figures_table(FILE *out, const asp_dump_t *d, const json_t *sum)
{
	const json_t *refs = json_object_get(sum, "refs");
	const json_t *time = json_object_get(sum, "time");
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], text[ASP_PEAK_TEXT_MAX];

	fputs("<h4>Peak, references and time</h4><table><tbody>", out);
	fputs("<tr><td>peak</td>", out);
	fputs("<td class=\"n\">", out);
	asp_put_xml(out, asp_peak_text(text, d));
	fputs("</td></tr>", out);
	if (d->has_temporary)
		fprintf(out, "<tr><td>temporary allocations</td><td class=\"n\">%s of %s "
			"(%.1f%%)</td></tr>", asp_fmt_count(a, d->temporary),
			asp_fmt_count(b, d->allocs),
			d->allocs ? 100.0 * (double)d->temporary / (double)d->allocs : 0.0);
	static const char *const ref_rows[][2] = {
		{ "acquires", "ref acquires" }, { "releases", "ref releases" },
		{ "objects_created", "objects created" },
		{ "objects_destroyed", "objects destroyed" },
		{ "cross_thread", "cross-thread ref operations" },
	};
	for (size_t i = 0; i < sizeof ref_rows / sizeof *ref_rows; i++) {
		fprintf(out, "<tr><td>%s</td>", ref_rows[i][1]);
		td_json(out, json_object_get(refs, ref_rows[i][0]));
		fputs("</tr>", out);
	}
	fprintf(out, "<tr><td>time (wall, user, sys)</td><td class=\"n\">%.3f s, ",
		json_real_value(json_object_get(time, "wall_s")));
	fprintf(out, "%.3f s, %.3f s</td></tr></tbody></table>\n",
		json_real_value(json_object_get(time, "user_s")),
		json_real_value(json_object_get(time, "sys_s")));
}

static int put_tables(FILE *out, struct part *pt)
{
	json_t *sum = asp_summary_json(pt->d);

	if (!sum)
		return -ENOMEM;
	fprintf(out, "<section id=\"d%zu-tables\"><h3>Tables</h3>\n<div class=\"tables\">"
		"<div>", pt->i);
	functions_table(out, json_object_get(sum, "functions"), pt->d->has_temporary);
	figures_table(out, pt->d, sum);
	fputs("</div><div>", out);
	sizes_table(out, json_object_get(sum, "histogram"));
	fputs("</div></div>\n", out);
	threads_table(out, json_object_get(sum, "threads"), jget(sum, "threads_omitted"));
	fputs("</section>\n", out);
	json_decref(sum);
	return 0;
}

/* The resident memory at exit, in rows that add up to it: a bar for each
 * row's share, the taken-off rows (negative) without one. */
static void put_rss(FILE *out, const struct part *pt)
{
	const asp_dump_t *d = pt->d;
	asp_rss_row_t rows[ASP_RSS_ROWS];
	char a[ASP_NUM_MAX];

	fprintf(out, "<section id=\"d%zu-rss\"><h3>Resident memory at exit</h3>\n", pt->i);
	if (!d->has_rss) {
		fprintf(out, "<p class=\"note\">No resident memory in this dump (%s).</p></section>\n",
			d->count_mode ? "ALLOCSPY_MODE=count measures none" :
			d->reason != ASP_REASON_EXIT ? "it is measured at exit only" :
			"it was written without it");
		return;
	}
	size_t n = asp_rss_rows(d, rows);
	uint64_t rss = d->rss.rss_bytes;

	fprintf(out, "<p>%s bytes resident (the kernel's high-water mark: ",
		asp_fmt_count(a, rss));
	fprintf(out, "%s bytes), split by what holds them:</p>\n",
		asp_fmt_count(a, d->rss.peak_rss_bytes));
	fputs("<table class=\"rss\"><thead><tr><th>memory</th><th class=\"n\">bytes</th>"
	      "<th class=\"n\">share</th><th></th></tr></thead><tbody>", out);
	for (size_t i = 0; i < n; i++) {
		double share = rss ? 100.0 * (double)rows[i].bytes / (double)rss : 0.0;

		fprintf(out, "<tr><td>%s</td><td class=\"n\" data-v=\"%" PRId64 "\">%s",
			rows[i].label, rows[i].bytes, rows[i].bytes < 0 ? "\u2212" : "");
		put_count(out, rows[i].bytes < 0 ? (uint64_t)0 - (uint64_t)rows[i].bytes :
			  (uint64_t)rows[i].bytes);
		fprintf(out, "</td><td class=\"n\">%.1f%%</td><td><svg class=\"bar\" width=\"200\" "
			"height=\"10\"><rect width=\"%.1f\" height=\"10\"/></svg></td></tr>\n", share,
			share > 0 ? (share < 100 ? 2.0 * share : 200.0) : 0.0);
	}
	fputs("</tbody></table></section>\n", out);
}

/* --- two dumps ------------------------------------------------------------------------------- */

static void put_ratio(FILE *out, const json_t *a, const json_t *b)
{
	char buf[ASP_NUM_MAX];
	double x, y;

	if (!json_is_number(a) || !json_is_number(b)) {
		fputs("<td class=\"n\">-</td>", out);
		return;
	}
	x = json_number_value(a);
	y = json_number_value(b);
	fprintf(out, "<td class=\"n ratio%s\">%s</td>", y > x ? " up" : y < x ? " down" : "",
		asp_fmt_ratio(buf, x, y));
}

static void compare_table(FILE *out, const json_t *cj)
{
	const json_t *dumps = json_object_get(cj, "dumps");
	const json_t *rows = json_object_get(cj, "rows");

	fputs("<table class=\"compare\"><thead><tr><th></th>", out);
	for (size_t i = 0; i < 2; i++) {
		fputs("<th class=\"n\">", out);
		asp_put_xml(out, json_string_value(json_object_get(json_array_get(dumps, i), "label")));
		fputs("</th>", out);
	}
	fputs("<th class=\"n\">ratio</th></tr></thead><tbody>", out);
	for (size_t r = 0; r < json_array_size(rows); r++) {
		const json_t *row = json_array_get(rows, r);
		const json_t *v = json_object_get(row, "values");

		fputs("<tr><td>", out);
		asp_put_xml(out, json_string_value(json_object_get(row, "name")));
		fputs("</td>", out);
		for (size_t i = 0; i < 2; i++)
			td_json(out, json_array_get(v, i));
		put_ratio(out, json_array_get(v, 0), json_array_get(v, 1));
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

/* The change of a site between the dumps in metric key: B - A, or 0 when
 * either is unknown. */
static double site_change(const json_t *site, const char *key)
{
	const json_t *v = json_object_get(json_object_get(site, "values"), key);
	const json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);

	if (!json_is_integer(a) || !json_is_integer(b))
		return 0;
	return (double)json_integer_value(b) - (double)json_integer_value(a);
}

static void put_delta(FILE *out, const json_t *site, const char *key)
{
	const json_t *v = json_object_get(json_object_get(site, "values"), key);
	const json_t *a = json_array_get(v, 0), *b = json_array_get(v, 1);
	double c = site_change(site, key);
	char buf[ASP_NUM_MAX];

	td_json(out, a);
	td_json(out, b);
	if (!json_is_integer(a) || !json_is_integer(b)) {
		fputs("<td class=\"n\">?</td>", out);
		return;
	}
	fprintf(out, "<td class=\"n delta%s\" data-v=\"%.0f\">%s%s</td>",
		c > 0 ? " up" : c < 0 ? " down" : "", c, c > 0 ? "+" : c < 0 ? "\u2212" : "",
		asp_fmt_count(buf, (uint64_t)(c < 0 ? -c : c)));
}

/* Whether the site grew: by its bytes, else bytes in use, else calls. */
static int site_sign(const json_t *site)
{
	static const char *const keys[] = { "bytes", "in_use_bytes", "calls" };

	for (size_t i = 0; i < 3; i++) {
		double c = site_change(site, keys[i]);

		if (c)
			return c > 0 ? 1 : -1;
	}
	return 0;
}

static void sites_table(FILE *out, const json_t *sites, int sign, const char *title)
{
	size_t n = 0;

	for (size_t k = 0; k < json_array_size(sites); k++)
		n += site_sign(json_array_get(sites, k)) == sign;
	fprintf(out, "<h4>%s (%zu)</h4>\n", title, n);
	if (n == 0)
		return;
	fputs("<table class=\"sortable sites\"><thead><tr><th>site</th>"
	      "<th class=\"n\">bytes A</th><th class=\"n\">bytes B</th><th class=\"n\">change</th>"
	      "<th class=\"n\">in use A</th><th class=\"n\">in use B</th><th class=\"n\">change</th>"
	      "<th class=\"n\">calls A</th><th class=\"n\">calls B</th><th class=\"n\">change</th>"
	      "</tr></thead><tbody>", out);
	for (size_t k = 0; k < json_array_size(sites); k++) {
		const json_t *s = json_array_get(sites, k);

		if (site_sign(s) != sign)
			continue;
		fputs("<tr><td><code>", out);
		asp_put_xml(out, json_string_value(json_object_get(s, "site")));
		fputs("</code></td>", out);
		put_delta(out, s, "bytes");
		put_delta(out, s, "in_use_bytes");
		put_delta(out, s, "calls");
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

static int put_compare(FILE *out, const struct part *pt)
{
	const asp_dump_t *d = pt[0].d;
	asp_symbolizer_t *sym[2] = { pt[0].p.sym, pt[1].p.sym };
	json_t *cj = asp_compare_json_with(d, sym, 2);
	json_t *sites = asp_compare_sites_json(d, sym, 2, ASP_HTML_SITES);

	if (!cj || !sites) {
		json_decref(cj);
		json_decref(sites);
		return -ENOMEM;
	}
	fputs("<section id=\"compare\"><h2>What changed from A to B</h2>\n", out);
	if (json_is_true(json_object_get(cj, "different_programs")))
		fputs("<p class=\"note\">The dumps come from different programs.</p>\n", out);
	fputs("<div class=\"tables\"><div><h4>Side by side</h4>", out);
	compare_table(out, cj);
	fputs("</div><div>", out);
	fprintf(out, "<p class=\"note\">The allocation sites (the innermost frame of each "
		"stack, by function and file:line, never by address) whose bytes, "
		"bytes in use at the end or calls changed, those that changed most "
		"first; the page lists at most %d.", ASP_HTML_SITES);
	if (json_array_size(sites) == 0)
		fputs(" No site changed, or the dumps have no stacks to tell.", out);
	fputs("</p>\n", out);
	sites_table(out, sites, 1, "Grew");
	sites_table(out, sites, -1, "Shrank");
	fputs("</div></div></section>\n", out);
	json_decref(cj);
	json_decref(sites);
	return 0;
}

/* --- the page ------------------------------------------------------------------------- */

/* What the page calls dump i of n: of one, its --label or its program's
 * name; of two, compare's label (its --label or its file name), which two
 * runs of one program do not share. */
static const char *page_name(char buf[ASP_COMPARE_LABEL_SIZE], const asp_dump_t *d,
			     size_t n, size_t i)
{
	if (n > 1)
		return asp_compare_label(buf, d, n, i);
	return d[i].label ? d[i].label : asp_dump_exe_name(&d[i]);
}

static void put_head(FILE *out, const asp_dump_t *d, size_t n)
{
	char name[ASP_COMPARE_LABEL_SIZE];

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n", out);
	/* Nothing loads from anywhere; only the page's own style sheet and
	 * script run, whatever text a dump holds. */
	fprintf(out, "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
		"style-src 'sha256-%s'; script-src 'sha256-%s'; base-uri 'none'; "
		"form-action 'none'\">\n", asp__html_css_sha256, asp__html_js_sha256);
	fputs("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"allocspy-report " ASP_VERSION "\">\n<title>", out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs(" vs ", out);
		asp_put_xml(out, page_name(name, d, n, i));
		fprintf(out, " (pid %lld)", (long long)d[i].pid);
	}
	fputs(" \u2014 allocspy</title>\n<style>", out);
	fputs(asp__html_css, out);
	fputs("</style>\n</head>\n", out);
}

static void put_nav(FILE *out, size_t i, const char *label)
{
	static const char *const parts[][2] = {
		{ "summary", "summary" }, { "timeline", "heap over time" },
		{ "flame", "flame graphs" }, { "errors", "heap errors" }, { "leaks", "leaks" },
		{ "rss", "resident memory" },
		{ "tables", "tables" },
	};

	fputs("<li>", out);
	if (label) {
		asp_put_xml(out, label);
		fputs(": ", out);
	}
	for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
		fprintf(out, "%s<a href=\"#d%zu-%s\">%s</a>", k ? " \u00b7 " : "", i,
			parts[k][0], parts[k][1]);
	fputs("</li>", out);
}

static int put_part(FILE *out, struct part *pt, const asp_dump_t *d, size_t n)
{
	char name[ASP_COMPARE_LABEL_SIZE];
	int rc;

	fprintf(out, "<section class=\"dump\" id=\"d%zu\">", pt->i);
	if (n > 1) {
		fprintf(out, "<h2>%c: ", 'A' + (int)pt->i);
		asp_put_xml(out, page_name(name, d, n, pt->i));
		fputs("</h2>\n", out);
	}
	put_meta(out, pt->d);
	fprintf(out, "<section id=\"d%zu-summary\"><h3>Summary</h3>\n", pt->i);
	put_exit_text(out, pt->d);
	fputs("</section>\n", out);
	if ((rc = put_timeline(out, pt)) < 0 || (rc = put_flames(out, pt)) < 0 ||
	    (rc = put_errors(out, pt)) < 0 || (rc = put_leaks(out, pt)) < 0)
		return rc;
	put_rss(out, pt);
	if ((rc = put_tables(out, pt)) < 0)
		return rc;
	fputs("</section>\n", out);
	return 0;
}

int asp_html_write(FILE *out, const asp_dump_t *d, size_t n)
{
	char name[ASP_COMPARE_LABEL_SIZE];
	struct part parts[2];
	json_t *data = json_object(), *dumps = json_array();
	int rc = data && dumps && n >= 1 && n <= 2 ? 0 : -ENOMEM;

	memset(parts, 0, sizeof parts);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		parts[i].d = &d[i];
		parts[i].i = i;
		parts[i].data = json_object();
		if (!parts[i].data || json_array_append(dumps, parts[i].data) < 0 ||
		    asp_profile_build(&parts[i].p, &d[i]) < 0)
			rc = -ENOMEM;
		else
			parts[i].have_p = true;
	}
	if (rc == 0) {
		put_head(out, d, n);
		fputs("<body>\n<header><h1>", out);
		for (size_t i = 0; i < n; i++) {
			if (i)
				fputs(" <span class=\"vs\">compared with</span> ", out);
			asp_put_xml(out, page_name(name, d, n, i));
		}
		fputs(" <span class=\"by\">\u2014 allocspy</span></h1>\n<nav><ul>", out);
		if (n > 1)
			fputs("<li><a href=\"#compare\">what changed from A to B</a></li>", out);
		for (size_t i = 0; i < n; i++) {
			char nav[ASP_COMPARE_LABEL_SIZE + 8];

			snprintf(nav, sizeof nav, "%c (%s)", 'A' + (int)i, page_name(name, d, n, i));
			put_nav(out, i, n > 1 ? nav : NULL);
		}
		fputs("</ul></nav></header>\n<main>\n", out);
		if (n > 1)
			rc = put_compare(out, parts);
	}
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = put_part(out, &parts[i], d, n);
	if (rc == 0) {
		fputs("</main>\n<footer>Written by allocspy-report " ASP_VERSION
		      " from the dump alone: the page loads nothing from anywhere."
		      "</footer>\n<script type=\"application/json\" id=\"asp-data\">", out);
		rc = json_object_set(data, "dumps", dumps) < 0 ? -ENOMEM :
		     put_script_json(out, data);
	}
	if (rc == 0) {
		fputs("</script>\n<script>", out);
		fputs(asp__html_js, out);
		fputs("</script>\n</body>\n</html>\n", out);
	}
	for (size_t i = 0; i < n; i++) {
		if (parts[i].have_p)
			asp_profile_free(&parts[i].p);
		json_decref(parts[i].data);
	}
	json_decref(dumps);
	json_decref(data);
	return rc;
}
