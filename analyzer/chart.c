/* chart - the heap in use over time as an SVG chart, drawn the same for
 * the timeline command's --svg file and the html page; what differs
 * between them is their look (struct look). */
#include "chart.h"

#include <inttypes.h>

#include "fmt.h"

/* How a chart of each kind looks: the attributes of its marks, and how its
 * ticks are labelled. */
static const struct look {
	const char *axis, *tick, *area, *peak, *peak_r, *peak_label;
	const char *sep;	/* after each mark */
	bool one_unit;		/* the y ticks' labels all in the top's unit */
	int xlabel_dy;		/* the x ticks' labels, below the axis */
	bool edge_anchors;	/* the first and last of them inward from their tick */
	bool flip_at_plot;	/* the peak's label goes left of a peak past the
				 * plot's middle, else past the chart's */
	bool dots;		/* the detailed snapshots as dots */
	const char *name;	/* the x axis's name, name_dy below it; NULL: none */
	int name_dy;
	bool data;		/* the peak's figures as data- attributes */
} looks[] = {
	[ASP_CHART_FILE] = {
		.axis = "stroke=\"#444\" stroke-width=\"1\" fill=\"none\"",
		.tick = "font-family=\"monospace\" font-size=\"12\" fill=\"#222\"",
		.area = "fill=\"#9cc3e6\" fill-opacity=\"0.6\" stroke=\"#1f5f99\" "
			"stroke-width=\"1.5\"",
		.peak = "fill=\"#c0392b\"", .peak_r = "4",
		.peak_label = "font-family=\"monospace\" font-size=\"12\" fill=\"#c0392b\"",
		.sep = "\n", .one_unit = true, .xlabel_dy = 20, .flip_at_plot = true,
		.dots = true,
	},
	[ASP_CHART_PAGE] = {
		.axis = "class=\"axis\"", .tick = "class=\"tick\"", .area = "class=\"area\"",
		.peak = "class=\"tl-peak\"", .peak_r = "4.5",
		.peak_label = "class=\"peak-label\"",
		.sep = "", .xlabel_dy = 18, .edge_anchors = true, .name = "class=\"label\"",
		.name_dy = 42, .data = true,
	},
};

static const asp_point_t *point(const asp_chart_t *c, size_t k)
{
	return &c->pts[c->ix ? c->ix[k] : k];
}

static double xv(const asp_chart_t *c, const asp_point_t *s)
{
	return c->by_alloc ? (double)s->bytes_allocated : s->t_s;
}

static double plot_w(const asp_chart_t *c)
{
	return c->width - c->left - c->right;
}

static double to_x(const asp_chart_t *c, double v)
{
	return c->left + v / c->x_end * plot_w(c);
}

static double to_y(const asp_chart_t *c, uint64_t v)
{
	return c->top + c->plot_h - (double)v / (double)(c->y_top ? c->y_top : 1) * c->plot_h;
}

double asp_chart_x(const asp_chart_t *c, size_t k)
{
	return to_x(c, xv(c, point(c, k)));
}

double asp_chart_y(const asp_chart_t *c, size_t k)
{
	return to_y(c, point(c, k)->in_use_bytes);
}

/* The axes, a tick at 0, a half and the end of each, with its figure. */
static void axes(FILE *out, const asp_chart_t *c, const struct look *l)
{
	uint64_t top = c->y_top;
	double end = c->x_end;
	const double bottom = c->top + c->plot_h;
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX];
	const char *unit = "";
	double div = 1;

	if (l->one_unit)
		unit = asp_fmt_unit(top, &div);
	fprintf(out, "<path %s d=\"M%d %d V%.1f H%.1f\"/>%s", l->axis, c->left, c->top,
		bottom, c->left + plot_w(c), l->sep);
	for (int i = 0; i <= 2; i++) {
		double y = bottom - c->plot_h * i / 2.0, x = c->left + plot_w(c) * i / 2.0;

		fprintf(out, "<path %s d=\"M%d %.1f h-5 M%.1f %.1f v5\"/>%s", l->axis,
			c->left, y, x, bottom, l->sep);
		if (l->one_unit)
			snprintf(b, sizeof b, "%s %s", asp_fmt_scaled(a, top / 2 * (uint64_t)i +
				 (i == 2 ? top % 2 : 0), div), unit);
		else
			asp_fmt_bytes(b, (double)(top ? top : 1) * i / 2);
		fprintf(out, "<text %s x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>%s",
			l->tick, c->left - 8, y + 4, b, l->sep);
		if (c->by_alloc)
			asp_fmt_bytes(b, end * i / 2);
		else
			snprintf(b, sizeof b, "%s s", asp_fmt_seconds(a, end * i / 2));
		fprintf(out, "<text %s x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">%s</text>%s",
			l->tick, x, bottom + l->xlabel_dy,
			!l->edge_anchors || i == 1 ? "middle" : i == 0 ? "start" : "end", b,
			l->sep);
	}
	if (l->name)
		fprintf(out, "<text %s x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			l->name, c->left + plot_w(c) / 2, c->top + c->plot_h + l->name_dy,
			c->by_alloc ? "bytes allocated so far" : "seconds since the start");
}

void asp_chart_svg(FILE *out, asp_chart_t *c)
{
	const struct look *l = &looks[c->kind];
	const asp_point_t *pk = point(c, c->peak);
	const double bottom = c->top + c->plot_h;
	double px, py;
	char text[ASP_PEAK_TEXT_MAX];

	/* The x axis ends at the last point (of all, drawn or not), the y
	 * axis at the largest drawn, which is the peak's. */
	c->x_end = xv(c, &c->pts[c->npts - 1]);
	if (c->x_end <= 0)
		c->x_end = 1;
	c->y_top = 0;
	for (size_t k = 0; k < c->n; k++)
		if (point(c, k)->in_use_bytes > c->y_top)
			c->y_top = point(c, k)->in_use_bytes;
	axes(out, c, l);
	/* The heap as a step function: each point's level holds until the
	 * next one. */
	fprintf(out, "<path %s d=\"M%.2f %.2f", l->area, asp_chart_x(c, 0), bottom);
	for (size_t k = 0; k < c->n; k++)
		fprintf(out, " H%.2f V%.2f", asp_chart_x(c, k), asp_chart_y(c, k));
	fprintf(out, " H%.2f V%.2f Z\"/>\n", to_x(c, c->x_end), bottom);
	for (size_t k = 0; l->dots && k < c->n; k++)
		if (point(c, k)->detail && !point(c, k)->peak)
			fprintf(out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2.5\" fill=\"#1f5f99\"/>%s",
				asp_chart_x(c, k), asp_chart_y(c, k), l->sep);
	/* The peak as every view gives it; on the page, data-snapshot names
	 * the snapshot whose detail the stacks beside the chart are. */
	px = asp_chart_x(c, c->peak);
	py = asp_chart_y(c, c->peak);
	fprintf(out, "<circle %s cx=\"%.2f\" cy=\"%.2f\" r=\"%s\"", l->peak, px, py, l->peak_r);
	if (l->data)
		fprintf(out, " data-snapshot=\"%zu\" data-t=\"%.9g\" data-in-use=\"%" PRIu64 "\" "
			"data-bound=\"%" PRIu64 "\" data-allocated=\"%" PRIu64 "\"",
			c->d->peak_snapshot, pk->t_s, pk->in_use_bytes, c->d->peak_bytes_bound,
			pk->bytes_allocated);
	fprintf(out, "/>%s", l->sep);
	/* Its figure beside it, on the side with room; below it at the top. */
	{
		double mid = l->flip_at_plot ? c->left + plot_w(c) / 2 : c->width / 2.0;

		fprintf(out, "<text %s x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\">peak: ",
			l->peak_label, px + (px > mid ? -8 : 8),
			py < c->top + 14 ? py + 16 : py - 8, px > mid ? "end" : "start");
	}
	asp_put_xml(out, asp_peak_text(text, c->d));
	fputs("</text>\n", out);
}
