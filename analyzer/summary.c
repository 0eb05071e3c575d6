/* summary - the default report: the exit text the shim prints (HEAP, LEAK
 * and REF SUMMARY), then the function, thread, size, peak and time tables. */
#include "summary.h"

#include <stdlib.h>
#include <string.h>

#include "errors.h"
#include "fmt.h"
#include "peak.h"
#include "profile.h"
#include "symbolize.h"

/* Columns of the size histogram's bar. */
#define BAR_W 20

/* Widest thread name shown in the table. */
#define NAME_W 16

/* Stacks shown in the table of a backtrace run. */
#define STACKS_SHOWN 10

/* Frames of a stack named in that table. */
#define STACK_FRAMES_SHOWN 3

void asp_summary_prefix(FILE *out, const asp_dump_t *d)
{
	fprintf(out, "==%lld== ", (long long)d->pid);
}

void asp_summary_put(void *arg, const char *line)
{
	const struct asp_summary_out *o = arg;

	asp_summary_prefix(o->out, o->d);
	fputs(line, o->out);
}

void asp_summary_leak_text(FILE *out, const asp_dump_t *d)
{
	struct asp_summary_out o = { out, d };
	struct asp_vg_leaks l = { .bytes = { 0 } };

	if (d->in_use_blocks == 0) {
		asp_summary_put(&o, ASP_VG_ALL_FREED);
		return;
	}
	for (int k = 0; k < ASP_LEAK_NKINDS; k++) {
		l.bytes[k] = d->leaks[k].bytes;
		l.blocks[k] = d->leaks[k].blocks;
	}
	asp_vg_leak_summary(asp_summary_put, &o, &l);
}

bool asp_summary_has_leak_part(const asp_dump_t *d)
{
	if (d->has_leaks)
		return true;
	/* With no block left the shim runs no leak check and writes no
	 * "leaks", yet says that all blocks were freed. */
	return !d->count_mode && d->in_use_blocks == 0 && d->leak_check &&
	       strcmp(d->leak_check, "no") != 0;
}

/* The shim's test for a REF SUMMARY (cross-thread operations are also
 * acquires or releases). */
static bool any_refs(const asp_dump_t *d)
{
	const asp_refs_t *r = &d->refs;

	return r->acquires || r->releases || r->created || r->destroyed;
}

void asp_summary_exit_text(FILE *out, const asp_dump_t *d)
{
	struct asp_summary_out o = { out, d };
	char a[ASP_NUM_MAX], when[ASP_NUM_MAX + 2];
	struct asp_vg_heap h = {
		.when = "exit", .bytes_known = d->has_in_use_bytes,
		.in_use_bytes = d->in_use_bytes, .in_use_blocks = d->in_use_blocks,
		.allocs = d->allocs, .frees = d->frees, .bytes_allocated = d->bytes_allocated,
	};

	if (d->reason == ASP_REASON_SIGNAL) {
		asp_summary_prefix(out, d);
		fprintf(out, "Process terminating with default action of signal %d (",
			d->signal);
		asp_put_text(out, d->signal_name);
		fputs(")\n", out);
		asp_summary_put(&o, "\n");
	}
	if (d->reason == ASP_REASON_INTERVAL && d->has_dump_t) {
		snprintf(when, sizeof when, "%s s", asp_fmt_seconds(a, d->dump_t_s));
		h.when = when;
	}
	asp_vg_heap_summary(asp_summary_put, &o, &h);
	/* A blank line before each part that follows; none at the end. */
	if (asp_summary_has_leak_part(d)) {
		asp_summary_put(&o, "\n");
		asp_summary_leak_text(out, d);
	}
	if (d->has_error_summary) {
		asp_summary_put(&o, "\n");
		asp_vg_error_summary(asp_summary_put, &o, d->errors, d->error_contexts,
				     d->errors_suppressed, d->error_contexts_suppressed);
	}
	if (any_refs(d)) {
		struct asp_vg_refs r = {
			.acquires = d->refs.acquires, .releases = d->refs.releases,
			.created = d->refs.created, .destroyed = d->refs.destroyed,
			.has_cross = d->refs.has_cross_thread, .cross = d->refs.cross_thread,
		};

		asp_summary_put(&o, "\n");
		asp_vg_ref_summary(asp_summary_put, &o, &r);
	}
}

/* One right-aligned number column, or "-" when the value does not apply. */
static void num_col(FILE *out, bool applies, uint64_t v, int width)
{
	char buf[ASP_NUM_MAX];

	fprintf(out, " %*s", width, applies ? asp_fmt_count(buf, v) : "-");
}

static void functions_text(FILE *out, const asp_dump_t *d)
{
	fputs("\nFunctions\n", out);
	fprintf(out, "  %-20s %14s %16s %10s %10s", "function", "calls",
		"bytes", "failed", "null");
	if (d->has_temporary)
		fprintf(out, " %14s", "temporary");
	putc('\n', out);
	for (size_t i = 0; i < d->nfns; i++) {
		const asp_fn_t *f = &d->fns[i];
		bool alloc = f->cls == ASP_FN_ALLOC;

		fputs("  ", out);
		asp_put_left(out, f->name, 20);
		num_col(out, true, f->calls, 14);
		num_col(out, alloc, f->bytes, 16);
		num_col(out, alloc, f->failed, 10);
		num_col(out, f->cls == ASP_FN_FREE, f->null, 10);
		if (d->has_temporary)
			num_col(out, alloc && f->has_temporary, f->temporary, 14);
		putc('\n', out);
	}
}

static int by_allocs(const void *pa, const void *pb, void *arg)
{
	const asp_thread_t *t = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	if (t[a].allocs != t[b].allocs)
		return t[a].allocs > t[b].allocs ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* Thread indexes by allocs, most first; ties keep the dump's order. */
static size_t *threads_by_allocs(const asp_dump_t *d)
{
	size_t *ix = malloc((d->nthreads ? d->nthreads : 1) * sizeof *ix);

	if (!ix)
		return NULL;
	for (size_t i = 0; i < d->nthreads; i++)
		ix[i] = i;
	qsort_r(ix, d->nthreads, sizeof *ix, by_allocs, d->threads);
	return ix;
}

static void threads_text(FILE *out, const asp_dump_t *d)
{
	size_t shown = d->nthreads < ASP_SUMMARY_TOP_THREADS ?
		       d->nthreads : ASP_SUMMARY_TOP_THREADS;
	uint64_t more = (d->nthreads - shown) + d->threads_omitted;
	size_t *ix = threads_by_allocs(d);
	char buf[4 * NAME_W + 4];

	if (!ix)
		return;
	fprintf(out, "\nThreads%s\n", more ? " (the top 20 by allocs)" : "");
	fprintf(out, "  %-8s %-*s %14s %14s %16s %14s\n", "tid", NAME_W, "name",
		"allocs", "frees", "bytes allocated", "ref ops");
	for (size_t i = 0; i < shown; i++) {
		const asp_thread_t *t = &d->threads[ix[i]];

		fprintf(out, "  %-8lld ", (long long)t->tid);
		asp_put_left(out, asp_fmt_label(buf, sizeof buf, t->name, NAME_W),
			     NAME_W);
		num_col(out, true, t->allocs, 14);
		num_col(out, true, t->frees, 14);
		num_col(out, true, t->bytes_allocated, 16);
		num_col(out, true, t->ref_acquires + t->ref_releases, 14);
		putc('\n', out);
	}
	if (more) {
		char n[ASP_NUM_MAX];

		fprintf(out, "  (%s more thread%s)\n", asp_fmt_count(n, more),
			more == 1 ? "" : "s");
	}
	free(ix);
}

/* The smallest size in bucket le: le/2 + 1 (le itself for 0, 1 and 2). */
static uint64_t bucket_min(uint64_t le)
{
	return le <= 2 ? le : le / 2 + 1;
}

static void histogram_text(FILE *out, const asp_dump_t *d)
{
	char lo[ASP_NUM_MAX], hi[ASP_NUM_MAX], n[ASP_NUM_MAX];
	uint64_t max = 0;
	int w = 1;		/* the widest bound */

	for (size_t i = 0; i < d->nhist; i++)
		if (d->hist[i].count > max)
			max = d->hist[i].count;
	if (d->nhist)
		w = (int)strlen(asp_fmt_count(hi, d->hist[d->nhist - 1].le));
	fputs("\nSizes\n", out);
	fprintf(out, "  %-*s %14s\n", 2 * w + 3, "bytes", "blocks");
	for (size_t i = 0; i < d->nhist; i++) {
		const asp_bucket_t *b = &d->hist[i];
		/* Every bucket may count 0 (a hand-made dump): no bar then. */
		int bar = max ? (int)((double)b->count / (double)max * BAR_W + 0.5) : 0;

		asp_fmt_count(lo, bucket_min(b->le));
		asp_fmt_count(hi, b->le);
		if (bucket_min(b->le) == b->le)
			fprintf(out, "  %*s", 2 * w + 3, hi);
		else
			fprintf(out, "  %*s - %*s", w, lo, w, hi);
		fprintf(out, " %14s  ", asp_fmt_count(n, b->count));
		for (int j = 0; j < (bar ? bar : 1); j++)
			putc('#', out);
		putc('\n', out);
	}
	if (d->nhist == 0)
		fputs("  (no blocks)\n", out);
}

/* A backtrace run: the stacks that allocated most, each with its first
 * frames ("make_pair (leaky.c:10) < main (leaky.c:22)"). */
static void stacks_text(FILE *out, const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], c[ASP_NUM_MAX];
	struct { uint64_t bytes, allocs, in_use_bytes; } sum = {0};
	size_t shown_n = 0;
	asp_symbolizer_t *sym;

	if (d->nstack_stats == 0)
		return;
	sym = asp_symbolizer_new(d);
	fputs("\nStacks (most bytes allocated first)\n", out);
	if (d->sampled) {
		/* ALLOCSPY_SAMPLE: every figure here is an estimate. */
		fprintf(out, "  sampled: one stack per %s bytes allocated on average; the "
			"figures are estimates\n", asp_fmt_count(a, d->sample_bytes));
		fprintf(out, "  %14s %12s %14s %8s  %s\n", "est. bytes", "est. allocs",
			"est. in use", "samples", "where");
	} else {
		fprintf(out, "  %14s %12s %14s  %s\n", "bytes", "allocs", "in use (bytes)", "where");
	}
	for (size_t i = 0; i < d->nstack_stats && i < STACKS_SHOWN; i++) {
		const asp_stack_stat_t *s = &d->stack_stats[i];
		const asp_stack_t *st = &d->stacks[s->stack];

		shown_n++;
		sum.bytes += s->bytes;
		sum.allocs += s->allocs;
		sum.in_use_bytes += s->in_use_bytes;

		fprintf(out, "  %14s %12s %14s  ", asp_fmt_count(a, s->bytes),
			asp_fmt_count(b, s->allocs), asp_fmt_count(c, s->in_use_bytes));
		if (d->sampled)
			fprintf(out, "%7s  ", asp_fmt_count(a, s->samples));
		for (size_t j = 0, shown = 0; j < st->n && shown < STACK_FRAMES_SHOWN; j++) {
			char name[ASP_NAME_MAX];
			asp_line_t l;
			bool main_frame;

			if (sym && asp_symbolize_is_shim(sym, st->frames[j]))
				continue;	/* the shim's own frames */
			if (!sym || asp_symbolize(sym, st->frames[j], &l, 1) == 0)
				l = (asp_line_t){ .addr = st->frames[j] };
			if (shown++ > 0)
				fputs(" < ", out);
			asp_put_text(out, asp_frame_name(d, &l, name));
			if (l.file)
				fprintf(out, " (%s:%u)", l.file, l.line);
			main_frame = l.fn && strcmp(l.fn, "main") == 0;
			if (main_frame)
				break;
		}
		putc('\n', out);
	}
	/* The others in one row: what the heap's totals hold beyond the rows
	 * shown, and how many stacks that is (with those the dump left out of
	 * stack_stats). */
	if (d->nstack_stats > STACKS_SHOWN || d->stack_stats_omitted) {
		uint64_t more = (d->nstack_stats - shown_n) + d->stack_stats_omitted;

		if (d->sampled)
			fprintf(out, "  %14s %12s %14s %7s  ", "", "", "", "");
		else
			fprintf(out, "  %14s %12s %14s  ",
				asp_fmt_count(a, d->bytes_allocated > sum.bytes ?
					      d->bytes_allocated - sum.bytes : 0),
				asp_fmt_count(b, d->allocs > sum.allocs ? d->allocs - sum.allocs : 0),
				asp_fmt_count(c, d->in_use_bytes > sum.in_use_bytes ?
					      d->in_use_bytes - sum.in_use_bytes : 0));
		fprintf(out, "... and %s more stack%s\n", asp_fmt_count(a, more),
			more == 1 ? "" : "s");
	}
	asp_symbolizer_free(sym);
}

/* "Peak: 4,000 bytes in use at 0.520 s", with the bound and the range it
 * gives when the peak is not exact, as every view says it. */
static void peak_text(FILE *out, const asp_dump_t *d)
{
	char a[ASP_PEAK_TEXT_MAX];

	fprintf(out, "\nPeak: %s\n", asp_peak_text(a, d));
	if (*asp_peak_range_text(a, d))
		fprintf(out, "      %s\n", a);
}

void asp_summary_text(FILE *out, const asp_dump_t *d)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX], c[ASP_NUM_MAX], e[ASP_NUM_MAX];

	asp_summary_exit_text(out, d);
	functions_text(out, d);
	threads_text(out, d);
	histogram_text(out, d);
	stacks_text(out, d);
	peak_text(out, d);
	if (d->has_temporary)
		fprintf(out, "Temporary: %s of %s allocations (%.1f%%), freed before "
			"their thread allocated again\n",
			asp_fmt_count(a, d->temporary), asp_fmt_count(b, d->allocs),
			d->allocs ? 100.0 * (double)d->temporary / (double)d->allocs : 0.0);
	if (d->has_guard)
		fprintf(out, "Guarded: %s blocks, %s of them live (ALLOCSPY_GUARD=%s, %s slots)\n",
			asp_fmt_count(a, d->guard_guarded), asp_fmt_count(b, d->guard_live),
			asp_fmt_count(c, d->guard_mean), asp_fmt_count(e, d->guard_slots));
	fprintf(out, "Time: %s s wall, %s s user, %s s sys\n",
		asp_fmt_seconds(a, d->wall_s), asp_fmt_seconds(b, d->user_s),
		asp_fmt_seconds(c, d->sys_s));
}

static json_t *count_or_null(bool known, uint64_t v)
{
	return known ? json_integer((json_int_t)v) : json_null();
}

json_t *asp_summary_leak_json(const asp_dump_t *d)
{
	json_t *o;

	if (!d->has_leaks)
		return json_null();
	o = json_object();
	for (int k = 0; k < ASP_LEAK_NKINDS; k++)
		json_object_set_new(o, asp_leak_key[k],
				    json_pack("{s:I,s:I}",
					      "bytes", (json_int_t)d->leaks[k].bytes,
					      "blocks", (json_int_t)d->leaks[k].blocks));
	return o;
}

static json_t *functions_json(const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->nfns; i++) {
		const asp_fn_t *f = &d->fns[i];
		json_t *o = json_pack("{s:s,s:I}", "name", f->name,
				      "calls", (json_int_t)f->calls);

		if (f->cls == ASP_FN_ALLOC) {
			json_object_set_new(o, "bytes", json_integer((json_int_t)f->bytes));
			json_object_set_new(o, "failed", json_integer((json_int_t)f->failed));
			if (f->has_temporary)
				json_object_set_new(o, "temporary",
						    json_integer((json_int_t)f->temporary));
		} else if (f->cls == ASP_FN_FREE) {
			json_object_set_new(o, "null", json_integer((json_int_t)f->null));
		}
		json_array_append_new(a, o);
	}
	return a;
}

static json_t *threads_json(const asp_dump_t *d)
{
	json_t *a = json_array();
	size_t *ix = threads_by_allocs(d);

	for (size_t i = 0; ix && i < d->nthreads; i++) {
		const asp_thread_t *t = &d->threads[ix[i]];

		json_array_append_new(a, json_pack("{s:I,s:o,s:I,s:I,s:I,s:I,s:I}",
			"tid", (json_int_t)t->tid, "name", asp_json_text(t->name),
			"allocs", (json_int_t)t->allocs,
			"frees", (json_int_t)t->frees,
			"bytes_allocated", (json_int_t)t->bytes_allocated,
			"ref_acquires", (json_int_t)t->ref_acquires,
			"ref_releases", (json_int_t)t->ref_releases));
	}
	free(ix);
	return a;
}

static json_t *histogram_json(const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->nhist; i++)
		json_array_append_new(a, json_pack("{s:I,s:I,s:I}",
			"min", (json_int_t)bucket_min(d->hist[i].le),
			"max", (json_int_t)d->hist[i].le,
			"count", (json_int_t)d->hist[i].count));
	return a;
}

static json_t *argv_json(const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; i < d->argc; i++)
		json_array_append_new(a, asp_json_text(d->argv[i]));
	return a;
}

/* {"reason", "t_s" (or null), "signal": {"number", "name"} or null}. */
static json_t *dump_json(const asp_dump_t *d)
{
	static const char *const reason[] = {
		[ASP_REASON_EXIT] = "exit", [ASP_REASON_INTERVAL] = "interval",
		[ASP_REASON_SIGNAL] = "signal"
	};

	return json_pack("{s:s,s:o,s:o}", "reason", reason[d->reason],
			 "t_s", d->has_dump_t ? json_real(d->dump_t_s) : json_null(),
			 "signal", d->reason == ASP_REASON_SIGNAL ?
			 json_pack("{s:i,s:o}", "number", d->signal,
				   "name", asp_json_text(d->signal_name)) : json_null());
}

json_t *asp_summary_json(const asp_dump_t *d)
{
	json_t *o = json_object();
	json_t *heap;

	json_object_set_new(o, "file", asp_json_text(d->file));
	json_object_set_new(o, "pid", json_integer(d->pid));
	json_object_set_new(o, "exe", asp_json_text(d->exe));
	json_object_set_new(o, "argv", argv_json(d));
	json_object_set_new(o, "mode", json_string(d->count_mode ? "count" : "track"));
	json_object_set_new(o, "sample", d->sampled ?
			    json_pack("{s:I,s:I}", "mean_bytes", (json_int_t)d->sample_bytes,
				      "seed", (json_int_t)d->sample_seed) : json_null());
	json_object_set_new(o, "heap", json_pack("{s:I,s:I,s:I,s:o,s:I,s:o}",
		"allocs", (json_int_t)d->allocs,
		"frees", (json_int_t)d->frees,
		"bytes_allocated", (json_int_t)d->bytes_allocated,
		"in_use_bytes", count_or_null(d->has_in_use_bytes, d->in_use_bytes),
		"in_use_blocks", (json_int_t)d->in_use_blocks,
		"peak_bytes", count_or_null(d->has_peak, d->peak_bytes)));
	heap = json_object_get(o, "heap");
	if (d->has_peak)
		json_object_set_new(heap, "peak_bytes_bound",
				    json_integer((json_int_t)d->peak_bytes_bound));
	if (d->has_peak_t)
		json_object_set_new(heap, "peak_t_s", json_real(d->peak_t_s));
	if (d->has_temporary)
		json_object_set_new(heap, "temporary", json_integer((json_int_t)d->temporary));
	json_object_set_new(o, "dump", dump_json(d));
	json_object_set_new(o, "leaks", asp_summary_leak_json(d));
	json_object_set_new(o, "error_summary", !d->has_error_summary ? json_null() :
		json_pack("{s:I,s:I,s:I,s:I}",
			  "errors", (json_int_t)d->errors,
			  "contexts", (json_int_t)d->error_contexts,
			  "suppressed", (json_int_t)d->errors_suppressed,
			  "suppressed_contexts", (json_int_t)d->error_contexts_suppressed));
	json_object_set_new(o, "guard", !d->has_guard ? json_null() :
		json_pack("{s:I,s:I,s:I,s:I}",
			  "mean", (json_int_t)d->guard_mean,
			  "slots", (json_int_t)d->guard_slots,
			  "guarded", (json_int_t)d->guard_guarded,
			  "live", (json_int_t)d->guard_live));
	json_object_set_new(o, "refs", json_pack("{s:I,s:I,s:I,s:I,s:o}",
		"acquires", (json_int_t)d->refs.acquires,
		"releases", (json_int_t)d->refs.releases,
		"objects_created", (json_int_t)d->refs.created,
		"objects_destroyed", (json_int_t)d->refs.destroyed,
		"cross_thread", count_or_null(d->refs.has_cross_thread, d->refs.cross_thread)));
	json_object_set_new(o, "functions", functions_json(d));
	json_object_set_new(o, "threads", threads_json(d));
	json_object_set_new(o, "threads_omitted", json_integer((json_int_t)d->threads_omitted));
	json_object_set_new(o, "histogram", histogram_json(d));
	json_object_set_new(o, "time", json_pack("{s:f,s:f,s:f}",
		"wall_s", d->wall_s, "user_s", d->user_s, "sys_s", d->sys_s));
	return o;
}
