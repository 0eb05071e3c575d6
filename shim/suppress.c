/* suppress.c - applying suppressions to the loss records and the heap
 * errors at exit.
 *
 * ALLOCSPY_SUPPRESSIONS names files separated by ':'. Two formats are
 * read, told apart line by line:
 *   valgrind:  { name  Memcheck:Leak  [match-leak-kinds: k,...]
 *                fun:PATTERN | obj:PATTERN | ...  }
 *              (and Memcheck:Free, FishyValue and Addr1 to Addr32 for the
 *              heap errors; allocspy:Addr and allocspy:Overwritten, the
 *              guarded blocks' that valgrind has no kind for)
 *   LSan:      leak:PATTERN   (a substring of any frame's function or
 *                              object name; * is a wildcard)
 * A record's frames are the allocation functions valgrind would show
 * ("malloc", or "malloc" then "strdup"), then the program's frames as
 * valgrind shows them: one frame per inlined call, the shim's own frames
 * left out, down to main. As in valgrind, fun: matches a frame's symbol as
 * the object writes it (mangled for C++), never its demangled name; as in
 * LSan, leak: matches the demangled name, and also the symbol, the object
 * or the source file. Matching runs once, at
 * exit, when the shim no longer counts: stdio is fine there. Only
 * asp__suppress_max_frames runs at start-up, with no malloc. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "glue.h"
#include "leakkinds.h"
#include "options.h"
#include "sample.h"
#include "suppress.h"
#include "stack.h"
#include "symbols.h"

#define ASP_MAX_SUPP_FRAMES 64

enum line_kind { LINE_FUN, LINE_OBJ, LINE_ANY };

struct supp_line {
	enum line_kind kind;
	char *pattern;
};

/* What an entry suppresses, by its "TOOL:KIND" line. */
enum supp_kind {
	SUPP_OTHER,		/* another tool's or kind: nothing here */
	SUPP_LEAK,		/* Memcheck:Leak: loss records */
	SUPP_FREE,		/* Memcheck:Free: an invalid or mismatched free */
	SUPP_FISHY,		/* Memcheck:FishyValue: a fishy argument */
	SUPP_ADDR,		/* Memcheck:AddrN, allocspy:Addr: an invalid read
				 * or write of N bytes, of any size */
	SUPP_OVERWRITTEN,	/* allocspy:Overwritten: bytes written around a
				 * guarded block */
};

struct supp {
	char *name;
	enum supp_kind kind;
	unsigned addr_size;	/* SUPP_ADDR: N; 0 for any */
	char *extra;		/* FishyValue's "function(argument)" line */
	int kinds;		/* ASP_KIND_* bits; 0 for all */
	int lsan;		/* one "leak:" pattern, matched anywhere */
	struct supp_line lines[ASP_MAX_SUPP_FRAMES];
	int nlines;
	struct supp *next;
};

/* valgrind's wildcards: * any run of characters, ? one, \\ quotes the
 * next. */
static int glob(const char *p, const char *s)
{
	const char *star = NULL, *after = NULL;
	while (*s) {
		if (*p == '*') {
			star = p++;
			after = s;
			continue;
		}
		const char *lit = p[0] == '\\' && p[1] ? p + 1 : p;
		if ((*p == '?' && lit == p) || *lit == *s) {
			p = lit + 1;
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

/* Whether the tools of an entry's "TOOL,TOOL:KIND" line, of length len,
 * name tool. */
static int names_tool(const char *tools, size_t len, const char *tool)
{
	size_t n = strlen(tool);
	while (len > 0) {
		size_t k = 0;
		while (k < len && tools[k] != ',')
			k++;
		if (k == n && memcmp(tools, tool, n) == 0)
			return 1;
		tools += k + (k < len);
		len -= k + (k < len);
	}
	return 0;
}

/* The kind of an entry's "TOOL:KIND" line: valgrind's names for
 * Memcheck's (a list of tools before the colon, as valgrind allows), and
 * allocspy's own; sets *size for an Addr kind. */
static enum supp_kind parse_kind(const char *l, unsigned *size)
{
	const char *colon = strchr(l, ':');
	if (colon == NULL)
		return SUPP_OTHER;
	size_t len = (size_t)(colon - l);
	const char *k = colon + 1;
	*size = 0;
	if (names_tool(l, len, "Memcheck")) {
		static const unsigned sizes[] = { 1, 2, 4, 8, 16, 32 };
		if (strcmp(k, "Leak") == 0)
			return SUPP_LEAK;
		if (strcmp(k, "Free") == 0)
			return SUPP_FREE;
		if (strcmp(k, "FishyValue") == 0)
			return SUPP_FISHY;
		for (size_t i = 0; i < ASP_ARRAY_SIZE(sizes); i++) {
			char name[8];
			snprintf(name, sizeof name, "Addr%u", sizes[i]);
			if (strcmp(k, name) == 0) {
				*size = sizes[i];
				return SUPP_ADDR;
			}
		}
	}
	if (names_tool(l, len, "allocspy")) {
		if (strcmp(k, "Addr") == 0)
			return SUPP_ADDR;
		if (strcmp(k, "Overwritten") == 0)
			return SUPP_OVERWRITTEN;
	}
	return SUPP_OTHER;
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
			/* Memcheck:Leak for the loss records, the others for
			 * the heap errors (errors.h); other tools' and kinds
			 * never match anything the shim finds. */
			cur->kind = parse_kind(l, &cur->addr_size);
			state = cur->kind != SUPP_OTHER ? 3 : 4;
		} else if (state == 3) {
			if (strncmp(l, "match-leak-kinds:", 17) == 0) {
				/* A word that is no kind is passed over; no
				 * kind at all ("none") is every kind, as
				 * without the line. */
				int bad;
				cur->kinds = asp_leak_kinds_of(trim(l + 17), &bad);
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
					/* FishyValue's "malloc(size)"; src: and the
					 * like: not ours */
					if (cur->kind == SUPP_FISHY && cur->extra == NULL &&
					    cur->nlines == 0)
						cur->extra = strdup(l);
					continue;
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
	const char *func;	/* demangled; may be NULL */
	const char *raw;	/* the symbol as the object writes it; may be NULL */
	const char *object;	/* may be NULL */
	const char *file;	/* may be NULL */
};

static int line_matches(const struct supp_line *l, const struct frame *f)
{
	if (l->kind == LINE_OBJ)
		return f->object != NULL && glob(l->pattern, f->object);
	/* The symbol as the object writes it, mangled for C++: valgrind
	 * matches fun: against nothing else. */
	return f->raw != NULL && glob(l->pattern, f->raw);
}

/* Valgrind's rule: the lines match the frames from the top; "..." stands
 * for any number of frames, and the entry may be shorter than the stack.
 * Returns 1 on a match, 0 on none, 2 when the frames ran out first. */
static int frames_match(const struct supp_line *l, int nl, const struct frame *f, int nf)
{
	if (nl == 0)
		return 1;
	if (l->kind == LINE_ANY) {
		int out = 0;
		for (int skip = 0; skip <= nf; skip++) {
			int m = frames_match(l + 1, nl - 1, f + skip, nf - skip);
			if (m == 1)
				return 1;
			out |= m;
		}
		return out;
	}
	if (nf == 0)
		return 2;
	return line_matches(l, f) ? frames_match(l + 1, nl - 1, f + 1, nf - 1) : 0;
}

/* LSan: the pattern, with * wildcards, anywhere in a function, symbol,
 * object or source file name; ^ and $ anchor it. */
static int lsan_matches(const char *pattern, const struct frame *f, int nf)
{
	char wrapped[1024];
	size_t len = strlen(pattern);
	int head = pattern[0] == '^', tail = len > 0 && pattern[len - 1] == '$';
	int n = snprintf(wrapped, sizeof wrapped, "%s%.*s%s", head ? "" : "*",
			 (int)(len - (size_t)head - (size_t)(tail && len > (size_t)head)),
			 pattern + head, tail ? "" : "*");
	if (n < 0 || (size_t)n >= sizeof wrapped)
		return 0;
	for (int i = 0; i < nf; i++) {
		const char *names[4] = { f[i].func, f[i].raw, f[i].object, f[i].file };
		for (int k = 0; k < 4; k++)
			if (names[k] != NULL && glob(wrapped, names[k]))
				return 1;
	}
	return 0;
}

/* Appends to frames[nf..cap) the lines of the addresses pcs[0..n) (return
 * addresses, or one past a faulting instruction: the byte before each is
 * looked up) as valgrind shows them: without the shim's own frames, down
 * to main or the function below it. Returns the new count; *ended says
 * whether the stack ended there. */
static int program_frames(const uintptr_t *pcs, size_t n, struct frame *frames, int nf, int cap,
                          int *ended)
{
	*ended = 0;
	for (size_t k = 0; k < n && nf < cap; k++) {
		asp_dwline_t l[16];
		if (asp__symbols_is_shim(pcs[k]))
			continue;
		size_t nl = asp__symbolize_lines(pcs[k] - 1, l, ASP_ARRAY_SIZE(l));
		for (size_t j = 0; j < nl && nf < cap; j++) {
			frames[nf++] = (struct frame){ l[j].fn, l[j].raw, l[j].module, l[j].file };
			if (!l[j].inlined && asp_dwsym_ends_stack(l[j].fn)) {
				*ended = 1;	/* valgrind stops at main, or below it */
				return nf;
			}
		}
	}
	return nf;
}

/* The frames of a call of fn from site (the function first, then the
 * program's), as valgrind shows them; one frame for a caller alone. */
static int call_frames(unsigned fn, uintptr_t site, struct frame *frames, int cap, int *ended)
{
	const char *names[3];
	int nf = asp__fn_frames(fn, names);
	for (int k = 0; k < nf; k++)
		frames[k] = (struct frame){ asp__symbols_demangle(names[k]), names[k], NULL, NULL };
	const uintptr_t *pcs;
	uintptr_t one;
	size_t n = asp__site_frames(site, &pcs, &one);
	return program_frames(pcs, n, frames, nf, cap, ended);
}

/* The frames of a record as valgrind shows them; returns how many, and
 * in *cut whether the capture cut the stack short at the depth limit
 * (ALLOCSPY_BACKTRACE frames with more below them, and neither main nor the
 * function below it among them): 1, or 2 for a block that ALLOCSPY_SAMPLE
 * did not sample (its caller is all it has). A stack that ended is not
 * cut: an entry longer than it does not match it, as under valgrind. */
static int record_frames(const struct asp_loss_record *rec, struct frame *frames, int cap, int *cut)
{
	int ended;
	int nf = call_frames(rec->fn, rec->site, frames, cap, &ended);
	if (ended)
		*cut = 0;
	else if (asp__sample_mean != 0)
		*cut = asp__site_sampled(rec->site) ? asp__stack_cut(asp__site_plain(rec->site)) : 2;
	else	/* one frame (the caller): cut, when there is one */
		*cut = asp__opt.backtrace > 1 ? asp__stack_cut(rec->site) : rec->site != 0;
	return nf;
}

/* The frames an entry needs captured: its fun:/obj: lines after the
 * leading ones that name allocation functions (the shim supplies those):
 * "*", a frame valgrind shows for a function of malloc's family, or
 * operator new. */
static int is_alloc_name(const char *p, size_t len)
{
	if (len == 1 && *p == '*')
		return 1;
	for (unsigned fn = 0; fn < ASP_FN_COUNT; fn++) {
		const char *names[3];
		int n = asp_fn_family(fn) == ASP_FAMILY_MALLOC ? asp__fn_frames(fn, names) : 0;
		for (int k = 0; k < n; k++)
			if (strlen(names[k]) == len && memcmp(p, names[k], len) == 0)
				return 1;
	}
	return (len >= 4 && memcmp(p, "_Zn", 3) == 0) || (len >= 12 && memcmp(p, "operator new", 12) == 0);
}

/* Reads one file with a fixed buffer, line by line, and raises *deepest
 * to its deepest entry's need. No malloc: this runs at start-up. */
static void scan_depth(const char *file, int *deepest)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096], ln[512];
	size_t len = 0;
	int in_entry = 0, lead = 1, need = 0;
	ssize_t got;
	while ((got = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < got; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof ln - 1)
					ln[len++] = buf[i];
				continue;
			}
			ln[len] = '\0';
			char *l = ln;
			while (*l == ' ' || *l == '\t')
				l++;
			size_t n = strlen(l);
			while (n > 0 && (l[n - 1] == ' ' || l[n - 1] == '\t' || l[n - 1] == '\r'))
				l[--n] = '\0';
			len = 0;
			if (strcmp(l, "{") == 0) {
				in_entry = 1;
				lead = 1;
				need = 0;
			} else if (strcmp(l, "}") == 0) {
				if (in_entry && need > *deepest)
					*deepest = need;
				in_entry = 0;
			} else if (in_entry && strcmp(l, "...") == 0) {
				lead = 0;	/* any number of frames, none at least */
			} else if (in_entry && (strncmp(l, "fun:", 4) == 0 || strncmp(l, "obj:", 4) == 0)) {
				if (lead && l[0] == 'f' && is_alloc_name(l + 4, n - 4))
					continue;
				lead = 0;
				need++;
			}
		}
	}
	close(fd);
}

int asp__suppress_max_frames(void)
{
	int deepest = 0;
	const char *p = asp__opt.suppressions;
	char file[ASP_PATH_MAX];
	while (*p) {
		size_t n = strcspn(p, ":");
		if (n > 0 && n < sizeof file) {
			memcpy(file, p, n);
			file[n] = '\0';
			scan_depth(file, &deepest);
		}
		p += n;
		p += *p == ':';
	}
	return deepest;
}

/* Every entry of the ALLOCSPY_SUPPRESSIONS files (kept: the records
 * point at their names, and the process is ending). */
static struct supp *load_all(void)
{
	static struct supp *list;
	static int loaded;
	if (loaded++)
		return list;
	char files[ASP_PATH_MAX];
	memcpy(files, asp__opt.suppressions, sizeof files);
	for (char *save = NULL, *f = strtok_r(files, ":", &save); f; f = strtok_r(NULL, ":", &save))
		load_file(f, &list);
	return list;
}

/* The frames of an invalid read's or write's stack (errors.h): the
 * faulting instruction's, then its callers', as the exit text shows them;
 * no function of the shim's above them. */
static int access_frames(const struct asp_heap_error *e, struct frame *frames, int cap)
{
	int ended;
	return program_frames(e->pcs, e->npcs, frames, 0, cap, &ended);
}

/* Whether an entry of kind s is of e's kind (the frames aside). */
static int kind_matches(const struct supp *s, const struct asp_heap_error *e, const char *call)
{
	switch (e->kind) {
	case ASP_ERR_FISHY:
		return s->kind == SUPP_FISHY && s->extra != NULL && glob(s->extra, call);
	case ASP_ERR_INVALID_READ:
	case ASP_ERR_INVALID_WRITE:
		return s->kind == SUPP_ADDR && (s->addr_size == 0 || s->addr_size == e->access);
	case ASP_ERR_OVERWRITTEN:
		return s->kind == SUPP_OVERWRITTEN;
	default:
		return s->kind == SUPP_FREE;
	}
}

void asp__suppress_errors(struct asp_heap_error *v, size_t n)
{
	if (asp__opt.suppressions[0] == '\0' || n == 0)
		return;
	const struct supp *list = load_all();
	static struct frame frames[3 + 4 * ASP_MAX_BACKTRACE];
	for (size_t i = 0; i < n; i++) {
		struct asp_heap_error *e = &v[i];
		int access = e->kind == ASP_ERR_INVALID_READ || e->kind == ASP_ERR_INVALID_WRITE;
		char call[64] = "";
		if (e->kind == ASP_ERR_FISHY)
			snprintf(call, sizeof call, "%s(%s)", asp__fn_names[e->fn], e->arg);
		int ended;
		int nf = access ? access_frames(e, frames, (int)ASP_ARRAY_SIZE(frames))
		                : call_frames(e->fn, e->site, frames, (int)ASP_ARRAY_SIZE(frames), &ended);
		for (const struct supp *s = list; s; s = s->next) {
			if (s->lsan || !kind_matches(s, e, call))
				continue;
			if (frames_match(s->lines, s->nlines, frames, nf) == 1) {
				e->suppressed = 1;
				e->suppression = s->name;
				break;
			}
		}
	}
}

void asp__suppress_apply(struct asp_leak_result *r)
{
	if (asp__opt.suppressions[0] == '\0' || r->nrecords == 0)
		return;
	struct supp *list = load_all();
	if (list == NULL)
		return;

	static struct frame frames[3 + 4 * ASP_MAX_BACKTRACE];
	const char *short_of = NULL;	/* an entry that ran out of frames */
	const char *unsampled = NULL;	/* one that ran out of a caller */
	for (size_t i = 0; i < r->nrecords; i++) {
		struct asp_loss_record *rec = &r->records[i];
		int cut;
		int nf = record_frames(rec, frames, (int)ASP_ARRAY_SIZE(frames), &cut);
		for (const struct supp *s = list; s; s = s->next) {
			int kind_bit = 1 << rec->kind;
			if ((!s->lsan && s->kind != SUPP_LEAK) || (s->kinds != 0 && !(s->kinds & kind_bit)))
				continue;
			int hit = s->lsan ? lsan_matches(s->lines[0].pattern, frames, nf)
			                  : frames_match(s->lines, s->nlines, frames, nf);
			if (hit == 2 && cut == 1 && short_of == NULL)
				short_of = s->name;
			if (hit == 2 && cut == 2 && unsampled == NULL)
				unsampled = s->name;
			if (hit == 1) {
				rec->suppressed = 1;
				rec->suppression = s->name;
				break;
			}
		}
	}
	if (short_of != NULL) { // NOLINT(clang-analyzer-unix.Malloc): the entries are kept, see below
		/* A stack cut at the depth limit, with more frames than the
		 * entry needs beyond it: more frames, at least one more. */
		int more = asp__suppress_max_frames();
		if (more <= asp__opt.backtrace)
			more = asp__opt.backtrace + 1;
		if (more > ASP_MAX_BACKTRACE)
			more = ASP_MAX_BACKTRACE;
		char what[240];
		snprintf(what, sizeof what, "\" goes deeper than a stack cut at the %d frames "
			 "ALLOCSPY_BACKTRACE keeps (set ALLOCSPY_BACKTRACE=%d or more)",
			 asp__opt.backtrace, more);
		asp__warn("ALLOCSPY_SUPPRESSIONS: entry \"", short_of, what);
	}
	if (unsampled != NULL)
		asp__warn("ALLOCSPY_SUPPRESSIONS: entry \"", unsampled,
		          "\" goes deeper than the caller, all that a block ALLOCSPY_SAMPLE did not "
		          "sample keeps: such a block is not suppressed");
	/* The entries stay allocated on purpose: the records point at their
	 * names, and the process is ending. */
} // NOLINT(clang-analyzer-unix.Malloc)
