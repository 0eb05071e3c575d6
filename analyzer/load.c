/* load - reads an allocspy dump (common/dumpfmt.h),
 * validates every key the reports use, and holds it as a C model. */
#include "load.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fns.h"

const char *const asp_herr_kind_name[ASP_HERR_NKINDS] = {
	"invalid_free", "mismatched_free", "fishy_value", "invalid_read", "invalid_write",
	"overwritten"
};

const char *const asp_herr_where_name[ASP_WHERE_N] = {
	"", "block", "freed", "stack", "global", "unknown", "after", "before"
};

/* Every function the shim interposes (common/fns.h), in the dump's order. */
static const struct fn_info {
	const char *name;
	const char *symbol;
	enum asp_fn_role role;
	enum asp_family family;
	bool strdup_family;	/* valgrind shows malloc above it */
} fn_table[] = {
#define FN_INFO(id, name, role, family, sym, a0, a1) \
	{ name, #sym, ASP_ROLE_##role, ASP_FAMILY_##family, sizeof(a0) > 1 },
	ASP_FNS(FN_INFO)
#undef FN_INFO
};
#define FN_TABLE_N (sizeof fn_table / sizeof fn_table[0])

static const enum asp_fn_class class_of_role[] = {
	[ASP_ROLE_ALLOC] = ASP_FN_ALLOC,
	[ASP_ROLE_FREE] = ASP_FN_FREE,
	[ASP_ROLE_QUERY] = ASP_FN_QUERY,
};

/* Where the reports list fn_table[k]: C's allocation functions, then
 * C++'s, then the rest, each in the dump's order; a function the table
 * does not know comes last. */
static int report_order(size_t k)
{
	int group = fn_table[k].role != ASP_ROLE_ALLOC ? 2
		  : fn_table[k].family != ASP_FAMILY_MALLOC;

	return group * (int)FN_TABLE_N + (int)k;
}
#define ORDER_UNKNOWN (3 * (int)FN_TABLE_N)

static const struct fn_info *fn_info(const char *name)
{
	for (size_t k = 0; k < FN_TABLE_N; k++)
		if (strcmp(fn_table[k].name, name) == 0)
			return &fn_table[k];
	return NULL;
}

const char *asp_fn_symbol(const char *name)
{
	const struct fn_info *f = fn_info(name);

	return f ? f->symbol : name;
}

/* Limits on array lengths, far above anything the shim writes. */
#define MAX_FRAMES 4096		/* frames in one stack */
#define MAX_ARGS 1000000	/* argv entries */
#define MAX_SECONDS 1e9		/* about 31 years */
#define MAX_START_UNIX 1e11	/* the year 5138 */

/* The reader: every getter records the first problem and from then on
 * returns empty values, so the loader checks once at the end. */
struct rd {
	char *err;
	bool failed;
	asp_dump_t *keeper;	/* holds the strings kept (keep) */
};

static void fail(struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void fail(struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failed)
		return;
	r->failed = true;
	va_start(ap, fmt);
	vsnprintf(r->err, ASP_ERR_MAX, fmt, ap);
	va_end(ap);
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a real number";
	case JSON_TRUE:
	case JSON_FALSE: return "a boolean";
	case JSON_NULL: return "null";
	}
	return "something else";
}

/* Paths for messages ("threads[3].tid") fit in 128 bytes: the keys are
 * ours, and the one from the dump (a function name) is at most 64. */
static const char *fit(char buf[128], int len)
{
	if (len >= 128)
		memcpy(buf + 124, "...", 4);
	return buf;
}

/* where + "." + key, or where + "[i]". */
static const char *at(char buf[128], const char *where, const char *key)
{
	return fit(buf, snprintf(buf, 128, "%s%s%s", where, *where ? "." : "",
				 key));
}

static const char *at_index(char buf[128], const char *where, size_t i)
{
	return fit(buf, snprintf(buf, 128, "%s[%zu]", where, i));
}

/* The member key of obj, which must have type want unless it is absent
 * (NULL; a failure when required) or null and nullable. */
static json_t *member(struct rd *r, json_t *obj, const char *where,
		      const char *key, json_type want, const char *want_name,
		      bool required)
{
	char buf[128];
	json_t *v;

	if (r->failed || !obj)
		return NULL;
	v = json_object_get(obj, key);
	if (!v) {
		if (required)
			fail(r, "%s: missing", at(buf, where, key));
		return NULL;
	}
	if (json_typeof(v) != want) {
		fail(r, "%s: expected %s, found %s", at(buf, where, key),
		     want_name, type_name(v));
		return NULL;
	}
	return v;
}

static json_t *get_object(struct rd *r, json_t *obj, const char *where,
			  const char *key, bool required)
{
	return member(r, obj, where, key, JSON_OBJECT, "an object", required);
}

static json_t *get_array(struct rd *r, json_t *obj, const char *where,
			 const char *key, bool required)
{
	return member(r, obj, where, key, JSON_ARRAY, "an array", required);
}

/* An integer in [min, max] at what (a path for messages). */
static int64_t check_int(struct rd *r, json_t *v, const char *what,
			 int64_t min, uint64_t max)
{
	json_int_t x;

	if (r->failed)
		return min;
	if (!json_is_integer(v)) {
		fail(r, "%s: expected an integer, found %s", what, type_name(v));
		return min;
	}
	x = json_integer_value(v);
	if (x < min) {
		if (x < 0)
			fail(r, "%s: %" JSON_INTEGER_FORMAT " is negative", what, x);
		else
			fail(r, "%s: %" JSON_INTEGER_FORMAT " is out of range "
			     "(at least %lld)", what, x, (long long)min);
		return min;
	}
	if ((uint64_t)x > max) {
		fail(r, "%s: %" JSON_INTEGER_FORMAT " is out of range (at most %llu)",
		     what, x, (unsigned long long)max);
		return min;
	}
	return x;
}

/* A count or size: a non-negative integer, at most ASP_DUMP_MAX. */
static uint64_t get_count(struct rd *r, json_t *obj, const char *where,
			  const char *key, bool required)
{
	char buf[128];
	json_t *v = member(r, obj, where, key, JSON_INTEGER, "an integer",
			   required);

	/* The path for the message is made only for a bad value. */
	if (v && json_integer_value(v) >= 0 && !r->failed)
		return (uint64_t)json_integer_value(v);
	return v ? (uint64_t)check_int(r, v, at(buf, where, key), 0,
				       ASP_DUMP_MAX) : 0;
}

/* A count that may be null (unknown in count mode). Returns whether known. */
static bool get_count_or_null(struct rd *r, json_t *obj, const char *where,
			      const char *key, uint64_t *out)
{
	char buf[128];
	json_t *v;

	*out = 0;
	if (r->failed)
		return false;
	v = json_object_get(obj, key);
	if (!v) {
		fail(r, "%s: missing", at(buf, where, key));
		return false;
	}
	if (json_is_null(v))
		return false;
	*out = (uint64_t)check_int(r, v, at(buf, where, key), 0, ASP_DUMP_MAX);
	return true;
}

/* The strings of a dump, copied out of its JSON tree, which is freed once
 * the dump is read (a tree takes some eight times the file's size): in
 * chunks, never moved. */
struct asp_kept {
	struct asp_kept *next;
	size_t used, size;
	char text[];
};

#define KEPT_CHUNK ((size_t)64 << 10)

static const char *keep(struct rd *r, const char *s, size_t len)
{
	struct asp_kept *k = r->keeper->kept;

	if (r->failed)
		return NULL;
	if (!k || k->size - k->used < len + 1) {
		size_t size = len + 1 > KEPT_CHUNK ? len + 1 : KEPT_CHUNK;

		k = malloc(sizeof *k + size);
		if (!k) {
			fail(r, "out of memory");
			return NULL;
		}
		k->used = 0;
		k->size = size;
		k->next = r->keeper->kept;
		r->keeper->kept = k;
	}
	char *out = k->text + k->used;

	memcpy(out, s, len);
	out[len] = '\0';
	k->used += len + 1;
	return out;
}

static const char *keep_string(struct rd *r, const json_t *v)
{
	return keep(r, json_string_value(v), json_string_length(v));
}

/* A string of at most max bytes, or NULL when absent and not required. */
static const char *get_string(struct rd *r, json_t *obj, const char *where,
			      const char *key, size_t max, bool required)
{
	char buf[128];
	json_t *v = member(r, obj, where, key, JSON_STRING, "a string",
			   required);

	if (!v)
		return NULL;
	if (json_string_length(v) > max) {
		fail(r, "%s: string of %zu bytes is too long (at most %zu)",
		     at(buf, where, key), json_string_length(v), max);
		return NULL;
	}
	return keep_string(r, v);
}

static bool get_bool(struct rd *r, json_t *obj, const char *where,
		     const char *key)
{
	char buf[128];
	json_t *v;

	if (r->failed)
		return false;
	v = json_object_get(obj, key);
	if (!v)
		return false;
	if (!json_is_boolean(v)) {
		fail(r, "%s: expected a boolean, found %s", at(buf, where, key),
		     type_name(v));
		return false;
	}
	return json_is_true(v);
}

/* A time in seconds: a number in [0, MAX_SECONDS]; *present says
 * whether the key is there (NULL: it must be). */
static double seconds(struct rd *r, json_t *obj, const char *where,
		      const char *key, bool *present)
{
	char buf[128];
	json_t *v;
	double s;

	if (present)
		*present = false;
	if (r->failed || !obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v) {
		if (!present)
			fail(r, "%s: missing", at(buf, where, key));
		return 0;
	}
	if (present)
		*present = true;
	if (!json_is_number(v)) {
		fail(r, "%s: expected a number, found %s", at(buf, where, key),
		     type_name(v));
		return 0;
	}
	s = json_number_value(v);
	if (!(s >= 0 && s <= MAX_SECONDS)) {
		fail(r, "%s: %g seconds is out of range", at(buf, where, key), s);
		return 0;
	}
	return s;
}

static double get_seconds(struct rd *r, json_t *obj, const char *where,
			  const char *key)
{
	return seconds(r, obj, where, key, NULL);
}

/* An optional count: whether it is there (and valid). */
static bool opt_count(struct rd *r, json_t *obj, const char *where,
		      const char *key, uint64_t *out)
{
	*out = get_count(r, obj, where, key, false);
	return !r->failed && obj && json_object_get(obj, key);
}

/* A merged dump's "pid" of a thread, whether it has one. */
static bool opt_pid(struct rd *r, json_t *obj, const char *where, int64_t *pid)
{
	char buf[128];
	json_t *v = member(r, obj, where, "pid", JSON_INTEGER, "an integer", false);

	if (v)
		*pid = check_int(r, v, at(buf, where, "pid"), 1, INT32_MAX);
	return v && !r->failed;
}

/* An index into stacks. */
static size_t get_stack_index(struct rd *r, asp_dump_t *d, json_t *obj,
			      const char *where)
{
	char buf[128];
	json_t *x = member(r, obj, where, "stack", JSON_INTEGER, "an integer", true);
	size_t i = 0;

	if (x)
		i = (size_t)check_int(r, x, at(buf, where, "stack"), 0, INT64_MAX);
	if (!r->failed && i >= d->nstacks)
		fail(r, "%s.stack: %zu is not an index into stacks (%zu stacks)",
		     where, i, d->nstacks);
	return i;
}

/* part <= whole, or a failure "WHERE.KEY: N is above WHAT (M)". */
static void check_at_most(struct rd *r, const char *where, const char *key,
			  uint64_t part, const char *what, uint64_t whole)
{
	char buf[128];

	if (!r->failed && part > whole)
		fail(r, "%s: %llu is above %s (%llu)", at(buf, where, key),
		     (unsigned long long)part, what, (unsigned long long)whole);
}

/* calloc for n elements of an array in the dump; n is bounded by the
 * number of JSON values already in memory. */
static void *alloc_array(struct rd *r, size_t n, size_t size)
{
	void *p;

	if (r->failed)
		return NULL;
	p = calloc(n ? n : 1, size);
	if (!p)
		fail(r, "out of memory");
	return p;
}

/* The pid, ppid, exe and argv of prog: "program", or a process of a
 * merged dump. */
static void load_identity(struct rd *r, asp_dump_t *d, json_t *prog, const char *where)
{
	json_t *argv = get_array(r, prog, where, "argv", true);
	char w[128];
	json_t *v;
	size_t i;

	v = member(r, prog, where, "pid", JSON_INTEGER, "an integer", true);
	if (v)
		d->pid = check_int(r, v, at(w, where, "pid"), 1, INT32_MAX);
	v = member(r, prog, where, "ppid", JSON_INTEGER, "an integer", false);
	if (v)
		d->ppid = check_int(r, v, at(w, where, "ppid"), 0, INT32_MAX);
	d->has_ppid = v && !r->failed;
	d->exe = get_string(r, prog, where, "exe", ASP_PATH_MAX, true);
	if (!argv)
		return;
	at(w, where, "argv");
	d->argc = json_array_size(argv);
	if (d->argc > MAX_ARGS) {
		fail(r, "%s: %zu arguments is too many", w, d->argc);
		return;
	}
	d->argv = alloc_array(r, d->argc, sizeof *d->argv);
	json_array_foreach(argv, i, v) {
		char buf[128];

		at_index(buf, w, i);
		if (!json_is_string(v))
			fail(r, "%s: expected a string, found %s", buf,
			     type_name(v));
		else if (json_string_length(v) > ASP_ARG_MAX)
			fail(r, "%s: string of %zu bytes is too long (at most %d)",
			     buf, json_string_length(v), ASP_ARG_MAX);
		if (r->failed)
			return;
		d->argv[i] = keep_string(r, v);
	}
}

static void load_program(struct rd *r, asp_dump_t *d, json_t *root)
{
	load_identity(r, d, get_object(r, root, "", ASP_KEY_PROGRAM, true), "program");
}

static void load_options(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *opt = get_object(r, root, "", ASP_KEY_OPTIONS, true);
	const char *mode = get_string(r, opt, "options", "mode", 16, true);
	asp_options_t *o = &d->options;

	if (mode && strcmp(mode, "track") != 0 && strcmp(mode, "count") != 0)
		fail(r, "options.mode: \"%s\" is neither \"track\" nor \"count\"",
		     mode);
	d->count_mode = mode && strcmp(mode, "count") == 0;
	/* The depth stacks were cut at: optional (0: not said). */
	if (!r->failed && opt && json_object_get(opt, "backtrace"))
		d->backtrace = get_count(r, opt, "options", "backtrace", true);
	d->leak_check = get_string(r, opt, "options", "leak_check", 16, false);
	if (d->leak_check && strcmp(d->leak_check, "summary") != 0 &&
	    strcmp(d->leak_check, "full") != 0 && strcmp(d->leak_check, "no") != 0)
		fail(r, "options.leak_check: \"%s\" is not summary, full or no",
		     d->leak_check);
	/* The rest, for merge to write again. */
	o->unwind = get_string(r, opt, "options", "unwind", 16, false);
	o->output = get_string(r, opt, "options", "output", ASP_PATH_MAX, false);
	o->freeres = get_string(r, opt, "options", "freeres", 16, false);
	o->has_snapshots = opt_count(r, opt, "options", "snapshots", &o->snapshots);
	o->has_interval_ms = opt_count(r, opt, "options", "interval_ms", &o->interval_ms);
	o->has_sample = opt_count(r, opt, "options", "sample", &o->sample);
	o->has_guard = opt_count(r, opt, "options", "guard", &o->guard);
}

/* A start time: time.start_unix, seconds since 1970, or a merged
 * process's start_s, seconds after the first one's; a number in [0, max]
 * when present. Absent, a failure when required. */
static double get_start(struct rd *r, json_t *obj, const char *where,
			 const char *key, double max, bool required, bool *present)
{
	char buf[128];
	json_t *v;
	double t;

	*present = false;
	if (r->failed || !obj)
		return 0;
	v = json_object_get(obj, key);
	if (!v && !required)
		return 0;
	if (!json_is_number(v)) {
		fail(r, "%s: expected a number, found %s", at(buf, where, key),
		     v ? "another type" : "nothing");
		return 0;
	}
	t = json_number_value(v);
	if (!(t >= 0 && t <= max)) {
		fail(r, "%s: %g is out of range", at(buf, where, key), t);
		return 0;
	}
	*present = true;
	return t;
}

/* "time", at where: the dump's or a merged process's. */
static void load_time_of(struct rd *r, asp_dump_t *d, json_t *obj, const char *where)
{
	json_t *t = get_object(r, obj, where, ASP_KEY_TIME, true);
	char w[128];

	at(w, where, "time");
	d->wall_s = get_seconds(r, t, w, "wall_s");
	d->user_s = get_seconds(r, t, w, "user_s");
	d->sys_s = get_seconds(r, t, w, "sys_s");
	d->start_unix = get_start(r, t, w, "start_unix", MAX_START_UNIX, false,
				   &d->has_start_unix);
}

/* "heap", at where: the dump's or a merged process's. */
static void load_heap_of(struct rd *r, asp_dump_t *d, json_t *obj, const char *where)
{
	json_t *h = get_object(r, obj, where, ASP_KEY_HEAP, true);
	char w[128];

	at(w, where, "heap");
	d->allocs = get_count(r, h, w, "allocs", true);
	d->frees = get_count(r, h, w, "frees", true);
	d->bytes_allocated = get_count(r, h, w, "bytes_allocated", true);
	d->in_use_blocks = get_count(r, h, w, "in_use_blocks", true);
	d->has_failed = opt_count(r, h, w, "failed", &d->failed);
	d->has_untracked_frees = opt_count(r, h, w, "untracked_frees",
					   &d->untracked_frees);
	d->has_in_use_bytes = get_count_or_null(r, h, w, "in_use_bytes",
						&d->in_use_bytes);
	d->has_peak = get_count_or_null(r, h, w, "peak_bytes",
					&d->peak_bytes);
	if (!r->failed && !d->count_mode && !d->has_in_use_bytes)
		fail(r, "%s.in_use_bytes: null in a track-mode dump", w);
	d->has_peak_bytes_bound = opt_count(r, h, w, "peak_bytes_bound",
					    &d->peak_bytes_bound);
	d->peak_t_s = seconds(r, h, w, "peak_t_s", &d->has_peak_t);
	d->has_temporary = opt_count(r, h, w, "temporary", &d->temporary);
	check_at_most(r, w, "temporary", d->temporary, "heap.allocs",
		      d->allocs);
	if (!r->failed && !d->has_peak && (d->peak_bytes_bound || d->has_peak_t))
		fail(r, "%s.%s: given for a peak that is null", w,
		     d->peak_bytes_bound ? "peak_bytes_bound" : "peak_t_s");
}

/* "dump", at where: why and when the dump, or a merged process's, was
 * written. */
static void load_dump_info_of(struct rd *r, asp_dump_t *d, json_t *obj,
			      const char *where)
{
	json_t *o = get_object(r, obj, where, ASP_KEY_DUMP, false);
	json_t *sig, *x;
	const char *reason;
	char w[128], ws[128], buf[128];

	d->reason = ASP_REASON_EXIT;
	if (!o)
		return;
	at(w, where, "dump");
	at(ws, w, "signal");
	reason = get_string(r, o, w, "reason", 16, true);
	if (reason && strcmp(reason, "interval") == 0)
		d->reason = ASP_REASON_INTERVAL;
	else if (reason && strcmp(reason, "signal") == 0)
		d->reason = ASP_REASON_SIGNAL;
	else if (reason && strcmp(reason, "exit") != 0)
		fail(r, "%s.reason: \"%s\" is not exit, interval or signal",
		     w, reason);
	d->dump_t_s = seconds(r, o, w, "t_s", &d->has_dump_t);
	d->has_freeres = json_object_get(o, "freeres") != NULL;
	d->freeres = get_bool(r, o, w, "freeres");
	sig = get_object(r, o, w, "signal", d->reason == ASP_REASON_SIGNAL);
	if (!r->failed && sig && d->reason != ASP_REASON_SIGNAL)
		fail(r, "%s: given, but the reason is \"%s\"", ws, reason);
	x = member(r, sig, ws, "number", JSON_INTEGER, "an integer", true);
	if (x)
		d->signal = (int)check_int(r, x, at(buf, ws, "number"), 1, 64);
	d->signal_name = get_string(r, sig, ws, "name", 16, true);
}

static void load_time(struct rd *r, asp_dump_t *d, json_t *root)
{
	load_time_of(r, d, root, "");
}

static void load_heap(struct rd *r, asp_dump_t *d, json_t *root)
{
	load_heap_of(r, d, root, "");
}

static void load_dump_info(struct rd *r, asp_dump_t *d, json_t *root)
{
	load_dump_info_of(r, d, root, "");
}

int asp_fn_cmp(const asp_fn_t *a, const asp_fn_t *b)
{
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int fn_qsort_cmp(const void *a, const void *b)
{
	return asp_fn_cmp(a, b);
}

/* One entry of "functions": known names must have their class's keys; an
 * unknown name is classed by the keys it has. */
static void load_fn(struct rd *r, asp_fn_t *f, const char *name, json_t *v)
{
	const struct fn_info *info;
	char where[128];

	at(where, "functions", name);
	if (!json_is_object(v)) {
		fail(r, "%s: expected an object, found %s", where, type_name(v));
		return;
	}
	f->name = keep(r, name, strlen(name));
	f->order = ORDER_UNKNOWN;
	info = fn_info(name);
	if (info) {
		f->order = report_order((size_t)(info - fn_table));
		f->cls = class_of_role[info->role];
		f->strdup_family = info->strdup_family;
	} else if (json_object_get(v, "bytes")) {
		f->cls = ASP_FN_ALLOC;
	} else if (json_object_get(v, "null")) {
		f->cls = ASP_FN_FREE;
	} else {
		f->cls = ASP_FN_QUERY;
	}
	f->calls = get_count(r, v, where, "calls", true);
	if (f->cls == ASP_FN_ALLOC) {
		f->bytes = get_count(r, v, where, "bytes", true);
		f->failed = get_count(r, v, where, "failed", true);
		if (!r->failed && f->failed > f->calls)
			fail(r, "%s: %llu failed calls out of %llu", where,
			     (unsigned long long)f->failed,
			     (unsigned long long)f->calls);
		f->has_temporary = opt_count(r, v, where, "temporary",
					     &f->temporary);
		check_at_most(r, where, "temporary", f->temporary, "its calls",
			      f->calls);
	} else if (f->cls == ASP_FN_FREE) {
		f->null = get_count(r, v, where, "null", true);
	}
}

static void load_functions(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *fns = get_object(r, root, "", ASP_KEY_FUNCTIONS, true);
	const char *name;
	json_t *v;

	if (!fns)
		return;
	d->fns = alloc_array(r, json_object_size(fns), sizeof *d->fns);
	json_object_foreach(fns, name, v) {
		if (r->failed)
			return;
		if (strlen(name) > 64) {
			fail(r, "functions: a name of %zu bytes is too long",
			     strlen(name));
			return;
		}
		load_fn(r, &d->fns[d->nfns++], name, v);
	}
	if (!r->failed && !asp_dump_fn(d, "free"))
		fail(r, "functions.free: missing");
	if (!r->failed)
		qsort(d->fns, d->nfns, sizeof *d->fns, fn_qsort_cmp);
}

/* A bucket's bound: an integer, or for sizes above 2^63 the real
 * 18446744073709551615.0 (UINT64_MAX, which JSON integers cannot hold). */
static uint64_t get_le(struct rd *r, json_t *bucket, const char *where)
{
	char buf[128];
	json_t *v = json_object_get(bucket, "le");

	if (r->failed)
		return 0;
	if (v && json_is_real(v) && json_real_value(v) == 18446744073709551615.0)
		return UINT64_MAX;
	v = member(r, bucket, where, "le", JSON_INTEGER, "an integer", true);
	return v ? (uint64_t)check_int(r, v, at(buf, where, "le"), 0, INT64_MAX) : 0;
}

static void load_histogram(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *hist = get_array(r, root, "", ASP_KEY_HISTOGRAM, true);
	json_t *v;
	size_t i;

	if (!hist)
		return;
	d->hist = alloc_array(r, json_array_size(hist), sizeof *d->hist);
	json_array_foreach(hist, i, v) {
		char where[128];
		asp_bucket_t *b;

		if (r->failed)
			return;
		at_index(where, "histogram", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where,
			     type_name(v));
			return;
		}
		b = &d->hist[d->nhist++];
		b->le = get_le(r, v, where);
		b->count = get_count(r, v, where, "count", true);
		if (r->failed)
			return;
		if (b->le != UINT64_MAX && (b->le & (b->le - 1)))
			fail(r, "%s.le: %llu is not 0 or a power of two", where,
			     (unsigned long long)b->le);
		else if (i > 0 && b->le <= d->hist[i - 1].le)
			fail(r, "%s.le: %llu is not above the previous bucket's",
			     where, (unsigned long long)b->le);
	}
}

static void load_threads(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *th = get_array(r, root, "", ASP_KEY_THREADS, true);
	json_t *v;
	size_t i;

	d->threads_omitted = get_count(r, root, "", ASP_KEY_THREADS_OMITTED, false);
	if (!th)
		return;
	d->threads = alloc_array(r, json_array_size(th), sizeof *d->threads);
	json_array_foreach(th, i, v) {
		char where[128], buf[128];
		asp_thread_t *t;
		json_t *tid;

		if (r->failed)
			return;
		at_index(where, "threads", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where,
			     type_name(v));
			return;
		}
		t = &d->threads[d->nthreads++];
		tid = member(r, v, where, "tid", JSON_INTEGER, "an integer", true);
		if (tid)
			t->tid = check_int(r, tid, at(buf, where, "tid"), 0,
					   INT32_MAX);
		t->name = get_string(r, v, where, "name", ASP_PATH_MAX, true);
		t->allocs = get_count(r, v, where, "allocs", true);
		t->frees = get_count(r, v, where, "frees", true);
		t->bytes_allocated = get_count(r, v, where, "bytes_allocated", true);
		t->ref_acquires = get_count(r, v, where, "ref_acquires", true);
		t->ref_releases = get_count(r, v, where, "ref_releases", true);
		t->has_exited = json_object_get(v, "exited") != NULL;
		t->exited = get_bool(r, v, where, "exited");
		t->has_pid = opt_pid(r, v, where, &t->pid);
	}
}

static void load_refs(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *refs = get_object(r, root, "", ASP_KEY_REFS, true);

	d->refs.acquires = get_count(r, refs, "refs", "acquires", true);
	d->refs.releases = get_count(r, refs, "refs", "releases", true);
	d->refs.created = get_count(r, refs, "refs", "objects_created", true);
	d->refs.destroyed = get_count(r, refs, "refs", "objects_destroyed", true);
	d->refs.has_cross_thread = get_count_or_null(r, refs, "refs", "cross_thread",
						     &d->refs.cross_thread);
}

static void load_leaks(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *leaks = get_object(r, root, "", ASP_KEY_LEAKS, false);

	if (!leaks)
		return;
	d->has_leaks = true;
	for (int k = 0; k < ASP_LEAK_NKINDS; k++) {
		char where[128];
		json_t *a = get_object(r, leaks, "leaks", asp_leak_key[k], true);

		at(where, "leaks", asp_leak_key[k]);
		d->leaks[k].bytes = get_count(r, a, where, "bytes", true);
		d->leaks[k].blocks = get_count(r, a, where, "blocks", true);
	}
}

/* valgrind's ERROR SUMMARY (track mode): the heap errors, and with a full
 * leak check the loss records valgrind counts as errors. */
static void load_error_summary(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *o = get_object(r, root, "", ASP_KEY_ERROR_SUMMARY, false);

	if (!o)
		return;
	d->has_error_summary = true;
	d->errors = get_count(r, o, "error_summary", "errors", true);
	d->error_contexts = get_count(r, o, "error_summary", "contexts", true);
	d->errors_suppressed = get_count(r, o, "error_summary", "suppressed", true);
	d->error_contexts_suppressed = get_count(r, o, "error_summary", "suppressed_contexts",
						 true);
}

static void load_stacks(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *stacks = get_array(r, root, "", ASP_KEY_STACKS, false);
	size_t total = 0, used = 0, i, j;
	json_t *s, *f;

	if (!stacks)
		return;
	/* First the sizes, then one block for every frame. */
	json_array_foreach(stacks, i, s) {
		char where[128];

		at_index(where, "stacks", i);
		if (!json_is_array(s)) {
			fail(r, "%s: expected an array, found %s", where,
			     type_name(s));
			return;
		}
		if (json_array_size(s) > MAX_FRAMES) {
			fail(r, "%s: %zu frames is too many (at most %d)", where,
			     json_array_size(s), MAX_FRAMES);
			return;
		}
		total += json_array_size(s);
	}
	d->stacks = alloc_array(r, json_array_size(stacks), sizeof *d->stacks);
	d->frames = alloc_array(r, total, sizeof *d->frames);
	if (r->failed)
		return;
	d->nstacks = json_array_size(stacks);
	json_array_foreach(stacks, i, s) {
		d->stacks[i].frames = d->frames + used;
		d->stacks[i].n = json_array_size(s);
		json_array_foreach(s, j, f) {
			char where[128];

			/* A dump of 100,000 stacks has a million frames: the
			 * path for the message is made only for a bad one. */
			if (json_is_integer(f) && json_integer_value(f) >= 0) {
				d->frames[used++] = (uint64_t)json_integer_value(f);
				continue;
			}
			fit(where, snprintf(where, sizeof where, "stacks[%zu][%zu]",
					    i, j));
			d->frames[used++] = (uint64_t)check_int(r, f, where, 0,
								INT64_MAX);
			if (r->failed)
				return;
		}
	}
	/* The stacks cut at the depth limit, by index. */
	json_t *cut = get_array(r, root, "", ASP_KEY_TRUNCATED_STACKS, false);
	json_array_foreach(cut, i, s) {
		char where[128];
		size_t k;

		at_index(where, "truncated_stacks", i);
		k = (size_t)check_int(r, s, where, 0, INT64_MAX);
		if (r->failed)
			return;
		if (k >= d->nstacks) {
			fail(r, "%s: %zu is not an index into stacks (%zu stacks)",
			     where, k, d->nstacks);
			return;
		}
		d->stacks[k].truncated = true;
	}
}

static bool is_hex(const char *s)
{
	for (; *s; s++)
		if (!strchr("0123456789abcdefABCDEF", *s))
			return false;
	return true;
}

static void load_modules(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *mods = get_array(r, root, "", ASP_KEY_MODULES, false);
	json_t *v;
	size_t i;

	if (!mods)
		return;
	d->modules = alloc_array(r, json_array_size(mods), sizeof *d->modules);
	json_array_foreach(mods, i, v) {
		char where[128], buf[128];
		asp_module_t *m;
		json_t *x;

		if (r->failed)
			return;
		at_index(where, "modules", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where,
			     type_name(v));
			return;
		}
		m = &d->modules[d->nmodules++];
		m->path = get_string(r, v, where, "path", ASP_PATH_MAX, true);
		x = member(r, v, where, "base", JSON_INTEGER, "an integer", true);
		if (x)
			m->base = (uint64_t)check_int(r, x, at(buf, where, "base"),
						      0, INT64_MAX);
		x = member(r, v, where, "end", JSON_INTEGER, "an integer", false);
		if (x)
			m->end = (uint64_t)check_int(r, x, at(buf, where, "end"),
						     0, INT64_MAX);
		if (!r->failed && x && m->end <= m->base)
			fail(r, "%s.end: not above base", where);
		m->has_start = opt_count(r, v, where, "start", &m->start);
		m->build_id = get_string(r, v, where, "build_id", 128, false);
		if (m->build_id && (!is_hex(m->build_id) ||
				    strlen(m->build_id) % 2 != 0))
			fail(r, "%s.build_id: not a hex string", where);
		if (m->build_id && !*m->build_id)
			m->build_id = NULL;
	}
}

/* "sample": ALLOCSPY_SAMPLE's mean and seed; the per-stack figures are
 * then estimates under est_* keys. */
static void load_sample(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *o = get_object(r, root, "", ASP_KEY_SAMPLE, false);

	if (!o)
		return;
	d->sampled = true;
	d->sample_bytes = get_count(r, o, "sample", "mean_bytes", true);
	d->has_sample_seed = opt_count(r, o, "sample", "seed", &d->sample_seed);
	if (!r->failed && d->sample_bytes == 0)
		fail(r, "sample.mean_bytes: 0 is not a sampling interval");
}

/* key, or est_KEY in a sampled dump. */
static const char *est(const asp_dump_t *d, const char *key, char buf[64])
{
	if (!d->sampled)
		return key;
	snprintf(buf, 64, "est_%s", key);
	return buf;
}

static void load_stack_stats(struct rd *r, asp_dump_t *d, json_t *root)
{
	char k[64];
	json_t *a = get_array(r, root, "", ASP_KEY_STACK_STATS, false);
	size_t i;
	json_t *v;

	if (!a)
		return;
	d->has_stack_stats = true;
	d->stack_stats = alloc_array(r, json_array_size(a), sizeof *d->stack_stats);
	json_array_foreach(a, i, v) {
		char where[128];
		asp_stack_stat_t *s;

		if (r->failed)
			return;
		at_index(where, "stack_stats", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where, type_name(v));
			return;
		}
		s = &d->stack_stats[d->nstack_stats++];
		s->stack = get_stack_index(r, d, v, where);
		if (d->sampled)
			s->samples = get_count(r, v, where, "samples", true);
		s->allocs = get_count(r, v, where, est(d, "allocs", k), true);
		s->bytes = get_count(r, v, where, est(d, "bytes", k), true);
		s->in_use_blocks = get_count(r, v, where, est(d, "in_use_blocks", k), true);
		s->in_use_bytes = get_count(r, v, where, est(d, "in_use_bytes", k), true);
		s->has_temporary = opt_count(r, v, where, est(d, "temporary", k), &s->temporary);
		check_at_most(r, where, est(d, "temporary", k), s->temporary, "its allocs",
			      s->allocs);
		s->has_peak = opt_count(r, v, where, est(d, "peak_bytes", k), &s->peak_bytes);
		if (opt_count(r, v, where, est(d, "peak_blocks", k), &s->peak_blocks) !=
		    s->has_peak && !r->failed)
			fail(r, "%s: %s and %s come together", where, est(d, "peak_bytes", k),
			     d->sampled ? "est_peak_blocks" : "peak_blocks");
		/* An estimate may exceed the exact peak. */
		if (!d->sampled)
			check_at_most(r, where, "peak_bytes", s->peak_bytes,
				      "heap.peak_bytes", d->peak_bytes);
	}
	d->stack_stats_omitted = get_count(r, root, "", ASP_KEY_STACK_STATS_OMITTED, false);
}

static void load_thread_stacks(struct rd *r, asp_dump_t *d, json_t *root)
{
	char k[64];
	json_t *a = get_array(r, root, "", ASP_KEY_THREAD_STACKS, false);
	size_t i;
	json_t *v;

	if (!a)
		return;
	d->has_thread_stacks = true;
	d->thread_stacks = alloc_array(r, json_array_size(a),
				       sizeof *d->thread_stacks);
	json_array_foreach(a, i, v) {
		char where[128], buf[128];
		asp_thread_stack_t *t;
		json_t *x;

		if (r->failed)
			return;
		at_index(where, "thread_stacks", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where, type_name(v));
			return;
		}
		t = &d->thread_stacks[d->nthread_stacks++];
		x = member(r, v, where, "tid", JSON_INTEGER, "an integer", true);
		if (x)
			t->tid = check_int(r, x, at(buf, where, "tid"), 0, INT32_MAX);
		t->stack = get_stack_index(r, d, v, where);
		if (d->sampled)
			t->samples = get_count(r, v, where, "samples", true);
		t->allocs = get_count(r, v, where, est(d, "allocs", k), true);
		t->bytes = get_count(r, v, where, est(d, "bytes", k), true);
		t->has_pid = opt_pid(r, v, where, &t->pid);
	}
}

/* One snapshot's "detail": who held its memory. */
static void load_detail(struct rd *r, asp_dump_t *d, asp_snapshot_t *s,
			json_t *a, const char *where, size_t *used)
{
	uint64_t bytes = 0, blocks = 0;
	size_t i;
	json_t *v;
	char k[64];

	s->has_detail = true;
	s->detail = d->details + *used;
	json_array_foreach(a, i, v) {
		char w[128];
		asp_detail_t *x;

		if (r->failed)
			return;
		fit(w, snprintf(w, sizeof w, "%s.detail[%zu]", where, i));
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", w, type_name(v));
			return;
		}
		x = &s->detail[s->ndetail++];
		(*used)++;
		x->stack = get_stack_index(r, d, v, w);
		x->bytes = get_count(r, v, w, est(d, "bytes", k), true);
		x->blocks = get_count(r, v, w, est(d, "blocks", k), true);
		bytes += x->bytes;	/* each at most 2^63: no overflow */
		blocks += x->blocks;
		if (r->failed || d->sampled)	/* estimates may exceed the whole */
			continue;
		if (bytes > s->in_use_bytes || blocks > s->in_use_blocks) {
			fail(r, "%s.detail: more %s than the snapshot holds", where,
			     bytes > s->in_use_bytes ? "bytes" : "blocks");
			return;
		}
	}
}

/* The checks of snapshot i against the one before it and the heap. */
static void check_snapshot(struct rd *r, asp_dump_t *d, size_t i,
			   const char *where)
{
	const asp_snapshot_t *s = &d->snapshots[i], *p = i ? s - 1 : NULL;

	if (r->failed)
		return;
	if (p && s->t_s < p->t_s)
		fail(r, "%s.t_s: %g is before the previous snapshot's", where, s->t_s);
	else if (p && s->bytes_allocated < p->bytes_allocated)
		fail(r, "%s.bytes_allocated: below the previous snapshot's", where);
	else if (p && s->bytes_freed < p->bytes_freed)
		fail(r, "%s.bytes_freed: below the previous snapshot's", where);
	else if (d->has_peak)
		check_at_most(r, where, "in_use_bytes", s->in_use_bytes,
			      "heap.peak_bytes", d->peak_bytes);
}

static void load_snapshots(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *a = get_array(r, root, "", ASP_KEY_SNAPSHOTS, false);
	size_t i, total = 0, used = 0;
	json_t *v, *det;
	bool peak = false;

	if (!a)
		return;
	if (json_array_size(a) && d->count_mode) {
		fail(r, "snapshots: in a count-mode dump");
		return;
	}
	json_array_foreach(a, i, v) {
		det = json_is_object(v) ? json_object_get(v, "detail") : NULL;
		total += json_is_array(det) ? json_array_size(det) : 0;
	}
	d->snapshots = alloc_array(r, json_array_size(a), sizeof *d->snapshots);
	d->details = alloc_array(r, total, sizeof *d->details);
	json_array_foreach(a, i, v) {
		char where[128];
		asp_snapshot_t *s;

		if (r->failed)
			return;
		at_index(where, "snapshots", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where, type_name(v));
			return;
		}
		s = &d->snapshots[d->nsnapshots++];
		s->t_s = get_seconds(r, v, where, "t_s");
		s->bytes_allocated = get_count(r, v, where, "bytes_allocated", true);
		s->bytes_freed = get_count(r, v, where, "bytes_freed", true);
		s->in_use_bytes = get_count(r, v, where, "in_use_bytes", true);
		s->in_use_blocks = get_count(r, v, where, "in_use_blocks", true);
		s->peak = get_bool(r, v, where, "peak");
		if (!r->failed && s->peak && peak)
			fail(r, "%s.peak: a second peak snapshot", where);
		if (s->peak) {
			peak = true;
			d->peak_snapshot = i;
		}
		det = get_array(r, v, where, "detail", false);
		if (det)
			load_detail(r, d, s, det, where, &used);
		check_snapshot(r, d, i, where);
	}
	if (!r->failed && d->nsnapshots && !peak)
		fail(r, "snapshots: none is marked as the peak");
}

static void load_snapshot_info(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *o = get_object(r, root, "", ASP_KEY_SNAPSHOT_INFO, false);
	const char *detail;

	if (!o)
		return;
	d->has_snapshot_info = true;
	d->snapshot_max = get_count(r, o, "snapshot_info", "max", true);
	detail = get_string(r, o, "snapshot_info", "detail", 16, true);
	if (detail && strcmp(detail, "stacks") != 0 && strcmp(detail, "callers") != 0)
		fail(r, "snapshot_info.detail: \"%s\" is neither \"stacks\" nor "
		     "\"callers\"", detail);
	d->detail_callers = detail && strcmp(detail, "callers") == 0;
}

/* "rss": the resident memory at exit. */
static void load_rss(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *o = get_object(r, root, "", ASP_KEY_RSS, false);
	asp_rss_t *x = &d->rss;
	const struct {
		const char *key;
		uint64_t *v;
	} keys[] = {
		{ "rss_bytes", &x->rss_bytes }, { "peak_rss_bytes", &x->peak_rss_bytes },
		{ "heap_in_use_bytes", &x->heap_in_use }, { "slack_bytes", &x->slack },
		{ "not_resident_bytes", &x->not_resident },
		{ "allocator_free_bytes", &x->allocator_free },
		{ "large_blocks_bytes", &x->large_blocks },
		{ "thread_stacks_bytes", &x->thread_stacks },
		{ "allocspy_bytes", &x->allocspy },
		{ "other_anonymous_bytes", &x->other_anonymous }, { "file_bytes", &x->file },
		{ "arena_heaps", &x->arena_heaps }, { "large_blocks", &x->nlarge_blocks },
		{ "thread_stacks", &x->nthread_stacks },
	};

	if (!o)
		return;
	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		*keys[i].v = get_count(r, o, "rss", keys[i].key, true);
	x->allocator = get_string(r, o, "rss", "allocator", 16, true);
	x->pages_from = get_string(r, o, "rss", "pages_from", 16, true);
	check_at_most(r, "rss", "not_resident_bytes", x->not_resident,
		      "rss.heap_in_use_bytes + rss.slack_bytes", x->heap_in_use + x->slack);
	d->has_rss = !r->failed;
}

static void load_records(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *recs = get_array(r, root, "", ASP_KEY_LOSS_RECORDS, false);
	json_t *v;
	size_t i;

	if (!recs)
		return;
	d->has_records = true;
	d->records = alloc_array(r, json_array_size(recs), sizeof *d->records);
	json_array_foreach(recs, i, v) {
		char where[128], buf[128];
		asp_record_t *rec;
		const char *kind;
		json_t *x;
		int k;

		if (r->failed)
			return;
		at_index(where, "loss_records", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where,
			     type_name(v));
			return;
		}
		rec = &d->records[d->nrecords++];
		kind = get_string(r, v, where, "kind", 16, true);
		k = kind ? asp_leak_kind_of(kind, strlen(kind)) : ASP_LEAK_DEFINITE;
		if (k < 0)
			fail(r, "%s.kind: \"%s\" is not a leak kind", where, kind);
		else
			rec->kind = (enum asp_leak_kind)k;
		rec->bytes = get_count(r, v, where, "bytes", true);
		rec->blocks = get_count(r, v, where, "blocks", true);
		rec->indirect_bytes = get_count(r, v, where, "indirect_bytes", false);
		rec->indirect_blocks = get_count(r, v, where, "indirect_blocks",
						 false);
		rec->suppressed = get_bool(r, v, where, "suppressed");
		rec->suppression = get_string(r, v, where, "suppression", ASP_PATH_MAX, false);
		rec->unsampled = json_object_get(v, "sampled") &&
				 !get_bool(r, v, where, "sampled") && !r->failed;
		rec->alloc_fn = get_string(r, v, where, "alloc_fn", 64, false);
		x = member(r, v, where, "alloc_pc", JSON_INTEGER, "an integer", false);
		if (x)
			rec->alloc_pc = (uint64_t)check_int(r, x, at(buf, where, "alloc_pc"),
							    0, INT64_MAX);
		x = get_array(r, v, where, "alloc_stack", false);
		for (size_t j = 0; x && !r->failed && j < json_array_size(x); j++) {
			json_t *name = json_array_get(x, j);

			if (j >= ASP_ALLOC_STACK_MAX || !json_is_string(name) ||
			    json_string_length(name) > 64) {
				fail(r, "%s.alloc_stack: expected at most %d names",
				     where, ASP_ALLOC_STACK_MAX);
				break;
			}
			rec->alloc_stack[rec->nalloc_stack++] = keep_string(r, name);
		}
		x = member(r, v, where, "stack", JSON_INTEGER, "an integer", true);
		if (x)
			rec->stack = (size_t)check_int(r, x, at(buf, where, "stack"),
						       0, INT64_MAX);
		if (!r->failed && rec->stack >= d->nstacks)
			fail(r, "%s.stack: %zu is not an index into stacks (%zu stacks)",
			     where, rec->stack, d->nstacks);
	}
}

/* An index into stacks under key. */
static size_t get_stack_key(struct rd *r, asp_dump_t *d, json_t *obj,
			    const char *where, const char *key)
{
	char buf[128];
	json_t *x = member(r, obj, where, key, JSON_INTEGER, "an integer", true);
	size_t i = 0;

	if (x)
		i = (size_t)check_int(r, x, at(buf, where, key), 0, INT64_MAX);
	if (!r->failed && i >= d->nstacks)
		fail(r, "%s: %zu is not an index into stacks (%zu stacks)",
		     at(buf, where, key), i, d->nstacks);
	return i;
}

/* An error's PREFIX_pc and PREFIX_frames, each optional (a dump of the
 * first version of the heap errors has neither). */
static void load_call(struct rd *r, json_t *v, const char *where,
		      const char *prefix, asp_call_t *c)
{
	char key[32], buf[128];
	json_t *x;

	snprintf(key, sizeof key, "%s_pc", prefix);
	x = member(r, v, where, key, JSON_INTEGER, "an integer", false);
	if (x)
		c->pc = (uint64_t)check_int(r, x, at(buf, where, key), 0, INT64_MAX);
	snprintf(key, sizeof key, "%s_frames", prefix);
	x = get_array(r, v, where, key, false);
	for (size_t j = 0; x && !r->failed && j < json_array_size(x); j++) {
		json_t *name = json_array_get(x, j);

		if (j >= ASP_ALLOC_STACK_MAX || !json_is_string(name) ||
		    json_string_length(name) == 0 || json_string_length(name) > 64) {
			fail(r, "%s: expected at most %d names", at(buf, where, key),
			     ASP_ALLOC_STACK_MAX);
			break;
		}
		c->frames[c->nframes++] = keep_string(r, name);
	}
}

/* The block an error is about. The frees' addresses are inside it; a
 * guarded block's invalid read or write may be anywhere in its page, and
 * bytes written around it, after or before it. */
static void load_error_block(struct rd *r, asp_dump_t *d, json_t *v,
			     const char *where, asp_heap_error_t *e)
{
	char w[128], buf[128];
	json_t *b = get_object(r, v, where, "block", true), *x;
	bool guarded = asp_herr_is_access(e->kind) || e->kind == ASP_HERR_OVERWRITTEN;

	if (!b)
		return;
	at(w, where, "block");
	x = member(r, b, w, "address", JSON_INTEGER, "an integer", true);
	if (x)
		e->block_address = (uint64_t)check_int(r, x, at(buf, w, "address"), 0,
						       INT64_MAX);
	if (guarded) {
		/* within a page of either side: far below 2^62 */
		x = member(r, b, w, "offset", JSON_INTEGER, "an integer", true);
		if (x && (json_integer_value(x) < -(json_int_t)INT32_MAX ||
			  json_integer_value(x) > (json_int_t)INT32_MAX))
			fail(r, "%s: %" JSON_INTEGER_FORMAT " is out of range (%d to %d)",
			     at(buf, w, "offset"), json_integer_value(x), -INT32_MAX, INT32_MAX);
		else if (x)
			e->block_offset = json_integer_value(x);
	} else {
		e->block_offset = (int64_t)get_count(r, b, w, "offset", true);
	}
	e->block_size = get_count(r, b, w, "size", true);
	e->block_function = get_string(r, b, w, "function", 64, true);
	e->alloc_stack = get_stack_key(r, d, b, w, "alloc_stack");
	load_call(r, b, w, "alloc", &e->alloc);
	if (e->where == ASP_WHERE_FREED) {
		e->free_stack = get_stack_key(r, d, b, w, "free_stack");
		load_call(r, b, w, "free", &e->free);
	}
	if (r->failed)
		return;
	/* Both below 2^63, the offset small or below 2^63: the sum, in
	 * unsigned arithmetic, is the address when it is right. */
	if (e->block_address + (uint64_t)e->block_offset != e->address)
		fail(r, "%s: address + offset is not the error's address", w);
	else if (e->where == ASP_WHERE_AFTER && e->block_offset < (int64_t)e->block_size)
		fail(r, "%s.offset: %lld is not after the block (size %llu)", w,
		     (long long)e->block_offset, (unsigned long long)e->block_size);
	else if (e->where == ASP_WHERE_BEFORE && e->block_offset >= 0)
		fail(r, "%s.offset: %lld is not before the block", w, (long long)e->block_offset);
}

/* What where may be for an error of kind k: the frees' addresses, the
 * guarded blocks' faults and their bytes written around. */
static bool where_fits(enum asp_herr_kind k, enum asp_herr_where w)
{
	switch (k) {
	case ASP_HERR_MISMATCHED_FREE:
		return w == ASP_WHERE_BLOCK;
	case ASP_HERR_INVALID_READ:
	case ASP_HERR_INVALID_WRITE:
		return w == ASP_WHERE_AFTER || w == ASP_WHERE_BEFORE || w == ASP_WHERE_FREED ||
		       w == ASP_WHERE_UNKNOWN;
	case ASP_HERR_OVERWRITTEN:
		return w == ASP_WHERE_AFTER || w == ASP_WHERE_BEFORE;
	default:
		return w != ASP_WHERE_AFTER && w != ASP_WHERE_BEFORE;
	}
}

/* Why not, after "WHERE.where: \"X\" ". */
static const char *const where_allowed[ASP_HERR_NKINDS] = {
	[ASP_HERR_INVALID_FREE] = "is for a guarded block's errors, not an invalid free",
	[ASP_HERR_MISMATCHED_FREE] = "for a mismatched free, whose address is a block's",
	[ASP_HERR_INVALID_READ] = "is not after, before, freed or unknown, for an invalid read",
	[ASP_HERR_INVALID_WRITE] = "is not after, before, freed or unknown, for an invalid write",
	[ASP_HERR_OVERWRITTEN] = "is not after or before, for bytes written around a block",
};

/* One context of "errors". */
static void load_error(struct rd *r, asp_dump_t *d, json_t *v, const char *where,
		       asp_heap_error_t *e)
{
	char buf[128];
	const char *s;
	json_t *x;
	int k;

	s = get_string(r, v, where, "kind", 32, true);
	for (k = 0; s && k < ASP_HERR_NKINDS; k++)
		if (strcmp(s, asp_herr_kind_name[k]) == 0)
			break;
	if (s && k == ASP_HERR_NKINDS)
		fail(r, "%s.kind: \"%s\" is not invalid_free, mismatched_free, fishy_value, "
		     "invalid_read, invalid_write or overwritten", where, s);
	e->kind = (enum asp_herr_kind)k;
	x = member(r, v, where, "count", JSON_INTEGER, "an integer", true);
	if (x)
		e->count = (uint64_t)check_int(r, x, at(buf, where, "count"), 1, ASP_DUMP_MAX);
	if (asp_herr_is_access(e->kind)) {
		/* a fault: the access's size and stack, no call */
		x = member(r, v, where, "size", JSON_INTEGER, "an integer", true);
		if (x)
			e->access_size = (uint64_t)check_int(r, x, at(buf, where, "size"), 0,
							     ASP_ACCESS_MAX);
		e->stack = get_stack_key(r, d, v, where, "stack");
	} else {
		e->function = get_string(r, v, where, "function", 64, true);
		e->stack = get_stack_key(r, d, v, where, "stack");
		load_call(r, v, where, "call", &e->call);
	}
	if (r->failed)
		return;
	if (e->kind == ASP_HERR_FISHY_VALUE) {
		e->where = ASP_WHERE_NONE;
		e->argument = get_string(r, v, where, "argument", 64, true);
		x = member(r, v, where, "value", JSON_INTEGER, "an integer", true);
		if (x)
			e->value = json_integer_value(x);
		if (!r->failed && e->value >= 0)
			fail(r, "%s.value: %lld is not negative, and so not fishy", where,
			     (long long)e->value);
		return;
	}
	x = member(r, v, where, "address", JSON_INTEGER, "an integer", true);
	if (x)
		e->address = (uint64_t)check_int(r, x, at(buf, where, "address"), 0, INT64_MAX);
	s = get_string(r, v, where, "where", 16, true);
	for (k = ASP_WHERE_BLOCK; s && k < ASP_WHERE_N; k++)
		if (strcmp(s, asp_herr_where_name[k]) == 0)
			break;
	if (s && k == ASP_WHERE_N)
		fail(r, "%s.where: \"%s\" is not block, freed, stack, global, unknown, after or "
		     "before", where, s);
	if (r->failed)
		return;
	e->where = (enum asp_herr_where)k;
	if (!where_fits(e->kind, e->where)) {
		fail(r, "%s.where: \"%s\" %s", where, s, where_allowed[e->kind]);
		return;
	}
	if (asp_herr_has_block(e->where)) {
		load_error_block(r, d, v, where, e);
		return;
	}
	switch (e->where) {
	case ASP_WHERE_STACK:
		x = member(r, v, where, "thread", JSON_INTEGER, "an integer", true);
		if (x)
			e->thread = (uint64_t)check_int(r, x, at(buf, where, "thread"), 1,
							INT32_MAX);
		break;
	case ASP_WHERE_GLOBAL:
		e->symbol = get_string(r, v, where, "symbol", ASP_PATH_MAX, true);
		e->offset = get_count(r, v, where, "offset", true);
		break;
	default:
		break;
	}
}

/* "errors": valgrind's heap errors (track mode), each context once, the
 * suppressed ones left out; error_summary counts them all. */
static void load_errors(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *a = get_array(r, root, "", ASP_KEY_ERRORS, false);
	uint64_t total = 0;
	size_t i;
	json_t *v;

	if (r->failed)
		return;
	if (!a) {
		if (d->has_error_summary)
			fail(r, "errors: missing, with error_summary");
		return;
	}
	if (d->count_mode) {
		fail(r, "errors: in a count-mode dump");
		return;
	}
	if (!d->has_error_summary) {
		fail(r, "error_summary: missing, with errors");
		return;
	}
	d->has_heap_errors = true;
	d->heap_errors = alloc_array(r, json_array_size(a), sizeof *d->heap_errors);
	json_array_foreach(a, i, v) {
		char where[128];
		asp_heap_error_t *e;

		if (r->failed)
			return;
		at_index(where, "errors", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where, type_name(v));
			return;
		}
		e = &d->heap_errors[d->nheap_errors++];
		load_error(r, d, v, where, e);
		total += e->count;	/* each below 2^63: no overflow */
		if (!r->failed && total > d->errors)
			fail(r, "errors: more errors than error_summary.errors (%llu)",
			     (unsigned long long)d->errors);
	}
	if (!r->failed && d->nheap_errors > d->error_contexts)
		fail(r, "errors: %zu contexts, more than error_summary.contexts (%llu)",
		     d->nheap_errors, (unsigned long long)d->error_contexts);
	d->heap_error_total = total;
}

/* "guard", at where: ALLOCSPY_GUARD's pool (track mode) of the dump or of
 * a merged process. */
static void load_guard_of(struct rd *r, asp_dump_t *d, json_t *obj, const char *where)
{
	json_t *o = get_object(r, obj, where, ASP_KEY_GUARD, false), *x;
	char w[128], buf[128];

	if (!o || r->failed)
		return;
	at(w, where, "guard");
	if (d->count_mode) {
		fail(r, "%s: in a count-mode dump", w);
		return;
	}
	d->has_guard = true;
	x = member(r, o, w, "mean", JSON_INTEGER, "an integer", true);
	if (x)
		d->guard_mean = (uint64_t)check_int(r, x, at(buf, w, "mean"), 1,
						    ASP_GUARD_MEAN_MAX);
	x = member(r, o, w, "slots", JSON_INTEGER, "an integer", true);
	if (x)
		d->guard_slots = (uint64_t)check_int(r, x, at(buf, w, "slots"), 1,
						     ASP_DUMP_MAX);
	d->guard_guarded = get_count(r, o, w, "guarded", true);
	d->guard_live = get_count(r, o, w, "live", true);
	check_at_most(r, w, "live", d->guard_live, "guard.guarded", d->guard_guarded);
	check_at_most(r, w, "live", d->guard_live, "guard.slots", d->guard_slots);
}

/* "guard": its mean the option's. */
static void load_guard(struct rd *r, asp_dump_t *d, json_t *root)
{
	load_guard_of(r, d, root, "");
	if (!r->failed && d->has_guard && d->options.has_guard &&
	    d->options.guard != d->guard_mean)
		fail(r, "guard.mean: %llu is not options.guard (%llu)",
		     (unsigned long long)d->guard_mean, (unsigned long long)d->options.guard);
}

/* "processes": a merged dump's, each with the parts of its own dump that
 * it keeps. */
static void load_processes(struct rd *r, asp_dump_t *d, json_t *root)
{
	json_t *a = get_array(r, root, "", ASP_KEY_PROCESSES, false), *v;
	size_t i;

	if (!a)
		return;
	d->processes = alloc_array(r, json_array_size(a), sizeof *d->processes);
	d->process_dumps = alloc_array(r, json_array_size(a), sizeof *d->process_dumps);
	json_array_foreach(a, i, v) {
		asp_dump_t *p;
		char where[128];
		bool start;

		if (r->failed)
			return;
		at_index(where, "processes", i);
		if (!json_is_object(v)) {
			fail(r, "%s: expected an object, found %s", where, type_name(v));
			return;
		}
		p = &d->process_dumps[d->nprocesses];
		d->processes[d->nprocesses++] = (asp_process_t){ .d = p };
		d->processes[i].start_s = get_start(r, v, where, "start_s", MAX_SECONDS,
						     true, &start);
		p->count_mode = d->count_mode;
		load_identity(r, p, v, where);
		p->file = get_string(r, v, where, "file", ASP_PATH_MAX, true);
		load_heap_of(r, p, v, where);
		load_time_of(r, p, v, where);
		load_dump_info_of(r, p, v, where);
		load_guard_of(r, p, v, where);
	}
}

/* The checks that come first, so that a file that is not a dump at all
 * says so rather than naming a missing key. */
static void check_header(struct rd *r, json_t *root)
{
	json_t *v;

	if (!json_is_object(root)) {
		fail(r, "not an allocspy dump (the top level is %s, not an object)",
		     type_name(root));
		return;
	}
	v = json_object_get(root, ASP_KEY_FORMAT);
	if (!v) {
		fail(r, "not an allocspy dump (no \"" ASP_KEY_FORMAT "\" key)");
		return;
	}
	if (!json_is_string(v) || strcmp(json_string_value(v), ASP_DUMP_FORMAT) != 0) {
		fail(r, "not an allocspy dump (format is %s%.40s%s, not \"" ASP_DUMP_FORMAT "\")",
		     json_is_string(v) ? "\"" : "",
		     json_is_string(v) ? json_string_value(v) : type_name(v),
		     json_is_string(v) ? "\"" : "");
		return;
	}
	v = json_object_get(root, ASP_KEY_VERSION);
	if (!v) {
		fail(r, ASP_KEY_VERSION ": missing");
	} else if (!json_is_integer(v)) {
		fail(r, ASP_KEY_VERSION ": expected an integer, found %s", type_name(v));
	} else if (json_integer_value(v) != ASP_DUMP_VERSION) {
		fail(r, "version %" JSON_INTEGER_FORMAT " is not supported "
		     "(this allocspy-report reads version %d)",
		     json_integer_value(v), ASP_DUMP_VERSION);
	}
}

static int build(asp_dump_t *d, const char *file, json_t *root, char *err)
{
	struct rd r = { .err = err, .failed = false, .keeper = d };

	memset(d, 0, sizeof *d);
	d->file = file;
	check_header(&r, root);
	load_options(&r, d, root);	/* first: the mode shapes heap */
	load_program(&r, d, root);
	load_time(&r, d, root);
	load_heap(&r, d, root);
	load_functions(&r, d, root);
	load_histogram(&r, d, root);
	load_threads(&r, d, root);
	load_refs(&r, d, root);
	load_leaks(&r, d, root);
	load_error_summary(&r, d, root);
	load_stacks(&r, d, root);
	load_modules(&r, d, root);
	load_records(&r, d, root);
	load_errors(&r, d, root);
	load_guard(&r, d, root);
	load_sample(&r, d, root);
	load_stack_stats(&r, d, root);
	load_dump_info(&r, d, root);
	load_thread_stacks(&r, d, root);
	load_snapshots(&r, d, root);
	load_snapshot_info(&r, d, root);
	load_rss(&r, d, root);
	load_processes(&r, d, root);
	json_decref(root);	/* every string the dump keeps is a copy */
	if (r.failed) {
		asp_dump_free(d);
		return -EINVAL;
	}
	return 0;
}

/* jansson's message for a parse error, as ours. */
static void parse_error(const json_error_t *e, char *err)
{
	if (json_error_code(e) == json_error_premature_end_of_input &&
	    e->position == 0)
		snprintf(err, ASP_ERR_MAX, "empty file");
	else
		snprintf(err, ASP_ERR_MAX, "not valid JSON: %s (line %d, column %d)",
			 e->text, e->line, e->column);
}

#define LOAD_FLAGS JSON_REJECT_DUPLICATES

int asp_dump_parse(asp_dump_t *d, const char *file, const char *buf, size_t len,
		   char err[ASP_ERR_MAX])
{
	json_error_t e;
	json_t *root = json_loadb(buf, len, LOAD_FLAGS, &e);

	if (!root) {
		memset(d, 0, sizeof *d);
		parse_error(&e, err);
		return -EINVAL;
	}
	return build(d, file, root, err);
}

/* jansson's reader of a FILE takes a byte at a time through getc, a lock
 * each: a 60 MB dump (100,000 stacks) spent a second in it. This one reads
 * blocks; a read error is seen by ferror, as before. */
static size_t read_more(void *buf, size_t len, void *arg)
{
	return fread(buf, 1, len, arg);
}

int asp_dump_load(asp_dump_t *d, const char *file, char err[ASP_ERR_MAX])
{
	json_error_t e;
	struct stat st;
	json_t *root;
	FILE *f;

	memset(d, 0, sizeof *d);
	f = fopen(file, "rb");
	if (!f) {
		int e_open = errno;

		snprintf(err, ASP_ERR_MAX, "%s", strerror(e_open));
		return -e_open;
	}
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		snprintf(err, ASP_ERR_MAX, "%s", strerror(EISDIR));
		return -EISDIR;
	}
	errno = 0;
	root = json_load_callback(read_more, f, LOAD_FLAGS, &e);
	if (ferror(f)) {	/* jansson takes a read error for the end */
		int e_read = errno ? errno : EIO;

		snprintf(err, ASP_ERR_MAX, "read error: %s", strerror(e_read));
		json_decref(root);
		fclose(f);
		return -e_read;
	}
	fclose(f);
	if (!root) {
		parse_error(&e, err);
		return -EINVAL;
	}
	return build(d, file, root, err);
}

void asp_dump_free(asp_dump_t *d)
{
	free(d->argv);
	free(d->fns);
	free(d->hist);
	free(d->threads);
	free(d->records);
	free(d->heap_errors);
	free(d->stacks);
	free(d->stack_stats);
	free(d->thread_stacks);
	free(d->snapshots);
	free(d->details);
	free(d->frames);
	free(d->modules);
	free(d->processes);
	for (size_t i = 0; d->process_dumps && i < d->nprocesses; i++)
		asp_dump_free(&d->process_dumps[i]);
	free(d->process_dumps);
	for (struct asp_kept *k = d->kept, *next; k; k = next) {
		next = k->next;
		free(k);
	}
	memset(d, 0, sizeof *d);
}

const asp_fn_t *asp_dump_fn(const asp_dump_t *d, const char *name)
{
	/* Every name is a key of the dump's "functions" object: never NULL. */
	for (size_t i = 0; i < d->nfns; i++)
		if (strcmp(d->fns[i].name, name) == 0) // NOLINT(clang-analyzer-core.NonNullParamChecker)
			return &d->fns[i];
	return NULL;
}

const char *asp_dump_exe_name(const asp_dump_t *d)
{
	const char *slash = strrchr(d->exe, '/');

	return slash && slash[1] ? slash + 1 : d->exe;
}
