/* live.h - the exact table of live blocks: each block's requested size,
 * the function that handed it out and its site, found from its address.
 *
 * The shadow. One 32-bit slot for every 32-byte granule of the address
 * space, in leaves of 2^25 slots (128 MiB reserved, for 1 GiB of
 * addresses), each mapped when a block first starts in its gigabyte and
 * backed by the kernel only where written: the slot of the granule a block
 * starts in holds the block. So an insert and a remove are a store each,
 * at a place the address gives: no lock, no hash, no table to grow, and
 * neighbouring blocks (the allocator hands them out side by side) share
 * cache lines. A slot holds a block below 8 KiB, from one of the fifteen
 * commonest functions, with a site among the first 16,384, 16-byte
 * aligned: almost every block of a program's heap. Its memory is an eighth
 * of the span of the heap's small blocks at most (4 bytes per 32), far
 * less where blocks are large.
 *
 * glibc's chunks are at least 32 bytes apart, so no two of its blocks
 * start in one granule: a slot has one owner at a time, and the
 * allocator's own synchronisation orders the free of a block (its slot
 * cleared first) before the allocation that hands the address out again.
 * Under another allocator (tcmalloc has 8-byte objects) blocks may share a
 * granule: a slot is then claimed with a compare-and-swap, and a block
 * whose granule is taken goes to the side table.
 *
 * The side table: a block the shadow cannot hold (its granule taken, its
 * size 8 KiB or more, its function or site beyond a slot's, its site
 * without an index, its address beyond 47 bits or not 16-aligned) goes
 * into a small open-addressing hash table, sharded, each shard under a
 * lock that remembers its holder (below). */
#ifndef ASP_LIVE_H
#define ASP_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "glue.h"
#include "sitemap.h"

struct asp_live_entry {
	uintptr_t ptr;		/* 0: an empty slot */
	uint64_t size : 56;	/* the size the program asked for */
	uint64_t fn : 8;	/* the function that handed it out (enum asp_fn) */
	uintptr_t site;		/* the caller, or a stack id with backtraces */
};

/* The shadow ---------------------------------------------------------------- */

#define ASP_SHARDS 64		/* of the side table */
#define ASP_GRANULE_SHIFT 5
#define ASP_LEAF_SHIFT 30
#define ASP_ADDR_BITS 47
#define ASP_LEAF_WORDS ((size_t)1 << (ASP_LEAF_SHIFT - ASP_GRANULE_SHIFT))
#define ASP_ROOT_LEAVES ((size_t)1 << (ASP_ADDR_BITS - ASP_LEAF_SHIFT))

/* The leaves, by gigabyte of address space (NULL: none yet). */
extern ASP_HIDDEN uint32_t *asp__live_root[ASP_ROOT_LEAVES];

/* 1 when blocks may share a granule (an allocator other than glibc's):
 * slots are then claimed with a compare-and-swap. */
extern ASP_HIDDEN int asp__live_shared;

/* A word, the whole of what the table knows of a block: bits 0-1 its
 * offset in its granule (in 8-byte units), 2-6 its function + 1 (0: an
 * empty word), 7-31 its site's index (sitemap.h), 32-63 its size. */
static inline uint64_t asp__live_pack(uintptr_t p, uint64_t size, unsigned fn, uint32_t site_index)
{
	return size << 32 | (uint64_t)site_index << 7 | (uint64_t)(fn + 1) << 2 | ((p >> 3) & 3);
}

static inline uint64_t asp__live_word_size(uint64_t w) { return w >> 32; }
static inline unsigned asp__live_word_fn(uint64_t w) { return (unsigned)((w >> 2) & 31) - 1; }
static inline uint32_t asp__live_word_site(uint64_t w) { return (uint32_t)(w >> 7) & ASP_SITE_INDEX_MAX; }

/* A slot: 0, empty; else a block whole: bit 0 its offset in the granule in
 * 16-byte units, bits 1-4 its function's code (below, never 0), 5-18 its
 * site's index, 19-31 its size. A page of slots serves 32 KiB of heap. */
#define ASP_SLOT_SITE_BITS 14
#define ASP_SLOT_SIZE_BITS 13

/* The functions a slot can name, by code 1-15 (0: not one of them). */
static inline unsigned asp__slot_code(unsigned fn)
{
	switch (fn) {
	case ASP_FN_MALLOC: return 1;
	case ASP_FN_CALLOC: return 2;
	case ASP_FN_REALLOC: return 3;
	case ASP_FN_STRDUP: return 4;
	case ASP_FN_NEW: return 5;
	case ASP_FN_NEW_ARR: return 6;
	case ASP_FN_STRNDUP: return 7;
	case ASP_FN_REALLOCARRAY: return 8;
	case ASP_FN_POSIX_MEMALIGN: return 9;
	case ASP_FN_ALIGNED_ALLOC: return 10;
	case ASP_FN_MEMALIGN: return 11;
	case ASP_FN_NEW_NOTHROW: return 12;
	case ASP_FN_NEW_ALIGNED: return 13;
	case ASP_FN_G_STRDUP: return 14;
	case ASP_FN_G_STRNDUP: return 15;
	default: return 0;
	}
}

static inline unsigned asp__slot_fn(uint32_t s)
{
	static const uint8_t fns[16] = {
		0, ASP_FN_MALLOC, ASP_FN_CALLOC, ASP_FN_REALLOC, ASP_FN_STRDUP, ASP_FN_NEW,
		ASP_FN_NEW_ARR, ASP_FN_STRNDUP, ASP_FN_REALLOCARRAY, ASP_FN_POSIX_MEMALIGN,
		ASP_FN_ALIGNED_ALLOC, ASP_FN_MEMALIGN, ASP_FN_NEW_NOTHROW, ASP_FN_NEW_ALIGNED,
		ASP_FN_G_STRDUP, ASP_FN_G_STRNDUP,
	};
	return fns[(s >> 1) & 15];
}

/* The slot of a block of size bytes at p with that site index, or 0 when
 * no slot can hold it (it goes to the side table). */
static inline uint32_t asp__slot_pack(uintptr_t p, uint64_t size, unsigned fn, uint32_t site_index)
{
	unsigned code = asp__slot_code(fn);
	if ((size >> ASP_SLOT_SIZE_BITS | site_index >> ASP_SLOT_SITE_BITS | (p & 15)) != 0 ||
	    code == 0)
		return 0;
	return (uint32_t)size << 19 | site_index << 5 | code << 1 | (uint32_t)((p >> 4) & 1);
}

/* Whether slot s holds the block at p. */
static inline int asp__slot_holds(uint32_t s, uintptr_t p)
{
	return s != 0 && (s & 1) == ((p >> 4) & 1) && (p & 15) == 0;
}

static inline uint64_t asp__slot_size(uint32_t s) { return s >> 19; }
static inline uint32_t asp__slot_site(uint32_t s) { return (s >> 5) & ((1u << ASP_SLOT_SITE_BITS) - 1); }

/* The word of a slot that holds the block at p. */
static inline uint64_t asp__slot_word(uint32_t s, uintptr_t p)
{
	return asp__live_pack(p, asp__slot_size(s), asp__slot_fn(s), asp__slot_site(s));
}

/* The slot of p's granule, or NULL when its leaf is not mapped (or p is
 * beyond 47 bits). */
static inline uint32_t *asp__live_slot(uintptr_t p)
{
	if (ASP_UNLIKELY(p >> ASP_ADDR_BITS != 0))
		return NULL;
	uint32_t *leaf = asp_atomic_load_acquire(&asp__live_root[p >> ASP_LEAF_SHIFT]);
	if (ASP_UNLIKELY(leaf == NULL))
		return NULL;
	return &leaf[(p >> ASP_GRANULE_SHIFT) & (ASP_LEAF_WORDS - 1)];
}

/* The word of the block at p, when its slot holds it; else 0. */
static inline uint64_t asp__live_read(uintptr_t p)
{
	const uint32_t *sl = asp__live_slot(p);
	uint32_t s = sl != NULL ? asp_atomic_load_relaxed(sl) : 0;
	return asp__slot_holds(s, p) ? asp__slot_word(s, p) : 0;
}

/* The word of the block whose slot is g's granule's, whatever its offset
 * in the granule (0: none). */
static inline uint64_t asp__live_read_granule(uintptr_t g)
{
	const uint32_t *sl = asp__live_slot(g);
	uint32_t s = sl != NULL ? asp_atomic_load_relaxed(sl) : 0;
	return s != 0 ? asp__slot_word(s, (g & ~(uintptr_t)31) | (uintptr_t)(s & 1) << 4) : 0;
}

/* The block at p, whose slot its owner has just written, is fn's, when fn
 * has a code (a block in the side table, or relabelled to a function
 * without a code, keeps the function it was put with). */
void asp__live_set_fn(uintptr_t p, unsigned fn);

/* The same, mapping p's leaf when it has none; NULL when it cannot. */
uint32_t *asp__live_slot_make(uintptr_t p);

/* The changes, made by a thread inside a change (account.h): self is its
 * record (its identity as a side shard's holder), nested set when a
 * signal handler may have landed inside its own thread's change (a side
 * shard it holds is then never waited for). */

/* p, handed out with size, fn and its site (and the site's index, 0 when
 * it has none): into its word, or the side table. 0; -EAGAIN: nested and
 * the side shard busy (the caller defers it); -ENOMEM. The same address
 * again replaces its entry (freed behind the shim's back). */
int asp__live_insert(uintptr_t p, uint64_t size, unsigned fn, uintptr_t site, uint32_t site_index,
                     uintptr_t self, int nested);

/* p leaves the table: 1 with its entry (and its site's index) when it was
 * there, 0 when not, -EAGAIN: nested and the side shard busy. */
int asp__live_remove(uintptr_t p, struct asp_live_entry *out, uint32_t *site_index,
                     uintptr_t self, int nested);

/* The side table's blocks: 0 while it is empty (a remove that misses the
 * shadow then looks no further). */
extern ASP_HIDDEN int64_t asp__live_side_count;

/* The readers ------------------------------------------------------------------
 * Whoever must see the table whole (fork, the exit report) first makes
 * every thread leave its change and start no other (account.h,
 * asp__gather_begin), then takes the side table's shards (lock_all); a
 * shard it holds already or a stuck thread holds is read as it is. */

/* 1 and the entry when ptr is live, else 0. */
int asp__live_find(uintptr_t ptr, struct asp_live_entry *out, uintptr_t self);

/* Every entry, the shadow's in address order then the side table's, into
 * out (at most max); returns how many there are. */
size_t asp__live_snapshot(struct asp_live_entry *out, size_t max, uintptr_t self);

/* The number of live blocks and their bytes. */
void asp__live_totals(uint64_t *blocks, uint64_t *bytes, uintptr_t self);

/* The side shard of ptr, taken as self: NULL when self holds it already,
 * or, nested, when it is busy (a signal handler never waits for its own
 * thread). For the table's own code, and its tests. */
struct asp_shard;
struct asp_shard *asp__live_lock(uintptr_t ptr, uintptr_t self, int nested);
void asp__live_unlock(struct asp_shard *s);

/* A side shard's lock remembers its holder: whether the thread whose
 * identity is holder is stuck (in a signal handler, fork's prepare or a
 * fatal signal's report, that landed while it held a shard, so that it
 * lets go only when the handler is done, and may be waiting for the
 * caller). Set by thread.c. */
extern ASP_HIDDEN int (*asp__live_stuck)(uintptr_t holder);

/* Every side shard, in order (but those self holds already, and those a
 * stuck thread holds: in *skipped). Returns the set taken, for unlock_all. */
uint64_t asp__live_lock_all(uintptr_t self, uint64_t *skipped);
void asp__live_unlock_all(uint64_t taken);

/* fork's child: the side shards another thread held (skipped by lock_all)
 * are rebuilt from their slots and free. */
void asp__live_repair(uint64_t skipped);

#endif
