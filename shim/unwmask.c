/* unwmask.c - libunwind's signal masking, skipped inside the shim's walks.
 *
 * Debian's libunwind is built to block every signal around its listing of
 * the loaded objects (dl_iterate_phdr) and around its unwind rules' cache
 * lock: four rt_sigprocmask system calls for each code address it has not
 * seen, thousands in a short program (python3 -c pass: some 6,600 of its
 * 8,800, against 2,400 for blocking once around each of the shim's 1,200
 * walks). That masking keeps a signal handler from entering libunwind again
 * on the same thread while it holds those locks; libunwind can be built
 * without it (--disable-block-signals), leaving that to its caller. The
 * shim blocks every signal itself, once, around each of its walks
 * (stack.c, walk_begin), and marks the thread (t->unwinding): libunwind's
 * sigprocmask calls from such a thread return at once. Any other call, the
 * program's own use of libunwind included, goes to the C library.
 *
 * The call is redirected in libunwind's import slot for sigprocmask.
 *
 * Its mmap too, for one request: the frame cache libunwind makes for each
 * thread at its first backtrace, 2^14 frames of 16 bytes, every one written
 * at once. On a virtual machine where a fresh page costs some 10 us to
 * fault in, that is 0.66 ms a thread; mapped with MAP_POPULATE (the pages
 * made in one system call) 0.32 ms. Most threads need few walks: the
 * shim's stack cache (stack.c) takes a stack it has seen twice without
 * one. So a thread's first ASP_UNW_UNCACHED walks get no cache: the
 * mapping fails, and libunwind takes its uncached path (unw_step, frame by
 * frame) for that walk, and tries again at the next. The shim's start-up
 * walk, made only to have libunwind create its thread key early, gets none
 * either. The cache is the shim's memory, listed with its own (arena.h):
 * it holds code addresses and offsets, no pointer of the program's, and
 * the leak scan leaves it out instead of reading 256 KiB a thread; its
 * unmapping (at the thread's exit) goes through libunwind's import slot
 * for munmap, which takes it off the list first. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "glue.h"
#include "loader.h"
#include "thread.h"
#include "unwmask.h"

typedef int sigprocmask_fn(int, const sigset_t *, sigset_t *);
typedef void *mmap_fn(void *, size_t, int, int, int, off_t);
typedef int munmap_fn(void *, size_t);

static sigprocmask_fn *g_real;	/* the C library's */
static mmap_fn *g_real_mmap;
static munmap_fn *g_real_munmap;
static uintptr_t g_base;	/* libunwind's load address */
static pthread_t g_walker;	/* walking without a record yet (start-up) */
static pthread_t g_starter;	/* making the start-up walk */

#define ASP_UNW_CACHE_BYTES ((size_t)1 << 14 << 4)
/* A thread's first walks go without the cache: libunwind's uncached path
 * costs a few microseconds more a walk, the cache hundreds once. */
#define ASP_UNW_UNCACHED 8

void asp__unwmask_walker(int on)
{
	asp_atomic_store_relaxed(&g_walker, on ? pthread_self() : (pthread_t)0);
}

void asp__unwmask_startup(int on)
{
	asp_atomic_store_relaxed(&g_starter, on ? pthread_self() : (pthread_t)0);
}

static void *unw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (addr == NULL && len == ASP_UNW_CACHE_BYTES && fd == -1 &&
	    (flags & (MAP_ANONYMOUS | MAP_PRIVATE | MAP_FIXED)) == (MAP_ANONYMOUS | MAP_PRIVATE)) {
		struct asp_thread *t = asp__thread_peek();
		if (asp_atomic_load_relaxed(&g_starter) == pthread_self() ||
		    (t != NULL && t->unwinding != 0 && t->unw_walks <= ASP_UNW_UNCACHED)) {
			errno = ENOMEM;
			return MAP_FAILED;
		}
		flags |= MAP_POPULATE;
		void *p = g_real_mmap(addr, len, prot, flags, fd, off);
		if (p != MAP_FAILED)
			asp__arena_adopt(p, len);
		return p;
	}
	return g_real_mmap(addr, len, prot, flags, fd, off);
}

/* A frame cache leaves the shim's list before it is unmapped (by
 * libunwind, when its thread exits). */
static int unw_munmap(void *addr, size_t len)
{
	if (len == ASP_UNW_CACHE_BYTES)
		asp__arena_disown(addr, len);
	return g_real_munmap(addr, len);
}

static int quiet_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	struct asp_thread *t = asp__thread_peek();
	if (t != NULL ? t->unwinding != 0
	              : asp_atomic_load_relaxed(&g_walker) == pthread_self()) {
		/* libunwind saves the mask only to put it back, by this call */
		if (old != NULL)
			sigemptyset(old);
		return 0;
	}
	return g_real(how, set, old);
}

/* A d_ptr of a loaded object's dynamic section: the loader has added the
 * load address on this target, but not on every one. */
static uintptr_t dyn_ptr(uintptr_t base, uintptr_t v)
{
	return v < base ? base + v : v;
}

/* The address of the slot through which the object at base with dynamic
 * section dyn calls name, or NULL. */
static void **import_slot(uintptr_t base, const ElfW(Dyn) *dyn, const char *name)
{
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const ElfW(Rela) *rel[2] = { NULL, NULL };
	size_t relsz[2] = { 0, 0 };
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = (const ElfW(Sym) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_STRTAB: strtab = (const char *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_JMPREL: rel[0] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_PLTRELSZ: relsz[0] = d->d_un.d_val; break;
		case DT_RELA: rel[1] = (const ElfW(Rela) *)dyn_ptr(base, d->d_un.d_ptr); break;
		case DT_RELASZ: relsz[1] = d->d_un.d_val; break;
		default: break;
		}
	}
	if (symtab == NULL || strtab == NULL)
		return NULL;
	for (int k = 0; k < 2; k++) {
		for (size_t i = 0; rel[k] != NULL && i < relsz[k] / sizeof(ElfW(Rela)); i++) {
			unsigned long type = ELF64_R_TYPE(rel[k][i].r_info);
			size_t sym = ELF64_R_SYM(rel[k][i].r_info);
			if ((type != ASP_R_JUMP_SLOT && type != ASP_R_GLOB_DAT) || sym == 0)
				continue;
			if (strcmp(strtab + symtab[sym].st_name, name) == 0)
				return (void **)(base + rel[k][i].r_offset);
		}
	}
	return NULL;
}

/* Is the slot in the part of libunwind that the loader made read-only
 * after relocating it (PT_GNU_RELRO)? */
struct relro {
	uintptr_t slot;
	int in;
};

static int relro_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct relro *r = arg;
	(void)size;
	if (info->dlpi_addr != g_base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_GNU_RELRO && r->slot >= lo && r->slot < lo + ph->p_memsz)
			r->in = 1;
	}
	return 1;
}

/* Points libunwind's import slot for name at fn, once *real holds the C
 * library's function. */
static void redirect(const struct link_map *lm, const char *name, void *fn, void **real)
{
	void **slot = import_slot(lm->l_addr, lm->l_ld, name);
	if (slot == NULL)
		return;
	/* Not the slot's value: lazily bound, that is the stub that would bind
	 * it, and write over the redirection. */
	*real = dlsym(RTLD_DEFAULT, name);
	if (*real == NULL)
		return;
	/* A read-only slot is written through its page made writable for
	 * the while. */
	struct relro r = { (uintptr_t)slot, 0 };
	asp__loader_list(relro_cb, &r);
	long pg = sysconf(_SC_PAGESIZE);
	void *page = (void *)((uintptr_t)slot & ~(uintptr_t)(pg - 1));
	if (r.in && mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE) != 0)
		return;
	__atomic_store_n(slot, fn, __ATOMIC_RELEASE);
	if (r.in)
		mprotect(page, (size_t)pg, PROT_READ);
}

/* libunwind's link namespace, when it has one of its own (process.c,
 * asp__load_private): its link map, and the listing its calls of
 * dl_iterate_phdr get. The C library lists the caller's namespace alone:
 * libunwind must see the program's objects, through the shim's listing
 * (which fork waits for, thread.h), and its own, to unwind its own frames:
 * those the shim lists from the namespace's link maps, each object's ELF
 * header read where it is loaded. The loader itself, in both, is listed
 * once. */
static const struct link_map *g_private;

static int is_loader(const char *name)
{
	const char *base = name != NULL ? strrchr(name, '/') : NULL;
	return base != NULL && strncmp(base + 1, "ld-linux", 8) == 0;
}

/* Each object of libunwind's namespace but the loader, with its program
 * headers; stops where fn returns non-zero, and returns that. */
static int private_objects(int (*fn)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	const struct link_map *l = g_private;
	while (l != NULL && l->l_prev != NULL)
		l = l->l_prev;
	for (; l != NULL; l = l->l_next) {
		const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)l->l_addr;
		if (l->l_name == NULL || l->l_name[0] == '\0' || is_loader(l->l_name) || l->l_addr == 0 ||
		    memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0)
			continue;
		struct dl_phdr_info info;
		memset(&info, 0, sizeof info);
		info.dlpi_addr = l->l_addr;
		info.dlpi_name = l->l_name;
		info.dlpi_phdr = (const ElfW(Phdr) *)(l->l_addr + eh->e_phoff);
		info.dlpi_phnum = eh->e_phnum;
		int r = fn(&info, sizeof info, arg);
		if (r != 0)
			return r;
	}
	return 0;
}

struct forward {
	int (*cb)(struct dl_phdr_info *, size_t, void *);
	void *arg;
};

static int forward_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct forward *f = arg;
	return f->cb(info, size, f->arg);
}

static int unw_iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	struct forward f = { cb, arg };
	int r = asp__dl_iterate_phdr(forward_cb, &f);
	return r != 0 ? r : private_objects(cb, arg);
}

static int tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++)
		*(int *)arg += info->dlpi_phdr[i].p_type == PT_TLS;
	return 0;
}

int asp__unwmask_tls_modules(void)
{
	int n = 0;
	if (g_private != NULL)
		private_objects(tls_cb, &n);
	return n;
}

void asp__unwmask_init(void *handle)
{
	struct link_map *lm = NULL;
	if (dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || lm == NULL)
		return;
	g_base = lm->l_addr;
	redirect(lm, "sigprocmask", (void *)quiet_sigprocmask, (void **)&g_real);
	redirect(lm, "munmap", (void *)unw_munmap, (void **)&g_real_munmap);
	redirect(lm, "mmap", (void *)unw_mmap, (void **)&g_real_mmap);
	/* In a link namespace of its own (process.c, asp__load_private),
	 * libunwind has its own C library, whose thread keys are numbered
	 * from 0 again, in the slots every thread's descriptor holds for the
	 * program's keys (and the shim's): its key and the value it sets come
	 * from the program's C library, as they would without the namespace.
	 * Its listings of the loaded objects are the program's objects and
	 * its own (unw_iterate). */
	Lmid_t ns = LM_ID_BASE;
	if (dlinfo(handle, RTLD_DI_LMID, &ns) == 0 && ns != LM_ID_BASE) {
		static const char *const shared[] = {
			"pthread_key_create", "pthread_key_delete", "pthread_setspecific",
			"pthread_getspecific",
		};
		for (size_t i = 0; i < ASP_ARRAY_SIZE(shared); i++) {
			void *fn = dlsym(RTLD_DEFAULT, shared[i]), *real;
			if (fn != NULL)
				redirect(lm, shared[i], fn, &real);
		}
		g_private = lm;
		void *real;
		redirect(lm, "dl_iterate_phdr", (void *)unw_iterate, &real);
	}
}
