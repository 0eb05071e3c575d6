/* leaks - the leaks command: valgrind-style loss records with symbolized
 * stacks and, on request, suppressions; then the LEAK SUMMARY. */
#include "leaks.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dwsym.h"
#include "fmt.h"
#include "profile.h"
#include "summary.h"
#include "suppress.h"
#include "symbolize.h"

/* Most lines one address can give (inlined calls nested this deep). */
#define MAX_INLINE 64

int asp_leaks_parse_kinds(const char *spec, unsigned *kinds)
{
	const char *p = spec;

	if (strcmp(spec, "all") == 0) {
		*kinds = ASP_KIND_BIT(ASP_LEAK_DEFINITE) |
			 ASP_KIND_BIT(ASP_LEAK_INDIRECT) |
			 ASP_KIND_BIT(ASP_LEAK_POSSIBLE) |
			 ASP_KIND_BIT(ASP_LEAK_REACHABLE);
		return 0;
	}
	*kinds = 0;
	if (strcmp(spec, "none") == 0)
		return 0;
	for (;;) {
		size_t len = strcspn(p, ",");
		int k = asp_leak_kind_of(p, len);

		if (k < 0)
			return -EINVAL;
		*kinds |= ASP_KIND_BIT(k);
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int asp_stack_lines(asp_symbolizer_t *s, const asp_stack_t *st, asp_lines_t *ls)
{
	ls->n = 0;
	for (size_t j = 0; j < st->n; j++) {
		const char *fn;

		if (asp_symbolize_is_shim(s, st->frames[j]))
			continue;	/* the shim's own frames */

		if (ls->cap - ls->n < MAX_INLINE) {
			size_t cap = ls->cap * 2 + MAX_INLINE;
			asp_line_t *v = realloc(ls->v, cap * sizeof *v);

			if (!v)
				return -ENOMEM;
			ls->v = v;
			ls->cap = cap;
		}
		ls->n += asp_symbolize(s, st->frames[j], ls->v + ls->n, MAX_INLINE);
		fn = ls->v[ls->n - 1].fn;
		if (asp_dwsym_ends_stack(fn))
			break;
	}
	return 0;
}

static bool shown(const asp_record_t *rec, unsigned kinds)
{
	return !rec->suppressed && (kinds & ASP_KIND_BIT(rec->kind));
}

static void record_head(FILE *out, const asp_dump_t *d, size_t i)
{
	const asp_record_t *rec = &d->records[i];
	struct asp_summary_out o = { out, d };

	asp_vg_loss_record(asp_summary_put, &o, rec->bytes, rec->indirect_bytes, rec->blocks,
			   rec->kind, i + 1, d->nrecords);
}

void asp_put_line(FILE *out, const asp_line_t *l, bool first)
{
	fprintf(out, "   %s 0x%" PRIX64 ": ", first ? "at" : "by", l->addr);
	asp_put_text(out, l->fn ? l->fn : "???");
	if (l->file) {
		fputs(" (", out);
		asp_put_text(out, l->file);
		fprintf(out, ":%u)", l->line);
	} else if (l->module) {
		fputs(" (in ", out);
		asp_put_text(out, l->module);
		putc(')', out);
	}
	putc('\n', out);
}

/* The shim's interposer, as valgrind shows its own malloc: "at malloc",
 * then "by strdup" for the functions that called it, in the shim's
 * object. alloc_pc is an entry point, not a return address. */
static void alloc_lines(FILE *out, const asp_dump_t *d, asp_symbolizer_t *s,
			const asp_record_t *rec)
{
	asp_line_t at;

	asp_symbolize(s, rec->alloc_pc + 1, &at, 1);
	at.addr = rec->alloc_pc;
	if (rec->nalloc_stack == 0) {
		asp_summary_prefix(out, d);
		asp_put_line(out, &at, true);
		return;
	}
	at.file = NULL;
	for (size_t k = 0; k < rec->nalloc_stack; k++) {
		char *name = asp_demangle(rec->alloc_stack[k]);

		at.fn = name ? name : rec->alloc_stack[k];
		asp_summary_prefix(out, d);
		asp_put_line(out, &at, k == 0);
		free(name);
	}
}

void asp_leaks_text(FILE *out, const asp_dump_t *d, unsigned kinds,
		    bool gen_suppressions)
{
	asp_symbolizer_t *s = asp_symbolizer_new(d);
	asp_lines_t ls = {0};

	for (size_t i = 0; s && i < d->nrecords; i++) {
		const asp_record_t *rec = &d->records[i];

		if (!shown(rec, kinds))
			continue;
		if (asp_stack_lines(s, &d->stacks[rec->stack], &ls) < 0)
			break;
		record_head(out, d, i);
		if (rec->alloc_pc)
			alloc_lines(out, d, s, rec);
		for (size_t j = 0; j < ls.n; j++) {
			asp_summary_prefix(out, d);
			asp_put_line(out, &ls.v[j], j == 0 && !rec->alloc_pc);
		}
		if (rec->unsampled) {
			asp_summary_prefix(out, d);
			fputs("   (not sampled by ALLOCSPY_SAMPLE: the caller only)\n", out);
		}
		asp_summary_prefix(out, d);
		putc('\n', out);
		if (gen_suppressions) {
			char *text = asp_suppression(rec, ls.v, ls.n);

			if (text)
				fputs(text, out);
			free(text);
		}
	}
	if (!d->has_records && d->in_use_blocks) {
		asp_summary_prefix(out, d);
		fputs("the dump has no loss records\n", out);
		asp_summary_prefix(out, d);
		putc('\n', out);
	}
	asp_summary_leak_text(out, d);
	free(ls.v);
	asp_symbolizer_free(s);
}

json_t *asp_line_json(const asp_dump_t *d, const asp_line_t *l)
{
	char addr[ASP_NUM_MAX], name[ASP_NAME_MAX];

	snprintf(addr, sizeof addr, "0x%" PRIx64, l->addr);
	return json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:b}",
			 "address", addr,
			 "function", asp_json_text(l->fn),
			 "name", asp_json_text(asp_frame_name(d, l, name)),
			 "symbol", asp_json_text(l->raw),
			 "file", asp_json_text(l->file),
			 "line", l->file ? json_integer(l->line) : json_null(),
			 "module", asp_json_text(l->module),
			 "inlined", l->inlined);
}

static json_t *record_json(const asp_dump_t *d, size_t i, const asp_lines_t *ls,
			   bool gen_suppressions)
{
	const asp_record_t *rec = &d->records[i];
	json_t *frames = json_array();
	json_t *o;

	for (size_t j = 0; j < ls->n; j++)
		json_array_append_new(frames, asp_line_json(d, &ls->v[j]));
	o = json_pack("{s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:o,s:o}",
		      "record", (json_int_t)i + 1,
		      "of", (json_int_t)d->nrecords,
		      "kind", asp_leak_kind_name[rec->kind],
		      "bytes", (json_int_t)rec->bytes,
		      "blocks", (json_int_t)rec->blocks,
		      "indirect_bytes", (json_int_t)rec->indirect_bytes,
		      "indirect_blocks", (json_int_t)rec->indirect_blocks,
		      "total_bytes", (json_int_t)rec->bytes + (json_int_t)rec->indirect_bytes,
		      "alloc_fn", asp_json_text(rec->alloc_fn ? rec->alloc_fn : "malloc"),
		      "frames", frames);
	const char *fn = rec->alloc_fn ? rec->alloc_fn : "malloc";
	char *name = asp_demangle(fn);

	json_object_set_new(o, "alloc_function", asp_json_text(name ? name : fn));
	free(name);
	if (d->sampled)
		json_object_set_new(o, "sampled", json_boolean(!rec->unsampled));
	if (gen_suppressions) {
		char *text = asp_suppression(rec, ls->v, ls->n);

		json_object_set_new(o, "suppression", asp_json_text(text));
		free(text);
	}
	return o;
}

json_t *asp_leaks_json(const asp_dump_t *d, unsigned kinds,
		       bool gen_suppressions)
{
	asp_symbolizer_t *s = asp_symbolizer_new(d);
	json_t *o = s ? asp_leaks_json_with(d, s, kinds, gen_suppressions) : NULL;

	asp_symbolizer_free(s);
	return o;
}

/* The records shown by kinds, or with chosen those it names. */
static json_t *records_json(const asp_dump_t *d, asp_symbolizer_t *s, unsigned kinds,
			    const bool *chosen, bool gen_suppressions)
{
	json_t *recs = json_array();
	asp_lines_t ls = {0};

	for (size_t i = 0; s && i < d->nrecords; i++) {
		const asp_record_t *rec = &d->records[i];

		if (chosen ? !chosen[i] : !shown(rec, kinds))
			continue;
		if (asp_stack_lines(s, &d->stacks[rec->stack], &ls) < 0)
			break;
		json_array_append_new(recs, record_json(d, i, &ls, gen_suppressions));
	}
	free(ls.v);
	return recs;
}

json_t *asp_leaks_json_chosen(const asp_dump_t *d, asp_symbolizer_t *s,
			      const bool *chosen)
{
	return json_pack("{s:o,s:I,s:o,s:o}",
			 "file", asp_json_text(d->file),
			 "pid", (json_int_t)d->pid,
			 "loss_records", records_json(d, s, 0, chosen, false),
			 "leak_summary", asp_summary_leak_json(d));
}

json_t *asp_leaks_json_with(const asp_dump_t *d, asp_symbolizer_t *s,
			    unsigned kinds, bool gen_suppressions)
{
	json_t *recs = records_json(d, s, kinds, NULL, gen_suppressions);

	return json_pack("{s:o,s:I,s:o,s:o}",
			 "file", asp_json_text(d->file),
			 "pid", (json_int_t)d->pid,
			 "loss_records", recs,
			 "leak_summary", asp_summary_leak_json(d));
}
