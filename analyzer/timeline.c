/* timeline - the timeline command: the heap in use over time as a chart,
 * in the terminal as ms_print draws massif's or as an SVG file, then the
 * stacks that held the memory at the peak. */
#include "timeline.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "fmt.h"
#include "peak.h"
#include "profile.h"

/* Frames shown for each stack at the peak. */
#define FRAMES_SHOWN 12

/* The SVG's geometry, in pixels. */
#define SVG_W 880
#define SVG_LEFT 90
#define SVG_RIGHT 30
#define SVG_TOP 50
#define SVG_PLOT_H 300
#define SVG_LINE 16

/* Who held the memory at the peak, largest first. */
struct held {
	asp_detail_t *v;
	size_t n;
	uint64_t total;		/* the peak snapshot's in-use bytes */
};

static int by_bytes(const void *pa, const void *pb)
{
	const asp_detail_t *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* From the peak snapshot's detail, or else from stack_stats' peak figures. */
static int held_at_peak(const asp_dump_t *d, struct held *h)
{
	const asp_snapshot_t *peak = &d->snapshots[d->peak_snapshot];
	size_t n = peak->has_detail ? peak->ndetail : d->nstack_stats;

	h->total = peak->in_use_bytes;
	h->n = 0;
	h->v = calloc(n ? n : 1, sizeof *h->v);
	if (!h->v)
		return -ENOMEM;
	if (peak->has_detail) {
		memcpy(h->v, peak->detail, n * sizeof *h->v);
		h->n = n;
	} else {
		for (size_t i = 0; i < n; i++) {
			const asp_stack_stat_t *s = &d->stack_stats[i];

			if (s->has_peak && s->peak_bytes)
				h->v[h->n++] = (asp_detail_t){ s->stack, s->peak_bytes,
							       s->peak_blocks };
		}
	}
	qsort(h->v, h->n, sizeof *h->v, by_bytes);
	return 0;
}

static double percent(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* The end of the time axis: the last point's time, or 1 s when every
 * point is at 0. */
static double time_end(const asp_point_t *v, size_t n)
{
	double t = v[n - 1].t_s;

	return t > 0 ? t : 1;
}

/* The top of the chart: the largest point, which is the peak's. */
static uint64_t top_of(const asp_point_t *v, size_t n)
{
	uint64_t m = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i].in_use_bytes > m)
			m = v[i].in_use_bytes;
	return m;
}

/* --- text -------------------------------------------------------------------- */

static char mark(const asp_point_t *s)
{
	return s->peak ? '#' : s->detail ? '@' : ':';
}

/* Which of two marks a column shows: the peak, then detail, then plain. */
static char stronger(char a, char b)
{
	static const char order[] = " :@#";

	return strchr(order, a) > strchr(order, b) ? a : b;
}

static void chart_text(FILE *out, const asp_point_t *v, size_t n)
{
	enum { W = ASP_TIMELINE_COLS, H = ASP_TIMELINE_ROWS };
	char grid[H][W + 1];
	uint64_t vmax = top_of(v, n);
	double tend = time_end(v, n), div;
	const char *unit;
	char top[ASP_NUM_MAX], end[ASP_NUM_MAX];
	int lw;

	memset(grid, ' ', sizeof grid);
	for (size_t i = 0; i < n; i++) {
		const asp_point_t *s = &v[i];
		int x = (int)(s->t_s / tend * (W - 1));
		int next = i + 1 < n ? (int)(v[i + 1].t_s / tend * (W - 1)) : W;
		int h = vmax ? (int)ceil((double)s->in_use_bytes / (double)vmax * H) : 0;
		char c = mark(s);

		if (x > W - 1)
			x = W - 1;
		for (int y = 0; y < h && y < H; y++)
			grid[y][x] = stronger(grid[y][x], c);
		for (int xx = x + 1; h > 0 && xx < next && xx < W; xx++)
			grid[h - 1][xx] = stronger(grid[h - 1][xx], c);
	}
	unit = asp_fmt_unit(vmax, &div);
	asp_fmt_scaled(top, vmax, div);
	lw = (int)strlen(top);
	if (lw < 4)
		lw = 4;
	fprintf(out, "%*s\n", lw + 1, unit);
	for (int y = H - 1; y >= 0; y--) {
		int w = W;

		while (w > 0 && grid[y][w - 1] == ' ')
			w--;
		if (y == H - 1)
			fprintf(out, "%*s^", lw, top);
		else
			fprintf(out, "%*s|", lw, "");
		fprintf(out, "%.*s\n", w, grid[y]);
	}
	fprintf(out, "%*s +", lw - 1, "0");
	for (int x = 0; x < W; x++)
		putc('-', out);
	fputs(">s\n", out);
	asp_fmt_seconds(end, tend);
	fprintf(out, "%*s %-*s%s\n", lw - 1, "", W - (int)strlen(end) + 1, "0",
		end);
}

static void stack_text(FILE *out, const asp_profile_t *p, const asp_pstack_t *ps)
{
	size_t shown = 0;

	for (size_t j = 0; j < ps->n && shown < FRAMES_SHOWN; j++) {
		const asp_loc_t *loc = ps->locs[j];

		for (size_t k = 0; k < loc->nlines && shown < FRAMES_SHOWN; k++) {
			fputs(shown++ ? "                       < " : "", out);
			asp_profile_put_frame(out, p, loc, &loc->lines[k], asp_put_text);
			putc('\n', out);
		}
	}
	if (ps->n == 0)
		fputs("(no frames)\n", out);
}

/* "Peak: ..." as every view says it, then what the stacks below are. */
static void peak_head(FILE *out, const asp_dump_t *d)
{
	char a[ASP_PEAK_TEXT_MAX];

	fprintf(out, "Peak: %s\n", asp_peak_text(a, d));
	if (*asp_peak_range_text(a, d))
		fprintf(out, "      %s\n", a);
	fprintf(out, "Stacks at %s:\n", asp_peak_detail_text(a, d));
}

int asp_timeline_text(FILE *out, const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX];
	size_t detailed = 0, npoints, peak;
	asp_point_t *points;
	asp_profile_t p;
	struct held h;

	for (size_t i = 0; i < d->nsnapshots; i++)
		detailed += d->snapshots[i].has_detail;
	if (!(points = asp_peak_points(d, &npoints, &peak)))
		return -ENOMEM;
	fputs("Heap in use over time (", out);
	asp_put_text(out, asp_dump_exe_name(d));
	fprintf(out, ", pid %lld): %zu snapshots, %zu detailed (@), the peak (#)\n\n",
		(long long)d->pid, d->nsnapshots, detailed);
	chart_text(out, points, npoints);
	free(points);
	putc('\n', out);
	if (held_at_peak(d, &h) < 0)
		return -ENOMEM;
	if (asp_profile_build(&p, d) < 0) {
		free(h.v);
		return -ENOMEM;
	}
	peak_head(out, d);
	if (d->sampled && h.n != 0)
		fprintf(out, "  (estimates: ALLOCSPY_SAMPLE sampled one stack per %s bytes "
			"on average)\n", asp_fmt_count(a, d->sample_bytes));
	if (h.n == 0)
		fputs("  (the dump does not say which stacks held it)\n", out);
	else
		fprintf(out, "  %14s %6s  %s\n", "bytes", "%", "allocated at");
	for (size_t i = 0; i < h.n && i < ASP_TIMELINE_STACKS; i++) {
		fprintf(out, "  %14s %5.1f%%  ", asp_fmt_count(a, h.v[i].bytes),
			percent(h.v[i].bytes, h.total));
		stack_text(out, &p, &p.stacks[h.v[i].stack]);
	}
	if (h.n > ASP_TIMELINE_STACKS) {
		uint64_t more = 0;

		for (size_t i = ASP_TIMELINE_STACKS; i < h.n; i++)
			more = asp_add_sat(more, h.v[i].bytes);
		fprintf(out, "  %14s %5.1f%%  ... and %s more stacks\n",
			asp_fmt_count(a, more), percent(more, h.total),
			asp_fmt_count(b, h.n - ASP_TIMELINE_STACKS));
	}
	asp_profile_free(&p);
	free(h.v);
	return 0;
}

/* --- JSON -------------------------------------------------------------------- */

json_t *asp_timeline_json_of(const asp_profile_t *p)
{
	return asp_timeline_json_top(p, SIZE_MAX);
}

json_t *asp_timeline_json_top(const asp_profile_t *p, size_t max)
{
	const asp_dump_t *d = p->d;
	const asp_snapshot_t *peak = &d->snapshots[d->peak_snapshot];
	json_t *o, *snaps, *stacks;
	struct held h;

	if (held_at_peak(d, &h) < 0)
		return NULL;
	snaps = json_array();
	for (size_t i = 0; i < d->nsnapshots; i++) {
		const asp_snapshot_t *s = &d->snapshots[i];

		json_array_append_new(snaps, json_pack("{s:f,s:I,s:I,s:I,s:I,s:b,s:b}",
			"t_s", s->t_s, "in_use_bytes", (json_int_t)s->in_use_bytes,
			"in_use_blocks", (json_int_t)s->in_use_blocks,
			"bytes_allocated", (json_int_t)s->bytes_allocated,
			"bytes_freed", (json_int_t)s->bytes_freed,
			"peak", s->peak, "detailed", s->has_detail));
	}
	stacks = json_array();
	for (size_t i = 0; i < h.n && i < max; i++)
		json_array_append_new(stacks, json_pack("{s:I,s:I,s:f,s:o}",
			"bytes", (json_int_t)h.v[i].bytes,
			"blocks", (json_int_t)h.v[i].blocks,
			"percent", percent(h.v[i].bytes, h.total),
			"frames", asp_profile_frames_json(p, &p->stacks[h.v[i].stack], false)));
	o = json_pack("{s:o,s:I,s:o,s:{s:o,s:I,s:o,s:I,s:b,s:f,s:I,s:I,s:o}}",
		"file", asp_json_text(d->file), "pid", (json_int_t)d->pid,
		"snapshots", snaps,
		"peak", "in_use_bytes", d->has_peak ? json_integer((json_int_t)d->peak_bytes) :
		json_null(), "bound", (json_int_t)d->peak_bytes_bound,
		"t_s", d->has_peak_t ? json_real(d->peak_t_s) : json_null(),
		"snapshot", (json_int_t)d->peak_snapshot,
		"exact", asp_peak_snapshot_exact(d),
		"snapshot_t_s", peak->t_s,
		"snapshot_in_use_bytes", (json_int_t)peak->in_use_bytes,
		"snapshot_in_use_blocks", (json_int_t)peak->in_use_blocks,
		"stacks", stacks);
	if (o && max != SIZE_MAX)
		json_object_set_new(json_object_get(o, "peak"), "more_stacks",
				    json_integer((json_int_t)(h.n > max ? h.n - max : 0)));
	free(h.v);
	return o;
}

json_t *asp_timeline_json(const asp_dump_t *d)
{
	asp_profile_t p;
	json_t *o;

	if (asp_profile_build(&p, d) < 0)
		return NULL;
	o = asp_timeline_json_of(&p);
	asp_profile_free(&p);
	return o;
}

/* --- SVG --------------------------------------------------------------------- */

int asp_timeline_svg(FILE *out, const asp_dump_t *d)
{
	char a[ASP_PEAK_TEXT_MAX];
	size_t lines = 0, shown, npoints, pk;
	asp_point_t *points;
	asp_profile_t p;
	struct held h;
	double y;

	if (!(points = asp_peak_points(d, &npoints, &pk)))
		return -ENOMEM;
	if (held_at_peak(d, &h) < 0) {
		free(points);
		return -ENOMEM;
	}
	if (asp_profile_build(&p, d) < 0) {
		free(points);
		free(h.v);
		return -ENOMEM;
	}
	shown = h.n < ASP_TIMELINE_STACKS ? h.n : ASP_TIMELINE_STACKS;
	for (size_t i = 0; i < shown; i++) {
		const asp_pstack_t *ps = &p.stacks[h.v[i].stack];
		size_t n = 0;

		for (size_t j = 0; j < ps->n; j++)
			n += ps->locs[j]->nlines;
		lines += 1 + (n < FRAMES_SHOWN ? n : FRAMES_SHOWN);
	}
	lines += 1 + (h.n > ASP_TIMELINE_STACKS);
	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" "
		"width=\"%d\" height=\"%zu\" viewBox=\"0 0 %d %zu\">\n",
		SVG_W, SVG_TOP + SVG_PLOT_H + 70 + (lines + 1) * SVG_LINE, SVG_W,
		SVG_TOP + SVG_PLOT_H + 70 + (lines + 1) * SVG_LINE);
	fputs("<title>Heap in use over time: ", out);
	asp_put_xml(out, asp_dump_exe_name(d));
	fputs("</title>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", out);
	fprintf(out, "<text x=\"%d\" y=\"28\" font-family=\"sans-serif\" font-size=\"16\" "
		"fill=\"#222\">Heap in use over time: ", SVG_LEFT);
	asp_put_xml(out, asp_dump_exe_name(d));
	fprintf(out, " (pid %lld, %zu snapshots)</text>\n", (long long)d->pid,
		d->nsnapshots);
	asp_chart_svg(out, &(asp_chart_t){
		.kind = ASP_CHART_FILE, .width = SVG_W, .left = SVG_LEFT, .right = SVG_RIGHT,
		.top = SVG_TOP, .plot_h = SVG_PLOT_H, .d = d, .pts = points, .npts = npoints,
		.n = npoints, .peak = pk,
	});
	free(points);
	y = SVG_TOP + SVG_PLOT_H + 60;
	fprintf(out, "<g font-family=\"monospace\" font-size=\"12\" fill=\"#222\" "
		"xml:space=\"preserve\">\n<text x=\"20\" y=\"%.0f\" font-weight=\"bold\">"
		"Peak: ", y);
	asp_put_xml(out, asp_peak_text(a, d));
	if (*asp_peak_range_text(a, d)) {
		fputc(' ', out);
		asp_put_xml(out, a);
	}
	y += SVG_LINE;
	fprintf(out, "</text>\n<text x=\"20\" y=\"%.0f\" font-weight=\"bold\">Stacks at ", y);
	asp_put_xml(out, asp_peak_detail_text(a, d));
	fputs(":</text>\n", out);
	for (size_t i = 0; i < shown; i++) {
		const asp_pstack_t *ps = &p.stacks[h.v[i].stack];
		size_t n = 0;

		y += SVG_LINE;
		fprintf(out, "<text x=\"20\" y=\"%.0f\">%5.1f%%  %s bytes in %" PRIu64
			" blocks</text>\n", y, percent(h.v[i].bytes, h.total),
			asp_fmt_count(a, h.v[i].bytes), h.v[i].blocks);
		for (size_t j = 0; j < ps->n && n < FRAMES_SHOWN; j++) {
			const asp_loc_t *loc = ps->locs[j];

			for (size_t k = 0; k < loc->nlines && n < FRAMES_SHOWN; k++, n++) {
				y += SVG_LINE;
				fprintf(out, "<text x=\"60\" y=\"%.0f\">%s", y,
					n ? "&lt; " : "at ");
				asp_profile_put_frame(out, &p, loc, &loc->lines[k], asp_put_xml);
				fputs("</text>\n", out);
			}
		}
	}
	if (h.n > ASP_TIMELINE_STACKS) {
		uint64_t more = 0;
		char b[ASP_NUM_MAX];

		for (size_t i = ASP_TIMELINE_STACKS; i < h.n; i++)
			more = asp_add_sat(more, h.v[i].bytes);
		y += SVG_LINE;
		fprintf(out, "<text x=\"20\" y=\"%.0f\">%5.1f%%  %s bytes: ... and %s more "
			"stacks</text>\n", y, percent(more, h.total), asp_fmt_count(a, more),
			asp_fmt_count(b, h.n - ASP_TIMELINE_STACKS));
	}
	fputs("</g>\n</svg>\n", out);
	asp_profile_free(&p);
	free(h.v);
	return 0;
}
