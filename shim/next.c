/* next.c - resolving the allocator underneath the shim.
 *
 * free is looked up with RTLD_NEXT; every other family function is then
 * taken from the same object, so that a block is always returned to the
 * allocator that made it (LD_PRELOAD="liballocspy.so libtcmalloc.so").
 * Functions that object lacks are built from the ones it has. While dlsym
 * runs, the allocations it makes come from a static bootstrap arena. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "glue.h"
#include "live.h"
#include "next.h"

struct asp_next asp__next;

/* Each bootstrap block is preceded by its size, so realloc can copy it. */
_Alignas(64) unsigned char asp__boot[ASP_BOOT_SIZE + ASP_INNER_SIZE];
static size_t g_boot_used;
static int g_state; /* 0 unresolved, 1 resolving, 2 ready */

void *asp__boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	for (;;) {
		size_t used = asp_atomic_load_relaxed(&g_boot_used);
		size_t start = (used + sizeof(size_t) + align - 1) & ~(align - 1);
		size_t end = start + size;
		if (end > ASP_BOOT_SIZE || end < start)
			return NULL;
		if (asp_atomic_cas_relaxed(&g_boot_used, &used, end)) {
			memcpy(asp__boot + start - sizeof(size_t), &size, sizeof size);
			return asp__boot + start;
		}
	}
}

size_t asp__boot_used(void)
{
	return asp_atomic_load_relaxed(&g_boot_used);
}

size_t asp__boot_size(const void *p)
{
	size_t size;
	memcpy(&size, (const unsigned char *)p - sizeof(size_t), sizeof size);
	return size;
}

/* --- fallbacks for functions the allocator's object does not export --- */

/* As glibc's: a realloc through the interposed symbol, which counts it
 * (valgrind sees glibc's reallocarray only through that realloc). */
static void *fb_reallocarray(void *p, size_t n, size_t m)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, m, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, bytes);
}

static void *fb_valloc(size_t size)
{
	return asp__next.memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

static void *fb_pvalloc(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return asp__next.memalign(page, (size + page - 1) & ~(page - 1));
}

static void *fb_aligned_alloc(size_t align, size_t size)
{
	return asp__next.memalign(align, size);
}

static int fb_posix_memalign(void **out, size_t align, size_t size)
{
	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
		return EINVAL;
	void *p = asp__next.memalign(align, size);
	if (p == NULL && size != 0)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *fb_memalign(size_t align, size_t size)
{
	void *p = NULL;
	int err = asp__next.posix_memalign(&p, align, size);
	if (err != 0) {
		errno = err;
		return NULL;
	}
	return p;
}

static size_t fb_usable_size(void *p)
{
	(void)p;
	return 0;
}

/* The address range of the object that provides free: the loaded
 * segments of the object one of whose segments holds free's address, from
 * the program headers (dladdr would search its symbols, thousands of them
 * in libc, for the object). */
struct home {
	uintptr_t addr;
	uintptr_t lo, hi;
};

static int home_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct home *h = arg;
	(void)size;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int holds = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		holds |= h->addr >= a && h->addr < a + ph->p_memsz;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
	}
	if (!holds)
		return 0;
	h->lo = lo;
	h->hi = hi;
	return 1;
}

/* The next definition of name, or NULL when it is not in the object that
 * provides free (or that object is unknown: then any next one). */
static void *sym_in(const struct home *h, const char *name)
{
	void *s = dlsym(RTLD_NEXT, name);
	if (s == NULL || h->hi == 0)
		return s;
	return (uintptr_t)s >= h->lo && (uintptr_t)s < h->hi ? s : NULL;
}

void *asp__next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

int asp__next_init(void)
{
	int state = asp_atomic_load_acquire(&g_state);
	if (state == 2)
		return 0;
	if (state == 1)
		return -1;
	int expected = 0;
	if (!__atomic_compare_exchange_n(&g_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE)) {
		/* Another thread resolves: wait for it. Re-entry from dlsym on
		 * this thread sees state 1 above and never gets here. */
		while (asp_atomic_load_acquire(&g_state) != 2)
			asp_cpu_relax();
		return 0;
	}

	int saved = errno;
	struct asp_next n;
	memset(&n, 0, sizeof n);
	n.free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	struct home home = { (uintptr_t)n.free, 0, 0 };
	if (n.free != NULL)
		dl_iterate_phdr(home_cb, &home);

	/* malloc, calloc and realloc must come from there; the rest may be
	 * built from them when that object lacks them. */
	n.malloc = sym_in(&home, "malloc");
	n.calloc = sym_in(&home, "calloc");
	n.realloc = sym_in(&home, "realloc");
	if (n.malloc == NULL || n.calloc == NULL || n.realloc == NULL) {
		n.malloc = dlsym(RTLD_NEXT, "malloc");
		n.calloc = dlsym(RTLD_NEXT, "calloc");
		n.realloc = dlsym(RTLD_NEXT, "realloc");
	}
#define TAKE_OR(field, name, fallback) \
	if ((n.field = sym_in(&home, name)) == NULL) \
		n.field = fallback
	TAKE_OR(reallocarray, "reallocarray", fb_reallocarray);
	TAKE_OR(memalign, "memalign", fb_memalign);
	TAKE_OR(posix_memalign, "posix_memalign", fb_posix_memalign);
	TAKE_OR(aligned_alloc, "aligned_alloc", fb_aligned_alloc);
	TAKE_OR(valloc, "valloc", fb_valloc);
	TAKE_OR(pvalloc, "pvalloc", fb_pvalloc);
	TAKE_OR(malloc_usable_size, "malloc_usable_size", fb_usable_size);
#undef TAKE_OR
	n.exit_ = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	n.Exit_ = (void (*)(int))dlsym(RTLD_NEXT, "_Exit");
	if (n.Exit_ == NULL)
		n.Exit_ = n.exit_;
	/* glibc's allocator (free comes from the C library, which defines
	 * _exit too): its blocks are at least 32 bytes apart. Another one's
	 * may share a granule of the table of live blocks (live.h). */
	asp__live_shared = !(home.hi != 0 && (uintptr_t)n.exit_ >= home.lo &&
	                     (uintptr_t)n.exit_ < home.hi);
	asp__next = n;
	errno = saved;
	asp_atomic_store_release(&g_state, 2);
	return 0;
}
