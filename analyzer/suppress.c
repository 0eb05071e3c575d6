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

/* The program's frames: "fun:" and the symbol as the object has it, as
 * valgrind writes them, or "obj:" and the module when there is none. */
static void put_lines(FILE *f, const asp_line_t *lines, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (lines[i].raw) {
			fputs("   fun:", f);
			put_name(f, lines[i].raw);
		} else if (lines[i].module) {
			fputs("   obj:", f);
			put_name(f, lines[i].module);
		} else {
			fputs("   obj:*", f);
		}
		putc('\n', f);
	}
}

/* Closes the entry and f, a stream into *text: the text, or NULL when it
 * could not be written. */
static char *finish(FILE *f, char **text)
{
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(*text);
		return NULL;
	}
	return *text;
}

char *asp_suppression(const asp_record_t *rec, const asp_line_t *lines,
		      size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	fprintf(f, "{\n   <insert_a_suppression_name_here>\n   Memcheck:Leak\n"
		"   match-leak-kinds: %s\n", asp_leak_kind_name[rec->kind]);
	if (rec->nalloc_stack == 0) {
		fputs("   fun:", f);
		put_name(f, symbol_of(rec->alloc_fn));
		putc('\n', f);
	}
	for (size_t i = 0; i < rec->nalloc_stack; i++) {
		fputs("   fun:", f);
		put_name(f, rec->alloc_stack[i]);
		putc('\n', f);
	}
	put_lines(f, lines, n);
	return finish(f, &text);
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

char *asp_error_suppression(const asp_heap_error_t *e, const asp_line_t *lines,
			    size_t n)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	/* valgrind's kinds: Free for the invalid and the mismatched frees,
	 * FishyValue, with the function and its argument, for a size, Addr1
	 * to Addr32 for an invalid read or write of that size; allocspy's
	 * own for bytes written around a guarded block, which valgrind
	 * reports as the write itself (an entry of another tool than
	 * Memcheck is skipped by valgrind). */
	fputs("{\n   <insert_a_suppression_name_here>\n   ", f);
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
	if (e->call.nframes == 0 && !asp_herr_is_access(e->kind)) {
		fputs("   fun:", f);
		put_name(f, symbol_of(e->function));
		putc('\n', f);
	}
	for (size_t i = 0; i < e->call.nframes; i++) {
		fputs("   fun:", f);
		put_name(f, e->call.frames[i]);
		putc('\n', f);
	}
	put_lines(f, lines, n);
	return finish(f, &text);
}
