/* dwsym - one symbolizer for the analyzer and the shim: an address becomes
 * the lines valgrind prints for it (function, file:line, one line per
 * inlined call), with valgrind's choice among the names that share an
 * address, demangled by the C++ runtime. */
#include "dwsym.h"

#include <ctype.h>
#include <dwarf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hash.h"

/* Most lines kept for one address (inlined calls nested this deep). */
#define MAX_CACHED 64

/* One object: its file, and once opened its libdw module and its function
 * symbols sorted by start, then size. */
struct mod {
	char *path;
	uint64_t base, end;
	const void *tag;
	bool tried;
	Dwfl *dwfl;
	Dwfl_Module *dm;
	asp_dwcand_t *syms;
	size_t nsyms;
	bool own_syms;		/* syms was allocated here */
	char **demangled;	/* per symbol, made on first use */
};

/* A looked-up address and its lines. */
struct entry {
	uint64_t pc;		/* 0: empty slot */
	asp_dwline_t *lines;
	size_t n;
};

struct asp_dwsym {
	const asp_dw_api_t *api;
	struct mod *mods;	/* by base, ascending */
	size_t n, cap;
	struct entry *cache;	/* open addressing, power of two */
	size_t ncache, cachecap;
	char *debuginfo_path;	/* NULL: libdwfl's default */
	Dwfl_Callbacks callbacks;
};

asp_dwsym_t *asp_dwsym_new(const asp_dw_api_t *api)
{
	asp_dwsym_t *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->api = api;
	if (api && api->dwfl_begin) {
		s->callbacks.find_elf = api->dwfl_build_id_find_elf;
		s->callbacks.find_debuginfo = api->dwfl_standard_find_debuginfo;
		s->callbacks.section_address = api->dwfl_offline_section_address;
		s->callbacks.debuginfo_path = &s->debuginfo_path;
	}
	return s;
}

void asp_dwsym_free(asp_dwsym_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct mod *m = &s->mods[i];

		if (m->dwfl)
			s->api->dwfl_end(m->dwfl);
		if (m->demangled)
			for (size_t k = 0; k < m->nsyms; k++)
				free(m->demangled[k]);
		free(m->demangled);
		if (m->own_syms)
			free(m->syms);
		free(m->path);
	}
	for (size_t i = 0; i < s->cachecap; i++)
		free(s->cache[i].lines);
	free(s->cache);
	free(s->mods);
	free(s);
}

int asp_dwsym_add(asp_dwsym_t *s, const char *path, uint64_t base,
		  uint64_t end, const void *tag)
{
	size_t at = s->n;

	if (s->n == s->cap) {
		size_t cap = s->cap * 2 + 16;
		struct mod *v = realloc(s->mods, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		s->mods = v;
		s->cap = cap;
	}
	while (at > 0 && s->mods[at - 1].base > base)
		at--;
	memmove(&s->mods[at + 1], &s->mods[at], (s->n - at) * sizeof *s->mods);
	memset(&s->mods[at], 0, sizeof *s->mods);
	s->mods[at].path = strdup(path);
	if (!s->mods[at].path) {
		memmove(&s->mods[at], &s->mods[at + 1],
			(s->n - at) * sizeof *s->mods);
		return -ENOMEM;
	}
	s->mods[at].base = base;
	s->mods[at].end = end;
	s->mods[at].tag = tag;
	s->n++;
	return 0;
}

size_t asp_dwsym_count(const asp_dwsym_t *s)
{
	return s->n;
}

const void *asp_dwsym_tag(const asp_dwsym_t *s, int i)
{
	return s->mods[i].tag;
}

bool asp_dwsym_tried(const asp_dwsym_t *s, int i)
{
	return s->mods[i].tried;
}

bool asp_dwsym_is_shim(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	const char *base = slash ? slash + 1 : path;

	return base && strncmp(base, "liballocspy.so", 14) == 0;
}

int asp_dwsym_find(asp_dwsym_t *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->mods[mid].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	if (s->mods[lo - 1].end && addr >= s->mods[lo - 1].end)
		return -1;
	return (int)(lo - 1);
}

/* Names ------------------------------------------------------------------ */

static bool blank(const char *s)
{
	for (; *s; s++)
		if (!isspace((unsigned char)*s))
			return false;
	return true;
}

bool asp_dwsym_prefer(const char *a, const char *b)
{
	const char *va = strchr(a, '@'), *vb = strchr(b, '@');
	size_t la = va ? (size_t)(va - a) : strlen(a);
	size_t lb = vb ? (size_t)(vb - b) : strlen(b);
	int cmp;

	if (strncmp(a, "MPI_", 4) == 0 && strncmp(b, "PMPI_", 5) == 0 &&
	    strcmp(a, b + 1) == 0)
		return false;
	if (strncmp(b, "MPI_", 4) == 0 && strncmp(a, "PMPI_", 5) == 0 &&
	    strcmp(b, a + 1) == 0)
		return true;
	if ((la == 0) != (lb == 0))
		return la != 0;
	if (blank(a) != blank(b))
		return !blank(a);
	if (la != lb)
		return la < lb;
	if (!va != !vb)
		return va != NULL;
	cmp = strcmp(a, b);
	return cmp <= 0;
}

static int by_start(const void *pa, const void *pb)
{
	const asp_dwcand_t *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	return 0;
}

/* valgrind keeps one range per address: symbols with the same start and
 * size are one symbol with several names, and where ranges overlap, the
 * later start wins and, at one start, the shorter range. So the symbol
 * of a is at the largest start at or below a, the shortest that holds
 * a; its name is the preferred of those with the same size. Returns the
 * index of that name in c, or -1. */
static long choose(const asp_dwcand_t *c, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n, first;
	long best = -1;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (c[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	first = lo - 1;
	while (first > 0 && c[first - 1].start == c[lo - 1].start)
		first--;
	for (size_t i = first; i < lo; i++) {
		if (a - c[i].start >= c[i].size)
			continue;
		if (best < 0 || c[i].size < c[best].size ||
		    (c[i].size == c[best].size &&
		     !asp_dwsym_prefer(c[best].name, c[i].name)))
			best = (long)i;
	}
	return best;
}

const char *asp_dwsym_choose(const asp_dwcand_t *c, size_t n, uint64_t a,
			     uint64_t *start)
{
	long i = choose(c, n, a);

	if (i < 0)
		return NULL;
	*start = c[i].start;
	return c[i].name;
}

char *asp_dwsym_demangle(const asp_dw_api_t *api, const char *name)
{
	const char *at = strchr(name, '@');
	size_t len = at ? (size_t)(at - name) : strlen(name);
	char *plain, *out, *joined;
	int status = -1;

	if (!api || !api->demangle || strncmp(name, "_Z", 2) != 0)
		return NULL;
	plain = strndup(name, len);
	if (!plain)
		return NULL;
	out = api->demangle(plain, NULL, NULL, &status);
	free(plain);
	if (status != 0 || !out) {
		free(out);
		return NULL;
	}
	/* out is the demangler's malloc'd string: status is only an out
	 * parameter (cppcheck takes it for the result's storage). */
	if (!at)
		return out; // cppcheck-suppress returnDanglingLifetime
	len = strlen(out) + strlen(at) + 1;
	joined = malloc(len);
	if (joined)
		snprintf(joined, len, "%s%s", out, at);
	free(out);
	return joined;
}

/* libdw ------------------------------------------------------------------- */

/* The function symbols of m's ELF file, as valgrind reads them: every
 * defined function of non-zero size. */
static void read_symbols(asp_dwsym_t *s, struct mod *m)
{
	const asp_dw_api_t *api = s->api;
	int n = api->dwfl_module_getsymtab(m->dm);
	size_t k = 0;

	if (n <= 0)
		return;
	m->syms = calloc((size_t)n, sizeof *m->syms);
	if (!m->syms)
		return;
	m->own_syms = true;
	for (int i = 1; i < n; i++) {
		GElf_Sym sym;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = api->dwfl_module_getsym_info(m->dm, i, &sym,
			&addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(sym.st_info);

		if (!name || (type != STT_FUNC && type != STT_GNU_IFUNC) ||
		    sym.st_shndx == SHN_UNDEF || sym.st_size == 0)
			continue;
		m->syms[k++] = (asp_dwcand_t){ addr, sym.st_size, name };
	}
	m->nsyms = k;
	asp_dwsym_sort(m->syms, k);
}

void asp_dwsym_sort(asp_dwcand_t *c, size_t n)
{
	qsort(c, n, sizeof *c, by_start);
}

const char *asp_dwsym_path(const asp_dwsym_t *s, int i)
{
	return s->mods[i].path;
}

int asp_dwsym_open(asp_dwsym_t *s, int i, const char **why)
{
	const asp_dw_api_t *api = s->api;
	struct mod *m = &s->mods[i];
	struct stat st;
	int fd;

	*why = NULL;
	if (m->tried)
		return m->dm ? 0 : -ENOENT;
	m->tried = true;
	if (!api || !api->dwfl_begin)
		return -ENOSYS;
	if (m->path[0] != '/')	/* the vDSO, or no file at all */
		return -ENOENT;
	fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int err = errno;

		*why = strerror(err);
		return -err;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return -EINVAL;
	}
	m->dwfl = api->dwfl_begin(&s->callbacks);
	if (!m->dwfl) {
		close(fd);
		return -ENOMEM;
	}
	api->dwfl_report_begin(m->dwfl);
	/* At bias 0: lookups use addr - base, so that objects which overlap
	 * (in a hostile dump) cannot confuse libdwfl. */
	m->dm = api->dwfl_report_elf(m->dwfl, m->path, m->path, fd, 0, true);
	if (!m->dm) {
		*why = api->dwfl_errmsg(-1);
		close(fd);
		api->dwfl_end(m->dwfl);
		m->dwfl = NULL;
		return -EINVAL;
	}
	api->dwfl_report_end(m->dwfl, NULL, NULL);
	read_symbols(s, m);
	return 0;
}

int asp_dwsym_build_id(asp_dwsym_t *s, int i, char *hex)
{
	struct mod *m = &s->mods[i];
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	int n;

	if (!m->dm)
		return 0;
	s->api->dwfl_module_getelf(m->dm, &bias);	/* loads the build-id */
	n = s->api->dwfl_module_build_id(m->dm, &bits, &vaddr);
	if (n <= 0 || n > 128)
		return 0;
	for (int k = 0; k < n; k++)
		snprintf(hex + 2 * k, 3, "%02x", bits[k]);
	return n;
}

void asp_dwsym_set_symbols(asp_dwsym_t *s, int i, const asp_dwcand_t *c,
			   size_t n)
{
	struct mod *m = &s->mods[i];

	m->tried = true;
	m->syms = (asp_dwcand_t *)c;
	m->nsyms = n;
	m->own_syms = false;
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* The name of a subprogram or inlined subroutine (through its abstract
 * origin): DW_AT_name, the short name valgrind shows for inlined calls. */
static const char *die_name(const asp_dw_api_t *api, Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return api->dwarf_formstring(api->dwarf_attr_integrate(die, DW_AT_name,
							       &attr));
}

/* Where an inlined subroutine was called from. */
static const char *call_site(const asp_dw_api_t *api, Dwarf_Die *die,
			     unsigned *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx, ln;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;

	*line = 0;
	if (api->dwarf_formudata(api->dwarf_attr(die, DW_AT_call_line, &attr),
				 &ln) == 0)
		*line = (unsigned)ln;
	if (api->dwarf_formudata(api->dwarf_attr(die, DW_AT_call_file, &attr),
				 &idx) != 0 ||
	    !api->dwarf_diecu(die, &cu, NULL, NULL) ||
	    api->dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return base_name(api->dwarf_filesrc(files, idx, NULL, NULL));
}

/* The scopes around pc from its innermost DIE outwards, as they nest in the
 * DWARF tree (an inlined subroutine, then what it was inlined into). */
static int scopes_at(const asp_dw_api_t *api, Dwarf_Die *cu, Dwarf_Addr pc,
		     Dwarf_Die **scopes)
{
	Dwarf_Die inner;
	int n = api->dwarf_getscopes(cu, pc, scopes);

	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	inner = (*scopes)[0];
	free(*scopes);
	*scopes = NULL;
	n = api->dwarf_getscopes_die(&inner, scopes);
	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	return n;
}

/* Fills out[] for ELF address a of module m, whose first line out[0]
 * already has the symbol and the source line. */
static size_t inline_chain(const asp_dw_api_t *api, struct mod *m,
			   GElf_Addr a, asp_dwline_t *out, size_t max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = api->dwfl_module_addrdie(m->dm, a, &bias);
	Dwarf_Die *scopes = NULL;
	asp_dwline_t top = out[0];
	const char *file = top.file;
	unsigned line = top.line;
	size_t k = 0;
	int n;

	if (!cu)
		return 1;
	n = scopes_at(api, cu, a - bias, &scopes);
	for (int i = 0; i < n && k < max; i++) {
		int tag = api->dwarf_tag(&scopes[i]);
		bool inl = tag == DW_TAG_inlined_subroutine;

		if (!inl && tag != DW_TAG_subprogram && tag != DW_TAG_entry_point)
			continue;
		out[k] = top;
		out[k].file = file;
		out[k].line = file ? line : 0;
		out[k].inlined = inl;
		if (inl || !top.fn) {
			out[k].fn = die_name(api, &scopes[i]);
			out[k].raw = out[k].fn;
		}
		k++;
		if (!inl)
			break;
		file = call_site(api, &scopes[i], &line);
	}
	free(scopes);
	return k ? k : 1;
}

/* The shown name of symbol i of m: demangled once, kept. */
static const char *shown_name(asp_dwsym_t *s, struct mod *m, size_t i)
{
	if (!s->api || !s->api->demangle)
		return m->syms[i].name;
	if (!m->demangled) {
		m->demangled = calloc(m->nsyms ? m->nsyms : 1, sizeof *m->demangled);
		if (!m->demangled)
			return m->syms[i].name;
	}
	if (!m->demangled[i])
		m->demangled[i] = asp_dwsym_demangle(s->api, m->syms[i].name);
	return m->demangled[i] ? m->demangled[i] : m->syms[i].name;
}

/* Whether name is one of the C library's functions that call main, which
 * valgrind names "(below main)" (its --show-below-main=no, the default). */
static bool below_main(const char *name)
{
	static const char *const names[] = {
		"__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
		"generic_start_main",
	};

	for (size_t i = 0; name && i < sizeof names / sizeof names[0]; i++) {
		size_t n = strlen(names[i]);

		if (strncmp(name, names[i], n) == 0 && (name[n] == '\0' || name[n] == '@'))
			return true;
	}
	return false;
}

static size_t lookup_named(asp_dwsym_t *s, uint64_t pc, asp_dwline_t *out,
			   size_t max);

/* Names pc without the cache; the functions below main as valgrind names
 * them, in its loss records and its suppressions alike. */
static size_t lookup(asp_dwsym_t *s, uint64_t pc, asp_dwline_t *out,
		     size_t max)
{
	size_t n = lookup_named(s, pc, out, max);

	for (size_t k = 0; k < n; k++)
		if (below_main(out[k].raw) || below_main(out[k].fn))
			out[k].fn = out[k].raw = ASP_DW_BELOW_MAIN;
	return n;
}

static size_t lookup_named(asp_dwsym_t *s, uint64_t pc, asp_dwline_t *out,
			   size_t max)
{
	int i = asp_dwsym_find(s, pc);
	const char *why;
	struct mod *m;
	uint64_t a;
	long k;

	memset(out, 0, sizeof *out);
	if (i < 0 || pc < s->mods[i].base)
		return 1;
	m = &s->mods[i];
	out[0].module = m->path;
	if (!m->tried)
		asp_dwsym_open(s, i, &why);
	a = pc - m->base;
	if (m->dm && !s->api->dwfl_addrmodule(m->dwfl, a)) {
		if (!m->end)	/* past the file: not this object */
			out[0].module = NULL;
		return 1;
	}
	k = choose(m->syms, m->nsyms, a);
	if (k >= 0) {
		out[0].raw = m->syms[k].name;
		out[0].fn = shown_name(s, m, (size_t)k);
		if (strcmp(out[0].raw, "__clone3") == 0 ||
		    strcmp(out[0].raw, "clone3") == 0)
			out[0].fn = out[0].raw = "clone";
	}
	if (!m->dm)
		return 1;
	Dwfl_Line *src = s->api->dwfl_module_getsrc(m->dm, a);
	if (src) {
		int line = 0;

		out[0].file = base_name(s->api->dwfl_lineinfo(src, NULL, &line,
							      NULL, NULL, NULL));
		out[0].line = out[0].file && line > 0 ? (unsigned)line : 0;
		if (!out[0].line)
			out[0].file = NULL;
	}
	return inline_chain(s->api, m, a, out, max);
}

static int cache_grow(asp_dwsym_t *s)
{
	size_t cap = s->cachecap ? s->cachecap * 2 : 256;
	struct entry *v = calloc(cap, sizeof *v);

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < s->cachecap; i++) {
		struct entry *e = &s->cache[i];
		size_t h;

		if (!e->lines)
			continue;
		h = (size_t)asp_hash(e->pc) & (cap - 1);
		while (v[h].lines)
			h = (h + 1) & (cap - 1);
		v[h] = *e;
	}
	free(s->cache);
	s->cache = v;
	s->cachecap = cap;
	return 0;
}

size_t asp_dwsym_lookup(asp_dwsym_t *s, uint64_t pc, asp_dwline_t *out,
			size_t max)
{
	asp_dwline_t tmp[MAX_CACHED];
	struct entry *e;
	size_t h, n;

	if (s->ncache * 2 >= s->cachecap && cache_grow(s) < 0)
		return lookup(s, pc, out, max);
	h = (size_t)asp_hash(pc) & (s->cachecap - 1);
	while (s->cache[h].lines && s->cache[h].pc != pc)
		h = (h + 1) & (s->cachecap - 1);
	e = &s->cache[h];
	if (!e->lines) {
		n = lookup(s, pc, tmp, MAX_CACHED);
		e->lines = malloc(n * sizeof *e->lines);
		if (!e->lines)
			return lookup(s, pc, out, max);
		memcpy(e->lines, tmp, n * sizeof *tmp);
		e->n = n;
		e->pc = pc;
		s->ncache++;
	}
	n = e->n < max ? e->n : max;
	memcpy(out, e->lines, n * sizeof *out);
	return n;
}
