/* suppress - writes a loss record's or a heap error's stack as a valgrind
 * suppression. */
#include "suppress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dump names C++ operators by what they are; a suppression names them
 * by symbol, as valgrind prints them. */
static const char *symbol_of(const char *fn)
{
	return fn ? asp_fn_symbol(fn) : "malloc";
}

/* Names in a suppression are one per line: a control byte is shown as
 * '?'. A space is kept: valgrind's own "(below main)" has one, and both
 * tools read the pattern to the end of its line. */
static void put_name(FILE *f, const char *s)
{
	for (; *s; s++)
		putc((unsigned char)*s >= 0x20 && *s != 0x7f ? *s : '?', f);
}

/* A line of an entry: "   fun:" or "   obj:", then name. */
static void put_frame(FILE *f, const char *kind, const char *name)
{
	fprintf(f, "   %s:", kind);
	put_name(f, name);
	putc('\n', f);
}

/* The frames of the shim's function called, fn, as valgrind shows its own
 * replacement: those the dump gives, or fn's symbol. */
static void put_call(FILE *f, const char *fn, const char *const *frames, size_t n)
{
	if (n == 0)
		put_frame(f, "fun", symbol_of(fn));
	for (size_t i = 0; i < n; i++)
		put_frame(f, "fun", frames[i]);
}

/* The program's frames: "fun:" and the symbol as the object has it, as
 * valgrind writes them, or "obj:" and the module when there is none. */
static void put_lines(FILE *f, const asp_line_t *lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (lines[i].raw)
			put_frame(f, "fun", lines[i].raw);
		else
			put_frame(f, "obj", lines[i].module ? lines[i].module : "*");
	}
}

/* An entry: its brace and name, what head writes of arg (its kind and the
 * shim's frames), the program's frames and its closing brace. The text,
 * or NULL when it could not be written. */
static char *entry(void (*head)(FILE *, const void *), const void *arg,
		   const asp_line_t *lines, size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fputs("{\n   <insert_a_suppression_name_here>\n   ", f);
	head(f, arg);
	put_lines(f, lines, n);
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static void leak_head(FILE *f, const void *arg)
{
	const asp_record_t *rec = arg;

	fprintf(f, "Memcheck:Leak\n   match-leak-kinds: %s\n", asp_leak_kind_name[rec->kind]);
	put_call(f, rec->alloc_fn, rec->alloc_stack, rec->nalloc_stack);
}

char *asp_suppression(const asp_record_t *rec, const asp_line_t *lines,
		      size_t n)
{
	return entry(leak_head, rec, lines, n);
}

/* valgrind's kind for an invalid read or write of size bytes, or
 * allocspy's own for a size valgrind has no name for (0: the instruction
 * was not known). */
static const char *addr_kind(uint64_t size)
{
	switch (size) {
	case 1: return "Memcheck:Addr1";
	case 2: return "Memcheck:Addr2";
	case 4: return "Memcheck:Addr4";
	case 8: return "Memcheck:Addr8";
	case 16: return "Memcheck:Addr16";
	case 32: return "Memcheck:Addr32";
	default: return "allocspy:Addr";
	}
}

static void error_head(FILE *f, const void *arg)
{
	const asp_heap_error_t *e = arg;

	/* valgrind's kinds: Free for the invalid and the mismatched frees,
	 * FishyValue, with the function and its argument, for a size, Addr1
	 * to Addr32 for an invalid read or write of that size; allocspy's
	 * own for bytes written around a guarded block, which valgrind
	 * reports as the write itself (an entry of another tool than
	 * Memcheck is skipped by valgrind). */
	if (e->kind == ASP_HERR_FISHY_VALUE) {
		fputs("Memcheck:FishyValue\n   ", f);
		put_name(f, e->function);
		putc('(', f);
		put_name(f, e->argument);
		fputs(")\n", f);
	} else if (asp_herr_is_access(e->kind)) {
		fprintf(f, "%s\n", addr_kind(e->access_size));
	} else if (e->kind == ASP_HERR_OVERWRITTEN) {
		fputs("allocspy:Overwritten\n", f);
	} else {
		fputs("Memcheck:Free\n", f);
	}
	/* the function called; an access has none, its stack is the
	 * program's alone */
	if (!asp_herr_is_access(e->kind))
		put_call(f, e->function, e->call.frames, e->call.nframes);
}

char *asp_error_suppression(const asp_heap_error_t *e, const asp_line_t *lines,
			    size_t n)
{
	return entry(error_head, e, lines, n);
}
