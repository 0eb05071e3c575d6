/* pprof - a dump as a gzipped profile.proto, the format of pprof and of
 * the continuous-profiling services that take its files. The protobuf
 * encoding is written here (varints and length-delimited fields); zlib
 * compresses it. */
#include "pprof.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "fmt.h"
#include "hash.h"
#include "peak.h"
#include "strtab.h"

/* profile.proto's field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE, PROFILE_MAPPING,
	PROFILE_LOCATION, PROFILE_FUNCTION, PROFILE_STRING_TABLE,
	PROFILE_DURATION_NANOS = 10, PROFILE_PERIOD_TYPE, PROFILE_PERIOD,
	PROFILE_COMMENT, PROFILE_DEFAULT_SAMPLE_TYPE
};
enum { VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT };
enum { SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE, SAMPLE_LABEL };
enum { LABEL_KEY = 1, LABEL_STR, LABEL_NUM };
enum {
	MAPPING_ID = 1, MAPPING_MEMORY_START, MAPPING_MEMORY_LIMIT,
	MAPPING_FILE_OFFSET, MAPPING_FILENAME, MAPPING_BUILD_ID,
	MAPPING_HAS_FUNCTIONS, MAPPING_HAS_FILENAMES, MAPPING_HAS_LINE_NUMBERS,
	MAPPING_HAS_INLINE_FRAMES
};
enum { LOCATION_ID = 1, LOCATION_MAPPING_ID, LOCATION_ADDRESS, LOCATION_LINE };
enum { LINE_FUNCTION_ID = 1, LINE_LINE };
enum { FUNCTION_ID = 1, FUNCTION_NAME, FUNCTION_SYSTEM_NAME, FUNCTION_FILENAME };

enum { WIRE_VARINT = 0, WIRE_LEN = 2 };

/* A growing buffer of encoded protobuf; a failed allocation sticks. */
struct pb {
	unsigned char *b;
	size_t n, cap;
	bool oom;
};

static void pb_put(struct pb *p, const void *data, size_t len)
{
	if (p->oom || !len)
		return;
	if (p->cap - p->n < len) {
		size_t cap = p->cap ? p->cap : 256;
		unsigned char *b;

		while (cap - p->n < len)
			cap *= 2;
		b = realloc(p->b, cap);
		if (!b) {
			p->oom = true;
			return;
		}
		p->b = b;
		p->cap = cap;
	}
	memcpy(p->b + p->n, data, len);
	p->n += len;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	unsigned char buf[10];
	size_t n = 0;

	do {
		buf[n] = v & 0x7f;
		v >>= 7;
		buf[n++] |= v ? 0x80 : 0;
	} while (v);
	pb_put(p, buf, n);
}

static void pb_key(struct pb *p, int field, int wire)
{
	pb_varint(p, (uint64_t)field << 3 | (uint64_t)wire);
}

/* A varint field; zero is the default and is left out. */
static void pb_uint(struct pb *p, int field, uint64_t v)
{
	if (!v)
		return;
	pb_key(p, field, WIRE_VARINT);
	pb_varint(p, v);
}

static void pb_bytes(struct pb *p, int field, const void *data, size_t len)
{
	pb_key(p, field, WIRE_LEN);
	pb_varint(p, len);
	pb_put(p, data, len);
}

/* Appends the message m as field of p, and empties m for reuse. */
static void pb_msg(struct pb *p, int field, struct pb *m)
{
	if (m->oom)
		p->oom = true;
	pb_bytes(p, field, m->b, m->n);
	m->n = 0;
}

/* The string table: each string once, "" first. Running out of memory
 * is kept, to be told once the profile is written. */
struct strings {
	asp_strtab_t t;
	bool oom;
};

/* The index of s in the table, added when new; 0 when memory ran out. */
static uint64_t intern(struct strings *st, const char *s)
{
	size_t i = st->oom ? SIZE_MAX : asp_strtab_intern(&st->t, s);

	if (i == SIZE_MAX) {
		st->oom = true;
		return 0;
	}
	return i;
}

/* The functions, one per name and file; the id is the index + 1. A frame
 * without a symbol is a function of its own, named by its module and
 * offset ("git+0x21be42"), so that each address keeps its own weight. */
struct fn {
	uint64_t name, file;	/* string indexes */
};

struct encoder {
	const asp_profile_t *p;
	struct strings str;
	struct fn *fns;
	size_t nfns;
	size_t *fn_table;	/* the functions by (name, file): id, 0 empty */
	size_t fn_table_size;	/* a power of two, above twice the most ids */
	char *comment;		/* lives until the string table is written */
	char sampled[128];	/* the sampling note, likewise */
	char peak[ASP_PEAK_TEXT_MAX + 8];	/* the peak, as every view says it */
	struct pb out, m, sub;
};

static uint64_t function_id(struct encoder *e, uint64_t name, uint64_t file)
{
	uint64_t k = asp_hash(name) ^ (file + 0x632be59bd9b4e019ULL);
	size_t h;

	k ^= k >> 31;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	for (h = (size_t)k & (e->fn_table_size - 1); e->fn_table[h];
	     h = (h + 1) & (e->fn_table_size - 1)) {
		const struct fn *f = &e->fns[e->fn_table[h] - 1];

		if (f->name == name && f->file == file)
			return e->fn_table[h];
	}
	e->fns[e->nfns] = (struct fn){ name, file };
	e->fn_table[h] = ++e->nfns;
	return e->nfns;
}

static void sample_types(struct encoder *e)
{
	static const char *const types[][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};

	for (size_t i = 0; i < 4; i++) {
		pb_uint(&e->m, VALUE_TYPE_TYPE, intern(&e->str, types[i][0]));
		pb_uint(&e->m, VALUE_TYPE_UNIT, intern(&e->str, types[i][1]));
		pb_msg(&e->out, PROFILE_SAMPLE_TYPE, &e->m);
	}
	pb_uint(&e->m, VALUE_TYPE_TYPE, intern(&e->str, "space"));
	pb_uint(&e->m, VALUE_TYPE_UNIT, intern(&e->str, "bytes"));
	pb_msg(&e->out, PROFILE_PERIOD_TYPE, &e->m);
}

/* The end of module i: the dump's, or past the last address seen in it. */
static uint64_t module_limit(const asp_profile_t *p, size_t i)
{
	const asp_module_t *m = &p->d->modules[i];
	uint64_t end = m->end;

	for (size_t k = 0; !end && k < p->nlocs; k++)
		if (p->locs[k]->module == (long)i && p->locs[k]->addr >= end)
			end = p->locs[k]->addr + 1;
	return end > m->base ? end : m->base + 1;
}

/* What the locations of each mapping have: bit 0 a function from a symbol
 * on every line, bit 1 a file and line on every line. */
enum { HAS_FN = 1, HAS_LINE = 2 };

/* The mappings, with the build-ids that let pprof and the services that
 * take its files find the modules' debugging information; a mapping says
 * it has functions, files and lines only when every location in it does,
 * so that a tool that can symbolize offline knows where to. */
static void mappings(struct encoder *e)
{
	const asp_dump_t *d = e->p->d;
	unsigned char *has = malloc(d->nmodules ? d->nmodules : 1);

	if (!has) {
		e->out.oom = true;
		return;
	}
	memset(has, HAS_FN | HAS_LINE, d->nmodules);
	for (size_t k = 0; k < e->p->nlocs; k++) {
		const asp_loc_t *loc = e->p->locs[k];

		for (size_t j = 0; loc->module >= 0 && j < loc->nlines; j++) {
			if (!loc->lines[j].fn)
				has[loc->module] &= (unsigned char)~HAS_FN;
			if (!loc->lines[j].file)
				has[loc->module] &= (unsigned char)~HAS_LINE;
		}
	}
	for (size_t i = 0; i < d->nmodules; i++) {
		const asp_module_t *m = &d->modules[i];

		pb_uint(&e->m, MAPPING_ID, i + 1);
		pb_uint(&e->m, MAPPING_MEMORY_START, m->base);
		pb_uint(&e->m, MAPPING_MEMORY_LIMIT, module_limit(e->p, i));
		pb_uint(&e->m, MAPPING_FILENAME, intern(&e->str, m->path));
		if (m->build_id)
			pb_uint(&e->m, MAPPING_BUILD_ID, intern(&e->str, m->build_id));
		pb_uint(&e->m, MAPPING_HAS_FUNCTIONS, has[i] & HAS_FN);
		pb_uint(&e->m, MAPPING_HAS_FILENAMES, (has[i] & HAS_LINE) != 0);
		pb_uint(&e->m, MAPPING_HAS_LINE_NUMBERS, (has[i] & HAS_LINE) != 0);
		pb_uint(&e->m, MAPPING_HAS_INLINE_FRAMES, (has[i] & HAS_LINE) != 0);
		pb_msg(&e->out, PROFILE_MAPPING, &e->m);
	}
	free(has);
}

/* Location ids are the profile's; the one of ASP_PROFILE_OTHER follows. */
static void locations(struct encoder *e)
{
	const asp_profile_t *p = e->p;

	for (size_t i = 0; i < p->nlocs; i++) {
		const asp_loc_t *loc = p->locs[i];

		pb_uint(&e->m, LOCATION_ID, loc->id);
		if (loc->module >= 0)
			pb_uint(&e->m, LOCATION_MAPPING_ID, (uint64_t)loc->module + 1);
		pb_uint(&e->m, LOCATION_ADDRESS, loc->addr);
		for (size_t k = 0; k < loc->nlines; k++) {
			const asp_line_t *l = &loc->lines[k];
			char buf[ASP_NAME_MAX];
			uint64_t name = intern(&e->str, asp_profile_name(p, loc, l, buf));
			uint64_t file = l->file ? intern(&e->str, l->file) : 0;

			pb_uint(&e->sub, LINE_FUNCTION_ID, function_id(e, name, file));
			pb_uint(&e->sub, LINE_LINE, l->file ? l->line : 0);
			pb_msg(&e->m, LOCATION_LINE, &e->sub);
		}
		pb_msg(&e->out, PROFILE_LOCATION, &e->m);
	}
	pb_uint(&e->m, LOCATION_ID, p->nlocs + 1);
	pb_uint(&e->sub, LINE_FUNCTION_ID,
		function_id(e, intern(&e->str, ASP_PROFILE_OTHER), 0));
	pb_msg(&e->m, LOCATION_LINE, &e->sub);
	pb_msg(&e->out, PROFILE_LOCATION, &e->m);
}

static void functions(struct encoder *e)
{
	for (size_t i = 0; i < e->nfns; i++) {
		pb_uint(&e->m, FUNCTION_ID, i + 1);
		pb_uint(&e->m, FUNCTION_NAME, e->fns[i].name);
		pb_uint(&e->m, FUNCTION_SYSTEM_NAME, e->fns[i].name);
		pb_uint(&e->m, FUNCTION_FILENAME, e->fns[i].file);
		pb_msg(&e->out, PROFILE_FUNCTION, &e->m);
	}
}

/* One sample: the stack's locations, leaf first, the four values, and a
 * thread label when tid >= 0. */
static void sample(struct encoder *e, const asp_sample_t *s, uint64_t allocs,
		   uint64_t bytes, uint64_t in_use_blocks, uint64_t in_use_bytes,
		   int64_t tid)
{
	uint64_t v[4] = { allocs, bytes, in_use_blocks, in_use_bytes };

	if (s->stack)
		for (size_t j = 0; j < s->stack->n; j++)
			pb_varint(&e->sub, s->stack->locs[j]->id);
	else
		pb_varint(&e->sub, e->p->nlocs + 1);
	pb_msg(&e->m, SAMPLE_LOCATION_ID, &e->sub);
	for (size_t i = 0; i < 4; i++)
		pb_varint(&e->sub, v[i]);
	pb_msg(&e->m, SAMPLE_VALUE, &e->sub);
	if (tid >= 0) {
		pb_uint(&e->sub, LABEL_KEY, intern(&e->str, "thread"));
		pb_uint(&e->sub, LABEL_NUM, (uint64_t)tid);
		pb_msg(&e->m, SAMPLE_LABEL, &e->sub);
	}
	pb_msg(&e->out, PROFILE_SAMPLE, &e->m);
}

/* Each stack's allocations split by thread as thread_stacks gives them,
 * each with its thread label; what is left of them, and what is in use at
 * the end, in one sample without a label. */
static void samples(struct encoder *e)
{
	const asp_dump_t *d = e->p->d;
	/* thread_stacks by stack: those of stack x are by[first[x]] up to
	 * by[first[x + 1]], in the dump's order. */
	size_t *first = calloc(d->nstacks + 2, sizeof *first);
	size_t *by = malloc((d->nthread_stacks + 1) * sizeof *by);

	if (!first || !by) {
		free(first);
		free(by);
		e->out.oom = true;
		return;
	}
	for (size_t k = 0; k < d->nthread_stacks; k++)
		first[d->thread_stacks[k].stack + 2]++;
	for (size_t x = 2; x < d->nstacks + 2; x++)
		first[x] += first[x - 1];
	for (size_t k = 0; k < d->nthread_stacks; k++)
		by[first[d->thread_stacks[k].stack + 1]++] = k;
	for (size_t i = 0; i < e->p->nsamples; i++) {
		const asp_sample_t *s = &e->p->samples[i];
		uint64_t allocs = s->allocs, bytes = s->bytes;

		for (size_t j = s->stack ? first[s->stack_index] : 0;
		     s->stack && j < first[s->stack_index + 1]; j++) {
			const asp_thread_stack_t *t = &d->thread_stacks[by[j]];
			uint64_t a = t->allocs < allocs ? t->allocs : allocs;
			uint64_t b = t->bytes < bytes ? t->bytes : bytes;

			if (!a && !b)
				continue;
			sample(e, s, a, b, 0, 0, t->tid);
			allocs -= a;
			bytes -= b;
		}
		if (allocs || bytes || s->in_use_blocks || s->in_use_bytes)
			sample(e, s, allocs, bytes, s->in_use_blocks,
			       s->in_use_bytes, -1);
	}
	free(first);
	free(by);
}

/* The comment: "EXE: ARGV...". */
static void comment(struct encoder *e)
{
	const asp_dump_t *d = e->p->d;
	size_t len = strlen(d->exe) + 3, n;
	char *text;

	for (size_t i = 0; i < d->argc; i++)
		len += strlen(d->argv[i]) + 1;
	text = malloc(len);
	if (!text) {
		e->out.oom = true;
		return;
	}
	n = (size_t)snprintf(text, len, "%s:", d->exe);
	for (size_t i = 0; i < d->argc && n < len; i++)
		n += (size_t)snprintf(text + n, len - n, " %s", d->argv[i]);
	e->comment = text;
	pb_uint(&e->out, PROFILE_COMMENT, intern(&e->str, e->comment)); // NOLINT(clang-analyzer-unix.Malloc): e->comment is freed by asp_pprof_write
	if (d->has_peak) {
		char peak[ASP_PEAK_TEXT_MAX];

		snprintf(e->peak, sizeof e->peak, "peak: %s", asp_peak_text(peak, d));
		pb_uint(&e->out, PROFILE_COMMENT, intern(&e->str, e->peak));
	}
	if (d->sampled) {
		/* The values are already scaled: pprof must not scale them. */
		snprintf(e->sampled, sizeof e->sampled, "sampled: ALLOCSPY_SAMPLE=%llu; the "
			 "values are estimates", (unsigned long long)d->sample_bytes);
		pb_uint(&e->out, PROFILE_COMMENT, intern(&e->str, e->sampled));
	}
}

static int gzip_out(FILE *out, const struct pb *pb)
{
	unsigned char buf[16384] = {0};
	z_stream z = {0};
	int rc;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = pb->b;
	z.avail_in = (uInt)pb->n;
	do {
		z.next_out = buf;
		z.avail_out = sizeof buf;
		rc = deflate(&z, Z_FINISH);
		fwrite(buf, 1, sizeof buf - z.avail_out, out);
	} while (rc == Z_OK);
	deflateEnd(&z);
	return rc == Z_STREAM_END ? 0 : -ENOMEM;
}

int asp_pprof_write(FILE *out, const asp_profile_t *p)
{
	struct encoder e = { .p = p };
	size_t lines = 1;
	int rc = -ENOMEM;

	for (size_t i = 0; i < p->nlocs; i++)
		lines += p->locs[i]->nlines;
	e.fn_table_size = 16;
	while (e.fn_table_size < 2 * lines)
		e.fn_table_size *= 2;
	e.fns = malloc(lines * sizeof *e.fns);
	e.fn_table = calloc(e.fn_table_size, sizeof *e.fn_table);
	if (!e.fns || !e.fn_table) {
		free(e.fns);
		free(e.fn_table);
		return -ENOMEM;
	}
	intern(&e.str, "");
	sample_types(&e);
	samples(&e);
	mappings(&e);
	locations(&e);
	functions(&e);
	comment(&e);
	if (p->d->wall_s > 0)
		pb_uint(&e.out, PROFILE_DURATION_NANOS, (uint64_t)(p->d->wall_s * 1e9));
	pb_uint(&e.out, PROFILE_PERIOD, 1);
	for (size_t i = 0; !e.str.oom && i < e.str.t.n; i++)
		pb_bytes(&e.out, PROFILE_STRING_TABLE, e.str.t.v[i], strlen(e.str.t.v[i]));
	if (!e.out.oom && !e.m.oom && !e.sub.oom && !e.str.oom)
		rc = gzip_out(out, &e.out);
	free(e.comment);
	asp_strtab_free(&e.str.t);
	free(e.fns);
	free(e.fn_table);
	free(e.out.b);
	free(e.m.b);
	free(e.sub.b);
	return rc;
}
