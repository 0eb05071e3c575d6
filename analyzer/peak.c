/* peak - the dump's peak as every view and export gives it: heap.peak_bytes,
 * its bound and its time, said one way; the snapshot whose detail stands
 * for it, labelled with that snapshot's own figure and time when it holds
 * less; and the heap over time with the peak as a point of its own. */
#include "peak.h"

#include <stdio.h>
#include <stdlib.h>

#include "fmt.h"

const char *asp_peak_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], t[ASP_NUM_MAX];
	int n;

	if (!d->has_peak) {
		snprintf(buf, ASP_PEAK_TEXT_MAX, "? bytes in use (count mode tracks no sizes)");
		return buf;
	}
	n = snprintf(buf, ASP_PEAK_TEXT_MAX, "%s", asp_fmt_count(a, d->peak_bytes));
	if (d->peak_bytes_bound)
		n += snprintf(buf + n, ASP_PEAK_TEXT_MAX - (size_t)n, " \u00b1 %s",
			      asp_fmt_count(b, d->peak_bytes_bound));
	n += snprintf(buf + n, ASP_PEAK_TEXT_MAX - (size_t)n, " bytes in use");
	if (d->has_peak_t)
		snprintf(buf + n, ASP_PEAK_TEXT_MAX - (size_t)n, " at %s s",
			 asp_fmt_seconds(t, d->peak_t_s));
	return buf;
}

const char *asp_peak_range_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX];
	uint64_t top = d->peak_bytes + d->peak_bytes_bound;

	buf[0] = '\0';
	if (d->has_peak && d->peak_bytes_bound)
		snprintf(buf, ASP_PEAK_TEXT_MAX, "(the true peak is between %s and %s bytes)",
			 asp_fmt_count(a, d->peak_bytes),
			 asp_fmt_count(b, top < d->peak_bytes ? UINT64_MAX : top));
	return buf;
}

bool asp_peak_snapshot_exact(const asp_dump_t *d)
{
	return d->nsnapshots && d->has_peak &&
	       d->snapshots[d->peak_snapshot].in_use_bytes >= d->peak_bytes;
}

const char *asp_peak_detail_text(char buf[ASP_PEAK_TEXT_MAX], const asp_dump_t *d)
{
	const asp_snapshot_t *s = &d->snapshots[d->peak_snapshot];
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], t[ASP_NUM_MAX];

	snprintf(buf, ASP_PEAK_TEXT_MAX, asp_peak_snapshot_exact(d) ?
		 "the peak (snapshot %zu of %zu: %s bytes in %s blocks at %s s)" :
		 "snapshot %zu of %zu, below the peak (%s bytes in %s blocks at %s s)",
		 d->peak_snapshot + 1, d->nsnapshots, asp_fmt_count(a, s->in_use_bytes),
		 asp_fmt_count(b, s->in_use_blocks), asp_fmt_seconds(t, s->t_s));
	return buf;
}

static asp_point_t of_snapshot(const asp_dump_t *d, size_t i)
{
	const asp_snapshot_t *s = &d->snapshots[i];

	return (asp_point_t){
		.t_s = s->t_s, .in_use_bytes = s->in_use_bytes,
		.in_use_blocks = s->in_use_blocks, .bytes_allocated = s->bytes_allocated,
		.bytes_freed = s->bytes_freed, .snapshot = i, .detail = s->has_detail,
	};
}

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

asp_point_t *asp_peak_points(const asp_dump_t *d, size_t *n, size_t *peak)
{
	bool own = !asp_peak_snapshot_exact(d) && d->has_peak;
	double t = d->has_peak_t ? d->peak_t_s : d->snapshots[d->peak_snapshot].t_s;
	asp_point_t *v = malloc((d->nsnapshots + 1) * sizeof *v);
	size_t k = 0, at;

	if (!v)
		return NULL;
	/* The peak's own point goes before the first snapshot taken after
	 * it (after those taken at the same time). */
	for (at = 0; own && at < d->nsnapshots && d->snapshots[at].t_s <= t; at++)
		;
	for (size_t i = 0; i < d->nsnapshots; i++) {
		if (own && i == at)
			k++;
		v[k++] = of_snapshot(d, i);
	}
	if (!own) {
		v[d->peak_snapshot].peak = true;
		*peak = d->peak_snapshot;
		*n = d->nsnapshots;
		return v;
	}
	{
		/* The bytes allocated and freed so far: the fewest that hold
		 * the peak's bytes and come no earlier than the snapshot before
		 * it, no later than the one after it. */
		uint64_t alloc_lo = at ? v[at - 1].bytes_allocated : 0;
		uint64_t freed_lo = at ? v[at - 1].bytes_freed : 0;
		uint64_t alloc_hi = at < d->nsnapshots ? v[at + 1].bytes_allocated : UINT64_MAX;
		uint64_t freed_hi = at < d->nsnapshots ? v[at + 1].bytes_freed : UINT64_MAX;
		uint64_t freed = alloc_lo > d->peak_bytes ? alloc_lo - d->peak_bytes : 0;
		uint64_t alloc;

		freed = clamp(freed, freed_lo, freed_hi);
		alloc = freed + d->peak_bytes < freed ? UINT64_MAX : freed + d->peak_bytes;
		alloc = clamp(alloc, alloc_lo, alloc_hi);
		v[at] = (asp_point_t){
			.t_s = t, .in_use_bytes = d->peak_bytes, .bytes_allocated = alloc,
			.bytes_freed = freed, .snapshot = SIZE_MAX, .peak = true,
		};
	}
	*peak = at;
	*n = d->nsnapshots + 1;
	return v;
}
