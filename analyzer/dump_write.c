/* dump_write - the analyzer's one writer of a dump: a model as the JSON
 * text the loader reads, key for key as the shim writes it (shim/report.c,
 * dump_out), its name, version and top-level keys common/dumpfmt.h's:
 * jansson's indented text for the parts of a fixed size, then
 * the arrays that grow with the stacks one element a line, so that a
 * merged dump of a million stacks is a million short lines.
 *
 * A key the model says the dump lacks is left out: json_pack's "o*" and
 * "s*" leave out a key whose value is NULL. */
#include "dump_write.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dumpfmt.h"

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

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* v when the dump has it, else NULL: the key is left out. */
static json_t *jint_if(bool has, uint64_t v)
{
	return has ? jint(v) : NULL;
}

/* v when known, else null (count mode knows no sizes). */
static json_t *jint_or_null(bool known, uint64_t v)
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

/* The names v[0..n), or NULL (left out) when there are none. */
static json_t *strings(struct wr *w, const char *const *v, size_t n)
{
	json_t *a = n ? json_array() : NULL;

	for (size_t i = 0; a && i < n; i++)
		append(w, a, json_string(v[i]));
	return a;
}

/* An element of one of d's arrays: the i-th. */
typedef json_t *element_fn(struct wr *w, const asp_dump_t *d, size_t i);

/* The array of d's n elements that fn makes. */
static json_t *array_of(struct wr *w, const asp_dump_t *d, size_t n, element_fn *fn)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		append(w, a, fn(w, d, i));
	return a;
}

/* --- the parts of a fixed size ------------------------------------------------------ */

/* "dump": why and when it was written. */
static json_t *dump_info_json(const asp_dump_t *d)
{
	static const char *const reasons[] = { "exit", "interval", "signal" };

	return json_pack("{s:s,s:o*,s:o*,s:o*}", "reason", reasons[d->reason],
			 "t_s", d->has_dump_t ? json_real(d->dump_t_s) : NULL,
			 "freeres", d->has_freeres ? json_boolean(d->freeres) : NULL,
			 "signal", d->reason == ASP_REASON_SIGNAL ? json_pack("{s:i,s:s}",
				"number", d->signal, "name", d->signal_name) : NULL);
}

/* The pid, ppid, exe and argv: "program", or the first keys of a merged
 * process. */
static json_t *identity_json(struct wr *w, const asp_dump_t *d)
{
	json_t *argv = json_array();

	for (size_t i = 0; argv && i < d->argc; i++)
		append(w, argv, json_string(d->argv[i]));
	return json_pack("{s:I,s:o*,s:s,s:o}", "pid", (json_int_t)d->pid,
			 "ppid", d->has_ppid ? json_integer(d->ppid) : NULL,
			 "exe", d->exe, "argv", argv);
}

static json_t *time_json(const asp_dump_t *d)
{
	return json_pack("{s:f,s:f,s:f,s:o*}", "wall_s", d->wall_s, "user_s", d->user_s,
			 "sys_s", d->sys_s,
			 "start_unix", d->has_start_unix ? json_real(d->start_unix) : NULL);
}

static json_t *options_json(const asp_dump_t *d)
{
	const asp_options_t *x = &d->options;

	return json_pack("{s:s,s:o,s:s*,s:s*,s:s*,s:o*,s:s*,s:o*,s:o*,s:o*}",
			 "mode", d->count_mode ? "count" : "track",
			 "backtrace", jint(d->backtrace), "unwind", x->unwind,
			 "leak_check", d->leak_check, "output", x->output,
			 "snapshots", jint_if(x->has_snapshots, x->snapshots),
			 "freeres", x->freeres,
			 "interval_ms", jint_if(x->has_interval_ms, x->interval_ms),
			 "sample", jint_if(x->has_sample, x->sample),
			 "guard", jint_if(x->has_guard, x->guard));
}

static json_t *heap_json(const asp_dump_t *d)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o*,s:o*,s:o,s:o,s:o*,s:o*,s:o*}",
			 "allocs", jint(d->allocs), "frees", jint(d->frees),
			 "bytes_allocated", jint(d->bytes_allocated),
			 "in_use_blocks", jint(d->in_use_blocks),
			 "failed", jint_if(d->has_failed, d->failed),
			 "untracked_frees", jint_if(d->has_untracked_frees, d->untracked_frees),
			 "in_use_bytes", jint_or_null(d->has_in_use_bytes, d->in_use_bytes),
			 "peak_bytes", jint_or_null(d->has_peak, d->peak_bytes),
			 "peak_bytes_bound", jint_if(d->has_peak_bytes_bound, d->peak_bytes_bound),
			 "peak_t_s", d->has_peak_t ? json_real(d->peak_t_s) : NULL,
			 "temporary", jint_if(d->has_temporary, d->temporary));
}

/* A function's counts: its calls, and what its class has. */
static json_t *function_json(const asp_fn_t *f)
{
	bool alloc = f->cls == ASP_FN_ALLOC;

	return json_pack("{s:o,s:o*,s:o*,s:o*,s:o*}", "calls", jint(f->calls),
			 "bytes", jint_if(alloc, f->bytes), "failed", jint_if(alloc, f->failed),
			 "temporary", jint_if(alloc && f->has_temporary, f->temporary),
			 "null", jint_if(f->cls == ASP_FN_FREE, f->null));
}

static json_t *functions_json(struct wr *w, const asp_dump_t *d)
{
	json_t *o = json_object();

	for (size_t i = 0; o && i < d->nfns; i++)
		put(w, o, d->fns[i].name, function_json(&d->fns[i]));
	return o;
}

static json_t *bucket_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_bucket_t *b = &d->hist[i];

	return json_pack("{s:o,s:o}", "le", b->le == UINT64_MAX ? json_real(LE_MAX) : jint(b->le),
			 "count", jint(b->count));
}

static json_t *thread_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_thread_t *t = &d->threads[i];

	return json_pack("{s:I,s:s,s:o,s:o,s:o,s:o,s:o,s:o*,s:o*}", "tid", (json_int_t)t->tid,
			 "name", t->name, "allocs", jint(t->allocs), "frees", jint(t->frees),
			 "bytes_allocated", jint(t->bytes_allocated),
			 "ref_acquires", jint(t->ref_acquires),
			 "ref_releases", jint(t->ref_releases),
			 "exited", t->has_exited ? json_boolean(t->exited) : NULL,
			 "pid", t->has_pid ? json_integer(t->pid) : NULL);
}

static json_t *refs_json(const asp_dump_t *d)
{
	const asp_refs_t *r = &d->refs;

	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "acquires", jint(r->acquires),
			 "releases", jint(r->releases), "objects_created", jint(r->created),
			 "objects_destroyed", jint(r->destroyed),
			 "cross_thread", jint_or_null(r->has_cross_thread, r->cross_thread));
}

static json_t *leaks_json(struct wr *w, const asp_dump_t *d)
{
	json_t *o = json_object();

	for (int k = 0; o && k < ASP_LEAK_NKINDS; k++)
		put(w, o, asp_leak_key[k], json_pack("{s:o,s:o}", "bytes",
			jint(d->leaks[k].bytes), "blocks", jint(d->leaks[k].blocks)));
	return o;
}

/* The block an error is about, with the calls that made it and, freed,
 * that freed it. */
static json_t *block_json(struct wr *w, const asp_heap_error_t *e)
{
	bool freed = e->where == ASP_WHERE_FREED;

	return json_pack("{s:o,s:I,s:o,s:s,s:o,s:o*,s:o*,s:o*,s:o*,s:o*}",
			 "address", jint(e->block_address), "offset", (json_int_t)e->block_offset,
			 "size", jint(e->block_size), "function", e->block_function,
			 "alloc_stack", jint(e->alloc_stack),
			 "alloc_pc", jint_if(e->alloc.pc, e->alloc.pc),
			 "alloc_frames", strings(w, e->alloc.frames, e->alloc.nframes),
			 "free_stack", jint_if(freed, e->free_stack),
			 "free_pc", jint_if(freed && e->free.pc, e->free.pc),
			 "free_frames", freed ? strings(w, e->free.frames, e->free.nframes) : NULL);
}

/* A context of heap errors: a call's (a free, a fishy size) with the
 * interposer's frames, or an access's, which has none; then the address
 * and what it is in. */
static json_t *error_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_heap_error_t *e = &d->heap_errors[i];
	bool access = asp_herr_is_access(e->kind), global = e->where == ASP_WHERE_GLOBAL;
	json_t *o = json_pack("{s:s,s:o,s:o*,s:s*,s:o,s:o*,s:o*}",
			      "kind", asp_herr_kind_name[e->kind], "count", jint(e->count),
			      "size", jint_if(access, e->access_size), "function", e->function,
			      "stack", jint(e->stack), "call_pc", jint_if(e->call.pc, e->call.pc),
			      "call_frames", strings(w, e->call.frames, e->call.nframes));

	if (!o || e->kind == ASP_HERR_FISHY_VALUE) {
		put(w, o, "argument", json_string(e->argument));
		put(w, o, "value", json_integer(e->value));
		return o;
	}
	if (json_object_update_new(o, json_pack("{s:o,s:s*,s:o*,s:s,s:o*,s:o*}",
			"address", jint(e->address), "symbol", global ? e->symbol : NULL,
			"offset", jint_if(global, e->offset),
			"where", asp_herr_where_name[e->where],
			"thread", jint_if(e->where == ASP_WHERE_STACK, e->thread),
			"block", asp_herr_has_block(e->where) ? block_json(w, e) : NULL)) < 0)
		w->oom = true;
	return o;
}

static json_t *snapshot_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_snapshot_t *s = &d->snapshots[i];
	json_t *detail = s->has_detail ? json_array() : NULL;
	char k1[64], k2[64];

	for (size_t j = 0; detail && j < s->ndetail; j++)
		append(w, detail, json_pack("{s:o,s:o,s:o}", "stack", jint(s->detail[j].stack),
					    est(d, "bytes", k1), jint(s->detail[j].bytes),
					    est(d, "blocks", k2), jint(s->detail[j].blocks)));
	return json_pack("{s:f,s:o,s:o,s:o,s:o,s:o*,s:o*}", "t_s", s->t_s,
			 "bytes_allocated", jint(s->bytes_allocated),
			 "bytes_freed", jint(s->bytes_freed), "in_use_bytes", jint(s->in_use_bytes),
			 "in_use_blocks", jint(s->in_use_blocks),
			 "peak", s->peak ? json_true() : NULL, "detail", detail);
}

static json_t *module_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_module_t *x = &d->modules[i];

	return json_pack("{s:s,s:o,s:o*,s:o*,s:s*}", "path", x->path, "base", jint(x->base),
			 "start", jint_if(x->has_start, x->start), "end", jint_if(x->end, x->end),
			 "build_id", x->build_id);
}

static json_t *guard_json(const asp_dump_t *d)
{
	return json_pack("{s:o,s:o,s:o,s:o}", "mean", jint(d->guard_mean),
			 "slots", jint(d->guard_slots), "guarded", jint(d->guard_guarded),
			 "live", jint(d->guard_live));
}

/* A process of a merged dump: its parts of its own dump. */
static json_t *process_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_dump_t *p = d->processes[i].d;
	json_t *o = identity_json(w, p);

	put(w, o, "file", json_string(p->file));
	put(w, o, "start_s", json_real(d->processes[i].start_s));
	put(w, o, ASP_KEY_HEAP, heap_json(p));
	put(w, o, ASP_KEY_TIME, time_json(p));
	put(w, o, ASP_KEY_DUMP, dump_info_json(p));
	if (p->has_guard)
		put(w, o, ASP_KEY_GUARD, guard_json(p));
	return o;
}

/* Everything but the arrays that grow with the stacks. */
static json_t *fixed_json(struct wr *w, const asp_dump_t *d)
{
	json_t *root = json_pack("{s:s,s:i}", ASP_KEY_FORMAT, ASP_DUMP_FORMAT,
				 ASP_KEY_VERSION, ASP_DUMP_VERSION);

	if (!root) {
		w->oom = true;
		return NULL;
	}
	put(w, root, ASP_KEY_DUMP, dump_info_json(d));
	put(w, root, ASP_KEY_PROGRAM, identity_json(w, d));
	put(w, root, ASP_KEY_TIME, time_json(d));
	put(w, root, ASP_KEY_OPTIONS, options_json(d));
	put(w, root, ASP_KEY_HEAP, heap_json(d));
	put(w, root, ASP_KEY_FUNCTIONS, functions_json(w, d));
	put(w, root, ASP_KEY_HISTOGRAM, array_of(w, d, d->nhist, bucket_json));
	put(w, root, ASP_KEY_THREADS, array_of(w, d, d->nthreads, thread_json));
	if (d->threads_omitted)
		put(w, root, ASP_KEY_THREADS_OMITTED, jint(d->threads_omitted));
	put(w, root, ASP_KEY_REFS, refs_json(d));
	if (d->sampled)
		put(w, root, ASP_KEY_SAMPLE, json_pack("{s:o,s:o*}",
			"mean_bytes", jint(d->sample_bytes),
			"seed", jint_if(d->has_sample_seed, d->sample_seed)));
	if (d->has_leaks)
		put(w, root, ASP_KEY_LEAKS, leaks_json(w, d));
	if (d->has_heap_errors) {
		put(w, root, ASP_KEY_ERRORS, array_of(w, d, d->nheap_errors, error_json));
		put(w, root, ASP_KEY_ERROR_SUMMARY, json_pack("{s:o,s:o,s:o,s:o}",
			"errors", jint(d->errors), "contexts", jint(d->error_contexts),
			"suppressed", jint(d->errors_suppressed),
			"suppressed_contexts", jint(d->error_contexts_suppressed)));
	}
	if (d->has_guard)
		put(w, root, ASP_KEY_GUARD, guard_json(d));
	if (d->nsnapshots)
		put(w, root, ASP_KEY_SNAPSHOTS, array_of(w, d, d->nsnapshots, snapshot_json));
	if (d->has_snapshot_info)
		put(w, root, ASP_KEY_SNAPSHOT_INFO, json_pack("{s:o,s:s}", "max",
			jint(d->snapshot_max), "detail", d->detail_callers ? "callers" : "stacks"));
	if (d->stack_stats_omitted)
		put(w, root, ASP_KEY_STACK_STATS_OMITTED, jint(d->stack_stats_omitted));
	put(w, root, ASP_KEY_MODULES, array_of(w, d, d->nmodules, module_json));
	if (d->nprocesses)
		put(w, root, ASP_KEY_PROCESSES, array_of(w, d, d->nprocesses, process_json));
	return root;
}

/* --- the arrays that grow with the stacks, one element a line ----------------------------- */

/* ",\n \"KEY\": [" */
static void open_array(struct wr *w, const char *key)
{
	fprintf(w->out, ",\n \"%s\": [", key);
}

static void close_array(struct wr *w, size_t n)
{
	fputs(n ? "\n ]" : "]", w->out);
}

/* ",\n \"KEY\": [", then d's n elements that fn makes, one a line. */
static void lines_of(struct wr *w, const asp_dump_t *d, const char *key, size_t n,
		     element_fn *fn)
{
	open_array(w, key);
	for (size_t i = 0; i < n; i++) {
		json_t *v = fn(w, d, i);
		char *text = v ? json_dumps(v, FLAGS) : NULL;

		json_decref(v);
		if (!text) {
			w->oom = true;
			continue;
		}
		fprintf(w->out, "%s  %s", i ? ",\n" : "\n", text);
		free(text);
	}
	close_array(w, n);
}

static json_t *record_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_record_t *r = &d->records[i];

	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b,s:s*,s:o*,s:s*,s:o*,s:o*}",
			 "kind", asp_leak_kind_name[r->kind],
			 "bytes", jint(r->bytes), "blocks", jint(r->blocks),
			 "indirect_bytes", jint(r->indirect_bytes),
			 "indirect_blocks", jint(r->indirect_blocks),
			 "stack", jint(r->stack), "suppressed", r->suppressed,
			 "suppression", r->suppression,
			 "sampled", d->sampled ? json_boolean(!r->unsampled) : NULL,
			 "alloc_fn", r->alloc_fn, "alloc_pc", jint_if(r->alloc_pc, r->alloc_pc),
			 "alloc_stack", strings(w, r->alloc_stack, r->nalloc_stack));
}

static json_t *thread_stack_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_thread_stack_t *t = &d->thread_stacks[i];
	char k1[64], k2[64];

	return json_pack("{s:I,s:o,s:o*,s:o,s:o,s:o*}", "tid", (json_int_t)t->tid,
			 "stack", jint(t->stack), "samples", jint_if(d->sampled, t->samples),
			 est(d, "allocs", k1), jint(t->allocs), est(d, "bytes", k2), jint(t->bytes),
			 "pid", t->has_pid ? json_integer(t->pid) : NULL);
}

static json_t *stack_stat_json(struct wr *w, const asp_dump_t *d, size_t i)
{
	const asp_stack_stat_t *s = &d->stack_stats[i];
	char k[7][64];

	return json_pack("{s:o,s:o*,s:o,s:o,s:o,s:o,s:o*,s:o*,s:o*}", "stack", jint(s->stack),
			 "samples", jint_if(d->sampled, s->samples),
			 est(d, "allocs", k[0]), jint(s->allocs), est(d, "bytes", k[1]), jint(s->bytes),
			 est(d, "in_use_blocks", k[2]), jint(s->in_use_blocks),
			 est(d, "in_use_bytes", k[3]), jint(s->in_use_bytes),
			 est(d, "temporary", k[4]), jint_if(s->has_temporary, s->temporary),
			 est(d, "peak_bytes", k[5]), jint_if(s->has_peak, s->peak_bytes),
			 est(d, "peak_blocks", k[6]), jint_if(s->has_peak, s->peak_blocks));
}

/* "stacks", then "truncated_stacks": the numbers of those cut at the
 * depth limit, CUT_PER_LINE a line. */
static void stacks_out(struct wr *w, const asp_dump_t *d)
{
	size_t cut = 0;

	open_array(w, ASP_KEY_STACKS);
	for (size_t i = 0; i < d->nstacks; i++) {
		const asp_stack_t *s = &d->stacks[i];

		fputs(i ? ",\n  [" : "\n  [", w->out);
		for (size_t j = 0; j < s->n; j++)
			fprintf(w->out, "%s%llu", j ? ", " : "",
				(unsigned long long)s->frames[j]);
		putc(']', w->out);
	}
	close_array(w, d->nstacks);
	open_array(w, ASP_KEY_TRUNCATED_STACKS);
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
	if (d->has_records)
		lines_of(&w, d, ASP_KEY_LOSS_RECORDS, d->nrecords, record_json);
	if (d->has_thread_stacks)
		lines_of(&w, d, ASP_KEY_THREAD_STACKS, d->nthread_stacks, thread_stack_json);
	if (d->has_stack_stats)
		lines_of(&w, d, ASP_KEY_STACK_STATS, d->nstack_stats, stack_stat_json);
	stacks_out(&w, d);
	fputs("\n}\n", out);
	return w.oom ? -ENOMEM : 0;
}
