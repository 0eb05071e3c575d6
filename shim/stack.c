/* stack.c - capturing and interning backtraces.
 *
 * Frames come from libunwind's unw_backtrace (loaded with dlopen only when
 * asked for: its TLS block would change every thread's DTV size) or from
 * a frame-pointer walk bounded by the thread's stack. Stacks are interned
 * in an append-only store: a striped hash maps a stack to its id, read
 * without a lock; only a stack seen for the first time takes its stripe's
 * lock. */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <libunwind.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "account.h"
#include "arena.h"
#include "loader.h"
#include "lock.h"
#include "options.h"
#include "process.h"
#include "stack.h"
#include "unwmask.h"

#define ASP_STACK_STRIPES 64
#define ASP_STACK_MAX (1u << 22)	/* distinct stacks kept */
_Static_assert(ASP_THREAD_STACK_MAX >= ASP_MAX_BACKTRACE, "a thread's last stack fits");


struct stored_stack {
	uint64_t hash;
	uint32_t depth;
	uint32_t cut;		/* the walk stopped at the depth limit */
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

/* libunwind's cursor API, to learn where a stack's frames keep their return
 * addresses (the stack cache below): all of it, or g_unw.step is NULL. */
static struct {
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*get_save_loc)(unw_cursor_t *, int, unw_save_loc_t *);
	int (*is_signal_frame)(unw_cursor_t *);
} g_unw;
static uint32_t g_sc_checks;	/* words a stack cache entry can check */

uint32_t asp__code_gen;
uintptr_t asp__shim_lo, asp__shim_hi;
static struct stripe g_stripes[ASP_STACK_STRIPES];
/* Each stripe's first index, in the shim's data: side by side, 16 pages
 * for all 64, where a mapping each took two pages (a fault each when
 * first touched, some 12 us on a virtual machine) and three system
 * calls. Most programs fill no first index (192 stacks a stripe). */
#define ASP_INDEX_FIRST 256
static unsigned char g_first_index[ASP_STACK_STRIPES]
                                  [sizeof(struct index) + ASP_INDEX_FIRST * sizeof(uint32_t)]
	__attribute__((aligned(8)));
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

/* The shim's own text (asp__in_shim). */
static int shim_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me - lo < ph->p_memsz) {
			asp__shim_lo = lo;
			asp__shim_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

static int tls_modules(void)
{
	int n = 0;
	asp__loader_list(tls_cb, &n);
	return n;
}

/* libunwind's handle, once loaded (at set-up with ALLOCSPY_BACKTRACE > 1,
 * or at a fatal signal's report), and its local unwind from a signal's
 * context. */
static void *g_unw_handle;
static int g_unw_tried;
static int (*g_unw_init_local2)(unw_cursor_t *, unw_context_t *, int);

static void load_cursor_api(void *h)
{
	*(void **)&g_unw.getcontext = dlsym(h, "_Ux86_64_getcontext");
	*(void **)&g_unw.init_local = dlsym(h, "_ULx86_64_init_local");
	*(void **)&g_unw.get_reg = dlsym(h, "_ULx86_64_get_reg");
	*(void **)&g_unw.get_save_loc = dlsym(h, "_ULx86_64_get_save_loc");
	*(void **)&g_unw.is_signal_frame = dlsym(h, "_ULx86_64_is_signal_frame");
	*(void **)&g_unw.step = dlsym(h, "_ULx86_64_step");
	if (!g_unw.getcontext || !g_unw.init_local || !g_unw.get_reg ||
	    !g_unw.get_save_loc || !g_unw.is_signal_frame)
		g_unw.step = NULL;
}

/* The shim's calls into libunwind: every signal blocked once around each
 * walk, and libunwind's own masking inside skipped (unwmask.c). A handler
 * cannot land in the walk, nor anywhere inside the fork gate around it
 * (thread.h, asp__loader_enter): a fork from a handler there would wait for
 * a gate closed by another forking thread, which waits for this one. */
static inline void walk_enter(struct asp_thread *t)
{
	if (t != NULL) {
		asp__loader_enter(t);
		t->unwinding++;
	} else {
		asp__unwmask_walker(1);
	}
}

static inline void walk_leave(struct asp_thread *t)
{
	if (t != NULL) {
		t->unwinding--;
		asp__loader_leave(t);
	} else {
		asp__unwmask_walker(0);
	}
}

static inline void walk_begin(struct asp_thread *t, sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	walk_enter(t);
}

static inline void walk_end(struct asp_thread *t, const sigset_t *old)
{
	walk_leave(t);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

void asp__stack_init(void)
{
	if (asp__opt.backtrace <= 1)
		return;
	/* An array of pointers to stacks: sizeof *g_stacks is a pointer's size. */
	g_stacks = asp__pages_alloc(ASP_STACK_MAX * sizeof *g_stacks); // NOLINT(bugprone-sizeof-expression)
	asp__loader_list(shim_cb, (void *)(uintptr_t)asp__stack_init);
	if (asp__opt.unwind != ASP_UNWIND_LIBUNWIND)
		return;
	int before = tls_modules();
	void *h = asp__load_private("libunwind.so.8");
	asp__dtv_extra = tls_modules() - before;
	g_unw_handle = h;
	g_unw_tried = 1;
	if (h != NULL) {
		g_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
		load_cursor_api(h);
		asp__unwmask_init(h);
		/* A namespace of its own is not in the program's listing. */
		asp__dtv_extra += asp__unwmask_tls_modules();
	}
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
	g_sc_checks = 2 * (uint32_t)(asp__opt.backtrace + ASP_WALK_EXTRA) + 2;
	if (g_unw_backtrace != NULL) {
		void *frames[2];
		struct asp_thread *t = asp__thread_peek();
		sigset_t old;
		walk_begin(t, &old);
		asp__unwmask_startup(1);
		g_unw_backtrace(frames, 2);
		asp__unwmask_startup(0);
		walk_end(t, &old);
	}
}

/* Frame-pointer walk: [fp] is the caller's fp, [fp+8] the return address. */
static int fp_walk(uintptr_t self, uintptr_t *out, int max)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	return asp__fp_chain(fp, asp__fp_high(self, fp), out, max);
}

static uint64_t hash_frames(const uintptr_t *f, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < n; i++)
		h = (h ^ f[i]) * 0x100000001b3ull;
	return h ^ (uint64_t)n;
}

/* A stack's identity is its frames and whether the walk was cut short:
 * the same frames, once ending there and once cut, are two stacks. */
static inline uint64_t hash_stack(const uintptr_t *f, int n, int cut)
{
	return hash_frames(f, n) ^ ((uint64_t)cut << 40);
}

/* Stacks are short: a loop beats a call to memcmp. */
static inline int same(const struct stored_stack *s, uint64_t h, const uintptr_t *f, int n, int cut)
{
	if (s == NULL || s->hash != h || s->depth != (uint32_t)n || s->cut != (uint32_t)cut)
		return 0;
	for (int i = 0; i < n; i++)
		if (s->frames[i] != f[i])
			return 0;
	return 1;
}

/* The id of a known stack, without a lock; 0 when it is not known (yet). */
static uint32_t find(const struct stripe *st, uint64_t h, const uintptr_t *f, int n, int cut)
{
	const struct index *x = asp_atomic_load_acquire(&st->index);
	if (x == NULL)
		return 0;
	for (size_t i = (size_t)(h >> 6) & x->mask;; i = (i + 1) & x->mask) {
		uint32_t id = asp_atomic_load_acquire(&x->ids[i]);
		if (id == 0)
			return 0;
		if (same(asp_atomic_load_acquire(&g_stacks[id - 1]), h, f, n, cut))
			return id;
	}
}

/* A larger index with the same ids. Stripe lock held. */
static int grow_index(struct stripe *st)
{
	const struct index *old = st->index;
	size_t slots = old ? (old->mask + 1) * 2 : ASP_INDEX_FIRST;
	struct index *x = old != NULL ? asp__pages_alloc(sizeof *x + slots * sizeof x->ids[0])
	                              : (struct index *)(void *)g_first_index[st - g_stripes];
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

/* Adds a stack the lock-free lookup did not find. The stripe's lock is
 * taken with signals blocked; quiet: the caller has blocked them. */
static ASP_NOINLINE uint32_t add(struct stripe *st, uint64_t h, const uintptr_t *f, int n,
                                 int cut, int quiet)
{
	uint32_t id = 0;
	sigset_t old;
	if (quiet)
		asp_lock(&st->lock);
	else
		asp_lock_nosig(&st->lock, &old);
	id = find(st, h, f, n, cut);
	if (id != 0)
		goto out;
	if ((st->index == NULL || (st->count + 1) * 4 > (st->index->mask + 1) * 3) &&
	    grow_index(st) != 0)
		goto out;
	struct stored_stack *s = asp__arena_alloc_quiet(sizeof *s + (size_t)n * sizeof *f);
	if (s == NULL)
		goto out;
	s->hash = h;
	s->depth = (uint32_t)n;
	s->cut = (uint32_t)cut;
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
	if (quiet)
		asp_unlock(&st->lock);
	else
		asp_unlock_nosig(&st->lock, &old);
	return id;
}

/* The id of a stack, adding it when it is new. A signal handler that
 * landed while its thread was inside the live table (it may hold a shard)
 * only looks: fork's prepare handler may hold the stripes and wait for that
 * shard. Its new stacks go without an id. */
static uintptr_t intern(struct asp_thread *t, const uintptr_t *f, int n, int cut, int quiet)
{
	/* The thread's last stack again (a loop): no hash, no lookup. */
	if ((uint32_t)n == t->stack_n && t->stack_id != 0 && t->stack_cut == (uint32_t)cut) {
		int i = 0;
		while (i < n && t->stack_frames[i] == f[i])
			i++;
		if (i == n)
			return t->stack_id;
	}
	uint64_t h = hash_stack(f, n, cut);
	struct stripe *st = &g_stripes[h % ASP_STACK_STRIPES];
	uint32_t id = find(st, h, f, n, cut);
	if (id == 0 && t->chg == 0)
		id = add(st, h, f, n, cut, quiet);
	/* Not from a signal handler: it may have landed in the middle of
	 * the comparison above. */
	if (id != 0 && t->chg == 0 && t->depth == 1) {
		t->stack_id = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		memcpy(t->stack_frames, f, (size_t)n * sizeof *f);
		t->stack_n = (uint32_t)n;
		t->stack_cut = (uint32_t)cut;
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

/* Where the program's frames start: at the interposer's return address
 * (0 when it is not among the first frames). */
static int frames_from(const uintptr_t *frames, int n, uintptr_t site)
{
	int skip = 0;
	while (skip < n && skip < ASP_SKIP_FRAMES && frames[skip] != site)
		skip++;
	if (skip == n || skip == ASP_SKIP_FRAMES)
		skip = 0;
	return skip;
}

/* The end of the frames kept of frames[skip..n): ALLOCSPY_BACKTRACE of the
 * program's, the shim's trampolines among them kept but not counted (main's
 * return address into the shim's main_trampoline, a thread's into its
 * thread_trampoline: hidden where stacks are shown, as valgrind has no such
 * frame). *cut: a frame of the program's lies past them, so the stack was
 * cut at the depth limit. The walk asked for ASP_WALK_EXTRA more frames
 * than that, more than the shim's frames and trampolines. */
static int kept_end(const uintptr_t *frames, int skip, int n, int *cut)
{
	int m = skip, real = 0;
	while (m < n && real < asp__opt.backtrace && m - skip < ASP_THREAD_STACK_MAX)
		real += !asp__in_shim(frames[m++]);
	*cut = 0;
	for (int k = m; k < n && !*cut; k++)
		*cut = !asp__in_shim(frames[k]);
	return m;
}

/* The id of the program's part of frames[0..n); quiet: the caller has
 * blocked every signal. */
static uintptr_t program_stack(struct asp_thread *t, const uintptr_t *frames, int n, uintptr_t site,
                               int quiet)
{
	int skip = frames_from(frames, n, site), cut;
	int m = kept_end(frames, skip, n, &cut);
	return intern(t, frames + skip, m - skip, cut, quiet);
}

/* The stack cache (libunwind mode).
 *
 * Unwinding is a function of the registers a frame starts from and of the
 * stack words the unwinder reads: each frame's canonical frame address
 * (CFA) follows from its code address and its stack or frame pointer, its
 * return address is read at CFA - 8, and the caller's frame pointer is
 * read where the frame saved it. So when the shim is entered again from
 * the same code address with the same stack and frame pointers, and every
 * word the unwinder read last time still holds what it held, the unwinder
 * would find the same frames: the stack's id is reused without unwinding.
 *
 * The words to check are learnt once per stack from libunwind's cursor
 * (unw_get_save_loc: where each frame's return address and frame pointer
 * were read), after its unw_backtrace gave the frames, and only when both
 * agree frame for frame. Not cached: a stack through a signal frame (its
 * registers all come from memory), one taken on a stack that is not the
 * thread's own (sc_stack_high) or whose words lie past its end, one that
 * ends for a reason the words do not show. A
 * frame that realigns its stack (GCC's DRAP: CFA = *(fp - 8)) has that word
 * checked too. Code unloaded by dlclose makes every entry stale
 * (asp__code_gen).
 *
 * Each thread record has its own cache, filled and read only by the
 * thread outside signal handlers that land in the shim (t->depth). A stack
 * is learnt on its second miss, so that a program whose stacks rarely
 * repeat does not pay for the cursor walk: a miss leaves the hash of its
 * frames and key in a slot of a table of ASP_SC_RECENT (indexed by that
 * hash), and a miss that finds its hash there learns. An interpreter's
 * allocations come from hundreds of stacks in turn: with a list of the
 * last 8 misses in its place, python's json run (4M allocations) learnt
 * almost none and made 1M walks; with this table, 50k. */
#define ASP_SC_SETS 16
#define ASP_SC_WAYS 4
#define ASP_SC_RECENT 1024
/* Learning a stack walks it with libunwind's cursor, which locks the
 * unwind rules' cache with every signal blocked: two system calls a frame,
 * some 50 times an unw_backtrace (tens of microseconds). A learn spends
 * ASP_SC_LEARN_COST of a budget that a hit adds ASP_SC_HIT_GAIN to (what it
 * saves, twice over) and a miss 1: a thread whose stacks do not come back
 * spends at most a learn per ASP_SC_LEARN_COST misses, a few percent. */
#define ASP_SC_LEARN_COST 4096
#define ASP_SC_HIT_GAIN 32
#define ASP_SC_BUDGET_MAX (64 * ASP_SC_LEARN_COST)

/* The entries (struct asp_sc_entry, stack.h) have room for a return
 * address and a frame pointer per frame kept, and two more words
 * (realigning frames): g_sc_checks. */
#define sc_check asp_sc_check
#define sc_entry asp_sc_entry

struct asp_stack_cache {
	uint32_t victim[ASP_SC_SETS];
	int32_t budget;			/* learning's: see sc_miss */
	uint64_t recent[ASP_SC_RECENT];	/* hashes of stacks missed lately */
	uint64_t failed[ASP_SC_RECENT];	/* and of those that cannot be kept */
	unsigned char e[];		/* ASP_SC_SETS * ASP_SC_WAYS entries */
};


static inline size_t sc_entry_size(void)
{
	return sizeof(struct sc_entry) + g_sc_checks * sizeof(struct sc_check);
}

static inline struct sc_entry *sc_entry(const struct asp_stack_cache *c, size_t set, size_t way)
{
	return (struct sc_entry *)(uintptr_t)(c->e + (set * ASP_SC_WAYS + way) * sc_entry_size());
}

/* The state the shim was entered with, as capture's caller sees it. */
struct sc_key {
	uintptr_t ip, sp, bp, site, self;
};

static inline size_t sc_set(const struct sc_key *k)
{
	uint64_t h = asp_hash(k->ip ^ (k->sp << 7) ^ (k->site << 3));
	return (size_t)(h >> 60) & (ASP_SC_SETS - 1);
}

static inline const struct sc_entry *sc_lookup(struct asp_stack_cache *c, const struct sc_key *k,
                                               uint32_t gen)
{
	size_t set = sc_set(k);
	for (int w = 0; w < ASP_SC_WAYS; w++) {
		const struct sc_entry *e = sc_entry(c, set, (size_t)w);
		if (e->ip != k->ip || e->sp != k->sp || e->bp != k->bp || e->site != k->site ||
		    e->self != k->self || e->gen != gen)
			continue;
		uint32_t i = 0;
		while (i < e->nchecks && *(const uintptr_t *)e->check[i].addr == e->check[i].value)
			i++;
		if (i == e->nchecks) {
			if (c->budget < ASP_SC_BUDGET_MAX)
				c->budget += ASP_SC_HIT_GAIN;
			return e;
		}
	}
	return NULL;
}

int asp__stack_bounds_wanted(void)
{
	return g_unw.step != NULL;
}

/* The end of t's stack when sp is on it, else 0 (a coroutine's stack, a
 * signal stack: no stack is learnt there). A thread started through
 * pthread_create has its stack's bounds (process.c), and its stack ends
 * below its thread control block; the main thread's stack ends at
 * __libc_stack_end, and nothing else is mapped in the 64 MiB below. The
 * same thread control block (the key's self) means the same stack, or one
 * mapped again with the same top: the words checked stay readable. */
static uintptr_t sc_stack_high(const struct asp_thread *t, uintptr_t sp)
{
	uintptr_t main_end = (uintptr_t)__libc_stack_end;
	if (t->stack_lo != 0)
		return sp >= t->stack_lo && sp < t->self ? t->self : 0;
	if (main_end > sp && main_end - sp <= (64u << 20))
		return main_end;
	return 0;
}

static int sc_add(struct sc_entry *e, uintptr_t addr, uintptr_t lo, uintptr_t hi)
{
	if (addr < lo || addr > hi - 8 || (addr & 7) != 0)
		return -1;
	for (uint32_t i = 0; i < e->nchecks; i++)
		if (e->check[i].addr == addr)
			return 0;
	if (e->nchecks == g_sc_checks)
		return -1;
	e->check[e->nchecks].addr = addr;
	e->check[e->nchecks].value = *(const uintptr_t *)addr;
	e->nchecks++;
	return 0;
}

/* A frame's frame pointer bp, read from loc (0: nowhere known), matters
 * to the unwinder: loc is checked, unless it is capture's copy of the
 * key's. */
static int sc_need_bp(struct sc_entry *e, const struct sc_key *k, uintptr_t bp, uintptr_t loc,
                      uintptr_t lo, uintptr_t hi)
{
	if (loc == k->sp - 16 && bp == k->bp)
		return 0;
	if (loc == 0 || sc_add(e, loc, lo, hi) != 0 || *(const uintptr_t *)loc != bp)
		return -1;
	return 0;
}

/* Learns the words that frames[0..n) (from unw_backtrace; frames[0] is the
 * return address into capture's caller, k->ip) were unwound from, with
 * libunwind's cursor; 0 when the cursor does not find the same frames or a
 * frame cannot be checked this way. ended: the unwinder found no frame
 * past the last (else the stack was cut at n frames). */
static ASP_NOINLINE int sc_learn(const struct asp_thread *t, struct sc_entry *e, const struct sc_key *k,
                                 const uintptr_t *frames, int n, int ended)
{
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t ip = 0, sp = 0, bp = 0;
	unw_save_loc_t ipl, bpl;
	uintptr_t lo = k->sp, hi = sc_stack_high(t, k->sp);
	if (hi == 0 || g_unw.getcontext(&uc) != 0 || g_unw.init_local(&c, &uc) != 0)
		return 0;
	/* Past the frames of sc_learn and capture, to capture's caller. */
	for (int i = 0;; i++) {
		if (i == 4 || g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 ||
		    g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0)
			return 0;
		if (ip == k->ip && sp == k->sp)
			break;
		if (g_unw.step(&c) <= 0)
			return 0;
	}
	if (g_unw.get_reg(&c, ASP_UNW_FP, &bp) != 0 || bp != k->bp)
		return 0;
	/* Where the current frame's frame pointer was read from: capture's
	 * copy of the key's at first. */
	bpl.type = UNW_SLT_MEMORY;
	bpl.u.addr = k->sp - 16;
	e->nchecks = 0;
	for (int j = 1; j <= n; j++) {
		uintptr_t fbp = bp, fbpl = bpl.type == UNW_SLT_MEMORY ? bpl.u.addr : 0;
		if (j == n && !ended)
			break;
		int r = g_unw.is_signal_frame(&c) != 0 ? -1 : g_unw.step(&c);
		if (j == n) {
			/* The stack ended there: by the last frame's unwind rule (a
			 * return address marked undefined) or by its frame pointer
			 * (0, or outside the frame pointer chain's bounds), which
			 * is checked. An end met by an error (memory the unwinder
			 * could not read) is not kept. */
			if (r != 0 || sc_need_bp(e, k, fbp, fbpl, lo, hi) != 0)
				return 0;
			break;
		}
		if (r <= 0 || g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip != frames[j] ||
		    g_unw.get_reg(&c, UNW_REG_SP, &sp) != 0 ||
		    g_unw.get_reg(&c, ASP_UNW_FP, &bp) != 0 ||
		    g_unw.get_save_loc(&c, ASP_UNW_PC, &ipl) != 0 ||
		    g_unw.get_save_loc(&c, ASP_UNW_FP, &bpl) != 0 || ipl.type != UNW_SLT_MEMORY ||
		    sc_add(e, ipl.u.addr, lo, hi) != 0 || *(const uintptr_t *)ipl.u.addr != ip)
			return 0;
		/* The frame below had its CFA (sp now) from its frame pointer:
		 * that is checked too. A realigning frame's CFA is read from
		 * below its frame pointer (itself below the return address
		 * read just now). */
		int drap = fbp >= lo + 8 && fbp <= ipl.u.addr && *(const uintptr_t *)(fbp - 8) == sp;
		if ((sp == fbp + 16 || drap) && sc_need_bp(e, k, fbp, fbpl, lo, hi) != 0)
			return 0;
		if (drap && sc_add(e, fbp - 8, lo, hi) != 0)
			return 0;
	}
	return 1;
}

/* A miss: learns frames[0..n) when this stack was missed lately too. */
static void sc_miss(struct asp_thread *t, const struct sc_key *k, uint32_t gen,
                    const uintptr_t *frames, int n, int ended, uintptr_t id)
{
	struct asp_stack_cache *c = t->stack_cache;
	if (c == NULL) {
		c = asp__pages_alloc(sizeof *c + ASP_SC_SETS * ASP_SC_WAYS * sc_entry_size());
		if (c == NULL)
			return;
		c->budget = 8 * ASP_SC_LEARN_COST;
		t->stack_cache = c;
	}
	if (c->budget < ASP_SC_BUDGET_MAX)
		c->budget++;
	uint64_t h = hash_frames(frames, n) ^ k->sp ^ (k->bp << 1);
	size_t slot = (size_t)(asp_hash(h) >> 32) & (ASP_SC_RECENT - 1);
	if (c->recent[slot] != h) {
		c->recent[slot] = h;
		return;
	}
	if (c->failed[slot] == h || c->budget < ASP_SC_LEARN_COST)
		return;
	c->budget -= ASP_SC_LEARN_COST;
	c->recent[slot] = 0;
	size_t s = sc_set(k);
	struct sc_entry *e = sc_entry(c, s, c->victim[s]++ % ASP_SC_WAYS);
	e->ip = 0;
	walk_enter(t);
	int ok = sc_learn(t, e, k, frames, n, ended);
	walk_leave(t);
	if (!ok) {
		c->failed[slot] = h;
		return;
	}
	e->sp = k->sp;
	e->bp = k->bp;
	e->site = k->site;
	e->self = k->self;
	e->gen = gen;
	e->id = id;
	e->ip = k->ip;
	t->sc_hot = e;
}

#ifdef ASP_SC_VERIFY
ASP_NOINLINE void asp__stack_verify(struct asp_thread *t, uintptr_t site, uintptr_t id)
{
	uintptr_t frames[ASP_MAX_BACKTRACE + ASP_WALK_EXTRA];
	sigset_t old;
	walk_begin(t, &old);
	int n = g_unw_backtrace((void **)frames, asp__opt.backtrace + ASP_WALK_EXTRA);
	walk_end(t, &old);
	if (program_stack(t, frames, n, site, 0) != id) {
		asp__warn("stack cache: a hit differs from the unwinder", "", "");
		abort();
	}
}
#endif

ASP_NOINLINE uintptr_t asp__stack_capture(struct asp_thread *t, uintptr_t site)
{
	uintptr_t frames[ASP_MAX_BACKTRACE + ASP_WALK_EXTRA];
	int want = asp__opt.backtrace + ASP_WALK_EXTRA;
	int n;
	if (g_stacks == NULL)
		return 0;
	/* Until the stack is interned, this thread's allocations (libunwind's,
	 * or a signal handler's: the intern locks are not reentrant) are
	 * forwarded uncounted. */
	t->depth++;
	if (asp__opt.unwind == ASP_UNWIND_LIBUNWIND && g_unw_backtrace) {
		/* This frame's (the frame pointer is kept here): what capture's
		 * caller would be unwound from. */
		const uintptr_t *fp = __builtin_frame_address(0);
		struct sc_key k = { fp[1], (uintptr_t)(fp + 2), fp[0], site, t->self };
		uint32_t gen = asp_atomic_load_acquire(&asp__code_gen);
		uintptr_t id;
		const struct sc_entry *e;
		if (t->stack_cache != NULL && (e = sc_lookup(t->stack_cache, &k, gen)) != NULL) {
			id = e->id;
			t->sc_hot = e;
#ifdef ASP_SC_VERIFY
			asp__stack_verify(t, site, id);
#endif
			t->depth--;
			return id;
		}
		/* Signals stay blocked past the walk, while the stack is
		 * interned and learned: the intern's lock and the learning
		 * walk want them blocked too (two system calls, not six). */
		sigset_t old;
		walk_begin(t, &old);
		t->unw_walks++;
		n = g_unw_backtrace((void **)frames, want);
		walk_leave(t);
		id = program_stack(t, frames, n, site, 1);
		/* The frames that made id: from capture's caller to the last
		 * one kept. */
		int b = 0, skip = frames_from(frames, n, site), cut;
		int m = kept_end(frames, skip, n, &cut);
		while (b < n && frames[b] != k.ip)
			b++;
		/* A stack cut at the depth limit is learned down to the first
		 * frame of the program's below the ones kept: a hit then has
		 * that frame too, so it is cut as this one was. */
		int learn = m;
		if (cut) {
			while (asp__in_shim(frames[learn]))
				learn++;
			learn++;
		}
		/* (Not a stack whose walk went on past it through the shim's
		 * frames alone: its end is not in the words learned.) */
		if (id != 0 && g_unw.step != NULL && b < skip && (cut || m == n))
			sc_miss(t, &k, gen, frames + b, learn - b, !cut, id);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		t->depth--;
		return id;
	}
	uintptr_t id = asp__stack_fp_again(t, site);
	if (id == 0) {
		n = fp_walk(t->self, frames, want);
		id = program_stack(t, frames, n, site, 0);
	}
	t->depth--;
	return id;
}

/* The interrupted thread's stack at a fatal signal (the report, process.c):
 * libunwind loaded now if it was not, with the shim's own memory (the
 * caller holds the thread's depth up), then walked from the signal's
 * context. Without libunwind, the interrupted instruction alone. */
int asp__stack_signal_frames(void *uc, uintptr_t *out, int max)
{
	const ucontext_t *u = uc;
	if (max < 1)
		return 0;
	out[0] = asp_uc_pc(u);
	if (!g_unw_tried) {
		g_unw_tried = 1;
		g_unw_handle = asp__load_private("libunwind.so.8");
		if (g_unw_handle != NULL) {
			load_cursor_api(g_unw_handle);
			asp__unwmask_init(g_unw_handle);
		}
	}
	if (g_unw_handle != NULL && g_unw_init_local2 == NULL)
		*(void **)&g_unw_init_local2 = dlsym(g_unw_handle, "_ULx86_64_init_local2");
	if (g_unw_init_local2 == NULL || g_unw.step == NULL)
		return 1;
	struct asp_thread *t = asp__thread_peek();
	unw_cursor_t c;
	unw_word_t ip;
	int n = 0;
	sigset_t old;
	walk_begin(t, &old);
	if (g_unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) == 0) {
		do {
			if (g_unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || ip == 0)
				break;
			out[n++] = ip;
		} while (n < max && g_unw.step(&c) > 0);
	}
	walk_end(t, &old);
	if (n == 0)
		n = 1;
	return n;
}

int asp__stack_cut(uintptr_t id)
{
	if (g_stacks == NULL || id == 0 || id > ASP_STACK_MAX)
		return 0;
	const struct stored_stack *s = asp_atomic_load_acquire(&g_stacks[id - 1]);
	return s != NULL && s->cut;
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
