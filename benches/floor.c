/* floor.c - libfloor.so, the `limit` column of `make bench`: the least an
 * LD_PRELOAD allocation tool can cost. It interposes what a tool must see
 * to count every allocation of the workloads and does nothing else: each
 * function calls the next definition (dlsym(RTLD_NEXT)), resolved once.
 *
 * - malloc, calloc, realloc, free: plain forwarders.
 * - strdup, strndup: libc's own call its internal malloc, which no interposer
 *   sees, so any tool must rebuild them: strlen, malloc (the next one),
 *   memcpy.
 * - asp_ref_event: an empty function. allocspy.h calls it when it is
 *   defined, so this is the cost of the call a ref-counting tool needs.
 * - g_atomic_ref_count_init/inc/dec and g_ref_count_init/inc/dec: GLib's
 *   refcount API, forwarded to GLib.
 *
 * dlsym may allocate (calloc) while malloc is being resolved: those calls
 * get zeroed memory from a small static buffer, never freed.
 *
 * Built with -DFLOOR_RESULT it is libfloor-ret.so, the `limit-ret` column:
 * malloc, calloc and realloc look at what the next one returned (a NULL is
 * counted), as any tool must to tell a block from a failed call. The call
 * then returns through the interposer instead of being its last jump,
 * which is all that differs.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);

/* dlsym's allocations: a size word, then the block, 16-byte aligned. */
static _Alignas(16) unsigned char boot[16384];
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
	size_t need = 16 + ((n + 15) & ~(size_t)15);

	if (n > sizeof boot || need > sizeof boot - boot_used)
		return NULL;
	unsigned char *p = boot + boot_used;
	boot_used += need;
	memcpy(p, &n, sizeof n);
	return p + 16;
}

static int boot_owns(const void *p)
{
	return (uintptr_t)p - (uintptr_t)boot < sizeof boot;
}

/* 0 once the next allocator is known; -1 while dlsym runs (use boot). The
 * first call comes from the loader or libc's start-up, before any thread. */
static int resolve(void)
{
	if (__atomic_load_n(&next_malloc, __ATOMIC_ACQUIRE) != NULL)
		return 0;
	if (resolving)
		return -1;
	resolving = 1;
	next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	__atomic_store_n(&next_malloc, (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc"),
			 __ATOMIC_RELEASE);
	resolving = 0;
	return next_malloc != NULL ? 0 : -1;
}

#ifdef FLOOR_RESULT
static unsigned long failed;

/* The next allocator's result, a failure counted. */
static inline void *seen(void *p)
{
	if (UNLIKELY(p == NULL))
		__atomic_fetch_add(&failed, 1, __ATOMIC_RELAXED);
	return p;
}
#else
#define seen(p) (p)
#endif

static inline void *fwd_malloc(size_t n)
{
	if (UNLIKELY(__atomic_load_n(&next_malloc, __ATOMIC_ACQUIRE) == NULL) && resolve() != 0)
		return boot_alloc(n);
	return seen(next_malloc(n));
}

EXPORT void *malloc(size_t n)
{
	return fwd_malloc(n);
}

EXPORT void *calloc(size_t n, size_t size)
{
	if (UNLIKELY(__atomic_load_n(&next_malloc, __ATOMIC_ACQUIRE) == NULL) && resolve() != 0)
		return size != 0 && n > SIZE_MAX / size ? NULL : boot_alloc(n * size);
	return seen(next_calloc(n, size));
}

EXPORT void *realloc(void *p, size_t n)
{
	if (UNLIKELY(boot_owns(p))) {
		size_t old;
		void *q = fwd_malloc(n);

		memcpy(&old, (unsigned char *)p - 16, sizeof old);
		if (q != NULL)
			memcpy(q, p, old < n ? old : n);
		return q;
	}
	if (UNLIKELY(__atomic_load_n(&next_malloc, __ATOMIC_ACQUIRE) == NULL) && resolve() != 0)
		return p == NULL ? boot_alloc(n) : NULL;
	return seen(next_realloc(p, n));
}

EXPORT void free(void *p)
{
	if (UNLIKELY(boot_owns(p)))
		return;
	if (UNLIKELY(__atomic_load_n(&next_malloc, __ATOMIC_ACQUIRE) == NULL) && resolve() != 0)
		return;
	next_free(p);
}

EXPORT char *strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = fwd_malloc(n);

	return d != NULL ? memcpy(d, s, n) : NULL;
}

EXPORT char *strndup(const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *d = fwd_malloc(n + 1);

	if (d == NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

EXPORT void asp_ref_event(int op, const void *obj)
{
	(void)op;
	(void)obj;
}

/* GLib's refcount API: one pointer per function, looked up at its first
 * call (two threads racing there look it up twice, to the same value). */
static void *next_sym(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_RELAXED);

	if (UNLIKELY(f == NULL)) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELAXED);
	}
	return f;
}

#define G_REF(prefix) \
	static void *next_##prefix##_init, *next_##prefix##_inc, *next_##prefix##_dec; \
	EXPORT void prefix##_init(int *rc) \
	{ ((void (*)(int *))next_sym(&next_##prefix##_init, #prefix "_init"))(rc); } \
	EXPORT void prefix##_inc(int *rc) \
	{ ((void (*)(int *))next_sym(&next_##prefix##_inc, #prefix "_inc"))(rc); } \
	EXPORT int prefix##_dec(int *rc) \
	{ return ((int (*)(int *))next_sym(&next_##prefix##_dec, #prefix "_dec"))(rc); }
G_REF(g_atomic_ref_count)
G_REF(g_ref_count)
