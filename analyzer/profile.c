/* profile - a dump's stacks symbolized once, with what each of them
 * allocated: the model the timeline and every export draw from. */
#include "profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

/* Most lines one address can give (inlined calls nested this deep). */
#define MAX_INLINE 64

const char *asp_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

static size_t hash_addr(uint64_t a, size_t size)
{
	a ^= a >> 33;
	a *= 0xff51afd7ed558ccdULL;
	a ^= a >> 33;
	return (size_t)a & (size - 1);
}

/* The module of the dump that holds addr, whose file the symbolizer
 * named path (its own copy of the name): -1 when none. */
static long module_of(const asp_dump_t *d, const char *path, uint64_t addr)
{
	for (size_t i = 0; path && i < d->nmodules; i++) {
		const asp_module_t *m = &d->modules[i];

		if (strcmp(m->path, path) == 0 && m->base <= addr &&
		    (!m->end || addr < m->end))
			return (long)i;
	}
	return -1;
}

/* The location of addr, symbolized on first use; NULL: out of memory. */
static asp_loc_t *loc_of(asp_profile_t *p, uint64_t addr, asp_line_t *buf)
{
	size_t h = hash_addr(addr, p->table_size);
	asp_loc_t *l;

	while (p->table[h]) {
		if (p->table[h]->addr == addr)
			return p->table[h];
		h = (h + 1) & (p->table_size - 1);
	}
	l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->addr = addr;
	l->nlines = p->sym ? asp_symbolize(p->sym, addr, buf, MAX_INLINE) : 0;
	if (l->nlines == 0) {
		buf[0] = (asp_line_t){ .addr = addr };
		l->nlines = 1;
	}
	l->lines = malloc(l->nlines * sizeof *l->lines);
	if (!l->lines) {
		free(l);
		return NULL;
	}
	memcpy(l->lines, buf, l->nlines * sizeof *l->lines);
	l->module = module_of(p->d, l->lines[0].module, addr);
	l->id = ++p->nlocs;
	p->locs[l->id - 1] = l;
	p->table[h] = l;
	return l;
}

static bool is_main(const asp_loc_t *l)
{
	const char *fn = l->lines[l->nlines - 1].fn;

	return fn && strcmp(fn, "main") == 0;
}

/* Whether l is where stacks begin: a process's entry point, a thread's
 * start, or valgrind's name for what lies below main. */
static bool is_root(const asp_loc_t *l)
{
	static const char *const roots[] = {
		"_start", "clone", "clone3", "__clone", "__clone3", "start_thread",
		"(below main)", "main",
	};
	const char *fn = l->lines[l->nlines - 1].fn;

	for (size_t i = 0; fn && i < sizeof roots / sizeof *roots; i++)
		if (strcmp(fn, roots[i]) == 0)
			return true;
	return false;
}

static int symbolize_stacks(asp_profile_t *p)
{
	const asp_dump_t *d = p->d;
	asp_line_t *buf = malloc(MAX_INLINE * sizeof *buf);
	size_t frames = 0;

	for (size_t i = 0; i < d->nstacks; i++)
		frames += d->stacks[i].n;
	p->table_size = 16;
	while (p->table_size < 2 * frames)
		p->table_size *= 2;
	p->table = calloc(p->table_size, sizeof(asp_loc_t *));
	p->locs = calloc(frames ? frames : 1, sizeof(asp_loc_t *));
	p->stacks = calloc(d->nstacks ? d->nstacks : 1, sizeof *p->stacks);
	if (!buf || !p->table || !p->locs || !p->stacks) {
		free(buf);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->nstacks; i++) {
		const asp_stack_t *st = &d->stacks[i];
		asp_pstack_t *ps = &p->stacks[i];

		ps->locs = calloc(st->n ? st->n : 1, sizeof(asp_loc_t *));
		if (!ps->locs) {
			free(buf);
			return -ENOMEM;
		}
		for (size_t j = 0; j < st->n; j++) {
			asp_loc_t *l;

			/* The shim's own frames (the thread trampoline) are
			 * left out, as the leaks command leaves them out. */
			if (p->sym && asp_symbolize_is_shim(p->sym, st->frames[j]))
				continue;
			l = loc_of(p, st->frames[j], buf);

			if (!l) {
				free(buf);
				return -ENOMEM;
			}
			ps->locs[ps->n++] = l;
			if (is_main(l))
				break;
		}
		ps->truncated = d->backtrace && st->n >= d->backtrace && ps->n &&
				!is_root(ps->locs[ps->n - 1]);
	}
	free(buf);
	return 0;
}

/* a - b, or 0 when b is larger (the dump's totals cover the stacks'). */
static uint64_t rest(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

static int build_samples(asp_profile_t *p)
{
	const asp_dump_t *d = p->d;
	asp_sample_t sum = {0}, *o;
	const asp_snapshot_t *peak = d->nsnapshots ?
				     &d->snapshots[d->peak_snapshot] : NULL;

	p->samples = calloc(d->nstack_stats + 1, sizeof *p->samples);
	if (!p->samples)
		return -ENOMEM;
	p->has_peak = d->nstack_stats > 0;
	for (size_t i = 0; i < d->nstack_stats; i++) {
		const asp_stack_stat_t *s = &d->stack_stats[i];
		asp_sample_t *x = &p->samples[p->nsamples++];

		*x = (asp_sample_t){
			.stack = &p->stacks[s->stack], .stack_index = s->stack,
			.allocs = s->allocs, .bytes = s->bytes,
			.in_use_blocks = s->in_use_blocks,
			.in_use_bytes = s->in_use_bytes, .temporary = s->temporary,
			.peak_bytes = s->peak_bytes, .peak_blocks = s->peak_blocks,
		};
		p->has_peak = p->has_peak && s->has_peak;
		/* A hostile dump's sums may pass 2^64: they stop at UINT64_MAX. */
		sum.allocs = asp_add_sat(sum.allocs, x->allocs);
		sum.bytes = asp_add_sat(sum.bytes, x->bytes);
		sum.in_use_blocks = asp_add_sat(sum.in_use_blocks, x->in_use_blocks);
		sum.in_use_bytes = asp_add_sat(sum.in_use_bytes, x->in_use_bytes);
		sum.temporary = asp_add_sat(sum.temporary, x->temporary);
		sum.peak_bytes = asp_add_sat(sum.peak_bytes, x->peak_bytes);
		sum.peak_blocks = asp_add_sat(sum.peak_blocks, x->peak_blocks);
	}
	o = &p->samples[p->nsamples];
	*o = (asp_sample_t){
		.stack = NULL, .stack_index = SIZE_MAX,
		.allocs = rest(d->allocs, sum.allocs),
		.bytes = rest(d->bytes_allocated, sum.bytes),
		.in_use_blocks = rest(d->in_use_blocks, sum.in_use_blocks),
		.in_use_bytes = rest(d->in_use_bytes, sum.in_use_bytes),
		.temporary = rest(d->temporary, sum.temporary),
	};
	if (p->has_peak && peak) {
		o->peak_bytes = rest(peak->in_use_bytes, sum.peak_bytes);
		o->peak_blocks = rest(peak->in_use_blocks, sum.peak_blocks);
	}
	if (o->allocs || o->bytes || o->in_use_blocks || o->in_use_bytes ||
	    o->temporary || o->peak_bytes || o->peak_blocks)
		p->nsamples++;
	return 0;
}

int asp_profile_build(asp_profile_t *p, const asp_dump_t *d)
{
	memset(p, 0, sizeof *p);
	p->d = d;
	p->sym = asp_symbolizer_new(d);
	if (!p->sym || symbolize_stacks(p) < 0 || build_samples(p) < 0) {
		asp_profile_free(p);
		return -ENOMEM;
	}
	return 0;
}

void asp_profile_free(asp_profile_t *p)
{
	for (size_t i = 0; i < p->nlocs; i++) {
		asp_loc_t *l = p->locs[i];

		if (l)
			free(l->lines);
		free(l);
	}
	for (size_t i = 0; p->stacks && i < p->d->nstacks; i++)
		free(p->stacks[i].locs);
	free(p->stacks);
	free(p->locs);
	free(p->table);
	free(p->samples);
	asp_symbolizer_free(p->sym);
	memset(p, 0, sizeof *p);
}

/* The compact name of a frame without a symbol at addr in module i of d
 * (-1: none): "sort+0x6e8d", the module's base name and the offset of the
 * return address from its load bias, or the address itself. */
static const char *unnamed(const asp_dump_t *d, long i, uint64_t addr,
			   char buf[ASP_NAME_MAX])
{
	const asp_module_t *m;

	if (i < 0) {
		snprintf(buf, ASP_NAME_MAX, "0x%" PRIx64, addr);
		return buf;
	}
	m = &d->modules[i];
	snprintf(buf, ASP_NAME_MAX, "%.60s+0x%" PRIx64, asp_base_name(m->path),
		 addr - m->base);
	return buf;
}

const char *asp_profile_name(const asp_profile_t *p, const asp_loc_t *loc,
			     const asp_line_t *l, char buf[ASP_NAME_MAX])
{
	return l->fn ? l->fn : unnamed(p->d, loc->module, loc->addr, buf);
}

void asp_profile_put_frame(FILE *out, const asp_profile_t *p, const asp_loc_t *loc,
			   const asp_line_t *l, void (*put)(FILE *, const char *))
{
	char buf[ASP_NAME_MAX];

	put(out, asp_profile_name(p, loc, l, buf));
	if (l->file) {
		fputs(" (", out);
		put(out, l->file);
		fprintf(out, ":%u)", l->line);
	} else if (l->fn && l->module) {
		fputs(" (in ", out);
		put(out, l->module);
		putc(')', out);
	}
}

json_t *asp_profile_frames_json(const asp_profile_t *p, const asp_pstack_t *ps, bool names)
{
	json_t *a = json_array();

	for (size_t j = 0; a && j < ps->n; j++) {
		const asp_loc_t *loc = ps->locs[j];

		for (size_t k = 0; k < loc->nlines; k++) {
			const asp_line_t *l = &loc->lines[k];
			char addr[24], buf[ASP_NAME_MAX];
			const char *name = asp_profile_name(p, loc, l, buf);
			json_t *o = json_object();

			snprintf(addr, sizeof addr, "0x%" PRIx64, loc->addr);
			json_object_set_new(o, "address", json_string(addr));
			json_object_set_new(o, "function", asp_json_text(names ? name : l->fn));
			if (!names)
				json_object_set_new(o, "name", asp_json_text(name));
			json_object_set_new(o, "file", asp_json_text(l->file));
			json_object_set_new(o, "line", l->file ? json_integer(l->line) : json_null());
			json_object_set_new(o, "module", asp_json_text(l->module));
			json_object_set_new(o, "inlined", json_boolean(l->inlined));
			json_array_append_new(a, o);
		}
	}
	return a;
}

const char *asp_frame_name(const asp_dump_t *d, const asp_line_t *l,
			   char buf[ASP_NAME_MAX])
{
	return l->fn ? l->fn : unnamed(d, module_of(d, l->module, l->addr), l->addr, buf);
}
