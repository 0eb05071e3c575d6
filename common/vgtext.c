/* vgtext.c - valgrind's summary text (vgtext.h), built in a buffer on the
 * stack: no stdio, no malloc. */
#include "vgtext.h"

#include <string.h>

/* The width valgrind right-aligns its labels to ("  total heap usage"). */
#define LABEL_W 18

/* One line; longer text is cut (none is: the labels are ours, and the
 * longest line has five numbers). */
struct line {
	char s[256];
	size_t n;
};

static void add(struct line *l, const char *s)
{
	size_t n = strlen(s);
	if (n > sizeof l->s - 1 - l->n)
		n = sizeof l->s - 1 - l->n;
	memcpy(l->s + l->n, s, n);
	l->n += n;
	l->s[l->n] = '\0';
}

static void num(struct line *l, uint64_t v)
{
	char buf[ASP_COMMAS_MAX];
	asp_commas(buf, v);
	add(l, buf);
}

/* "    in use at exit: ": label right-aligned, a new line. */
static void label(struct line *l, const char *a, const char *b)
{
	size_t w = strlen(a) + strlen(b);
	l->n = 0;
	l->s[0] = '\0';
	for (; w < LABEL_W; w++)
		add(l, " ");
	add(l, a);
	add(l, b);
	add(l, ": ");
}

static void bytes_in_blocks(asp_vg_put *put, void *arg, const char *a, const char *b,
			    uint64_t bytes, uint64_t blocks)
{
	struct line l;
	label(&l, a, b);
	num(&l, bytes);
	add(&l, " bytes in ");
	num(&l, blocks);
	add(&l, " blocks\n");
	put(arg, l.s);
}

size_t asp_commas(char buf[ASP_COMMAS_MAX], uint64_t v)
{
	char d[ASP_COMMAS_MAX];
	size_t n = 0, digits = 0;
	do {
		if (digits > 0 && digits % 3 == 0)
			d[n++] = ',';
		d[n++] = (char)('0' + v % 10);
		digits++;
	} while ((v /= 10) > 0);
	for (size_t i = 0; i < n; i++)
		buf[i] = d[n - 1 - i];
	buf[n] = '\0';
	return n;
}

void asp_vg_heap_summary(asp_vg_put *put, void *arg, const struct asp_vg_heap *h)
{
	struct line l;
	put(arg, "HEAP SUMMARY:\n");
	label(&l, "in use at ", h->when);
	if (h->bytes_known)
		num(&l, h->in_use_bytes);
	else
		add(&l, "?");
	add(&l, " bytes in ");
	num(&l, h->in_use_blocks);
	add(&l, " blocks\n");
	put(arg, l.s);
	label(&l, "total heap usage", "");
	num(&l, h->allocs);
	add(&l, " allocs, ");
	num(&l, h->frees);
	add(&l, " frees, ");
	num(&l, h->bytes_allocated);
	add(&l, " bytes allocated\n");
	put(arg, l.s);
	/* valgrind's "rerun with" line: without sizes (count mode) there is
	 * no table of blocks, so neither leaks nor heap errors are looked for. */
	if (!h->bytes_known) {
		put(arg, "\n");
		put(arg, "Leaks and heap errors are not looked for in count mode: rerun with "
			 "ALLOCSPY_MODE=track\n");
	}
}

void asp_vg_leak_summary(asp_vg_put *put, void *arg, const struct asp_vg_leaks *l)
{
	static const char *const heuristics[ASP_VG_HEURISTICS] = {
		"stdstring          : ", "length64           : ",
		"newarray           : ", "multipleinheritance: ",
	};
	put(arg, "LEAK SUMMARY:\n");
	for (int k = 0; k < ASP_LEAK_NKINDS; k++) {
		bytes_in_blocks(put, arg, asp_leak_phrase[k], "", l->bytes[k], l->blocks[k]);
		if (k != ASP_LEAK_REACHABLE)
			continue;
		int any = 0;
		for (int h = 0; h < ASP_VG_HEURISTICS; h++)
			any |= l->heur_blocks[h] > 0;
		if (any)
			put(arg, "                      of which reachable via heuristic:\n");
		for (int h = 0; any && h < ASP_VG_HEURISTICS; h++) {
			struct line x = { .n = 0 };
			if (l->heur_blocks[h] == 0)
				continue;
			add(&x, "                        ");
			add(&x, heuristics[h]);
			num(&x, l->heur_bytes[h]);
			add(&x, " bytes in ");
			num(&x, l->heur_blocks[h]);
			add(&x, " blocks\n");
			put(arg, x.s);
		}
	}
}

void asp_vg_error_summary(asp_vg_put *put, void *arg, uint64_t errors, uint64_t contexts,
			  uint64_t suppressed, uint64_t suppressed_contexts)
{
	struct line l = { .n = 0 };
	add(&l, "ERROR SUMMARY: ");
	num(&l, errors);
	add(&l, " errors from ");
	num(&l, contexts);
	add(&l, " contexts (suppressed: ");
	num(&l, suppressed);
	add(&l, " from ");
	num(&l, suppressed_contexts);
	add(&l, ")\n");
	put(arg, l.s);
}

void asp_vg_ref_summary(asp_vg_put *put, void *arg, const struct asp_vg_refs *r)
{
	struct line l;
	put(arg, "REF SUMMARY:\n");
	label(&l, "ref operations", "");
	num(&l, r->acquires);
	add(&l, " acquires, ");
	num(&l, r->releases);
	add(&l, " releases\n");
	put(arg, l.s);
	label(&l, "objects", "");
	num(&l, r->created);
	add(&l, " created, ");
	num(&l, r->destroyed);
	add(&l, " destroyed\n");
	put(arg, l.s);
	if (r->has_cross) {
		label(&l, "cross-thread", "");
		num(&l, r->cross);
		add(&l, " operations\n");
		put(arg, l.s);
	}
}

void asp_vg_loss_record(asp_vg_put *put, void *arg, uint64_t bytes, uint64_t indirect_bytes,
			uint64_t blocks, enum asp_leak_kind kind, uint64_t i, uint64_t n)
{
	struct line l = { .n = 0 };
	if (indirect_bytes > 0) {
		num(&l, bytes + indirect_bytes);
		add(&l, " (");
		num(&l, bytes);
		add(&l, " direct, ");
		num(&l, indirect_bytes);
		add(&l, " indirect)");
	} else {
		num(&l, bytes);
	}
	add(&l, " bytes in ");
	num(&l, blocks);
	add(&l, " blocks are ");
	add(&l, asp_leak_phrase[kind]);
	add(&l, " in loss record ");
	num(&l, i);
	add(&l, " of ");
	num(&l, n);
	add(&l, "\n");
	put(arg, l.s);
}
