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

TEST(insert_find_remove)
{
	struct asp_live_entry e;
	ASSERT_EQ(asp__live_insert(NULL, addr(1), 100, 3, 0xabc), 0);
	ASSERT(asp__live_find(addr(1), &e));
	ASSERT_EQ(e.size, 100);
	ASSERT_EQ(e.fn, 3);
	ASSERT_EQ(e.site, 0xabc);
	ASSERT(!asp__live_find(addr(2), &e));
	ASSERT(asp__live_remove(NULL, addr(1), &e));
	ASSERT_EQ(e.size, 100);
	ASSERT(!asp__live_remove(NULL, addr(1), &e));
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes);
	ASSERT_EQ(blocks, 0);
	ASSERT_EQ(bytes, 0);
}

TEST(reinsert_same_address_counts_once)
{
	uint64_t blocks, bytes;
	asp__live_insert(NULL, addr(7), 10, 0, 0);
	asp__live_insert(NULL, addr(7), 30, 0, 0);
	asp__live_totals(&blocks, &bytes);
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
		ASSERT_EQ(asp__live_insert(NULL, addr(i), i, 0, i), 0);
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes);
	ASSERT_EQ(blocks, n);
	ASSERT_EQ(bytes, n * (n - 1) / 2);
	for (uint64_t i = 0; i < n; i += 2)
		ASSERT(asp__live_remove(NULL, addr(i), &e));
	for (uint64_t i = 0; i < n; i++) {
		int found = asp__live_find(addr(i), &e);
		ASSERT_EQ(found, i % 2);
		if (found)
			ASSERT_EQ(e.site, i);
	}
	asp__live_totals(&blocks, &bytes);
	ASSERT_EQ(blocks, n / 2);
}

TEST(snapshot_lists_every_entry)
{
	static struct asp_live_entry out[1000];
	for (uint64_t i = 0; i < 1000; i++)
		asp__live_insert(NULL, addr(i), 1, 0, 0);
	ASSERT_EQ(asp__live_snapshot(out, 1000), 1000);
	uint64_t sum = 0;
	for (size_t i = 0; i < 1000; i++)
		sum += (out[i].ptr - 0x100000) / 16;
	ASSERT_EQ(sum, 999 * 1000 / 2);
	/* Too small a buffer: it says how many there are. */
	ASSERT_EQ(asp__live_snapshot(out, 10), 1000);
}

/* Four threads insert and remove their own ranges at once. */
static void *churn(void *arg)
{
	uint64_t base = (uint64_t)(uintptr_t)arg * 1000000;
	struct asp_live_entry e;
	for (uint64_t round = 0; round < 20; round++) {
		for (uint64_t i = 0; i < 5000; i++)
			asp__live_insert(NULL, addr(base + i), 8, 0, 0);
		for (uint64_t i = 0; i < 5000; i += 1 + (round & 1))
			asp__live_remove(NULL, addr(base + i), &e);
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
	asp__live_totals(&blocks, &bytes);
	ASSERT_EQ(blocks, 4 * 2500);
	ASSERT_EQ(bytes, 4 * 2500 * 8);
}

/* A signal handler that inserts while its thread is inside the table must
 * not wait for itself: the insert gives up with -EDEADLK. */
static int sig_inflight;
static volatile uint64_t sig_ok, sig_gave_up, sig_next = 5000000;

static void on_alarm(int sig)
{
	(void)sig;
	int r = asp__live_insert(&sig_inflight, addr(sig_next++), 1, 0, 0);
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
	/* The same in-flight flag: the handler runs as this thread. */
	for (uint64_t round = 0; round < 400 && (sig_gave_up == 0 || round < 20); round++) {
		for (uint64_t i = 0; i < 20000; i++)
			mine += asp__live_insert(&sig_inflight, addr(i), 8, 0, 0) == 0;
		for (uint64_t i = 0; i < 20000; i++)
			asp__live_remove(&sig_inflight, addr(i), &e);
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	ASSERT(sig_ok > 0);
	ASSERT(sig_gave_up > 0);	/* it did land inside the table */
	uint64_t blocks, bytes;
	asp__live_totals(&blocks, &bytes);
	ASSERT_EQ(blocks, sig_ok);
	ASSERT(mine > 0);
}

UNIT_MAIN(UNIT(insert_find_remove), UNIT(reinsert_same_address_counts_once),
          UNIT(growth_and_backward_shift), UNIT(snapshot_lists_every_entry), UNIT(threads),
          UNIT(signal_handler_inside_the_table))
