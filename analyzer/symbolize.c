/* symbolize - turns a dump's return addresses into function, file and line
 * with elfutils libdw, through the dump's module map. */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "msg.h"

/* One module of the dump and, once looked at, its ELF file. Each module
 * gets a Dwfl of its own, placed at bias 0: lookups use addr - base, so
 * modules that overlap in a hostile dump cannot confuse libdwfl. */
struct mod {
	const asp_module_t *m;
	bool tried;		/* the file was opened, or failed to */
	Dwfl *dwfl;
	Dwfl_Module *dm;	/* NULL: no symbols */
};

struct asp_symbolizer {
	struct mod *mods;	/* by base, ascending */
	size_t n;
};

/* NULL: libdwfl's default, ":.debug:/usr/lib/debug" and the build-id
 * tree under /usr/lib/debug/.build-id. */
static char *debuginfo_path;

static const Dwfl_Callbacks callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

static int by_base(const void *a, const void *b)
{
	uint64_t x = ((const struct mod *)a)->m->base;
	uint64_t y = ((const struct mod *)b)->m->base;

	return x < y ? -1 : x > y;
}

asp_symbolizer_t *asp_symbolizer_new(const asp_dump_t *d)
{
	asp_symbolizer_t *s = calloc(1, sizeof *s);

	if (!s)
		return NULL;
	s->mods = calloc(d->nmodules ? d->nmodules : 1, sizeof *s->mods);
	if (!s->mods) {
		free(s);
		return NULL;
	}
	s->n = d->nmodules;
	for (size_t i = 0; i < s->n; i++)
		s->mods[i].m = &d->modules[i];
	qsort(s->mods, s->n, sizeof *s->mods, by_base);
	return s;
}

void asp_symbolizer_free(asp_symbolizer_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (s->mods[i].dwfl)
			dwfl_end(s->mods[i].dwfl);
	free(s->mods);
	free(s);
}

/* The module with the largest base at or below addr, if addr is before its
 * end (when the dump gives one). */
static struct mod *find_module(asp_symbolizer_t *s, uint64_t addr)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (s->mods[mid].m->base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	if (s->mods[lo - 1].m->end && addr >= s->mods[lo - 1].m->end)
		return NULL;
	return &s->mods[lo - 1];
}

static void check_build_id(struct mod *md)
{
	const unsigned char *bits;
	GElf_Addr vaddr, bias;
	char hex[2 * 128 + 1];
	int n;

	if (!md->m->build_id)
		return;
	dwfl_module_getelf(md->dm, &bias);	/* loads the build-id */
	n = dwfl_module_build_id(md->dm, &bits, &vaddr);
	if (n > 0 && n <= 128) {
		for (int i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", bits[i]);
		if (strcasecmp(hex, md->m->build_id) == 0)
			return;
	}
	asp_warn("%s: not the file that ran, symbols may be wrong [build-id mismatch]",
		 md->m->path);
}

static void open_module(struct mod *md)
{
	const char *path = md->m->path;
	struct stat st;
	int fd;

	md->tried = true;
	if (path[0] != '/')	/* the vDSO, or no file at all */
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		asp_warn("%s: no symbols: %s", path, strerror(errno));
		return;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		asp_warn("%s: no symbols: not a regular file", path);
		close(fd);
		return;
	}
	md->dwfl = dwfl_begin(&callbacks);
	if (!md->dwfl) {
		close(fd);
		return;
	}
	dwfl_report_begin(md->dwfl);
	md->dm = dwfl_report_elf(md->dwfl, path, path, fd, 0, true);
	if (!md->dm) {
		asp_warn("%s: no symbols: %s", path, dwfl_errmsg(-1));
		close(fd);
		dwfl_end(md->dwfl);
		md->dwfl = NULL;
		return;
	}
	dwfl_report_end(md->dwfl, NULL, NULL);
	check_build_id(md);
}

static const char *base_name(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;

	return slash ? slash + 1 : path;
}

/* The name of a subprogram or inlined subroutine (through its abstract
 * origin). */
static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* Where an inlined subroutine was called from. */
static const char *call_site(Dwarf_Die *die, unsigned *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word idx, ln;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;

	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &ln) == 0)
		*line = (unsigned)ln;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &idx) != 0 ||
	    !dwarf_diecu(die, &cu, NULL, NULL) ||
	    dwarf_getsrcfiles(&cu, &files, &nfiles) != 0 || idx >= nfiles)
		return NULL;
	return base_name(dwarf_filesrc(files, idx, NULL, NULL));
}

/* The scopes around pc from its innermost DIE outwards, as they nest in the
 * DWARF tree (an inlined subroutine, then what it was inlined into). */
static int scopes_at(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die **scopes)
{
	Dwarf_Die inner;
	int n = dwarf_getscopes(cu, pc, scopes);

	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	inner = (*scopes)[0];
	free(*scopes);
	*scopes = NULL;
	n = dwarf_getscopes_die(&inner, scopes);
	if (n <= 0) {
		free(*scopes);
		*scopes = NULL;
		return 0;
	}
	return n;
}

/* Fills out[] for the ELF address a of module md, whose first line out[0]
 * already has the symbol and the source line. */
static size_t inline_chain(struct mod *md, GElf_Addr a, asp_line_t *out,
			   size_t max)
{
	Dwarf_Addr bias;
	Dwarf_Die *cu = dwfl_module_addrdie(md->dm, a, &bias);
	Dwarf_Die *scopes = NULL;
	const char *file = out[0].file, *sym = out[0].fn;
	unsigned line = out[0].line;
	size_t k = 0;
	int n;

	if (!cu)
		return 1;
	n = scopes_at(cu, a - bias, &scopes);
	for (int i = 0; i < n && k < max; i++) {
		int tag = dwarf_tag(&scopes[i]);
		bool inl = tag == DW_TAG_inlined_subroutine;

		if (!inl && tag != DW_TAG_subprogram && tag != DW_TAG_entry_point)
			continue;
		out[k] = out[0];
		out[k].file = file;
		out[k].line = file ? line : 0;
		out[k].inlined = inl;
		out[k].fn = inl || !sym ? die_name(&scopes[i]) : sym;
		k++;
		if (!inl)
			break;
		file = call_site(&scopes[i], &line);
	}
	free(scopes);
	return k ? k : 1;
}

size_t asp_symbolize(asp_symbolizer_t *s, uint64_t addr, asp_line_t *out,
		     size_t max)
{
	struct mod *md = find_module(s, addr);
	Dwfl_Line *src;
	GElf_Addr a;
	int line;

	memset(out, 0, sizeof *out);
	out[0].addr = addr;
	if (!md || addr <= md->m->base)
		return 1;
	out[0].module = md->m->path;
	if (!md->tried)
		open_module(md);
	if (!md->dm)
		return 1;
	a = addr - md->m->base - 1;
	if (!dwfl_addrmodule(md->dwfl, a)) {
		if (!md->m->end)	/* past the file: not this module */
			out[0].module = NULL;
		return 1;
	}
	out[0].fn = dwfl_module_addrname(md->dm, a);
	src = dwfl_module_getsrc(md->dm, a);
	if (src) {
		out[0].file = base_name(dwfl_lineinfo(src, NULL, &line, NULL,
						      NULL, NULL));
		out[0].line = out[0].file && line > 0 ? (unsigned)line : 0;
		if (!out[0].line)
			out[0].file = NULL;
	}
	return inline_chain(md, a, out, max);
}
