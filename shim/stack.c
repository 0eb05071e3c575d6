/* stack.c - capturing and interning backtraces.
 *
 * Frames come from libunwind's unw_backtrace (loaded with dlopen only when
 * asked for: its TLS block would change every thread's DTV size) or from
 * a frame-pointer walk bounded by the thread's stack. Stacks are interned
 * in an append-only store: a striped hash maps a stack to its id, read
 * without a lock; only a stack seen for the first time takes its stripe's
 * lock. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "account.h"
#include "arena.h"
#include "lock.h"
#include "options.h"
#include "process.h"
#include "stack.h"

#define ASP_STACK_STRIPES 64
#define ASP_STACK_MAX (1u << 22)	/* distinct stacks kept */
#define ASP_SKIP_FRAMES 8		/* the shim's own frames, at most */
_Static_assert(ASP_THREAD_STACK_MAX >= ASP_MAX_BACKTRACE, "a thread's last stack fits");

extern void *__libc_stack_end;

struct stored_stack {
	uint64_t hash;
	uint32_t depth;
	uintptr_t frames[];
};

/* A stripe's index: ids of stacks by hash, open addressing; 0 is empty.
 * Readers probe it without a lock: a full index is replaced by a larger
 * one and never unmapped, and an id is written after its stack. */
struct index {
	size_t mask;
	uint32_t ids[];
};

struct stripe {
	asp_lock_t lock;	/* taken with signals blocked, to add a stack */
	size_t count;
	struct index *index;
} __attribute__((aligned(ASP_CACHE_LINE)));

static int (*g_unw_backtrace)(void **, int);
static struct stripe g_stripes[ASP_STACK_STRIPES];
static struct stored_stack **g_stacks;	/* id - 1 -> stack */
static uint32_t g_nstacks;

/* The number of loaded objects with TLS, and the loader's text. */
static int tls_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(int *)arg += info->dlpi_tls_modid != 0;
	const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	if (base != NULL && strncmp(base + 1, "ld-linux", 8) == 0) {
		for (int i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
				asp__ldso_lo = info->dlpi_addr + ph->p_vaddr;
				asp__ldso_hi = asp__ldso_lo + ph->p_memsz;
			}
		}
	}
	return 0;
}

static int tls_modules(void)
{
	int n = 0;
	dl_iterate_phdr(tls_cb, &n);
	return n;
}

void asp__stack_init(void)
{
	if (asp__opt.backtrace <= 1)
		return;
	/* An array of pointers to stacks: sizeof *g_stacks is a pointer's size. */
	g_stacks = asp__pages_alloc(ASP_STACK_MAX * sizeof *g_stacks); // NOLINT(bugprone-sizeof-expression)
	if (asp__opt.unwind != ASP_UNWIND_LIBUNWIND)
		return;
	int before = tls_modules();
	void *h = asp__load_private("libunwind.so.8");
	asp__dtv_extra = tls_modules() - before;
	if (h != NULL)
		g_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	if (g_unw_backtrace == NULL) {
		asp__warn("ALLOCSPY_UNWIND=libunwind: libunwind.so.8 could not be loaded; ",
		          "using frame pointers", "");
		asp__opt.unwind = ASP_UNWIND_FP;
	}
	/* libunwind makes a pthread key at its first backtrace: made now, it
	 * is one of the first keys, whose slots every thread has. Made later,
	 * it could be one past 31, and its first use in a thread would
	 * allocate the second-level block of keys the program's own keys
	 * share: their allocation would then not be the program's. */
	if (g_unw_backtrace != NULL) {
		void *frames[2];
		g_unw_backtrace(frames, 2);
	}
}

/* Frame-pointer walk: [fp] is the caller's fp, [fp+8] the return address. */
static int fp_walk(uintptr_t *out, int max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t low = fp;
	uintptr_t high = pthread_self() == 0 ? 0 : (uintptr_t)pthread_self();
	if (high < low || high - low > (64u << 20))
		high = (uintptr_t)__libc_stack_end;
	int n = 0;
	while (n < max && fp >= low && fp + 16 <= high && (fp & 7) == 0) {
		uintptr_t next = ((uintptr_t *)fp)[0];
		uintptr_t ret = ((uintptr_t *)fp)[1];
		if (ret == 0)
			break;
		out[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static uint64_t hash_frames(const uintptr_t *f, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++)
		h = (h ^ f[i]) * 0x100000001b3ull;
	return h ^ (uint64_t)n;
}

/* Stacks are short: a loop beats a call to memcmp. */
static inline int same(const struct stored_stack *s, uint64_t h, const uintptr_t *f, int n)
{
	if (s == NULL || s->hash != h || s->depth != (uint32_t)n)
		return 0;
	for (int i = 0; i < n; i++)
		if (s->frames[i] != f[i])
			return 0;
	return 1;
}

/* The id of a known stack, without a lock; 0 when it is not known (yet). */
static uint32_t find(const struct stripe *st, uint64_t h, const uintptr_t *f, int n)
{
	const struct index *x = asp_atomic_load_acquire(&st->index);
	if (x == NULL)
		return 0;
	for (size_t i = (size_t)(h >> 6) & x->mask;; i = (i + 1) & x->mask) {
		uint32_t id = asp_atomic_load_acquire(&x->ids[i]);
		if (id == 0)
			return 0;
		if (same(asp_atomic_load_acquire(&g_stacks[id - 1]), h, f, n))
			return id;
	}
}

/* A larger index with the same ids. Stripe lock held. */
static int grow_index(struct stripe *st)
{
	const struct index *old = st->index;
	size_t slots = old ? (old->mask + 1) * 2 : 1024;
	struct index *x = asp__pages_alloc(sizeof *x + slots * sizeof x->ids[0]);
	if (x == NULL)
		return -1;
	x->mask = slots - 1;
	for (size_t i = 0; old && i <= old->mask; i++) {
		uint32_t id = old->ids[i];
		if (id == 0)
			continue;
		size_t j = (size_t)(g_stacks[id - 1]->hash >> 6) & x->mask;
		while (x->ids[j] != 0)
			j = (j + 1) & x->mask;
		x->ids[j] = id;
	}
	/* The old index stays mapped: a reader may be probing it. */
	asp_atomic_store_release(&st->index, x);
	return 0;
}

/* Adds a stack the lock-free lookup did not find. */
static ASP_NOINLINE uint32_t add(struct stripe *st, uint64_t h, const uintptr_t *f, int n)
{
	uint32_t id = 0;
	sigset_t old;
	asp_lock_nosig(&st->lock, &old);
	id = find(st, h, f, n);
	if (id != 0)
		goto out;
	if ((st->index == NULL || (st->count + 1) * 4 > (st->index->mask + 1) * 3) &&
	    grow_index(st) != 0)
		goto out;
	struct stored_stack *s = asp__arena_alloc(sizeof *s + (size_t)n * sizeof *f);
	if (s == NULL)
		goto out;
	s->hash = h;
	s->depth = (uint32_t)n;
	memcpy(s->frames, f, (size_t)n * sizeof *f);
	uint32_t slot = __atomic_fetch_add(&g_nstacks, 1, __ATOMIC_RELAXED);
	if (slot >= ASP_STACK_MAX)
		goto out;	/* full: the stack goes without an id */
	asp_atomic_store_release(&g_stacks[slot], s);
	id = slot + 1;
	struct index *x = st->index;
	size_t i = (size_t)(h >> 6) & x->mask;
	while (x->ids[i] != 0)
		i = (i + 1) & x->mask;
	asp_atomic_store_release(&x->ids[i], id);
	st->count++;
out:
	asp_unlock_nosig(&st->lock, &old);
	return id;
}

/* The id of a stack, adding it when it is new. A signal handler that
 * landed while its thread was inside the live table (it may hold a shard)
 * only looks: fork's prepare handler may hold the stripes and wait for that
 * shard. Its new stacks go without an id. */
static uintptr_t intern(struct asp_thread *t, const uintptr_t *f, int n)
{
	/* The thread's last stack again (a loop): no hash, no lookup. */
	if ((uint32_t)n == t->stack_n && t->stack_id != 0) {
		int i = 0;
		while (i < n && t->stack_frames[i] == f[i])
			i++;
		if (i == n)
			return t->stack_id;
	}
	uint64_t h = hash_frames(f, n);
	struct stripe *st = &g_stripes[h % ASP_STACK_STRIPES];
	uint32_t id = find(st, h, f, n);
	if (id == 0 && t->in_table == 0)
		id = add(st, h, f, n);
	/* Not from a signal handler: it may have landed in the middle of
	 * the comparison above. */
	if (id != 0 && t->in_table == 0 && t->depth == 1) {
		t->stack_id = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		memcpy(t->stack_frames, f, (size_t)n * sizeof *f);
		t->stack_n = (uint32_t)n;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->stack_id = id;
	}
	return id;
}

void asp__stack_atfork_prepare(void)
{
	for (size_t i = 0; i < ASP_STACK_STRIPES; i++)
		asp_lock(&g_stripes[i].lock);
}

void asp__stack_atfork_release(void)
{
	for (size_t i = ASP_STACK_STRIPES; i-- > 0;)
		asp_unlock(&g_stripes[i].lock);
}

ASP_NOINLINE uintptr_t asp__stack_capture(struct asp_thread *t, uintptr_t site)
{
	uintptr_t frames[ASP_MAX_BACKTRACE + ASP_SKIP_FRAMES];
	int want = asp__opt.backtrace + ASP_SKIP_FRAMES;
	int n;
	if (g_stacks == NULL)
		return 0;
	/* Until the stack is interned, this thread's allocations (libunwind's,
	 * or a signal handler's: the intern locks are not reentrant) are
	 * forwarded uncounted. */
	t->depth++;
	if (asp__opt.unwind == ASP_UNWIND_LIBUNWIND && g_unw_backtrace) {
		asp__loader_enter(t);
		n = g_unw_backtrace((void **)frames, want);
		asp__loader_leave(t);
	} else {
		n = fp_walk(frames, want);
	}
	/* The program's frames start at the interposer's return address. */
	int skip = 0;
	while (skip < n && skip < ASP_SKIP_FRAMES && frames[skip] != site)
		skip++;
	if (skip == n || skip == ASP_SKIP_FRAMES)
		skip = 0;
	if (n - skip > asp__opt.backtrace)
		n = skip + asp__opt.backtrace;
	uintptr_t id = intern(t, frames + skip, n - skip);
	t->depth--;
	return id;
}

size_t asp__stack_frames(uintptr_t id, const uintptr_t **out)
{
	if (g_stacks == NULL || id == 0 || id > ASP_STACK_MAX)
		return 0;
	const struct stored_stack *s = asp_atomic_load_acquire(&g_stacks[id - 1]);
	if (s == NULL)
		return 0;
	*out = s->frames;
	return s->depth;
}
