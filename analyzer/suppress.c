/* suppress - writes a loss record's stack as a valgrind suppression. */
#include "suppress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dump names C++ operators by what they are; a suppression names them
 * by symbol, as valgrind prints them. */
static const char *const operator_symbol[][2] = {
	{"new", "_Znwm"},
	{"new[]", "_Znam"},
	{"new_nothrow", "_ZnwmRKSt9nothrow_t"},
	{"new[]_nothrow", "_ZnamRKSt9nothrow_t"},
	{"new_aligned", "_ZnwmSt11align_val_t"},
	{"new[]_aligned", "_ZnamSt11align_val_t"},
};

static const char *alloc_symbol(const char *fn)
{
	if (!fn)
		return "malloc";
	for (size_t i = 0; i < sizeof operator_symbol / sizeof *operator_symbol; i++)
		if (strcmp(fn, operator_symbol[i][0]) == 0)
			return operator_symbol[i][1];
	return fn;
}

/* Names in a suppression are one per line: a control byte is shown as
 * '?'. A space is kept: valgrind's own "(below main)" has one, and both
 * tools read the pattern to the end of its line. */
static void put_name(FILE *f, const char *s)
{
	for (; *s; s++)
		putc((unsigned char)*s >= 0x20 && *s != 0x7f ? *s : '?', f);
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
		put_name(f, alloc_symbol(rec->alloc_fn));
		putc('\n', f);
	}
	for (size_t i = 0; i < rec->nalloc_stack; i++) {
		fputs("   fun:", f);
		put_name(f, rec->alloc_stack[i]);
		putc('\n', f);
	}
	for (size_t i = 0; i < n; i++) {
		if (lines[i].raw) {
			/* valgrind writes the symbol as the object has it */
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
	fputs("}\n", f);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
