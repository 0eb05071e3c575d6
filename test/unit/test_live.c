/* test_live - the live-block table: the shadow (a 32-bit slot per 32-byte
 * granule) and the side table beside it: insert, find, remove, what goes
 * where, the walk in address order, threads, signal handlers, fork. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <stdint.h>

#include "live.h"
#include "sitemap.h"
#include "unit.h"

/* Addresses as glibc hands them out: at least 32 bytes apart. */
static uintptr_t addr(uint64_t i)
{
	return 0x100000 + i * 32;
}

/* A site and its index, as the shim makes them. */
static uint32_t index_of(uintptr_t site)
{
	return asp__site_index_slow(NULL, site);
}

static int insert_as(uintptr_t self, int nested, uintptr_t p, uint64_t size, unsigned fn,
                     uintptr_t site)
{
	return asp__live_insert(p, size, fn, site, index_of(site), self, nested);
}

static int insert(uintptr_t p, uint64_t size, unsigned fn, uintptr_t site)
{
	return insert_as(0, 0, p, size, fn, site);
}

static int remove_as(uintptr_t self, int nested, uintptr_t p, struct asp_live_entry *e)
{
	uint32_t si;
	return asp__live_remove(p, e, &si, self, nested);
}

static int remove_(uintptr_t p, struct asp_live_entry *e)
{
	return remove_as(0, 0, p, e);
}

TEST(insert_find_remove)
{
	struct asp_live_entry e;
	ASSERT_EQ(insert(addr(1), 100, 3, 0xabc), 0);
	ASSERT(asp__live_find(addr(1), &e, 0));
	ASSERT_EQ(e.ptr, addr(1));
	ASSERT_EQ(e.size, 100);
	ASSERT_EQ(e.fn, 3);
	ASSERT_EQ(e.site, 0xabc);
	ASSERT(!asp__live_find(addr(2), &e, 0));
	ASSERT(!asp__live_find(addr(1) + 16, &e, 0));	/* the granule's other half */
	ASSERT_EQ(asp__live_side_count, 0);		/* all in the shadow */
	ASSERT_EQ(remove_(addr(1), &e), 1);
	ASSERT_EQ(e.size, 100);
	ASSERT_EQ(e.site, 0xabc);
	ASSERT_EQ(remove_(addr(1), &e), 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 0);
	ASSERT_EQ(bytes, 0);
}

/* A word holds sizes below 4 GiB, 25 bits of site index, 8-aligned
 * addresses below 2^47; the rest goes to the side table, found the same. */
TEST(what_the_shadow_cannot_hold_goes_aside)
{
	struct asp_live_entry e;
	uintptr_t odd = addr(5) + 4;
	ASSERT_EQ(insert(addr(3), (uint64_t)1 << 32, 1, 0x10), 0);
	ASSERT_EQ(insert(odd, 7, 2, 0x20), 0);
	ASSERT_EQ(insert((uintptr_t)1 << 47, 9, 3, 0x30), 0);
	ASSERT_EQ(asp__live_insert(addr(9), 11, 4, 0x40, 0, 0, 0), 0);	/* no index */
	ASSERT_EQ(asp__live_side_count, 4);
	ASSERT(asp__live_find(addr(3), &e, 0));
	ASSERT_EQ(e.size, (uint64_t)1 << 32);
	ASSERT(asp__live_find(addr(9), &e, 0));
	ASSERT_EQ(e.site, 0x40);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 4);
	ASSERT_EQ(bytes, ((uint64_t)1 << 32) + 7 + 9 + 11);
	ASSERT_EQ(remove_(odd, &e), 1);
	ASSERT_EQ(e.site, 0x20);
	ASSERT_EQ(remove_((uintptr_t)1 << 47, &e), 1);
	ASSERT_EQ(remove_(addr(3), &e), 1);
	ASSERT_EQ(remove_(addr(9), &e), 1);
	ASSERT_EQ(asp__live_side_count, 0);
}

/* A slot holds a block below 8 KiB, from one of fifteen functions, with a
 * site index below 16,384, 16-aligned; any other goes to the side table,
 * and comes back the same: found, walked, removed. Relabelled to a
 * function with a code, a block in a slot takes it; to one without, it
 * keeps its own. */
TEST(what_a_slot_cannot_hold_goes_aside)
{
	uintptr_t site = 0x7000;
	uint32_t si = index_of(site);
	uintptr_t late = site;
	uint32_t late_si = si;
	while (late_si < 16384)
		late_si = index_of(++late);
	const struct { uintptr_t p; uint64_t size; unsigned fn; uintptr_t site; uint32_t si; int slot; } b[] = {
		{ addr(40), 8191, ASP_FN_MALLOC, site, si, 1 },
		{ addr(41), 8192, ASP_FN_MALLOC, site, si, 0 },		/* too large */
		{ addr(42) + 8, 16, ASP_FN_CALLOC, site, si, 0 },	/* 8 off 16 */
		{ addr(43), 24, ASP_FN_VALLOC, site, si, 0 },		/* no code */
		{ addr(44), 32, ASP_FN_NEW, late, late_si, 0 },		/* late site */
		{ addr(45) + 16, 40, ASP_FN_G_STRNDUP, site, si, 1 },
		{ addr(46), 0, ASP_FN_NEW_ALIGNED, site, si, 1 },
	};
	/* Each code names its function back; fifteen have one. */
	unsigned coded = 0;
	for (unsigned fn = 0; fn < ASP_FN_ALLOC_END; fn++) {
		unsigned code = asp__slot_code(fn);
		if (code != 0) {
			coded++;
			ASSERT_EQ(asp__slot_fn(code << 1), fn);
		}
	}
	ASSERT_EQ(coded, 15);
	const size_t n = sizeof b / sizeof *b;
	for (size_t i = 0; i < n; i++)
		ASSERT_EQ(asp__live_insert(b[i].p, b[i].size, b[i].fn, b[i].site, b[i].si, 0, 0), 0);
	ASSERT_EQ(asp__live_side_count, 4);
	struct asp_live_entry e;
	for (size_t i = 0; i < n; i++) {
		ASSERT(asp__live_find(b[i].p, &e, 0));
		ASSERT_EQ(e.ptr, b[i].p);
		ASSERT_EQ(e.size, b[i].size);
		ASSERT_EQ(e.fn, b[i].fn);
		ASSERT_EQ(e.site, b[i].site);
		ASSERT(!asp__live_find(b[i].p ^ 16, &e, 0));	/* the granule's other half */
		ASSERT_EQ(asp__live_read(b[i].p) != 0, b[i].slot);
	}
	/* The walk: the slots' blocks in address order, then the side table's. */
	static struct asp_live_entry out[16];
	ASSERT_EQ(asp__live_snapshot(out, 16, 0), n);
	ASSERT_EQ(out[0].ptr, addr(40));
	ASSERT_EQ(out[1].ptr, addr(45) + 16);
	ASSERT_EQ(out[1].fn, ASP_FN_G_STRNDUP);
	ASSERT_EQ(out[2].ptr, addr(46));
	ASSERT_EQ(out[2].fn, ASP_FN_NEW_ALIGNED);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, n);
	ASSERT_EQ(bytes, 8191 + 8192 + 16 + 24 + 32 + 40);
	asp__live_set_fn(addr(40), ASP_FN_STRDUP);
	ASSERT(asp__live_find(addr(40), &e, 0));
	ASSERT_EQ(e.fn, ASP_FN_STRDUP);
	ASSERT_EQ(e.size, 8191);
	ASSERT_EQ(e.site, site);
	asp__live_set_fn(addr(40), ASP_FN_WCSDUP);
	ASSERT(asp__live_find(addr(40), &e, 0));
	ASSERT_EQ(e.fn, ASP_FN_STRDUP);
	for (size_t i = 0; i < n; i++) {
		uint32_t got_si;
		ASSERT_EQ(asp__live_remove(b[i].p, &e, &got_si, 0, 0), 1);
		ASSERT_EQ(e.size, b[i].size);
		ASSERT_EQ(e.site, b[i].site);
		ASSERT_EQ(got_si, b[i].si);	/* the side table keeps it too */
		ASSERT_EQ(asp__live_remove(b[i].p, &e, &got_si, 0, 0), 0);
	}
	ASSERT_EQ(asp__live_side_count, 0);
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 0);
}

/* glibc's allocator: a word has one owner; the same address again (freed
 * behind the shim's back) replaces its entry. */
TEST(reinsert_same_address_counts_once)
{
	uint64_t blocks, bytes;
	insert(addr(7), 10, 0, 0);
	insert(addr(7), 30, 0, 0);
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 1);
	ASSERT_EQ(bytes, 30);
}

/* Another allocator: blocks 16 bytes apart share a granule; the first
 * takes the word, the second the side table, and both come back. */
TEST(shared_granules)
{
	asp__live_shared = 1;
	struct asp_live_entry e;
	for (uint64_t i = 0; i < 1000; i++)
		ASSERT_EQ(insert(0x200000 + i * 16, i, 0, 0x99), 0);
	ASSERT_EQ(asp__live_side_count, 500);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 1000);
	ASSERT_EQ(bytes, 999 * 1000 / 2);
	for (uint64_t i = 0; i < 1000; i += 2)
		ASSERT_EQ(remove_(0x200000 + i * 16, &e), 1);
	/* The words are free again: the next in each granule takes its word. */
	for (uint64_t i = 0; i < 1000; i += 2)
		ASSERT_EQ(insert(0x200000 + i * 16, 1, 0, 0x99), 0);
	for (uint64_t i = 0; i < 1000; i++) {
		ASSERT_EQ(remove_(0x200000 + i * 16, &e), 1);
		ASSERT_EQ(e.size, i % 2 ? i : 1);
	}
	ASSERT_EQ(asp__live_side_count, 0);
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 0);
}

/* 300,000 blocks over a span of gigabytes (several leaves), every other
 * one removed: the rest are found, and the walk gives them in order. */
TEST(many_blocks_and_the_walk)
{
	const uint64_t n = 300000;
	struct asp_live_entry e;
	uint64_t sum = 0;
	for (uint64_t i = 0; i < n; i++) {
		ASSERT_EQ(insert(addr(i * 1000), i % 4096, 0, 1 + i % 7), 0);
		sum += i % 4096;
	}
	ASSERT_EQ(asp__live_side_count, 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, n);
	ASSERT_EQ(bytes, sum);
	for (uint64_t i = 0; i < n; i += 2)
		ASSERT_EQ(remove_(addr(i * 1000), &e), 1);
	for (uint64_t i = 0; i < n; i++) {
		int found = asp__live_find(addr(i * 1000), &e, 0);
		ASSERT_EQ(found, i % 2);
		if (found)
			ASSERT_EQ(e.site, 1 + i % 7);
	}
	static struct asp_live_entry out[150000];
	ASSERT_EQ(asp__live_snapshot(out, n / 2, 0), n / 2);
	for (size_t i = 0; i < n / 2; i++) {
		ASSERT_EQ(out[i].ptr, addr((2 * i + 1) * 1000));
		ASSERT_EQ(out[i].size, (2 * i + 1) % 4096);
	}
	/* Too small a buffer: it says how many there are. */
	ASSERT_EQ(asp__live_snapshot(out, 10, 0), n / 2);
}

/* Four threads insert and remove their own ranges at once, and free each
 * other's blocks. */
static void *churn(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg * 1000000;
	struct asp_live_entry e;
	for (uint64_t round = 0; round < 20; round++) {
		for (uint64_t i = 0; i < 5000; i++)
			insert(addr(base + i), 8, 0, 0);
		for (uint64_t i = 0; i < 5000; i += 1 + (round & 1))
			remove_(addr(base + i), &e);
	}
	return NULL;
}

TEST(threads)
{
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, churn, (void *)i);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* The last round (odd) removed every other block: 2500 stay each. */
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 4 * 2500);
	ASSERT_EQ(bytes, 4 * 2500 * 8);
}

/* A signal handler that lands while its thread holds a side shard gives
 * up (the shim defers its operation) instead of waiting for itself; its
 * operations in the shadow never wait at all. The blocks are 4 GiB (side
 * table) in the thread's loop and the handler's odd ones. */
#define SELF ((uintptr_t)0x5e1f)
#define BIG ((uint64_t)1 << 32)
static volatile uint64_t sig_ok, sig_gave_up, sig_next = 1000000;
static volatile int inside;

static void on_alarm(int sig)
{
	(void)sig;
	uint64_t i = sig_next++;
	int r = insert_as(SELF, inside, addr(i), i % 2 ? BIG : 1, 0, 0);
	if (r == 0)
		sig_ok++;
	else if (r == -EAGAIN)
		sig_gave_up++;
}

TEST(signal_handler_inside_the_table)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 20 }, { 0, 20 } };
	setitimer(ITIMER_REAL, &it, NULL);
	struct asp_live_entry e;
	uint64_t mine = 0;
	for (uint64_t round = 0; round < 400 && (sig_gave_up == 0 || round < 20); round++) {
		for (uint64_t i = 0; i < 20000; i++) {
			inside = 1;
			mine += insert_as(SELF, 0, addr(i), BIG, 0, 0) == 0;
			inside = 0;
		}
		for (uint64_t i = 0; i < 20000; i++) {
			inside = 1;
			remove_as(SELF, 0, addr(i), &e);
			inside = 0;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	ASSERT(sig_ok > 0);
	ASSERT(sig_gave_up > 0);	/* it did land inside the side table */
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, sig_ok);
	ASSERT(mine > 0);
}

/* Whoever holds every shard (fork, the report) reads the table; a shard
 * it held already is left as it was, and the others are let go. */
TEST(lock_all_skips_what_self_holds)
{
	ASSERT_EQ(insert(addr(3), BIG + 24, 0, 0), 0);
	struct asp_shard *mine = asp__live_lock(addr(3), SELF, 0);
	ASSERT(mine != NULL);
	uint64_t skipped;
	uint64_t taken = asp__live_lock_all(SELF, &skipped);
	ASSERT_EQ(skipped, 0);
	ASSERT_EQ(__builtin_popcountll(taken), ASP_SHARDS - 1);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, SELF);	/* no wait for itself */
	ASSERT_EQ(blocks, 1);
	ASSERT_EQ(bytes, BIG + 24);
	asp__live_unlock_all(taken);
	/* Still held: another identity's try fails, the owner's goes on. */
	ASSERT(asp__live_lock(addr(3), 0x77, 1) == NULL);
	asp__live_unlock(mine);
	struct asp_shard *s = asp__live_lock(addr(3), 0x77, 1);
	ASSERT(s != NULL);
	asp__live_unlock(s);
}

/* A fork while another thread is stuck in a signal handler holding a
 * shard: the forking thread skips that shard, and its child repairs it
 * from the shard's slots and lets it go, whatever state it was in: with
 * entries, or empty (its holder making its first array). */
#define STUCK ((uintptr_t)0x57c4)

static int stuck_holder(uintptr_t holder)
{
	return holder == STUCK;
}

static void fork_past_a_stuck_holder(int with_entries)
{
	asp__live_stuck = stuck_holder;
	/* Two addresses in one shard (the same page), nothing else there. */
	uintptr_t p = 0x7f0000000000, q = p + 64;
	if (with_entries) {
		ASSERT_EQ(insert(p, BIG + 40, 1, 0), 0);
		ASSERT_EQ(insert(q, BIG + 50, 2, 0), 0);
	}
	struct asp_shard *held = asp__live_lock(p, STUCK, 0);
	ASSERT(held != NULL);
	uint64_t skipped;
	uint64_t taken = asp__live_lock_all(SELF, &skipped);
	ASSERT_EQ(__builtin_popcountll(skipped), 1);
	ASSERT_EQ(__builtin_popcountll(taken), ASP_SHARDS - 1);
	/* The child's side: the shards taken are let go, the one skipped is
	 * repaired. A shard still held would hang the next operation. */
	asp__live_unlock_all(taken);
	asp__live_repair(skipped);
	alarm(10);
	struct asp_live_entry e;
	ASSERT_EQ(asp__live_find(p, &e, 0), with_entries);
	ASSERT_EQ(asp__live_find(q, &e, 0), with_entries);
	ASSERT_EQ(insert(p + 128, BIG + 60, 3, 0), 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, with_entries ? 3 : 1);
	ASSERT_EQ(bytes, with_entries ? 3 * BIG + 150 : BIG + 60);
	alarm(0);
}

TEST(fork_repairs_a_shard_a_stuck_thread_holds)
{
	fork_past_a_stuck_holder(1);
}

TEST(fork_lets_go_of_an_empty_shard_a_stuck_thread_holds)
{
	fork_past_a_stuck_holder(0);
}

UNIT_MAIN(UNIT(insert_find_remove), UNIT(what_the_shadow_cannot_hold_goes_aside),
          UNIT(what_a_slot_cannot_hold_goes_aside),
          UNIT(reinsert_same_address_counts_once), UNIT(shared_granules),
          UNIT(many_blocks_and_the_walk), UNIT(threads),
          UNIT(signal_handler_inside_the_table), UNIT(lock_all_skips_what_self_holds),
          UNIT(fork_repairs_a_shard_a_stuck_thread_holds),
          UNIT(fork_lets_go_of_an_empty_shard_a_stuck_thread_holds))
