/* test_live - the live-block table: insert, find, remove, growth, and
 * backward-shift deletion keeping every other entry findable. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <stdint.h>

#include "live.h"
#include "unit.h"

/* Addresses as a 16-byte aligned allocator hands them out. */
static uintptr_t addr(uint64_t i)
{
	return 0x100000 + i * 16;
}

/* One table operation as the shim makes them: take the shard, operate,
 * let go. self is the caller's identity (0: none); nested, a signal
 * handler's try. -EDEADLK when the shard could not be had. */
static int insert_as(uintptr_t self, int nested, uintptr_t p, uint64_t size, unsigned fn,
                     uintptr_t site)
{
	struct asp_shard *s = asp__live_lock(p, self, nested);
	if (s == NULL)
		return -EDEADLK;
	int r = asp__live_insert(s, p, size, fn, site);
	asp__live_unlock(s);
	return r;
}

static int insert(uintptr_t p, uint64_t size, unsigned fn, uintptr_t site)
{
	return insert_as(0, 0, p, size, fn, site);
}

static int remove_as(uintptr_t self, uintptr_t p, struct asp_live_entry *e)
{
	struct asp_shard *s = asp__live_lock(p, self, 0);
	if (s == NULL)
		return -EDEADLK;
	int r = asp__live_remove(s, p, e);
	asp__live_unlock(s);
	return r;
}

static int remove_(uintptr_t p, struct asp_live_entry *e)
{
	return remove_as(0, p, e);
}

TEST(insert_find_remove)
{
	struct asp_live_entry e;
	ASSERT_EQ(insert(addr(1), 100, 3, 0xabc), 0);
	ASSERT(asp__live_find(addr(1), &e, 0));
	ASSERT_EQ(e.size, 100);
	ASSERT_EQ(e.fn, 3);
	ASSERT_EQ(e.site, 0xabc);
	ASSERT(!asp__live_find(addr(2), &e, 0));
	ASSERT(remove_(addr(1), &e));
	ASSERT_EQ(e.size, 100);
	ASSERT(!remove_(addr(1), &e));
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 0);
	ASSERT_EQ(bytes, 0);
}

TEST(reinsert_same_address_counts_once)
{
	uint64_t blocks, bytes;
	insert(addr(7), 10, 0, 0);
	insert(addr(7), 30, 0, 0);
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, 1);
	ASSERT_EQ(bytes, 30);
}

/* 300,000 blocks: every shard grows several times; then every other block
 * is removed, which shifts probe runs back, and all survivors are found. */
TEST(growth_and_backward_shift)
{
	const uint64_t n = 300000;
	struct asp_live_entry e;
	for (uint64_t i = 0; i < n; i++)
		ASSERT_EQ(insert(addr(i), i, 0, i), 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, n);
	ASSERT_EQ(bytes, n * (n - 1) / 2);
	for (uint64_t i = 0; i < n; i += 2)
		ASSERT(remove_(addr(i), &e));
	for (uint64_t i = 0; i < n; i++) {
		int found = asp__live_find(addr(i), &e, 0);
		ASSERT_EQ(found, i % 2);
		if (found)
			ASSERT_EQ(e.site, i);
	}
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, n / 2);
}

TEST(snapshot_lists_every_entry)
{
	static struct asp_live_entry out[1000];
	for (uint64_t i = 0; i < 1000; i++)
		insert(addr(i), 1, 0, 0);
	ASSERT_EQ(asp__live_snapshot(out, 1000, 0), 1000);
	uint64_t sum = 0;
	for (size_t i = 0; i < 1000; i++)
		sum += (out[i].ptr - 0x100000) / 16;
	ASSERT_EQ(sum, 999 * 1000 / 2);
	/* Too small a buffer: it says how many there are. */
	ASSERT_EQ(asp__live_snapshot(out, 10, 0), 1000);
}

/* Four threads insert and remove their own ranges at once. */
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

/* A signal handler that inserts while its thread is inside the table must
 * not wait: it only tries the shard, and gives up when the shard is its own
 * thread's (or busy). The thread's identity is the same in the handler.
 * Its addresses lie past the loop's, in the same 64 MiB region (a
 * region's blocks share 4 shards): it lands on the shard the loop holds
 * about once in 4. */
#define SELF ((uintptr_t)0x5e1f)
static volatile uint64_t sig_ok, sig_gave_up, sig_next = 1000000;
static volatile int inside;

static void on_alarm(int sig)
{
	(void)sig;
	int r = insert_as(SELF, inside, addr(sig_next++), 1, 0, 0);
	if (r == 0)
		sig_ok++;
	else if (r == -EDEADLK)
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
			mine += insert_as(SELF, 0, addr(i), 8, 0, 0) == 0;
			inside = 0;
		}
		for (uint64_t i = 0; i < 20000; i++) {
			inside = 1;
			remove_as(SELF, addr(i), &e);
			inside = 0;
		}
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	ASSERT(sig_ok > 0);
	ASSERT(sig_gave_up > 0);	/* it did land inside the table */
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, sig_ok);
	ASSERT(mine > 0);
}

/* Whoever holds every shard (fork, the report) reads the table; a shard
 * it held already is left as it was, and the others are let go. */
TEST(lock_all_skips_what_self_holds)
{
	ASSERT_EQ(insert(addr(3), 24, 0, 0), 0);
	struct asp_shard *mine = asp__live_lock(addr(3), SELF, 0);
	ASSERT(mine != NULL);
	uint64_t skipped;
	uint64_t taken = asp__live_lock_all(SELF, &skipped);
	ASSERT_EQ(skipped, 0);
	ASSERT_EQ(__builtin_popcountll(taken), ASP_SHARDS - 1);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, SELF);	/* no wait for itself */
	ASSERT_EQ(blocks, 1);
	ASSERT_EQ(bytes, 24);
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
		ASSERT_EQ(insert(p, 40, 1, 0), 0);
		ASSERT_EQ(insert(q, 50, 2, 0), 0);
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
	ASSERT_EQ(insert(p + 128, 60, 3, 0), 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes, 0);
	ASSERT_EQ(blocks, with_entries ? 3 : 1);
	ASSERT_EQ(bytes, with_entries ? 150 : 60);
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

UNIT_MAIN(UNIT(insert_find_remove), UNIT(reinsert_same_address_counts_once),
          UNIT(growth_and_backward_shift), UNIT(snapshot_lists_every_entry), UNIT(threads),
          UNIT(signal_handler_inside_the_table), UNIT(lock_all_skips_what_self_holds),
          UNIT(fork_repairs_a_shard_a_stuck_thread_holds),
          UNIT(fork_lets_go_of_an_empty_shard_a_stuck_thread_holds))
