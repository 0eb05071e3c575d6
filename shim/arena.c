/* arena.c - mmap-backed internal memory: page runs for tables and a
 * bump region for records that live as long as the process. Every mapping
 * is remembered so the leak scan can leave the shim's own memory out. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"
#include "glue.h"
#include "lock.h"
#include "next.h"

#define ASP_ARENA_CHUNK (1u << 20)
#define ASP_MAX_MAPS 4096

struct asp_map { uintptr_t start, end; };

static asp_lock_t g_lock = ASP_LOCK_INIT;

static struct asp_map g_maps[ASP_MAX_MAPS];
static size_t g_nmaps;
static char *g_bump, *g_bump_end;

/* The arena's lock is taken with signals blocked, so that a signal
 * handler's allocation on the same thread never waits for it; quiet: the
 * caller has blocked them (no system call here). */
static inline void lock_arena(int quiet, sigset_t *old)
{
	if (quiet)
		asp_lock(&g_lock);
	else
		asp_lock_nosig(&g_lock, old);
}

static inline void unlock_arena(int quiet, const sigset_t *old)
{
	if (quiet)
		asp_unlock(&g_lock);
	else
		asp_unlock_nosig(&g_lock, old);
}

static void note_map(void *p, size_t size, int quiet)
{
	sigset_t old;
	lock_arena(quiet, &old);
	if (g_nmaps < ASP_MAX_MAPS)
		g_maps[g_nmaps++] = (struct asp_map){ (uintptr_t)p, (uintptr_t)p + size };
	unlock_arena(quiet, &old);
}

static void *pages_alloc(size_t size, int quiet)
{
	int saved = errno;
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = saved;
	if (p == MAP_FAILED)
		return NULL;
	note_map(p, size, quiet);
	return p;
}

void *asp__pages_alloc(size_t size)
{
	return pages_alloc(size, 0);
}

/* Transparent huge pages, where the system gives them on request: an
 * array of millions of entries written whole then costs a fault per 2 MiB
 * instead of per 4 KiB, and its random reads miss the TLB far less (the
 * leak scan's lookups of 5M blocks: about a tenth of its time). For
 * arrays mostly written: a huge page is backed whole when first touched. */
#define ASP_HUGE ((size_t)2 << 20)

void *asp__pages_alloc_dense(size_t size)
{
	if (size < 2 * ASP_HUGE || size > SIZE_MAX - ASP_HUGE)
		return asp__pages_alloc(size);
	int saved = errno;
	char *m = mmap(NULL, size + ASP_HUGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
	               -1, 0);
	if (m == MAP_FAILED) {
		errno = saved;
		return NULL;
	}
	/* Aligned to a huge page, the rest given back at both ends. */
	char *p = (char *)(((uintptr_t)m + ASP_HUGE - 1) & ~(uintptr_t)(ASP_HUGE - 1));
	size_t len = ASP_PAGE_UP(size);
	if (p > m)
		munmap(m, (size_t)(p - m));
	if (m + size + ASP_HUGE > p + len)
		munmap(p + len, (size_t)(m + size + ASP_HUGE - (p + len)));
	madvise(p, len, MADV_HUGEPAGE);
	errno = saved;
	note_map(p, size, 0);	/* as asp__pages_free is given it */
	return p;
}

/* Only a whole mapping leaves the list: a page given back out of a
 * larger one leaves the rest of it listed (and left out of scans). */
static void unnote_map(const void *p, size_t size)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	for (size_t i = 0; i < g_nmaps; i++) {
		if (g_maps[i].start == (uintptr_t)p && g_maps[i].end - g_maps[i].start == size) {
			g_maps[i] = g_maps[--g_nmaps];
			break;
		}
	}
	asp_unlock_nosig(&g_lock, &old);
}

void asp__pages_free(void *p, size_t size)
{
	int saved = errno;
	unnote_map(p, size);
	munmap(p, size);
	errno = saved;
}

void asp__arena_adopt(void *p, size_t size)
{
	int saved = errno;
	note_map(p, size, 0);
	errno = saved;
}

void asp__arena_disown(const void *p, size_t size)
{
	int saved = errno;
	unnote_map(p, size);
	errno = saved;
}

/* Scratch memory: the same few sizes mapped and unmapped at every dump
 * (periodic ones every few milliseconds). Mappings given back are kept
 * for the next request of their size, up to ASP_KEPT_SLOTS of them of at
 * most ASP_KEPT_MAX bytes each: a page mapped anew costs a fault when
 * first touched (tens of microseconds in a virtual machine) and an unmap
 * interrupts every CPU that runs the program. A slot is taken and filled
 * with one atomic operation, so that a signal handler's report may use
 * them too. A kept mapping stays listed (the leak scan leaves it out);
 * its first word holds its length, and the slot's length is only a hint,
 * checked once the mapping is taken. */
#define ASP_KEPT_SLOTS 8
#define ASP_KEPT_MAX ((size_t)4 << 20)

static void *g_kept[ASP_KEPT_SLOTS];
static size_t g_kept_len[ASP_KEPT_SLOTS];

static size_t page_round(size_t size)
{
	size_t len = ASP_PAGE_UP(size);
	return len < size ? 0 : len;
}

static int kept_put(void *p, size_t len)
{
	if (len > ASP_KEPT_MAX)
		return 0;
	*(size_t *)p = len;
	for (size_t i = 0; i < ASP_KEPT_SLOTS; i++) {
		void *none = NULL;
		if (asp_atomic_load_relaxed(&g_kept[i]) != NULL)
			continue;
		asp_atomic_store_relaxed(&g_kept_len[i], len);
		if (__atomic_compare_exchange_n(&g_kept[i], &none, p, 0, __ATOMIC_RELEASE,
		                                __ATOMIC_RELAXED))
			return 1;
	}
	return 0;
}

/* A kept mapping of len bytes (its first word not cleared), or NULL. */
static void *kept_take(size_t len)
{
	for (size_t i = 0; i < ASP_KEPT_SLOTS; i++) {
		void *p = asp_atomic_load_relaxed(&g_kept[i]);
		if (p == NULL || asp_atomic_load_relaxed(&g_kept_len[i]) != len)
			continue;
		if (!__atomic_compare_exchange_n(&g_kept[i], &p, NULL, 0, __ATOMIC_ACQUIRE,
		                                 __ATOMIC_RELAXED))
			continue;
		size_t have = *(size_t *)p;
		if (have == len)
			return p;
		/* Another length behind a stale hint: back it goes. */
		if (!kept_put(p, have))
			asp__pages_free(p, have);
	}
	return NULL;
}

void *asp__scratch_alloc(size_t size)
{
	size_t len = page_round(size);
	if (len == 0)
		return NULL;
	void *p = kept_take(len);
	if (p != NULL) {
		memset(p, 0, len);
		return p;
	}
	return asp__pages_alloc_dense(len);
}

void asp__scratch_free(void *p, size_t size)
{
	size_t len = page_round(size);
	if (p != NULL && !kept_put(p, len))
		asp__pages_free(p, len);
}

static void *arena_alloc(size_t size, int quiet)
{
	size = (size + ASP_CACHE_LINE - 1) & ~(size_t)(ASP_CACHE_LINE - 1);
	if (size > ASP_ARENA_CHUNK / 4)
		return pages_alloc(size, quiet);
	for (;;) {
		sigset_t old;
		lock_arena(quiet, &old);
		if ((size_t)(g_bump_end - g_bump) >= size) {
			void *p = g_bump;
			g_bump += size;
			unlock_arena(quiet, &old);
			return p;
		}
		unlock_arena(quiet, &old);
		char *chunk = pages_alloc(ASP_ARENA_CHUNK, quiet);
		if (chunk == NULL)
			return NULL;
		lock_arena(quiet, &old);
		g_bump = chunk;
		g_bump_end = chunk + ASP_ARENA_CHUNK;
		unlock_arena(quiet, &old);
	}
}

void *asp__arena_alloc(size_t size)
{
	return arena_alloc(size, 0);
}

void *asp__arena_alloc_quiet(size_t size)
{
	return arena_alloc(size, 1);
}

void asp__arena_ranges(void (*fn)(void *arg, const void *start, size_t len), void *arg)
{
	/* fn may map memory itself: call it on a copy, without the lock. */
	static struct asp_map copy[ASP_MAX_MAPS];
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	size_t n = g_nmaps;
	memcpy(copy, g_maps, n * sizeof *copy);
	asp_unlock_nosig(&g_lock, &old);
	for (size_t i = 0; i < n; i++)
		fn(arg, (const void *)copy[i].start, copy[i].end - copy[i].start);
}

/* The shim's heap: power-of-two classes from 16 bytes to 64 KiB on free
 * lists, larger blocks in mappings of their own. A header before each
 * block says which. Class blocks are carved from the inner heap, inside
 * the shim's data (next.h), while it lasts: a block from there is known to
 * be the shim's by its address alone. */
#define ASP_HEAP_CLASSES 13	/* 16 << 12 = 64 KiB */

struct heap_header {
	size_t size;		/* the class's size, or the mapping's length */
	size_t cls;		/* its class, or ASP_HEAP_CLASSES: a mapping */
};

static void *g_free_lists[ASP_HEAP_CLASSES];
static size_t g_inner_used;

/* size bytes of the inner heap, or of the arena when it is used up.
 * Lock held. */
static void *carve(size_t size)
{
	if (g_inner_used + size <= ASP_INNER_SIZE) {
		void *p = asp__boot + ASP_BOOT_SIZE + g_inner_used;
		g_inner_used += size;
		return p;
	}
	return NULL;
}

/* quiet: the caller has blocked every signal already. */
static void *heap_alloc(size_t size, int quiet)
{
	size_t cls = 0;
	while (cls < ASP_HEAP_CLASSES && ((size_t)16 << cls) < size)
		cls++;
	if (cls == ASP_HEAP_CLASSES) {
		size_t len = page_round(size + sizeof(struct heap_header));
		if (len < size)
			return NULL;
		struct heap_header *h = kept_take(len);
		if (h == NULL)
			h = pages_alloc(len, quiet);
		if (h == NULL)
			return NULL;
		*h = (struct heap_header){ len, cls };
		return h + 1;
	}
	sigset_t old;
	lock_arena(quiet, &old);
	void *p = g_free_lists[cls];
	if (p != NULL)
		g_free_lists[cls] = *(void **)p;
	struct heap_header *h = p == NULL ? carve(sizeof *h + ((size_t)16 << cls)) : NULL;
	unlock_arena(quiet, &old);
	if (p != NULL)
		return p;
	if (h == NULL)
		h = arena_alloc(sizeof *h + ((size_t)16 << cls), quiet);
	if (h == NULL)
		return NULL;
	*h = (struct heap_header){ (size_t)16 << cls, cls };
	return h + 1;
}

void *asp__heap_alloc(size_t size)
{
	return heap_alloc(size, 0);
}

void *asp__heap_alloc_quiet(size_t size)
{
	return heap_alloc(size, 1);
}

static void heap_free(void *p, int quiet)
{
	if (p == NULL)
		return;
	struct heap_header *h = (struct heap_header *)p - 1;
	if (h->cls == ASP_HEAP_CLASSES) {
		if (!kept_put(h, h->size))
			asp__pages_free(h, h->size);
		return;
	}
	sigset_t old;
	lock_arena(quiet, &old);
	*(void **)p = g_free_lists[h->cls];
	g_free_lists[h->cls] = p;
	unlock_arena(quiet, &old);
}

void asp__heap_free(void *p)
{
	heap_free(p, 0);
}

void asp__heap_free_quiet(void *p)
{
	heap_free(p, 1);
}

size_t asp__heap_size(const void *p)
{
	const struct heap_header *h = (const struct heap_header *)p - 1;
	return h->cls == ASP_HEAP_CLASSES ? h->size - sizeof *h : h->size;
}

void *asp__heap_realloc(void *p, size_t size)
{
	if (p == NULL)
		return asp__heap_alloc(size);
	size_t have = asp__heap_size(p);
	if (size <= have)
		return p;
	void *q = asp__heap_alloc(size);
	if (q != NULL) {
		memcpy(q, p, have);
		asp__heap_free(p);
	}
	return q;
}

void asp__arena_atfork_prepare(void)
{
	asp_lock(&g_lock);
}

void asp__arena_atfork_release(void)
{
	asp_unlock(&g_lock);
}
