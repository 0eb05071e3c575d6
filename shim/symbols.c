/* symbols.c - in-process symbol lookup from ELF symbol tables.
 *
 * Each object's file is mapped read-only once; its .symtab (or .dynsym
 * when stripped) is searched for the function symbol that contains the
 * address. Only used at exit, when allocations are no longer counted. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "options.h"
#include "symbols.h"

#define ASP_MAX_OBJECTS 256

struct object {
	uintptr_t base;			/* load bias */
	const char *path;
	const unsigned char *map;	/* the file, or NULL */
	size_t size;
	const ElfW(Sym) *syms;
	size_t nsyms;
	const char *strtab;
	size_t strsize;
};

static struct object g_objects[ASP_MAX_OBJECTS];
static size_t g_nobjects;

/* The symbol table of a mapped ELF file: .symtab, else .dynsym. */
static void find_symtab(struct object *o)
{
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)o->map;
	if (o->size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > o->size)
		return;
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(o->map + eh->e_shoff);
	for (int want = SHT_SYMTAB; want >= 0; want = want == SHT_SYMTAB ? SHT_DYNSYM : -1) {
		for (int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum)
				continue;
			const ElfW(Shdr) *str = &sh[sh[i].sh_link];
			if (sh[i].sh_offset + sh[i].sh_size > o->size ||
			    str->sh_offset + str->sh_size > o->size || sh[i].sh_entsize != sizeof(ElfW(Sym)))
				continue;
			o->syms = (const ElfW(Sym) *)(o->map + sh[i].sh_offset);
			o->nsyms = sh[i].sh_size / sizeof(ElfW(Sym));
			o->strtab = (const char *)(o->map + str->sh_offset);
			o->strsize = str->sh_size;
			return;
		}
	}
}

static struct object *object_for(uintptr_t base, const char *path)
{
	for (size_t i = 0; i < g_nobjects; i++)
		if (g_objects[i].base == base && strcmp(g_objects[i].path, path) == 0)
			return &g_objects[i];
	if (g_nobjects == ASP_MAX_OBJECTS)
		return NULL;
	struct object *o = &g_objects[g_nobjects++];
	memset(o, 0, sizeof *o);
	o->base = base;
	size_t len = strlen(path);
	char *copy = mmap(NULL, len + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return NULL;
	memcpy(copy, path, len + 1);
	o->path = copy;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			o->map = m;
			o->size = (size_t)st.st_size;
			find_symtab(o);
		}
	}
	if (fd >= 0)
		close(fd);
	return o;
}

void asp__symbolize(uintptr_t addr, struct asp_symbol *out)
{
	memset(out, 0, sizeof *out);
	Dl_info info;
	struct link_map *lm = NULL;
	if (!dladdr1((void *)addr, &info, (void **)&lm, RTLD_DL_LINKMAP) || lm == NULL)
		return;
	const char *path = lm->l_name && lm->l_name[0] ? lm->l_name : asp__opt.exe;
	struct object *o = object_for(lm->l_addr, path);
	if (o == NULL)
		return;
	out->object = o->path;
	uintptr_t rel = addr - o->base;
	const ElfW(Sym) *best = NULL;
	for (size_t i = 0; i < o->nsyms; i++) {
		const ElfW(Sym) *s = &o->syms[i];
		if (ELF64_ST_TYPE(s->st_info) != STT_FUNC || s->st_shndx == SHN_UNDEF ||
		    s->st_name >= o->strsize)
			continue;
		if (rel >= s->st_value && rel < s->st_value + (s->st_size ? s->st_size : 1)) {
			best = s;
			if (ELF64_ST_BIND(s->st_info) != STB_LOCAL)
				break;		/* prefer a global name to a local alias */
		}
	}
	if (best != NULL) {
		out->func = o->strtab + best->st_name;
		out->offset = rel - best->st_value;
	} else if (info.dli_sname != NULL) {
		out->func = info.dli_sname;
		out->offset = addr - (uintptr_t)info.dli_saddr;
	}
}
