/* chart - the heap in use over time as an SVG chart: the one drawer of the
 * timeline command's --svg file and of the html page's chart. The axes
 * with a tick at 0, a half and the end; the heap as a step function, each
 * point's level holding until the next one; the peak in red with its
 * figure as every view says it. */
#ifndef ASP_CHART_H
#define ASP_CHART_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "load.h"
#include "peak.h"

/* Where the chart goes, which gives its look. */
enum asp_chart_kind {
	/* timeline --svg: a file of its own, its styles inline, the y axis
	 * in the top's unit, the detailed snapshots as dots */
	ASP_CHART_FILE,
	/* the html page: the page's style classes, each tick in its own
	 * unit, the x axis named, the peak's figures as data- attributes
	 * for the page's script */
	ASP_CHART_PAGE
};

typedef struct asp_chart {
	enum asp_chart_kind kind;
	/* In pixels: the plot spans [left, width - right] by [top, top + plot_h]. */
	int width, left, right, top, plot_h;
	const asp_dump_t *d;
	const asp_point_t *pts;	/* every point (asp_peak_points) */
	size_t npts;
	const size_t *ix;	/* the points drawn, by index into pts; NULL: all */
	size_t n;		/* how many are drawn */
	size_t peak;		/* the peak's place among them */
	bool by_alloc;		/* x: the bytes allocated so far, else seconds */
	/* Set by asp_chart_svg: the ends of the axes. */
	double x_end;		/* the last point's x, 1 when that is 0 */
	uint64_t y_top;		/* the most bytes of a point drawn: the peak's */
} asp_chart_t;

/* Draws c's axes, heap and peak into out. */
void asp_chart_svg(FILE *out, asp_chart_t *c);

/* Where the k-th point drawn stands, in pixels, once drawn. */
double asp_chart_x(const asp_chart_t *c, size_t k);
double asp_chart_y(const asp_chart_t *c, size_t k);

#endif
