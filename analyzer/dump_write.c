/* dump_write - the analyzer's one writer of a dump: a model as the JSON
 * text the loader reads, key for key as the shim writes it (shim/report.c,
 * dump_out): jansson's indented text for the parts of a fixed size, then
 * the arrays that grow with the stacks one element a line, so that a
 * merged dump of a million stacks is a million short lines. */
#include "dump_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The text of reals: as many digits as a double round-trips with, as the
 * shim's jansson writes them. */
#define FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* The largest bucket bound, written as a real (JSON integers stop at 2^63). */
#define LE_MAX 18446744073709551615.0

/* Truncated stacks' numbers on one line. */
#define CUT_PER_LINE 16

/* A writer: whether a value could not be made or stored. */
struct wr {
	FILE *out;
	bool oom;
};

static void put(struct wr *w, json_t *o, const char *key, json_t *v)
{
	if (!v || json_object_set_new(o, key, v) < 0)
		w->oom = true;
}

static void append(struct wr *w, json_t *a, json_t *v)
{
	if (!v || json_array_append_new(a, v) < 0)
		w->oom = true;
}

/* An object, or NULL with w->oom. */
static json_t *object(struct wr *w)
{
	json_t *o = json_object();

	if (!o)
		w->oom = true;
	return o;
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *jcount_or_null(bool known, uint64_t v)
{
	return known ? jint(v) : json_null();
}

/* key, or est_KEY in a sampled dump, whose per-stack figures are estimates. */
static const char *est(const asp_dump_t *d, const char *key, char buf[64])
{
	if (!d->sampled)
		return key;
	snprintf(buf, 64, "est_%s", key);
	return buf;
}

static json_t *strings(struct wr *w, const char *const *v, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		append(w, a, json_string(v[i]));
	return a;
}

/* --- the parts of a fixed size ------------------------------------------------------ */

/* "dump": why and when it was written. */
static json_t *dump_info_json(struct wr *w, const asp_dump_t *d)
{
	static const char *const reasons[] = { "exit", "interval", "signal" };
	json_t *o = object(w);

	if (!o)
		return NULL;
	put(w, o, "reason", json_string(reasons[d->reason]));
	if (d->has_dump_t)
		put(w, o, "t_s", json_real(d->dump_t_s));
	if (d->has_freeres)
		put(w, o, "freeres", json_boolean(d->freeres));
	if (d->reason == ASP_REASON_SIGNAL)
		put(w, o, "signal", json_pack("{s:i,s:s}", "number", d->signal,
					      "name", d->signal_name));
	return o;
}

/* The pid, ppid, exe and argv into o: "program", or a merged process. */
static void identity(struct wr *w, json_t *o, const asp_dump_t *d)
{
	put(w, o, "pid", json_integer(d->pid));
	if (d->has_ppid)
		put(w, o, "ppid", json_integer(d->ppid));
	put(w, o, "exe", json_string(d->exe));
	put(w, o, "argv", strings(w, d->argv, d->argc));
}

static json_t *time_json(struct wr *w, const asp_dump_t *d)
{
	json_t *o = json_pack("{s:f,s:f,s:f}", "wall_s", d->wall_s, "user_s", d->user_s,
			      "sys_s", d->sys_s);

	if (o && d->has_start_unix)
		put(w, o, "start_unix", json_real(d->start_unix));
	return o;
}

static json_t *options_json(struct wr *w, const asp_dump_t *d)
{
	const asp_options_t *x = &d->options;
	json_t *o = json_pack("{s:s,s:o}", "mode", d->count_mode ? "count" : "track",
			      "backtrace", jint(d->backtrace));

	if (!o)
		return NULL;
	if (x->unwind)
		put(w, o, "unwind", json_string(x->unwind));
	if (d->leak_check)
		put(w, o, "leak_check", json_string(d->leak_check));
	if (x->output)
		put(w, o, "output", json_string(x->output));
	if (x->has_snapshots)
		put(w, o, "snapshots", jint(x->snapshots));
	if (x->freeres)
		put(w, o, "freeres", json_string(x->freeres));
	if (x->has_interval_ms)
		put(w, o, "interval_ms", jint(x->interval_ms));
	if (x->has_sample)
		put(w, o, "sample", jint(x->sample));
	if (x->has_guard)
		put(w, o, "guard", jint(x->guard));
	return o;
}

static json_t *heap_json(struct wr *w, const asp_dump_t *d)
{
	json_t *h = json_pack("{s:o,s:o,s:o,s:o}", "allocs", jint(d->allocs),
			      "frees", jint(d->frees), "bytes_allocated", jint(d->bytes_allocated),
			      "in_use_blocks", jint(d->in_use_blocks));

	if (!h)
		return NULL;
	if (d->has_failed)
		put(w, h, "failed", jint(d->failed));
	if (d->has_untracked_frees)
		put(w, h, "untracked_frees", jint(d->untracked_frees));
	put(w, h, "in_use_bytes", jcount_or_null(d->has_in_use_bytes, d->in_use_bytes));
	put(w, h, "peak_bytes", jcount_or_null(d->has_peak, d->peak_bytes));
	if (d->has_peak_bytes_bound)
		put(w, h, "peak_bytes_bound", jint(d->peak_bytes_bound));
	if (d->has_peak_t)
		put(w, h, "peak_t_s", json_real(d->peak_t_s));
	if (d->has_temporary)
		put(w, h, "temporary", jint(d->temporary));
	return h;
}

static json_t *functions_json(struct wr *w, const asp_dump_t *d)
{
	json_t *o = object(w);

	for (size_t i = 0; o && i < d->nfns; i++) {
		const asp_fn_t *f = &d->fns[i];
		json_t *x = json_pack("{s:o}", "calls", jint(f->calls));

		if (x && f->cls == ASP_FN_ALLOC) {
			put(w, x, "bytes", jint(f->bytes));
			put(w, x, "failed", jint(f->failed));
			if (f->has_temporary)
				put(w, x, "temporary", jint(f->temporary));
		} else if (x && f->cls == ASP_FN_FREE) {
			put(w, x, "null", jint(f->null));
		}
		put(w, o, f->name, x);
	}
	return o;
}

static json_t *histogram_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nhist; i++)
		append(w, a, json_pack("{s:o,s:o}", "le", d->hist[i].le == UINT64_MAX ?
				       json_real(LE_MAX) : jint(d->hist[i].le),
				       "count", jint(d->hist[i].count)));
	return a;
}

static json_t *threads_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nthreads; i++) {
		const asp_thread_t *t = &d->threads[i];
		json_t *o = json_pack("{s:I,s:s,s:o,s:o,s:o,s:o,s:o}", "tid", (json_int_t)t->tid,
				      "name", t->name, "allocs", jint(t->allocs),
				      "frees", jint(t->frees),
				      "bytes_allocated", jint(t->bytes_allocated),
				      "ref_acquires", jint(t->ref_acquires),
				      "ref_releases", jint(t->ref_releases));

		if (o && t->has_exited)
			put(w, o, "exited", json_boolean(t->exited));
		if (o && t->has_pid)
			put(w, o, "pid", json_integer(t->pid));
		append(w, a, o);
	}
	return a;
}

static json_t *refs_json(const asp_dump_t *d)
{
	const asp_refs_t *r = &d->refs;

	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "acquires", jint(r->acquires),
			 "releases", jint(r->releases), "objects_created", jint(r->created),
			 "objects_destroyed", jint(r->destroyed),
			 "cross_thread", jcount_or_null(r->has_cross_thread, r->cross_thread));
}

static json_t *leaks_json(struct wr *w, const asp_dump_t *d)
{
	json_t *o = object(w);

	for (int k = 0; o && k < ASP_LEAK_NKINDS; k++)
		put(w, o, asp_leak_key[k], json_pack("{s:o,s:o}", "bytes",
			jint(d->leaks[k].bytes), "blocks", jint(d->leaks[k].blocks)));
	return o;
}

/* An interposer's call into o: PREFIX_pc and PREFIX_frames, when said. */
static void call_json(struct wr *w, json_t *o, const char *prefix, const asp_call_t *c)
{
	char key[32];

	snprintf(key, sizeof key, "%s_pc", prefix);
	if (c->pc)
		put(w, o, key, jint(c->pc));
	snprintf(key, sizeof key, "%s_frames", prefix);
	if (c->nframes)
		put(w, o, key, strings(w, c->frames, c->nframes));
}

static json_t *block_json(struct wr *w, const asp_heap_error_t *e)
{
	json_t *b = json_pack("{s:o,s:I,s:o,s:s,s:o}", "address", jint(e->block_address),
			      "offset", (json_int_t)e->block_offset, "size", jint(e->block_size),
			      "function", e->block_function, "alloc_stack", jint(e->alloc_stack));

	if (!b)
		return NULL;
	call_json(w, b, "alloc", &e->alloc);
	if (e->where == ASP_WHERE_FREED) {
		put(w, b, "free_stack", jint(e->free_stack));
		call_json(w, b, "free", &e->free);
	}
	return b;
}

static json_t *error_json(struct wr *w, const asp_heap_error_t *e)
{
	json_t *o = json_pack("{s:s,s:o}", "kind", asp_herr_kind_name[e->kind],
			      "count", jint(e->count));

	if (!o)
		return NULL;
	if (asp_herr_is_access(e->kind)) {
		put(w, o, "size", jint(e->access_size));
		put(w, o, "stack", jint(e->stack));
	} else {
		put(w, o, "function", json_string(e->function));
		put(w, o, "stack", jint(e->stack));
		call_json(w, o, "call", &e->call);
	}
	if (e->kind == ASP_HERR_FISHY_VALUE) {
		put(w, o, "argument", json_string(e->argument));
		put(w, o, "value", json_integer(e->value));
		return o;
	}
	put(w, o, "address", jint(e->address));
	if (e->where == ASP_WHERE_GLOBAL) {
		put(w, o, "symbol", json_string(e->symbol));
		put(w, o, "offset", jint(e->offset));
	}
	put(w, o, "where", json_string(asp_herr_where_name[e->where]));
	if (e->where == ASP_WHERE_STACK)
		put(w, o, "thread", jint(e->thread));
	if (asp_herr_has_block(e->where))
		put(w, o, "block", block_json(w, e));
	return o;
}

static json_t *errors_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nheap_errors; i++)
		append(w, a, error_json(w, &d->heap_errors[i]));
	return a;
}

static json_t *snapshot_json(struct wr *w, const asp_dump_t *d, const asp_snapshot_t *s)
{
	char k1[64], k2[64];
	json_t *o = json_pack("{s:f,s:o,s:o,s:o,s:o}", "t_s", s->t_s,
			      "bytes_allocated", jint(s->bytes_allocated),
			      "bytes_freed", jint(s->bytes_freed),
			      "in_use_bytes", jint(s->in_use_bytes),
			      "in_use_blocks", jint(s->in_use_blocks));
	json_t *a;

	if (!o)
		return NULL;
	if (s->peak)
		put(w, o, "peak", json_true());
	if (!s->has_detail)
		return o;
	a = json_array();
	for (size_t i = 0; a && i < s->ndetail; i++)
		append(w, a, json_pack("{s:o,s:o,s:o}", "stack", jint(s->detail[i].stack),
				       est(d, "bytes", k1), jint(s->detail[i].bytes),
				       est(d, "blocks", k2), jint(s->detail[i].blocks)));
	put(w, o, "detail", a);
	return o;
}

static json_t *snapshots_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nsnapshots; i++)
		append(w, a, snapshot_json(w, d, &d->snapshots[i]));
	return a;
}

static json_t *modules_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nmodules; i++) {
		const asp_module_t *x = &d->modules[i];
		json_t *o = json_pack("{s:s,s:o}", "path", x->path, "base", jint(x->base));

		if (o && x->has_start)
			put(w, o, "start", jint(x->start));
		if (o && x->end)
			put(w, o, "end", jint(x->end));
		if (o && x->build_id)
			put(w, o, "build_id", json_string(x->build_id));
		append(w, a, o);
	}
	return a;
}

static json_t *guard_json(const asp_dump_t *d)
{
	return json_pack("{s:o,s:o,s:o,s:o}", "mean", jint(d->guard_mean),
			 "slots", jint(d->guard_slots), "guarded", jint(d->guard_guarded),
			 "live", jint(d->guard_live));
}

/* A merged dump's processes: each one's parts of its own dump. */
static json_t *processes_json(struct wr *w, const asp_dump_t *d)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < d->nprocesses; i++) {
		const asp_dump_t *p = d->processes[i].d;
		json_t *o = object(w);

		if (!o)
			break;
		identity(w, o, p);
		put(w, o, "file", json_string(p->file));
		put(w, o, "start_s", json_real(d->processes[i].start_s));
		put(w, o, "heap", heap_json(w, p));
		put(w, o, "time", time_json(w, p));
		put(w, o, "dump", dump_info_json(w, p));
		if (p->has_guard)
			put(w, o, "guard", guard_json(p));
		append(w, a, o);
	}
	return a;
}

/* Everything but the arrays that grow with the stacks. */
static json_t *fixed_json(struct wr *w, const asp_dump_t *d)
{
	json_t *root = json_pack("{s:s,s:i}", "format", "allocspy-dump",
				 "version", ASP_DUMP_VERSION), *o;

	if (!root) {
		w->oom = true;
		return NULL;
	}
	put(w, root, "dump", dump_info_json(w, d));
	if ((o = object(w))) {
		identity(w, o, d);
		put(w, root, "program", o);
	}
	put(w, root, "time", time_json(w, d));
	put(w, root, "options", options_json(w, d));
	put(w, root, "heap", heap_json(w, d));
	put(w, root, "functions", functions_json(w, d));
	put(w, root, "histogram", histogram_json(w, d));
	put(w, root, "threads", threads_json(w, d));
	if (d->threads_omitted)
		put(w, root, "threads_omitted", jint(d->threads_omitted));
	put(w, root, "refs", refs_json(d));
	if (d->sampled) {
		o = json_pack("{s:o}", "mean_bytes", jint(d->sample_bytes));
		if (o && d->has_sample_seed)
			put(w, o, "seed", jint(d->sample_seed));
		put(w, root, "sample", o);
	}
	if (d->has_leaks)
		put(w, root, "leaks", leaks_json(w, d));
	if (d->has_heap_errors) {
		put(w, root, "errors", errors_json(w, d));
		put(w, root, "error_summary", json_pack("{s:o,s:o,s:o,s:o}",
			"errors", jint(d->errors), "contexts", jint(d->error_contexts),
			"suppressed", jint(d->errors_suppressed),
			"suppressed_contexts", jint(d->error_contexts_suppressed)));
	}
	if (d->has_guard)
		put(w, root, "guard", guard_json(d));
	if (d->nsnapshots)
		put(w, root, "snapshots", snapshots_json(w, d));
	if (d->has_snapshot_info)
		put(w, root, "snapshot_info", json_pack("{s:o,s:s}", "max",
			jint(d->snapshot_max), "detail", d->detail_callers ? "callers" : "stacks"));
	if (d->stack_stats_omitted)
		put(w, root, "stack_stats_omitted", jint(d->stack_stats_omitted));
	put(w, root, "modules", modules_json(w, d));
	if (d->nprocesses)
		put(w, root, "processes", processes_json(w, d));
	return root;
}

/* --- the arrays that grow with the stacks, one element a line ----------------------------- */

/* ",\n \"KEY\": [" */
static void open_array(struct wr *w, const char *key)
{
	fprintf(w->out, ",\n \"%s\": [", key);
}

/* Element i of an array of n: v on a line of its own (taken over). */
static void element(struct wr *w, size_t i, json_t *v)
{
	char *text = v ? json_dumps(v, FLAGS) : NULL;

	json_decref(v);
	if (!text) {
		w->oom = true;
		return;
	}
	fprintf(w->out, "%s  %s", i ? ",\n" : "\n", text);
	free(text);
}

static void close_array(struct wr *w, size_t n)
{
	fputs(n ? "\n ]" : "]", w->out);
}

static json_t *record_json(struct wr *w, const asp_dump_t *d, const asp_record_t *r)
{
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b}",
			      "kind", asp_leak_kind_name[r->kind],
			      "bytes", jint(r->bytes), "blocks", jint(r->blocks),
			      "indirect_bytes", jint(r->indirect_bytes),
			      "indirect_blocks", jint(r->indirect_blocks),
			      "stack", jint(r->stack), "suppressed", r->suppressed);

	if (!o)
		return NULL;
	if (r->suppression)
		put(w, o, "suppression", json_string(r->suppression));
	if (d->sampled)
		put(w, o, "sampled", json_boolean(!r->unsampled));
	if (r->alloc_fn)
		put(w, o, "alloc_fn", json_string(r->alloc_fn));
	if (r->alloc_pc)
		put(w, o, "alloc_pc", jint(r->alloc_pc));
	if (r->nalloc_stack)
		put(w, o, "alloc_stack", strings(w, r->alloc_stack, r->nalloc_stack));
	return o;
}

static json_t *thread_stack_json(struct wr *w, const asp_dump_t *d,
				 const asp_thread_stack_t *t)
{
	char k1[64], k2[64];
	json_t *o = json_pack("{s:I,s:o}", "tid", (json_int_t)t->tid, "stack", jint(t->stack));

	if (!o)
		return NULL;
	if (d->sampled)
		put(w, o, "samples", jint(t->samples));
	put(w, o, est(d, "allocs", k1), jint(t->allocs));
	put(w, o, est(d, "bytes", k2), jint(t->bytes));
	if (t->has_pid)
		put(w, o, "pid", json_integer(t->pid));
	return o;
}

static json_t *stack_stat_json(struct wr *w, const asp_dump_t *d, const asp_stack_stat_t *s)
{
	char k[64];
	json_t *o = json_pack("{s:o}", "stack", jint(s->stack));

	if (!o)
		return NULL;
	if (d->sampled)
		put(w, o, "samples", jint(s->samples));
	put(w, o, est(d, "allocs", k), jint(s->allocs));
	put(w, o, est(d, "bytes", k), jint(s->bytes));
	put(w, o, est(d, "in_use_blocks", k), jint(s->in_use_blocks));
	put(w, o, est(d, "in_use_bytes", k), jint(s->in_use_bytes));
	if (s->has_temporary)
		put(w, o, est(d, "temporary", k), jint(s->temporary));
	if (s->has_peak) {
		put(w, o, est(d, "peak_bytes", k), jint(s->peak_bytes));
		put(w, o, est(d, "peak_blocks", k), jint(s->peak_blocks));
	}
	return o;
}

/* "stacks", then "truncated_stacks": the numbers of those cut at the
 * depth limit, CUT_PER_LINE a line. */
static void stacks_out(struct wr *w, const asp_dump_t *d)
{
	size_t cut = 0;

	open_array(w, "stacks");
	for (size_t i = 0; i < d->nstacks; i++) {
		const asp_stack_t *s = &d->stacks[i];

		fputs(i ? ",\n  [" : "\n  [", w->out);
		for (size_t j = 0; j < s->n; j++)
			fprintf(w->out, "%s%llu", j ? ", " : "",
				(unsigned long long)s->frames[j]);
		putc(']', w->out);
	}
	close_array(w, d->nstacks);
	open_array(w, "truncated_stacks");
	for (size_t i = 0; i < d->nstacks; i++) {
		if (!d->stacks[i].truncated)
			continue;
		fputs(cut % CUT_PER_LINE ? ", " : cut ? ",\n  " : "\n  ", w->out);
		fprintf(w->out, "%zu", i);
		cut++;
	}
	close_array(w, cut);
}

int asp_dump_write(FILE *out, const asp_dump_t *d)
{
	struct wr w = { .out = out };
	json_t *root = fixed_json(&w, d);
	char *text = root && !w.oom ? json_dumps(root, JSON_INDENT(1) | FLAGS) : NULL;
	size_t len = text ? strlen(text) : 0;

	json_decref(root);
	/* The object's closing "\n}" comes after the arrays. */
	if (len < 2 || text[len - 1] != '}') {
		free(text);
		return -ENOMEM;
	}
	fwrite(text, 1, len - 2, out);
	free(text);
	if (d->has_records) {
		open_array(&w, "loss_records");
		for (size_t i = 0; i < d->nrecords; i++)
			element(&w, i, record_json(&w, d, &d->records[i]));
		close_array(&w, d->nrecords);
	}
	if (d->has_thread_stacks) {
		open_array(&w, "thread_stacks");
		for (size_t i = 0; i < d->nthread_stacks; i++)
			element(&w, i, thread_stack_json(&w, d, &d->thread_stacks[i]));
		close_array(&w, d->nthread_stacks);
	}
	if (d->has_stack_stats) {
		open_array(&w, "stack_stats");
		for (size_t i = 0; i < d->nstack_stats; i++)
			element(&w, i, stack_stat_json(&w, d, &d->stack_stats[i]));
		close_array(&w, d->nstack_stats);
	}
	stacks_out(&w, d);
	fputs("\n}\n", out);
	return w.oom ? -ENOMEM : 0;
}
