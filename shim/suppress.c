/* suppress.c - applying suppressions to the loss records at exit.
 *
 * ALLOCSPY_SUPPRESSIONS names files separated by ':'. Two formats are
 * read, told apart line by line:
 *   valgrind:  { name  Memcheck:Leak  [match-leak-kinds: k,...]
 *                fun:PATTERN | obj:PATTERN | ...  }
 *   LSan:      leak:PATTERN   (a substring of any frame's function or
 *                              object name; * is a wildcard)
 * A record's frames are the allocation functions valgrind would show
 * ("malloc", or "malloc" then "strdup"), then the program's frames. This
 * runs once, at exit, when the shim no longer counts: stdio is fine here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "options.h"
#include "suppress.h"
#include "symbols.h"

#define ASP_MAX_SUPP_FRAMES 64

enum line_kind { LINE_FUN, LINE_OBJ, LINE_ANY };

struct supp_line {
	enum line_kind kind;
	char *pattern;
};

struct supp {
	char *name;
	int kinds;		/* ASP_KIND_* bits; 0 for all */
	int lsan;		/* one "leak:" pattern, matched anywhere */
	struct supp_line lines[ASP_MAX_SUPP_FRAMES];
	int nlines;
	struct supp *next;
};

/* Glob matching with * and ?. */
static int glob(const char *p, const char *s)
{
	const char *star = NULL, *after = NULL;
	while (*s) {
		if (*p == '*') {
			star = p++;
			after = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++after;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == '\0';
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	return s;
}

static int parse_kinds(const char *v)
{
	static const char *const names[] = { "definite", "indirect", "possible", "reachable" };
	if (strcmp(v, "all") == 0)
		return 0;
	int bits = 0;
	while (*v) {
		size_t len = strcspn(v, ",");
		for (int i = 0; i < 4; i++)
			if (strlen(names[i]) == len && strncmp(v, names[i], len) == 0)
				bits |= 1 << i;
		v += len;
		v += *v == ',';
	}
	return bits;
}

static void warn_file(const char *file, const char *what)
{
	asp__warn("ALLOCSPY_SUPPRESSIONS: ", file, what);
}

/* Reads one file; its entries go in front of *list. */
static void load_file(const char *file, struct supp **list)
{
	FILE *f = fopen(file, "re");
	if (f == NULL) {
		warn_file(file, ": cannot be read");
		return;
	}
	char *buf = NULL;
	size_t cap = 0;
	struct supp *cur = NULL;
	int state = 0;	/* 0 outside, 1 name next, 2 tool next, 3 body */
	while (getline(&buf, &cap, f) >= 0) {
		char *l = trim(buf);
		if (*l == '\0' || *l == '#')
			continue;
		if (state == 0) {
			if (strncmp(l, "leak:", 5) == 0 && l[5] != '\0') {
				struct supp *s = calloc(1, sizeof *s);
				if (s == NULL)
					break;
				s->lsan = 1;
				s->name = strdup(l);
				s->lines[0].pattern = strdup(trim(l + 5));
				s->nlines = 1;
				s->next = *list;
				*list = s;
			} else if (strcmp(l, "{") == 0) {
				cur = calloc(1, sizeof *cur);
				if (cur == NULL)
					break;
				state = 1;
			}
			continue;
		}
		if (strcmp(l, "}") == 0) {
			if (state == 3) {
				cur->next = *list;
				*list = cur;
			} else if (cur != NULL) {
				free(cur->name);
				free(cur);
			}
			cur = NULL;
			state = 0;
			continue;
		}
		if (state == 1) {
			cur->name = strdup(l);
			state = 2;
		} else if (state == 2) {
			/* Memcheck:Leak only; other error kinds never match a leak. */
			state = strcmp(l, "Memcheck:Leak") == 0 ? 3 : 4;
		} else if (state == 3) {
			if (strncmp(l, "match-leak-kinds:", 17) == 0) {
				cur->kinds = parse_kinds(trim(l + 17));
			} else if (cur->nlines < ASP_MAX_SUPP_FRAMES) {
				struct supp_line *sl = &cur->lines[cur->nlines];
				if (strcmp(l, "...") == 0) {
					sl->kind = LINE_ANY;
				} else if (strncmp(l, "fun:", 4) == 0) {
					sl->kind = LINE_FUN;
					sl->pattern = strdup(l + 4);
				} else if (strncmp(l, "obj:", 4) == 0) {
					sl->kind = LINE_OBJ;
					sl->pattern = strdup(l + 4);
				} else {
					continue;	/* src: and the like: not ours */
				}
				cur->nlines++;
			}
		}
	}
	if (cur != NULL) {
		free(cur->name);
		free(cur);
		warn_file(file, ": an entry is not closed with }");
	}
	free(buf);
	fclose(f);
}

struct frame {
	const char *func;	/* may be NULL */
	const char *object;	/* may be NULL */
};

static int line_matches(const struct supp_line *l, const struct frame *f)
{
	const char *name = l->kind == LINE_FUN ? f->func : f->object;
	return name != NULL && glob(l->pattern, name);
}

/* Valgrind's rule: the lines match the frames from the top; "..." stands
 * for any number of frames, and the entry may be shorter than the stack. */
static int frames_match(const struct supp_line *l, int nl, const struct frame *f, int nf)
{
	if (nl == 0)
		return 1;
	if (l->kind == LINE_ANY) {
		for (int skip = 0; skip <= nf; skip++)
			if (frames_match(l + 1, nl - 1, f + skip, nf - skip))
				return 1;
		return 0;
	}
	return nf > 0 && line_matches(l, f) && frames_match(l + 1, nl - 1, f + 1, nf - 1);
}

/* LSan: the pattern, with * wildcards, anywhere in a function or object. */
static int lsan_matches(const char *pattern, const struct frame *f, int nf)
{
	char wrapped[1024];
	int n = snprintf(wrapped, sizeof wrapped, "*%s*", pattern);
	if (n < 0 || (size_t)n >= sizeof wrapped)
		return 0;
	for (int i = 0; i < nf; i++)
		if ((f[i].func && glob(wrapped, f[i].func)) || (f[i].object && glob(wrapped, f[i].object)))
			return 1;
	return 0;
}

void asp__suppress_apply(struct asp_leak_result *r)
{
	if (asp__opt.suppressions[0] == '\0' || r->nrecords == 0)
		return;
	struct supp *list = NULL;
	char files[ASP_PATH_MAX];
	memcpy(files, asp__opt.suppressions, sizeof files);
	for (char *save = NULL, *f = strtok_r(files, ":", &save); f; f = strtok_r(NULL, ":", &save))
		load_file(f, &list);
	if (list == NULL)
		return;

	struct frame frames[3 + ASP_MAX_BACKTRACE];
	for (size_t i = 0; i < r->nrecords; i++) {
		struct asp_loss_record *rec = &r->records[i];
		const char *alloc[3];
		int nf = asp__alloc_frames(rec->fn, alloc);
		for (int k = 0; k < nf; k++)
			frames[k] = (struct frame){ alloc[k], NULL };
		const uintptr_t *pcs;
		uintptr_t one;
		size_t n = asp__site_frames(rec->site, &pcs, &one);
		for (size_t k = 0; k < n && nf < (int)ASP_ARRAY_SIZE(frames); k++) {
			struct asp_symbol sym;
			/* A return address: the call is the byte before it. */
			asp__symbolize(pcs[k] - 1, &sym);
			frames[nf++] = (struct frame){ sym.func, sym.object };
		}
		for (const struct supp *s = list; s; s = s->next) {
			int kind_bit = 1 << rec->kind;
			if (s->kinds != 0 && !(s->kinds & kind_bit))
				continue;
			int hit = s->lsan ? lsan_matches(s->lines[0].pattern, frames, nf)
			                  : frames_match(s->lines, s->nlines, frames, nf);
			if (hit) {
				rec->suppressed = 1;
				rec->suppression = s->name;
				break;
			}
		}
	}
	/* The entries stay allocated on purpose: the records point at their
	 * names, and the process is ending. */
} // NOLINT(clang-analyzer-unix.Malloc)
