/* errors - the errors command: valgrind's heap errors of a track-mode dump
 * (invalid and mismatched frees, fishy sizes: liballocspy(7), "Heap
 * errors"; invalid reads and writes of guarded blocks and bytes written
 * around them: "Guarded blocks"), each context as the shim printed it at
 * exit, symbolized, then the ERROR SUMMARY; on request valgrind's
 * suppressions of them. */
#include "errors.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "leaks.h"
#include "summary.h"
#include "suppress.h"

/* Room for a heading or an address's description: a global's symbol is
 * at most ASP_PATH_MAX bytes. */
#define TEXT_MAX (ASP_PATH_MAX + 256)

/* The lines of one call as valgrind shows it: the interposer's, standing
 * for valgrind's replacement ("at 0x...: free (in .../liballocspy.so)"),
 * then the program's frames, down to main. */
struct part {
	asp_line_t call[ASP_ALLOC_STACK_MAX];
	char *owned[ASP_ALLOC_STACK_MAX];	/* demangled names, to free */
	size_t ncall;
	asp_lines_t prog;
};

/* What one error shows: its call, and the block's allocation and free. */
struct shown {
	struct part call, alloc, free;
};

static void part_clear(struct part *p)
{
	for (size_t k = 0; k < p->ncall; k++)
		free(p->owned[k]);
	memset(p->owned, 0, sizeof p->owned);
	p->ncall = 0;
}

/* The lines of a call c from the stack of index stack. The interposer's
 * address is an entry point, not a return address: its module is the
 * one holding the byte after it. A fault's stack (fault set) begins one
 * past the faulting instruction, which its first lines show, as the shim
 * does. Returns 0 or -ENOMEM. */
static int part_make(struct part *p, asp_symbolizer_t *s, const asp_dump_t *d,
		     const asp_call_t *c, size_t stack, bool fault)
{
	const asp_stack_t *st = &d->stacks[stack];
	asp_line_t at;
	int rc;

	part_clear(p);
	if (c->pc) {
		asp_symbolize(s, c->pc + 1, &at, 1);
		at.addr = c->pc;
		at.file = NULL;
		at.line = 0;
		at.inlined = false;
		if (c->nframes == 0)
			p->call[p->ncall++] = at;
		for (size_t k = 0; k < c->nframes; k++) {
			p->owned[k] = asp_demangle(c->frames[k]);
			at.fn = p->owned[k] ? p->owned[k] : c->frames[k];
			at.raw = c->frames[k];
			p->call[p->ncall++] = at;
		}
	}
	rc = asp_stack_lines(s, st, &p->prog);
	for (size_t j = 0; rc == 0 && fault && st->n > 0 && j < p->prog.n &&
	     p->prog.v[j].addr == st->frames[0]; j++)
		p->prog.v[j].addr--;
	return rc;
}

static void part_free(struct part *p)
{
	part_clear(p);
	free(p->prog.v);
	p->prog.v = NULL;
}

static int shown_make(struct shown *sh, asp_symbolizer_t *s, const asp_dump_t *d,
		      const asp_heap_error_t *e)
{
	int rc = part_make(&sh->call, s, d, &e->call, e->stack, asp_herr_is_access(e->kind));

	if (rc == 0 && asp_herr_has_block(e->where))
		rc = part_make(&sh->alloc, s, d, &e->alloc, e->alloc_stack, false);
	if (rc == 0 && e->where == ASP_WHERE_FREED)
		rc = part_make(&sh->free, s, d, &e->free, e->free_stack, false);
	return rc;
}

static void shown_free(struct shown *sh)
{
	part_free(&sh->call);
	part_free(&sh->alloc);
	part_free(&sh->free);
}

/* valgrind's first line of the error. */
static const char *heading(char buf[TEXT_MAX], const asp_heap_error_t *e)
{
	switch (e->kind) {
	case ASP_HERR_MISMATCHED_FREE:
		return "Mismatched free() / delete / delete []";
	case ASP_HERR_INVALID_READ:
	case ASP_HERR_INVALID_WRITE:
		/* no size when the instruction was not known */
		snprintf(buf, TEXT_MAX, "Invalid %s", e->kind == ASP_HERR_INVALID_READ ?
			 "read" : "write");
		if (e->access_size)
			snprintf(buf + strlen(buf), TEXT_MAX - strlen(buf), " of size %" PRIu64,
				 e->access_size);
		return buf;
	case ASP_HERR_OVERWRITTEN:
		return e->where == ASP_WHERE_BEFORE ?
		       "Bytes before a block were written (found at its free)" :
		       "Bytes after a block were written (found at its free)";
	case ASP_HERR_FISHY_VALUE:
		/* value is negative: its magnitude as unsigned, INT64_MIN too */
		snprintf(buf, TEXT_MAX, "Argument '%s' of function %s has a fishy "
			 "(possibly negative) value: -%" PRIu64, e->argument, e->function,
			 (uint64_t)0 - (uint64_t)e->value);
		return buf;
	default:
		return "Invalid free() / delete / delete[] / realloc()";
	}
}

/* What the address is, as valgrind says it after a space: "Address
 * 0x4a5d040 is 0 bytes inside a block of size 10 free'd", "... is 7 bytes
 * after a block of size 128 alloc'd"; "" for a fishy value. */
static const char *description(char buf[TEXT_MAX], const asp_heap_error_t *e)
{
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX];
	int n = snprintf(buf, TEXT_MAX, "Address 0x%" PRIx64, e->address);
	/* valgrind's words: before, inside or after, by the offset */
	int64_t off = e->block_offset, size = (int64_t)e->block_size;
	uint64_t delta = off < 0 ? (uint64_t)-off : off >= size ? (uint64_t)(off - size) :
			 (uint64_t)off;
	const char *rel = off < 0 ? "before" : off >= size ? "after" : "inside";

	switch (e->where) {
	case ASP_WHERE_NONE:
		buf[0] = '\0';
		break;
	case ASP_WHERE_BLOCK:
	case ASP_WHERE_FREED:
	case ASP_WHERE_AFTER:
	case ASP_WHERE_BEFORE:
		snprintf(buf + n, TEXT_MAX - (size_t)n, " is %s bytes %s a block of size %s %s",
			 asp_fmt_count(a, delta), rel, asp_fmt_count(b, e->block_size),
			 e->where == ASP_WHERE_FREED ? "free'd" : "alloc'd");
		break;
	case ASP_WHERE_STACK:
		snprintf(buf + n, TEXT_MAX - (size_t)n, " is on thread %" PRIu64 "'s stack",
			 e->thread);
		break;
	case ASP_WHERE_GLOBAL:
		snprintf(buf + n, TEXT_MAX - (size_t)n, " is %s bytes inside data symbol \"%s\"",
			 asp_fmt_count(a, e->offset), e->symbol);
		break;
	default:
		snprintf(buf + n, TEXT_MAX - (size_t)n,
			 " is not stack'd, malloc'd or (recently) free'd");
		break;
	}
	return buf;
}

const char *asp_errors_missing(const asp_dump_t *d)
{
	if (d->has_heap_errors)
		return NULL;
	if (d->count_mode)
		return "ALLOCSPY_MODE=count looks for none";
	if (d->nprocesses)
		return "a dump merged into it had none";
	return "it was written by an allocspy that did not look for them";
}

/* Keeps a line of valgrind's text in a buffer, without its newline. */
struct kept {
	char *buf;
	size_t size;
};

static void keep_line(void *arg, const char *line)
{
	const struct kept *k = arg;

	snprintf(k->buf, k->size, "%.*s", (int)strcspn(line, "\n"), line);
}

const char *asp_error_summary_line(char *buf, size_t size, const asp_dump_t *d)
{
	struct kept k = { buf, size };

	asp_vg_error_summary(keep_line, &k, d->errors, d->error_contexts, d->errors_suppressed,
			     d->error_contexts_suppressed);
	return buf;
}

/* --- text ---------------------------------------------------------------------- */

static void put_part(FILE *out, const asp_dump_t *d, const struct part *p)
{
	for (size_t k = 0; k < p->ncall; k++) {
		asp_summary_prefix(out, d);
		asp_put_line(out, &p->call[k], k == 0);
	}
	for (size_t j = 0; j < p->prog.n; j++) {
		asp_summary_prefix(out, d);
		asp_put_line(out, &p->prog.v[j], j == 0 && p->ncall == 0);
	}
}

/* A line of text from the dump after the prefix and lead. */
static void put_said(FILE *out, const asp_dump_t *d, const char *lead, const char *text)
{
	asp_summary_prefix(out, d);
	fputs(lead, out);
	asp_put_text(out, text);
	putc('\n', out);
}

static void error_text(FILE *out, const asp_dump_t *d, const asp_heap_error_t *e,
		       const struct shown *sh)
{
	char buf[TEXT_MAX];

	put_said(out, d, "", heading(buf, e));
	put_part(out, d, &sh->call);
	if (e->where != ASP_WHERE_NONE)
		put_said(out, d, " ", description(buf, e));
	if (e->where == ASP_WHERE_FREED) {
		put_part(out, d, &sh->free);
		put_said(out, d, " ", "Block was alloc'd at");
	}
	if (asp_herr_has_block(e->where))
		put_part(out, d, &sh->alloc);
	asp_summary_prefix(out, d);
	putc('\n', out);
}

int asp_errors_text(FILE *out, const asp_dump_t *d, bool gen_suppressions)
{
	asp_symbolizer_t *s = asp_symbolizer_new(d);
	struct shown sh;
	char line[128];
	int rc = s ? 0 : -ENOMEM;

	memset(&sh, 0, sizeof sh);
	for (size_t i = 0; rc == 0 && i < d->nheap_errors; i++) {
		const asp_heap_error_t *e = &d->heap_errors[i];

		if ((rc = shown_make(&sh, s, d, e)) < 0)
			break;
		error_text(out, d, e, &sh);
		if (gen_suppressions) {
			char *text = asp_error_suppression(e, sh.call.prog.v, sh.call.prog.n);

			if (!text) {
				rc = -ENOMEM;
				break;
			}
			fputs(text, out);
			free(text);
		}
	}
	if (rc == 0) {
		asp_summary_prefix(out, d);
		fprintf(out, "%s\n", asp_error_summary_line(line, sizeof line, d));
	}
	shown_free(&sh);
	asp_symbolizer_free(s);
	return rc;
}

/* --- JSON ---------------------------------------------------------------------- */

/* Every line a part shows, the interposer's first. */
static json_t *part_json(const asp_dump_t *d, const struct part *p)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < p->ncall; k++)
		json_array_append_new(a, asp_line_json(d, &p->call[k]));
	for (size_t j = 0; a && j < p->prog.n; j++)
		json_array_append_new(a, asp_line_json(d, &p->prog.v[j]));
	return a;
}

static json_t *hex(uint64_t v)
{
	char buf[ASP_NUM_MAX];

	snprintf(buf, sizeof buf, "0x%" PRIx64, v);
	return json_string(buf);
}

static json_t *error_json(const asp_dump_t *d, const asp_heap_error_t *e,
			  const struct shown *sh, bool gen_suppressions)
{
	char buf[TEXT_MAX];
	json_t *o = json_pack("{s:s,s:I,s:o,s:o,s:o}",
			      "kind", asp_herr_kind_name[e->kind],
			      "count", (json_int_t)e->count,
			      "function", asp_json_text(e->function),
			      "heading", asp_json_text(heading(buf, e)),
			      "frames", part_json(d, &sh->call));
	bool ok = o != NULL;

	if (ok && asp_herr_is_access(e->kind))
		ok = json_object_set_new(o, "size", json_integer((json_int_t)e->access_size)) == 0;
	if (ok && e->kind == ASP_HERR_FISHY_VALUE)
		ok = json_object_set_new(o, "argument", asp_json_text(e->argument)) == 0 &&
		     json_object_set_new(o, "value", json_integer((json_int_t)e->value)) == 0;
	if (ok && e->where != ASP_WHERE_NONE)
		ok = json_object_set_new(o, "address", hex(e->address)) == 0 &&
		     json_object_set_new(o, "where", json_string(asp_herr_where_name[e->where])) == 0 &&
		     json_object_set_new(o, "description",
					 asp_json_text(description(buf, e))) == 0;
	if (ok && e->where == ASP_WHERE_STACK)
		ok = json_object_set_new(o, "thread", json_integer((json_int_t)e->thread)) == 0;
	if (ok && e->where == ASP_WHERE_GLOBAL)
		ok = json_object_set_new(o, "symbol", asp_json_text(e->symbol)) == 0 &&
		     json_object_set_new(o, "offset", json_integer((json_int_t)e->offset)) == 0;
	if (ok && asp_herr_has_block(e->where)) {
		json_t *b = json_pack("{s:o,s:I,s:I,s:o,s:o}",
				      "address", hex(e->block_address),
				      "offset", (json_int_t)e->block_offset,
				      "size", (json_int_t)e->block_size,
				      "function", asp_json_text(e->block_function),
				      "alloc_frames", part_json(d, &sh->alloc));

		if (b && e->where == ASP_WHERE_FREED &&
		    json_object_set_new(b, "free_frames", part_json(d, &sh->free)) < 0) {
			json_decref(b);
			b = NULL;
		}
		ok = b && json_object_set_new(o, "block", b) == 0;
	}
	if (ok && gen_suppressions) {
		char *text = asp_error_suppression(e, sh->call.prog.v, sh->call.prog.n);

		ok = text && json_object_set_new(o, "suppression", asp_json_text(text)) == 0;
		free(text);
	}
	if (!ok) {
		json_decref(o);
		return NULL;
	}
	return o;
}

json_t *asp_errors_json_with(const asp_dump_t *d, asp_symbolizer_t *s,
			     bool gen_suppressions, size_t max)
{
	json_t *a = json_array();
	struct shown sh;

	memset(&sh, 0, sizeof sh);
	for (size_t i = 0; a && i < d->nheap_errors && i < max; i++) {
		const asp_heap_error_t *e = &d->heap_errors[i];
		json_t *o = shown_make(&sh, s, d, e) < 0 ? NULL :
			    error_json(d, e, &sh, gen_suppressions);

		if (!o || json_array_append_new(a, o) < 0) {
			json_decref(a);
			a = NULL;
		}
	}
	shown_free(&sh);
	return a;
}

json_t *asp_errors_json(const asp_dump_t *d, bool gen_suppressions)
{
	asp_symbolizer_t *s = asp_symbolizer_new(d);
	json_t *a = s ? asp_errors_json_with(d, s, gen_suppressions, SIZE_MAX) : NULL;

	asp_symbolizer_free(s);
	if (!a)
		return NULL;
	return json_pack("{s:o,s:I,s:o,s:{s:I,s:I,s:I,s:I}}",
			 "file", asp_json_text(d->file),
			 "pid", (json_int_t)d->pid,
			 "errors", a,
			 "error_summary",
			 "errors", (json_int_t)d->errors,
			 "contexts", (json_int_t)d->error_contexts,
			 "suppressed", (json_int_t)d->errors_suppressed,
			 "suppressed_contexts", (json_int_t)d->error_contexts_suppressed);
}
