/* symbols.c - naming code addresses inside the process at exit.
 *
 * The objects come from dl_iterate_phdr. libdw.so.1 is dlopen'd on first
 * use and its functions fill the table of common/dwsym.c; the shim links
 * neither libdw nor libstdc++, and never loads libstdc++: __cxa_demangle is
 * used only when the program has it already. Without libdw each object's
 * file is mapped read-only and its .symtab (or .dynsym when stripped)
 * gives the names. Only used at exit, when allocations are no longer
 * counted, so malloc is fine here. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"
#include "options.h"
#include "symbols.h"

static asp_dw_api_t g_api;
static asp_dwsym_t *g_dw;
static int g_ready;		/* 0 not yet, 1 done, -1 failed */
static uintptr_t g_shim_lo, g_shim_hi;

/* Fills g_api from a dlopen'd libdw.so.1; on any miss the libdw part
 * stays empty and only symbol tables name addresses. */
static void load_libdw(void)
{
	/* A child that lost the loader's list lock can load nothing new: a
	 * dlopen would wait for that lock for ever (loader.h). */
	int noload = asp__loader_lost() ? RTLD_NOLOAD : 0;
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL | noload);
	int missing = 0;

	if (h == NULL)
		return;
#define ASP_DW_DLSYM(f) \
	g_api.f = (__typeof__(g_api.f))dlsym(h, #f); \
	missing |= g_api.f == NULL;
	ASP_DW_FUNCS(ASP_DW_DLSYM)
#undef ASP_DW_DLSYM
	if (missing) {
		asp_demangle_fn *keep = g_api.demangle;

		memset(&g_api, 0, sizeof g_api);
		g_api.demangle = keep;
	}
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : asp__opt.exe;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	if ((uintptr_t)&add_object >= lo && (uintptr_t)&add_object < hi) {
		g_shim_lo = lo;
		g_shim_hi = hi;
	}
	return asp_dwsym_add(g_dw, path, info->dlpi_addr, hi, NULL) < 0;
}

static int ready(void)
{
	if (g_ready == 0) {
		g_ready = -1;
		/* Found only when the program has libstdc++ loaded already. */
		g_api.demangle = (asp_demangle_fn *)dlsym(RTLD_DEFAULT, "__cxa_demangle");
		load_libdw();
		g_dw = asp_dwsym_new(&g_api);
		if (g_dw != NULL && asp__loader_list(add_object, NULL) == 0)
			g_ready = 1;
	}
	return g_ready > 0;
}

/* The symbols of the ELF file at path, from .symtab, else .dynsym: each
 * defined one of a type types takes (bit STT_x) and of non-zero size goes
 * to fn, with the file mapped; fn returns nonzero to stop. Returns 0, or
 * -1 when the file gave no table. */
static int each_symbol(const char *path, unsigned types,
                       int (*fn)(void *arg, const ElfW(Sym) *sym, const char *name, size_t n),
                       void *arg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -1;
	const unsigned char *map = MAP_FAILED;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -1;
	size_t size = (size_t)st.st_size;
	const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)map;
	if (size < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
	    eh->e_shoff == 0 || eh->e_shoff + (size_t)eh->e_shnum * sizeof(ElfW(Shdr)) > size)
		return -1;
	const ElfW(Shdr) *sh = (const ElfW(Shdr) *)(map + eh->e_shoff);
	for (int want = SHT_SYMTAB; want >= 0; want = want == SHT_SYMTAB ? SHT_DYNSYM : -1) {
		for (int i = 0; i < eh->e_shnum; i++) {
			if (sh[i].sh_type != (unsigned)want || sh[i].sh_link >= eh->e_shnum)
				continue;
			const ElfW(Shdr) *str = &sh[sh[i].sh_link];
			if (sh[i].sh_offset + sh[i].sh_size > size ||
			    str->sh_offset + str->sh_size > size || sh[i].sh_entsize != sizeof(ElfW(Sym)))
				continue;
			const ElfW(Sym) *syms = (const ElfW(Sym) *)(map + sh[i].sh_offset);
			size_t n = sh[i].sh_size / sizeof(ElfW(Sym));
			const char *strtab = (const char *)(map + str->sh_offset);
			for (size_t j = 0; j < n; j++) {
				unsigned type = ELF64_ST_TYPE(syms[j].st_info);
				if (!(types & (1u << type)) || syms[j].st_shndx == SHN_UNDEF ||
				    syms[j].st_size == 0 || syms[j].st_name >= str->sh_size ||
				    memchr(strtab + syms[j].st_name, 0, str->sh_size - syms[j].st_name) == NULL)
					continue;
				if (fn(arg, &syms[j], strtab + syms[j].st_name, n))
					return 0;
			}
			return 0;
		}
	}
	return -1;
}

struct fn_syms {
	asp_dwcand_t *c;
	size_t k;
};

static int add_fn_symbol(void *arg, const ElfW(Sym) *sym, const char *name, size_t n)
{
	struct fn_syms *f = arg;
	if (f->c == NULL && (f->c = malloc((n ? n : 1) * sizeof *f->c)) == NULL)
		return 1;
	f->c[f->k++] = (asp_dwcand_t){ sym->st_value, sym->st_size, name };
	return 0;
}

/* Without libdw: the function symbols of a mapped ELF file. */
static void table_symbols(int mod, const char *path)
{
	struct fn_syms f = { NULL, 0 };
	each_symbol(path, 1u << STT_FUNC | 1u << STT_GNU_IFUNC, add_fn_symbol, &f);
	if (f.c == NULL)
		return;
	asp_dwsym_sort(f.c, f.k);
	asp_dwsym_set_symbols(g_dw, mod, f.c, f.k);
}

/* The data symbol that holds an address: the object first, then its
 * symbols (the address less the object's bias). */
struct data_find {
	uintptr_t addr, bias;
	const char *path;
	uintptr_t start;
	char *name;
};

static int data_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct data_find *d = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && d->addr >= lo && d->addr - lo < ph->p_memsz) {
			d->bias = info->dlpi_addr;
			d->path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : asp__opt.exe;
			return 1;
		}
	}
	return 0;
}

static int data_symbol(void *arg, const ElfW(Sym) *sym, const char *name, size_t n)
{
	struct data_find *d = arg;
	(void)n;
	uintptr_t lo = d->bias + sym->st_value;
	if (d->addr < lo || d->addr - lo >= sym->st_size)
		return 0;
	d->start = lo;
	d->name = strdup(name);
	return 1;
}

const char *asp__symbols_data(uintptr_t addr, uintptr_t *start)
{
	struct data_find d = { addr, 0, NULL, 0, NULL };
	if (asp__loader_list(data_object, &d) <= 0 || d.path == NULL || d.path[0] != '/')
		return NULL;
	each_symbol(d.path, 1u << STT_OBJECT | 1u << STT_COMMON, data_symbol, &d);
	*start = d.start;
	return d.name;	/* kept: the process is ending */
}

size_t asp__symbolize_lines(uintptr_t pc, asp_dwline_t *out, size_t max)
{
	memset(out, 0, sizeof *out);
	if (!ready())
		return 1;
	int mod = asp_dwsym_find(g_dw, pc);
	if (mod >= 0 && !asp_dwsym_tried(g_dw, mod)) {
		const char *why;
		if (asp_dwsym_open(g_dw, mod, &why) == -ENOSYS)
			table_symbols(mod, asp_dwsym_path(g_dw, mod));
	}
	return asp_dwsym_lookup(g_dw, pc, out, max);
}

bool asp__symbols_is_shim(uintptr_t pc)
{
	return ready() && pc >= g_shim_lo && pc < g_shim_hi;
}

const char *asp__symbols_object(uintptr_t pc)
{
	int mod = ready() ? asp_dwsym_find(g_dw, pc) : -1;
	return mod >= 0 ? asp_dwsym_path(g_dw, mod) : NULL;
}

const char *asp__symbols_demangle(const char *name)
{
	char *d = ready() ? asp_dwsym_demangle(&g_api, name) : NULL;
	return d != NULL ? d : name;	/* kept: the process is ending */
}
