/* loader.c - the loader's list of objects, as the shim lists it.
 *
 * The shim interposes dl_iterate_phdr for two reasons, both about fork.
 * The list's lock (glibc's dl_load_write_lock) is not reset in a fork
 * child, so a fork while another thread holds it leaves the child unable
 * to list objects, which its exit report must do.
 * 1. The shim's own listings (the dump's, libunwind's) wait for a fork and
 *    a fork waits for them (thread.h, asp__loader_enter); how long depends
 *    on whether a listing holds the lock yet, which its callback's first
 *    call tells: the callback is wrapped to mark it.
 * 2. The program's listings, dlopen and dlclose, cannot be waited for. A
 *    child forked while one held the lock finds it held by a thread it does
 *    not have (its owner field names a parent's thread, or only its lock
 *    word is set, the name not yet or no longer written); then the shim's
 *    listings in that child walk the list without the lock (the program's
 *    own wait for it, as they would without the shim). Nothing can change
 *    the list there (every change waits for the lock for ever), so the walk
 *    is safe: objects come from the loader's debugger interface (r_debug),
 *    and their program headers from their ELF header (headers, below).
 */
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>

#include "glue.h"
#include "loader.h"
#include "next.h"
#include "thread.h"

typedef int iterate_fn(int (*)(struct dl_phdr_info *, size_t, void *), void *);

/* glibc's struct dl_find_object (2.35 on), for older headers too. */
struct find_object {
	unsigned long long flags;
	void *map_start, *map_end;
	struct link_map *link_map;
	void *eh_frame;
	unsigned long long reserved[7];
};
typedef int find_object_fn(void *, struct find_object *);

static iterate_fn *g_real;
static find_object_fn *g_find;
static pthread_mutex_t *g_lock;	/* the list's lock, or NULL: not found */
static int g_lost;
static size_t g_page;

/* A listing of the shim's: the caller's callback, and the record to mark
 * at its first call, when the list's lock is held. */
struct listing {
	int (*cb)(struct dl_phdr_info *, size_t, void *);
	void *arg;
	struct asp_thread *t;
};

static int holding_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct listing *l = arg;
	if (l->t != NULL) {
		asp__loader_holding(l->t);
		l->t = NULL;
	}
	return l->cb(info, size, l->arg);
}

/* The ELF header at p, if it is l's: its program headers lie within span
 * bytes of p and place l's dynamic section where l has it. Else NULL. */
static const ElfW(Ehdr) *header_of(const struct link_map *l, const void *p, size_t span)
{
	const ElfW(Ehdr) *eh = p;
	if (span < sizeof *eh || memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phoff > span ||
	    (size_t)eh->e_phnum * sizeof(ElfW(Phdr)) > span - eh->e_phoff)
		return NULL;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_DYNAMIC)
			return (uintptr_t)l->l_ld == l->l_addr + ph[i].p_vaddr ? eh : NULL;
	return NULL;
}

/* The program headers of object l, or 0. The executable's are in the
 * auxiliary vector; another object's follow its ELF header, at the start of
 * its first mapping: where _dl_find_object says it begins, or (for one it
 * does not know: what was loaded while the loader started, as the shim's
 * own libunwind) where its load bias points, if that page is mapped. */
static int headers(const struct link_map *l, int first, struct dl_phdr_info *info)
{
	const ElfW(Ehdr) *eh = NULL;
	if (first) {
		info->dlpi_phdr = (const ElfW(Phdr) *)getauxval(AT_PHDR);
		info->dlpi_phnum = (ElfW(Half))getauxval(AT_PHNUM);
		return info->dlpi_phdr != NULL;
	}
	struct find_object fo;
	if (l->l_ld == NULL)
		return 0;
	if (g_find != NULL && g_find(l->l_ld, &fo) == 0 && fo.link_map == l)
		eh = header_of(l, fo.map_start,
		               (size_t)((const char *)fo.map_end - (const char *)fo.map_start));
	unsigned char in;
	if (eh == NULL && l->l_addr != 0 && g_page != 0 && l->l_addr % g_page == 0 &&
	    mincore((void *)l->l_addr, g_page, &in) == 0)
		eh = header_of(l, (const void *)l->l_addr, g_page);
	if (eh == NULL)
		return 0;
	info->dlpi_phdr = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	info->dlpi_phnum = eh->e_phnum;
	return 1;
}

/* The list without its lock, as dl_iterate_phdr gives it, up to the
 * fields before dlpi_adds (the size passed says so). */
static int walk(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	int first = 1;
	for (const struct link_map *l = _r_debug.r_map; l != NULL; l = l->l_next, first = 0) {
		struct dl_phdr_info info;
		memset(&info, 0, sizeof info);
		info.dlpi_addr = l->l_addr;
		info.dlpi_name = l->l_name;
		if (!headers(l, first, &info))
			continue;
		int r = cb(&info, offsetof(struct dl_phdr_info, dlpi_adds), arg);
		if (r != 0)
			return r;
	}
	return 0;
}

static int iterate(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg, int shim)
{
	if (g_real == NULL)
		g_real = (iterate_fn *)asp__next_sym("dl_iterate_phdr");
	/* The record if this thread has one; none is made here. */
	struct asp_thread *t = asp__thread_peek();
	if (t == NULL && asp__thread_key_ok)
		t = pthread_getspecific(asp__thread_key);
	int in = t != NULL ? asp_atomic_load_relaxed(&t->in_loader) : 0;
	if (ASP_UNLIKELY(g_lost) && (shim || in != 0))
		return walk(cb, arg);
	if (in != 1)
		return g_real(cb, arg);
	struct listing l = { cb, arg, t };
	return g_real(holding_cb, &l);
}

int asp__dl_iterate_phdr(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return iterate(cb, arg, 0);
}

int asp__loader_list(int (*cb)(struct dl_phdr_info *, size_t, void *), void *arg)
{
	return iterate(cb, arg, 1);
}

/* Finding the lock: the one recursive mutex in the loader's global data
 * that this thread holds while it lists, and not after. */
struct lock_search {
	char *lo;
	size_t size;
	int tid;
	pthread_mutex_t *found;
	int n;		/* matches */
};

static int search_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct lock_search *s = arg;
	(void)info;
	(void)size;
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <= s->size; off += 8) {
		pthread_mutex_t *m = (pthread_mutex_t *)(void *)(s->lo + off);
		if (m->__data.__owner == s->tid && m->__data.__count == 1 && m->__data.__lock != 0 &&
		    (m->__data.__kind & 3) == PTHREAD_MUTEX_RECURSIVE_NP) {
			s->found = m;
			s->n++;
		}
	}
	return 1;
}

void asp__loader_init(void)
{
	if (g_real == NULL)
		g_real = (iterate_fn *)asp__next_sym("dl_iterate_phdr");
	g_page = getauxval(AT_PAGESZ);
	g_find = (find_object_fn *)dlsym(RTLD_DEFAULT, "_dl_find_object");
	void *rtld = dlsym(RTLD_DEFAULT, "_rtld_global");
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (g_real == NULL || rtld == NULL ||
	    !dladdr1(rtld, &di, (void **)&sym, RTLD_DL_SYMENT) || sym == NULL)
		return;
	struct lock_search s = { rtld, sym->st_size, asp_gettid(), NULL, 0 };
	g_real(search_cb, &s);
	if (s.n == 1 && s.found->__data.__owner == 0)
		g_lock = s.found;
}

void asp__loader_atfork_child(void)
{
	/* Held at the fork by a thread the child does not have: it names its
	 * owner, or only its lock word is set, since a locker takes the word
	 * before it writes its name and an unlocker clears the name before it
	 * lets the word go (the soak found a child stuck that way, forked while
	 * a dlclose let the lock go). */
	g_lost = g_lock != NULL && (asp_atomic_load_relaxed(&g_lock->__data.__owner) != 0 ||
	                            asp_atomic_load_relaxed(&g_lock->__data.__lock) != 0);
}

int asp__loader_lost(void)
{
	return g_lost;
}
