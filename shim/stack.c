/* stack.c - capturing and interning backtraces.
 *
 * Frames come from libunwind's unw_backtrace (loaded with dlopen only when
 * asked for: its TLS block would change every thread's DTV size) or from
 * a frame-pointer walk bounded by the thread's stack. Stacks are interned
 * in an append-only store: a lock-striped hash maps a stack to its id. */
#include <dlfcn.h>
#include <string.h>

#include "arena.h"
#include "lock.h"
#include "options.h"
#include "stack.h"

#define ASP_STACK_STRIPES 64
#define ASP_STACK_MAX (1u << 22)	/* distinct stacks kept */
#define ASP_SKIP_FRAMES 8		/* the shim's own frames, at most */

extern void *__libc_stack_end;

struct stored_stack {
	uint64_t hash;
	uint32_t depth;
	uintptr_t frames[];
};

struct stripe {
	asp_lock_t lock;
	size_t mask, count;
	uint32_t *ids;		/* 0: empty */
} __attribute__((aligned(ASP_CACHE_LINE)));

static int (*g_unw_backtrace)(void **, int);
static struct stripe g_stripes[ASP_STACK_STRIPES];
static struct stored_stack **g_stacks;	/* id - 1 -> stack */
static uint32_t g_nstacks;
static asp_lock_t g_append = ASP_LOCK_INIT;

void asp__stack_init(void)
{
	if (asp__opt.backtrace <= 1)
		return;
	/* An array of pointers to stacks: sizeof *g_stacks is a pointer's size. */
	g_stacks = asp__pages_alloc(ASP_STACK_MAX * sizeof *g_stacks); // NOLINT(bugprone-sizeof-expression)
	if (asp__opt.unwind != ASP_UNWIND_LIBUNWIND)
		return;
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h != NULL)
		g_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	if (g_unw_backtrace == NULL) {
		asp__warn("ALLOCSPY_UNWIND=libunwind: libunwind.so.8 could not be loaded; ",
		          "using frame pointers", "");
		asp__opt.unwind = ASP_UNWIND_FP;
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

static int same(const struct stored_stack *s, uint64_t h, const uintptr_t *f, int n)
{
	return s->hash == h && s->depth == (uint32_t)n && memcmp(s->frames, f, (size_t)n * sizeof *f) == 0;
}

static int stripe_grow(struct stripe *st)
{
	size_t slots = st->mask ? (st->mask + 1) * 2 : 1024;
	uint32_t *ids = asp__pages_alloc(slots * sizeof *ids);
	if (ids == NULL)
		return -1;
	for (size_t i = 0; st->mask && i <= st->mask; i++) {
		uint32_t id = st->ids[i];
		if (id == 0)
			continue;
		size_t j = (size_t)(g_stacks[id - 1]->hash >> 6) & (slots - 1);
		while (ids[j] != 0)
			j = (j + 1) & (slots - 1);
		ids[j] = id;
	}
	if (st->ids)
		asp__pages_free(st->ids, (st->mask + 1) * sizeof *st->ids);
	st->ids = ids;
	st->mask = slots - 1;
	return 0;
}

static uintptr_t intern(const uintptr_t *f, int n)
{
	uint64_t h = hash_frames(f, n);
	struct stripe *st = &g_stripes[h % ASP_STACK_STRIPES];
	uintptr_t id = 0;
	asp_lock(&st->lock);
	if (st->mask == 0 || (st->count + 1) * 4 > (st->mask + 1) * 3) {
		if (stripe_grow(st) != 0)
			goto out;
	}
	size_t i = (size_t)(h >> 6) & st->mask;
	for (; st->ids[i] != 0; i = (i + 1) & st->mask) {
		if (same(g_stacks[st->ids[i] - 1], h, f, n)) {
			id = st->ids[i];
			goto out;
		}
	}
	struct stored_stack *s = asp__arena_alloc(sizeof *s + (size_t)n * sizeof *f);
	if (s == NULL)
		goto out;
	s->hash = h;
	s->depth = (uint32_t)n;
	memcpy(s->frames, f, (size_t)n * sizeof *f);
	asp_lock(&g_append);
	if (g_nstacks < ASP_STACK_MAX) {
		g_stacks[g_nstacks] = s;
		id = ++g_nstacks;
	}
	asp_unlock(&g_append);
	if (id != 0) {
		st->ids[i] = (uint32_t)id;
		st->count++;
	}
out:
	asp_unlock(&st->lock);
	return id;
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
	if (asp__opt.unwind == ASP_UNWIND_LIBUNWIND && g_unw_backtrace)
		n = g_unw_backtrace((void **)frames, want);
	else
		n = fp_walk(frames, want);
	/* The program's frames start at the interposer's return address. */
	int skip = 0;
	while (skip < n && skip < ASP_SKIP_FRAMES && frames[skip] != site)
		skip++;
	if (skip == n || skip == ASP_SKIP_FRAMES)
		skip = 0;
	if (n - skip > asp__opt.backtrace)
		n = skip + asp__opt.backtrace;
	uintptr_t id = intern(frames + skip, n - skip);
	t->depth--;
	return id;
}

size_t asp__stack_frames(uintptr_t id, const uintptr_t **out)
{
	uint32_t n = asp_atomic_load_acquire(&g_nstacks);
	if (id == 0 || id > n)
		return 0;
	*out = g_stacks[id - 1]->frames;
	return g_stacks[id - 1]->depth;
}
