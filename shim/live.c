/* live.c - the live-block table: the shadow (a word per 32-byte granule,
 * live.h) and the side table for what does not fit it: 64 shards, chosen
 * by the 64 MiB region of the address and, within it, by its page
 * (shard_of); each an open-addressing table with linear probing and
 * backward-shift deletion (no tombstones), grown by doubling at 3/4 load.
 * Memory comes from mmap, never from the program's heap. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>

#include "arena.h"
#include "glue.h"
#include "live.h"
#include "sort.h"

#define ASP_SHARD_BITS 6
#define ASP_SHARD_MIN_SLOTS 128	/* 3 KiB: one page per shard to start */
_Static_assert(ASP_SHARDS == 1u << ASP_SHARD_BITS, "shard count");

/* A slot of the side table: the entry, and the index its site had when it
 * went in (0: none), which its remove gives back, as a slot of the shadow
 * gives its own (the thread's figures by site are kept by index). */
struct side_slot {
	struct asp_live_entry e;
	uint32_t index;
};

_Static_assert(ASP_SHARD_MIN_SLOTS * sizeof(struct side_slot) <= ASP_PAGE, "first array fits a page");

struct asp_shard {
	uintptr_t holder;	/* 0: free; else the holder's identity */
	size_t count;
	uint64_t bytes;		/* the sizes of its entries */
	size_t limit;		/* grow when count reaches it (3/4 load) */
	size_t mask;		/* slots - 1; 0 while unallocated */
	struct side_slot *slots;
	/* While grow publishes a larger array: the old one, whole, and its
	 * size (a fork's child repairs the shard from it). */
	struct side_slot *moving;
	size_t moving_slots;
} __attribute__((aligned(ASP_CACHE_LINE)));

static struct asp_shard g_shards[ASP_SHARDS];

int (*asp__live_stuck)(uintptr_t holder);

/* A holder that will not let go until the caller is done: a signal
 * handler's (fork's prepare, a fatal signal's report) inside the table. */
static int stuck(uintptr_t holder)
{
	return holder > 1 && asp__live_stuck != NULL && asp__live_stuck(holder);
}

static inline int try_take(struct asp_shard *s, uintptr_t self)
{
	uintptr_t free_ = 0;
	return __atomic_compare_exchange_n(&s->holder, &free_, self, 0, __ATOMIC_ACQUIRE,
	                                   __ATOMIC_RELAXED);
}

/* A holder only ever runs a few hundred instructions (or one mmap) before
 * it lets go, so a short spin finds the shard free; a holder preempted on
 * a busy machine is waited for with the CPU given up. */
static ASP_NOINLINE void take_slow(struct asp_shard *s, uintptr_t self)
{
	for (unsigned spins = 0;; spins++) {
		while (asp_atomic_load_relaxed(&s->holder) != 0) {
			if (spins++ < 256)
				asp_cpu_relax();
			else
				sched_yield();
		}
		if (try_take(s, self))
			return;
	}
}

/* 0 with s held, -EDEADLK when self holds it already. */
static inline int take(struct asp_shard *s, uintptr_t self)
{
	self |= !self;		/* no identity: an anonymous holder, 1 */
	if (ASP_LIKELY(try_take(s, self)))
		return 0;
	if (self != 1 && asp_atomic_load_relaxed(&s->holder) == self)
		return -EDEADLK;
	take_slow(s, self);
	return 0;
}

static inline uint64_t hash(uintptr_t p)
{
	return asp_hash(p >> 4);
}

/* A block's shard: 4 neighbours picked by a hash of its 64 MiB region,
 * then one of them by its page. glibc gives each thread of a threaded
 * program its own arena in a 64 MiB-aligned heap, so threads that do not
 * share blocks mostly take different shards: a shard's lock and slots stay
 * in one core's cache instead of moving between cores at every operation
 * (10 threads allocating and freeing their own blocks on 2 cores ran 3x
 * faster than with shards spread by a hash of the address). */
static inline struct asp_shard *shard_of(uintptr_t p)
{
	uint64_t region = asp_hash(p >> 26);
	size_t first = (size_t)(region >> (64 - ASP_SHARD_BITS));
	return &g_shards[(first + ((p >> 12) & 3)) & (ASP_SHARDS - 1)];
}

static inline size_t home_in(size_t mask, uint64_t h)
{
	return (size_t)(h >> 20) & mask;
}

static inline size_t home(const struct asp_shard *s, uint64_t h)
{
	return home_in(s->mask, h);
}

struct asp_shard *asp__live_lock(uintptr_t ptr, uintptr_t self, int nested)
{
	struct asp_shard *s = shard_of(ptr);
	if (ASP_LIKELY(!nested))
		return take(s, self) == 0 ? s : NULL;
	return try_take(s, self | !self) ? s : NULL;
}

void asp__live_unlock(struct asp_shard *s)
{
	__atomic_store_n(&s->holder, 0, __ATOMIC_RELEASE);
}

/* The first array of every shard: one page each, out of one mapping made
 * on the first insert (one system call, not 64). */
static char *g_first_pages;

static struct side_slot *first_array(const struct asp_shard *s)
{
	char *pages = asp_atomic_load_acquire(&g_first_pages);
	if (pages == NULL) {
		char *mine = asp__pages_alloc(ASP_SHARDS * ASP_PAGE);
		if (mine == NULL)
			return NULL;
		if (__atomic_compare_exchange_n(&g_first_pages, &pages, mine, 0, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			pages = mine;
		else
			asp__pages_free(mine, ASP_SHARDS * ASP_PAGE);
	}
	return (struct side_slot *)(pages + (size_t)(s - g_shards) * ASP_PAGE);
}

/* The larger array is filled before it is published, and the old one
 * stays whole until the new one is: a fork from a signal handler that
 * landed anywhere in here leaves its child a whole table to repair the
 * shard from (asp__live_repair). Only the thread itself can interrupt
 * it, so the order of its stores is all that matters. */
static int grow(struct asp_shard *s)
{
	size_t slots = s->mask ? (s->mask + 1) * 2 : ASP_SHARD_MIN_SLOTS;
	struct side_slot *n = s->mask ? asp__pages_alloc(slots * sizeof *n) : first_array(s);
	if (n == NULL)
		return -ENOMEM;
	struct side_slot *old = s->slots;
	size_t old_slots = s->mask ? s->mask + 1 : 0;
	size_t mask = slots - 1;
	for (size_t i = 0; i < old_slots; i++) {
		if (old[i].e.ptr == 0)
			continue;
		size_t j = home_in(mask, hash(old[i].e.ptr));
		while (n[j].e.ptr != 0)
			j = (j + 1) & mask;
		n[j] = old[i];
	}
	s->moving_slots = old_slots;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->moving = old;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->slots = n;
	s->mask = mask;
	s->limit = slots / 4 * 3;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	s->moving = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (old != NULL)
		asp__pages_free(old, old_slots == ASP_SHARD_MIN_SLOTS ? ASP_PAGE : old_slots * sizeof *old);
	return 0;
}

static int side_insert(struct asp_shard *s, uintptr_t ptr, uint64_t size, unsigned fn, uintptr_t site,
                       uint32_t index)
{
	if (ASP_UNLIKELY(s->count >= s->limit) && grow(s) != 0)
		return -ENOMEM;
	uint64_t h = hash(ptr);
	size_t i = home(s, h);
	while (s->slots[i].e.ptr != 0 && s->slots[i].e.ptr != ptr)
		i = (i + 1) & s->mask;
	if (s->slots[i].e.ptr == ptr)
		s->bytes -= s->slots[i].e.size;
	else
		s->count++, asp_atomic_add_relaxed(&asp__live_side_count, 1);
	s->bytes += size;
	s->slots[i] = (struct side_slot){ { ptr, size, fn, site }, index };
	return 0;
}

/* The slot holding ptr, or -1. Lock held. */
static ptrdiff_t lookup(const struct asp_shard *s, uint64_t h, uintptr_t ptr)
{
	if (s->mask == 0)
		return -1;
	for (size_t i = home(s, h);; i = (i + 1) & s->mask) {
		if (s->slots[i].e.ptr == ptr)
			return (ptrdiff_t)i;
		if (s->slots[i].e.ptr == 0)
			return -1;
	}
}

static int side_remove(struct asp_shard *s, uintptr_t ptr, struct asp_live_entry *out,
                       uint32_t *index)
{
	ptrdiff_t at = lookup(s, hash(ptr), ptr);
	if (at < 0)
		return 0;
	size_t i = (size_t)at;
	*out = s->slots[i].e;
	*index = s->slots[i].index;
	s->count--;
	asp_atomic_add_relaxed(&asp__live_side_count, -1);
	s->bytes -= out->size;
	/* Backward shift: pull later entries of the probe run into the hole
	 * unless their home lies cyclically in (i, j]. */
	for (size_t j = (i + 1) & s->mask; s->slots[j].e.ptr != 0; j = (j + 1) & s->mask) {
		size_t k = home(s, hash(s->slots[j].e.ptr));
		int stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
		if (stays)
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i].e.ptr = 0;
	return 1;
}

/* Readers: a shard self holds, or a stuck holder holds, is read as it
 * is. 1 when the shard was taken (the caller lets it go). */
static int read_lock(struct asp_shard *s, uintptr_t self)
{
	self |= !self;
	for (unsigned spins = 0; !try_take(s, self); spins++) {
		uintptr_t holder = asp_atomic_load_relaxed(&s->holder);
		if (holder == self || stuck(holder))
			return 0;
		if (spins < 256)
			asp_cpu_relax();
		else
			sched_yield();
	}
	return 1;
}

/* The shadow ------------------------------------------------------------------ */

uint32_t *asp__live_root[ASP_ROOT_LEAVES];
int asp__live_shared;
int64_t asp__live_side_count;

#define LEAF_BYTES (ASP_LEAF_WORDS * sizeof(uint32_t))

/* The leaves made, by number + 1 (0: being listed), so that a walk need not
 * look through the whole root; past LEAVES_LISTED, it does. */
#define LEAVES_LISTED 1024
static uint32_t g_leaves[LEAVES_LISTED];
static uint32_t g_nleaves;

uint32_t *asp__live_slot_make(uintptr_t p)
{
	uint32_t *sl = asp__live_slot(p);
	if (ASP_LIKELY(sl != NULL) || p >> ASP_ADDR_BITS != 0)
		return sl;
	/* Reserved, not committed: the kernel backs a page of it when it is
	 * first written. Listed as the shim's (the leak scan leaves it out). */
	int saved = errno;
	uint32_t *leaf = mmap(NULL, LEAF_BYTES, PROT_READ | PROT_WRITE,
	                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = saved;
	if (leaf == MAP_FAILED)
		return NULL;
	uint32_t *none = NULL;
	if (__atomic_compare_exchange_n(&asp__live_root[p >> ASP_LEAF_SHIFT], &none, leaf, 0,
	                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		asp__arena_adopt(leaf, LEAF_BYTES);
		uint32_t n = asp_atomic_add_relaxed(&g_nleaves, 1);
		if (n <= LEAVES_LISTED)
			asp_atomic_store_release(&g_leaves[n - 1], (uint32_t)(p >> ASP_LEAF_SHIFT) + 1);
	} else {
		munmap(leaf, LEAF_BYTES);	/* another thread's came first */
		errno = saved;
	}
	return asp__live_slot(p);
}

/* Claims the empty slot sl for v: 1, or 0 when it is not empty. A slot has
 * one owner under glibc: a store. */
static inline int claim(uint32_t *sl, uint32_t v)
{
	if (!asp__live_shared) {
		asp_atomic_store_relaxed(sl, v);
		return 1;
	}
	uint32_t none = 0;
	return __atomic_compare_exchange_n(sl, &none, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* Into the shadow: 1, or 0 when no slot can hold the block. Under glibc a
 * slot has one owner, and the same block again (freed behind the shim's
 * back) or any block there was is replaced. */
static int shadow_put(uintptr_t p, uint64_t size, unsigned fn, uint32_t site_index)
{
	uint32_t v = asp__slot_pack(p, size, fn, site_index);
	uint32_t *sl = v != 0 ? asp__live_slot_make(p) : NULL;
	if (sl == NULL)
		return 0;
	uint32_t was = asp_atomic_load_relaxed(sl);
	if (was != 0 && (asp__slot_holds(was, p) || !asp__live_shared)) {
		asp_atomic_store_relaxed(sl, v);
		return 1;
	}
	return was == 0 && claim(sl, v);
}

int asp__live_insert(uintptr_t p, uint64_t size, unsigned fn, uintptr_t site, uint32_t site_index,
                     uintptr_t self, int nested)
{
	if (ASP_LIKELY(site_index != 0 || site == 0) && shadow_put(p, size, fn, site_index))
		return 0;
	struct asp_shard *s = asp__live_lock(p, self, nested);
	if (s == NULL)
		return -EAGAIN;
	int r = side_insert(s, p, size, fn, site, site_index);
	asp__live_unlock(s);
	return r;
}

/* Out of the shadow: the block's word, or 0 when no slot holds it. */
static uint64_t shadow_take(uintptr_t p)
{
	uint32_t *sl = asp__live_slot(p);
	uint32_t s = sl != NULL ? asp_atomic_load_relaxed(sl) : 0;
	if (!asp__slot_holds(s, p))
		return 0;
	if (!asp__live_shared)
		asp_atomic_store_relaxed(sl, 0);
	else if (!__atomic_compare_exchange_n(sl, &s, 0, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		return 0;
	return asp__slot_word(s, p);
}

int asp__live_remove(uintptr_t p, struct asp_live_entry *out, uint32_t *site_index,
                     uintptr_t self, int nested)
{
	uint64_t v = shadow_take(p);
	if (v != 0) {
		*out = (struct asp_live_entry){ p, asp__live_word_size(v), asp__live_word_fn(v),
		                                asp__site_of(asp__live_word_site(v)) };
		*site_index = asp__live_word_site(v);
		return 1;
	}
	if (asp_atomic_load_relaxed(&asp__live_side_count) == 0)
		return 0;
	struct asp_shard *s = asp__live_lock(p, self, nested);
	if (s == NULL)
		return -EAGAIN;
	*site_index = 0;
	int found = side_remove(s, p, out, site_index);
	asp__live_unlock(s);
	return found;
}

void asp__live_set_fn(uintptr_t p, unsigned fn)
{
	uint32_t *sl = asp__live_slot(p);
	uint32_t s = sl != NULL ? asp_atomic_load_relaxed(sl) : 0;
	if (asp__slot_holds(s, p) && asp__slot_code(fn) != 0)
		asp_atomic_store_relaxed(sl, (s & ~(15u << 1)) | asp__slot_code(fn) << 1);
}

/* The slots of a leaf that may hold blocks: its pages the kernel backs
 * (mincore), for fn(arg, block's address, its word). */
static void leaf_words(size_t leaf_no, const uint32_t *leaf, unsigned char *vec,
                       void (*fn)(void *arg, uintptr_t p, uint64_t v), void *arg)
{
	if (mincore((void *)leaf, LEAF_BYTES, vec) != 0)
		return;
	const size_t per_page = ASP_PAGE / sizeof(uint32_t);
	for (size_t pg = 0; pg < LEAF_BYTES / ASP_PAGE; pg++) {
		if (!(vec[pg] & 1))
			continue;
		for (size_t k = pg * per_page; k < (pg + 1) * per_page; k++) {
			if (asp_atomic_load_relaxed(&leaf[k]) == 0)
				continue;
			uintptr_t g = ((uintptr_t)leaf_no << ASP_LEAF_SHIFT) | ((uintptr_t)k << ASP_GRANULE_SHIFT);
			uint64_t v = asp__live_read_granule(g);
			if (v != 0)
				fn(arg, g | (uintptr_t)((v & 3) << 3), v);
		}
	}
}

static int by_number(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* Every word that holds a block, in address order: the listed leaves in
 * order of their numbers, or the whole root when there are more (or one
 * is being listed). */
static void shadow_walk(void (*fn)(void *arg, uintptr_t p, uint64_t v), void *arg)
{
	unsigned char *vec = NULL;
	const size_t vec_bytes = LEAF_BYTES / ASP_PAGE;
	uint32_t nums[LEAVES_LISTED];
	uint32_t n = asp_atomic_load_acquire(&g_nleaves), k = 0;
	for (; n <= LEAVES_LISTED && k < n; k++)
		if ((nums[k] = asp_atomic_load_acquire(&g_leaves[k])) == 0)
			break;
	int listed = n <= LEAVES_LISTED && k == n;
	if (listed)
		asp__sort(nums, n, sizeof *nums, by_number);
	size_t count = listed ? n : ASP_ROOT_LEAVES;
	for (size_t j = 0; j < count; j++) {
		size_t i = listed ? nums[j] - 1 : j;
		const uint32_t *leaf = asp_atomic_load_acquire(&asp__live_root[i]);
		if (leaf == NULL)
			continue;
		if (vec == NULL && (vec = asp__scratch_alloc(vec_bytes)) == NULL)
			return;
		leaf_words(i, leaf, vec, fn, arg);
	}
	if (vec != NULL)
		asp__scratch_free(vec, vec_bytes);
}

/* The readers ------------------------------------------------------------------ */

int asp__live_find(uintptr_t ptr, struct asp_live_entry *out, uintptr_t self)
{
	uint64_t v = asp__live_read(ptr);
	if (v != 0) {
		*out = (struct asp_live_entry){ ptr, asp__live_word_size(v), asp__live_word_fn(v),
		                                asp__site_of(asp__live_word_site(v)) };
		return 1;
	}
	uint64_t h = hash(ptr);
	struct asp_shard *s = shard_of(ptr);
	int mine = read_lock(s, self);
	ptrdiff_t at = lookup(s, h, ptr);
	if (at >= 0)
		*out = s->slots[at].e;
	if (mine)
		asp__live_unlock(s);
	return at >= 0;
}

struct gather {
	struct asp_live_entry *out;
	size_t max, n;
	uint64_t bytes;
};

static void gather_word(void *arg, uintptr_t p, uint64_t v)
{
	struct gather *g = arg;
	if (g->out != NULL && g->n < g->max)
		g->out[g->n] = (struct asp_live_entry){ p, asp__live_word_size(v), asp__live_word_fn(v),
		                                        asp__site_of(asp__live_word_site(v)) };
	g->n++;
	g->bytes += asp__live_word_size(v);
}

/* The side table's entries into g. */
static void side_gather(struct gather *g, uintptr_t self)
{
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct asp_shard *s = &g_shards[i];
		if (asp_atomic_load_relaxed(&s->count) == 0)
			continue;
		int mine = read_lock(s, self);
		for (size_t j = 0; s->mask && j <= s->mask; j++) {
			if (s->slots[j].e.ptr == 0)
				continue;
			if (g->out != NULL && g->n < g->max)
				g->out[g->n] = s->slots[j].e;
			g->n++;
			g->bytes += s->slots[j].e.size;
		}
		if (mine)
			asp__live_unlock(s);
	}
}

size_t asp__live_snapshot(struct asp_live_entry *out, size_t max, uintptr_t self)
{
	struct gather g = { out, max, 0, 0 };
	shadow_walk(gather_word, &g);
	side_gather(&g, self);
	return g.n;
}

void asp__live_totals(uint64_t *blocks, uint64_t *bytes, uintptr_t self)
{
	struct gather g = { NULL, 0, 0, 0 };
	shadow_walk(gather_word, &g);
	side_gather(&g, self);
	*blocks = g.n;
	*bytes = g.bytes;
}

uint64_t asp__live_lock_all(uintptr_t self, uint64_t *skipped)
{
	uint64_t taken = 0;
	*skipped = 0;
	self |= !self;
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct asp_shard *s = &g_shards[i];
		for (unsigned spins = 0; !try_take(s, self); spins++) {
			uintptr_t holder = asp_atomic_load_relaxed(&s->holder);
			if (holder == self)
				goto next;	/* interrupted inside it */
			if (stuck(holder)) {
				*skipped |= 1ull << i;
				goto next;
			}
			if (spins < 256)
				asp_cpu_relax();
			else
				sched_yield();
		}
		taken |= 1ull << i;
next:;
	}
	return taken;
}

void asp__live_repair(uint64_t skipped)
{
	for (size_t i = 0; i < ASP_SHARDS; i++) {
		struct asp_shard *s = &g_shards[i];
		if (!(skipped & (1ull << i)))
			continue;
		/* Rebuilt from its slots (from the old array when its holder
		 * was publishing a larger one): an entry a backward shift had
		 * copied but not cleared yet is kept once. A shard whose first
		 * array was being made has nothing in it yet. */
		const struct side_slot *old = s->moving ? s->moving : s->slots;
		size_t slots = s->moving ? s->moving_slots : s->mask ? s->mask + 1 : 0;
		struct side_slot *n = slots ? asp__pages_alloc(slots * sizeof *n) : NULL;
		if (n != NULL) {
			s->slots = n;
			s->mask = slots - 1;
			s->limit = slots / 4 * 3;
			asp__live_side_count -= (int64_t)s->count;
			s->count = 0;
			s->bytes = 0;
			for (size_t j = 0; j < slots; j++)
				if (old[j].e.ptr != 0)
					side_insert(s, old[j].e.ptr, old[j].e.size, (unsigned)old[j].e.fn,
					            old[j].e.site, old[j].index);
		} else if (slots == 0) {
			s->slots = NULL;
			asp__live_side_count -= (int64_t)s->count;
			s->mask = s->limit = s->count = 0;
			s->bytes = 0;
		}
		s->moving = NULL;
		s->holder = 0;
	}
}

void asp__live_unlock_all(uint64_t taken)
{
	for (size_t i = ASP_SHARDS; i-- > 0;)
		if (taken & (1ull << i))
			asp__live_unlock(&g_shards[i]);
}
