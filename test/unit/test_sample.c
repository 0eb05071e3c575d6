/* test_sample - ALLOCSPY_SAMPLE in count mode: the table of the sampled
 * blocks still live (shim/sample.c): keep, take and forget, the filter's
 * bytes, probing and the backward shift, the walk, the shards' locks and
 * their holders, a signal handler that lands inside the table, and fork's
 * repair of a shard a stuck thread holds, half way through a change.
 *
 * sample.c is included, as test_names includes the modules it tests: the
 * half-done states fork's child must repair are the shards' own (an array
 * being replaced, an entry a backward shift copied but had not cleared
 * yet), and only the module's statics can set them up. The thread records
 * are the test's own (struct asp_thread, zeroed and filled here): the
 * table reads a record's in_sample, sample_defer and stuck, and takes its
 * address as a shard's holder. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "../../shim/sample.c"
#include "unit.h"

/* What sample.c calls beyond the archive's modules: the options (options.c
 * reads the environment and would bring the rest of the shim) and the
 * stack a sampled allocation records (stack.c has its own test). */
struct asp_options asp__opt;

static uintptr_t captured = 77;
uintptr_t asp__stack_capture(struct asp_thread *t, uintptr_t site)
{
	(void)t;
	(void)site;
	return captured;
}

/* Addresses by the hash the table uses (p * K): shard, filter slot and
 * home are its top 6 bits, top 18 bits and bits 20 and up. An address
 * made from a chosen product: p = v * K^-1. */
#define K 0x9E3779B97F4A7C15ull

static uint64_t k_inverse(void)
{
	uint64_t x = K;
	for (int i = 0; i < 6; i++)
		x *= 2 - K * x;
	return x;
}

static uintptr_t from_hash(uint64_t v)
{
	return (uintptr_t)(v * k_inverse());
}

/* The j-th address (j < 2^20) with filter slot slot and home home. */
static uintptr_t at(uint32_t slot, uint64_t home, uint64_t j)
{
	return from_hash(((uint64_t)slot << 46) | (home << 20) | j);
}

/* The i-th of many addresses of shard k, spread over its filter slots and
 * homes. */
static uintptr_t in_shard(unsigned k, uint64_t i)
{
	return from_hash(((uint64_t)k << 58) | ((i * 0x2545F4914F6CDD1Dull) & (((uint64_t)1 << 58) - 1)));
}

static unsigned shard_index(uintptr_t p)
{
	return (unsigned)(shard_of(p) - g_shards);
}

static uint8_t filter_byte(uintptr_t p)
{
	return asp__sample_filter[asp__sample_slot(p)];
}

/* Where p sits in its shard's array, or -1. */
static long slot_of(uintptr_t p)
{
	const struct shard *s = shard_of(p);
	for (size_t i = 0; s->blocks != NULL && i <= s->mask; i++)
		if (s->blocks[i].ptr == p)
			return (long)i;
	return -1;
}

static size_t occupied(const struct shard *s)
{
	size_t n = 0;
	for (size_t i = 0; s->blocks != NULL && i <= s->mask; i++)
		n += s->blocks[i].ptr != 0;
	return n;
}

/* The table agrees with itself: each shard's count is its entries, and
 * each filter byte counts the entries that hash there (or saturated). */
static void assert_consistent(void)
{
	static uint32_t want[1u << ASP_SAMPLE_FILTER_BITS];
	memset(want, 0, sizeof want);
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++) {
		const struct shard *s = &g_shards[k];
		ASSERT_EQ(s->count, occupied(s));
		ASSERT_EQ(s->holder, 0);
		for (size_t i = 0; s->blocks != NULL && i <= s->mask; i++)
			if (s->blocks[i].ptr != 0)
				want[asp__sample_slot(s->blocks[i].ptr)]++;
	}
	for (size_t i = 0; i < ASP_ARRAY_SIZE(want); i++)
		if (asp__sample_filter[i] != 255)
			ASSERT_EQ(asp__sample_filter[i], want[i]);
}

static struct asp_thread rec;	/* the thread's record, the test's */

TEST(keep_take_forget)
{
	uintptr_t p = in_shard(5, 1), q = in_shard(5, 2), r = in_shard(9, 1);
	ASSERT(!asp__sample_maybe(p));
	asp__sample_keep(&rec, p, 100, ASP_SITE_SAMPLED | 7);
	asp__sample_keep(&rec, q, 200, ASP_SITE_SAMPLED | 8);
	asp__sample_keep(&rec, r, 300, ASP_SITE_SAMPLED | 9);
	ASSERT_EQ(g_shards[5].count, 2);
	ASSERT_EQ(g_shards[9].count, 1);
	ASSERT_EQ(filter_byte(p), 1);
	ASSERT(asp__sample_maybe(q));
	struct asp_sample_block b;
	ASSERT_EQ(asp__sample_take(&rec, q, &b, 0), 1);
	ASSERT_EQ(b.ptr, q);
	ASSERT_EQ(b.size, 200);
	ASSERT_EQ(b.site, ASP_SITE_SAMPLED | 8);
	ASSERT_EQ(asp__sample_take(&rec, q, &b, 0), 0);
	ASSERT(!asp__sample_maybe(q));
	/* A free: 0, the caller frees it. */
	ASSERT_EQ(asp__sample_forget(&rec, p), 0);
	ASSERT_EQ(slot_of(p), -1);
	ASSERT_EQ(asp__sample_forget(&rec, p), 0);
	/* The same address again: its entry replaced, counted once. */
	asp__sample_keep(&rec, r, 301, ASP_SITE_SAMPLED | 10);
	ASSERT_EQ(g_shards[9].count, 1);
	ASSERT_EQ(filter_byte(r), 1);
	ASSERT_EQ(asp__sample_take(&rec, r, &b, 1), 1);
	ASSERT_EQ(b.size, 301);
	ASSERT_EQ(b.site, ASP_SITE_SAMPLED | 10);
	ASSERT_EQ(rec.in_sample, 0);
	ASSERT_EQ(rec.nsample_defer, 0);
	assert_consistent();
}

/* A filter byte counts the blocks that hash to it, up to 255, and is then
 * never lowered: a free of a block not in the table may look there in
 * vain, never miss one that is. */
TEST(filter_bytes_count_and_saturate)
{
	uint32_t slot = 0x12345;
	for (uint64_t j = 0; j < 3; j++)
		asp__sample_keep(&rec, at(slot, j, 1), 8, 1);
	ASSERT_EQ(filter_byte(at(slot, 0, 1)), 3);
	ASSERT_EQ(asp__sample_take(&rec, at(slot, 1, 1), NULL, 0), 1);
	ASSERT_EQ(filter_byte(at(slot, 0, 1)), 2);
	/* Another address of the slot, never kept: looked for, not found. */
	ASSERT(asp__sample_maybe(at(slot, 9, 9)));
	ASSERT_EQ(asp__sample_forget(&rec, at(slot, 9, 9)), 0);
	ASSERT_EQ(filter_byte(at(slot, 0, 1)), 2);
	/* 300 blocks in the slot: 255. */
	for (uint64_t j = 3; j < 301; j++)
		asp__sample_keep(&rec, at(slot, j, 1), 8, 1);
	ASSERT_EQ(filter_byte(at(slot, 0, 1)), 255);
	ASSERT_EQ(shard_of(at(slot, 0, 1))->count, 300);
	for (uint64_t j = 0; j < 301; j++)
		asp__sample_take(&rec, at(slot, j, 1), NULL, 0);
	ASSERT_EQ(shard_of(at(slot, 0, 1))->count, 0);
	ASSERT_EQ(filter_byte(at(slot, 0, 1)), 255);
	ASSERT(asp__sample_maybe(at(slot, 0, 1)));
	/* The slot's neighbours were never touched. */
	ASSERT_EQ(filter_byte(at(slot + 1, 0, 1)), 0);
	ASSERT_EQ(filter_byte(at(slot - 1, 0, 1)), 0);
}

/* Open addressing in a shard of 64 slots: a run that wraps past the
 * array's end, then a removal from its start: the backward shift moves
 * each later entry that could not be found past the hole, and only those
 * (an entry at its own home stays). Then the shard grows with its
 * entries. */
TEST(probing_and_the_backward_shift)
{
	uint32_t slot = 0x2a000;	/* shard 42 */
	uintptr_t a = at(slot, 62, 1), b = at(slot, 62, 2), c = at(slot, 63, 3), d = at(slot, 62, 4),
	          e = at(slot, 0, 5), f = at(slot, 5, 6), g = at(slot, 6, 7);
	uintptr_t all[] = { a, b, c, d, e, f, g };
	for (size_t i = 0; i < ASP_ARRAY_SIZE(all); i++)
		asp__sample_keep(&rec, all[i], 10 + i, ASP_SITE_SAMPLED | i);
	struct shard *s = shard_of(a);
	ASSERT_EQ(shard_index(a), 42);
	ASSERT_EQ(s->mask, 63);
	ASSERT_EQ(slot_of(a), 62);
	ASSERT_EQ(slot_of(b), 63);
	ASSERT_EQ(slot_of(c), 0);
	ASSERT_EQ(slot_of(d), 1);
	ASSERT_EQ(slot_of(e), 2);
	ASSERT_EQ(slot_of(f), 5);
	ASSERT_EQ(slot_of(g), 6);
	struct asp_sample_block out;
	ASSERT_EQ(asp__sample_take(&rec, a, &out, 0), 1);
	ASSERT_EQ(out.size, 10);
	/* Each moved one back, across the end: b, c, d home and past, e. */
	ASSERT_EQ(slot_of(b), 62);
	ASSERT_EQ(slot_of(c), 63);
	ASSERT_EQ(slot_of(d), 0);
	ASSERT_EQ(slot_of(e), 1);
	ASSERT_EQ(s->blocks[2].ptr, 0);
	ASSERT_EQ(asp__sample_take(&rec, f, &out, 0), 1);
	ASSERT_EQ(slot_of(g), 6);	/* at home: not moved into 5 */
	for (size_t i = 1; i < ASP_ARRAY_SIZE(all); i++) {
		if (all[i] == f)
			continue;
		ASSERT_EQ(asp__sample_take(&rec, all[i], &out, 0), 1);
		ASSERT_EQ(out.size, 10 + i);
		ASSERT_EQ(out.site, ASP_SITE_SAMPLED | i);
	}
	ASSERT_EQ(s->count, 0);
	ASSERT_EQ(occupied(s), 0);
	/* 33 entries: more than half of 64 slots, so 128. */
	for (uint64_t j = 0; j < 33; j++)
		asp__sample_keep(&rec, at(slot, j % 4, 100 + j), j, 1);
	ASSERT_EQ(s->mask, 127);
	ASSERT_EQ(s->count, 33);
	for (uint64_t j = 0; j < 33; j++) {
		ASSERT_EQ(asp__sample_take(&rec, at(slot, j % 4, 100 + j), &out, 0), 1);
		ASSERT_EQ(out.size, j);
	}
	assert_consistent();
}

/* 100,000 blocks over every shard, every other one taken: the walk gives
 * the rest, each once. */
struct walked {
	uint64_t n, bytes, sites;
};

static void walk_one(void *arg, const struct asp_sample_block *b)
{
	struct walked *w = arg;
	w->n++;
	w->bytes += b->size;
	w->sites += asp__site_plain(b->site);
}

TEST(many_blocks_and_the_walk)
{
	ASSERT_EQ(asp__thread_init(), 0);
	const uint64_t n = 100000;
	for (uint64_t i = 0; i < n; i++)
		asp__sample_keep(&rec, 0x10000 + i * 48, i, ASP_SITE_SAMPLED | (i % 5));
	for (uint64_t i = 0; i < n; i += 2)
		ASSERT_EQ(asp__sample_take(&rec, 0x10000 + i * 48, NULL, 0), 1);
	struct walked w = { 0, 0, 0 };
	asp__sample_blocks(walk_one, &w);
	ASSERT_EQ(w.n, n / 2);
	ASSERT_EQ(w.bytes, (n / 2) * (n / 2));	/* 1 + 3 + ... + (n - 1) */
	uint64_t sites = 0;
	for (uint64_t i = 1; i < n; i += 2)
		sites += i % 5;
	ASSERT_EQ(w.sites, sites);
	for (size_t k = 0; k < ASP_SAMPLE_SHARDS; k++)
		ASSERT(g_shards[k].count > 0);
	for (uint64_t i = 1; i < n; i += 2) {
		struct asp_sample_block b;
		ASSERT_EQ(asp__sample_take(&rec, 0x10000 + i * 48, &b, 0), 1);
		ASSERT_EQ(b.size, i);
	}
	assert_consistent();
}

/* A shard's lock holds its holder's record: another record's nested try
 * fails, and fork's prepare takes every other shard but leaves the one
 * its own record holds (its code finishes in the child); without a
 * record, it holds as 1. */
TEST(shard_locks_know_their_holder)
{
	static struct asp_thread a, other;
	alarm(10);
	struct shard *s = &g_shards[17];
	ASSERT(take(s, &a, 0));
	ASSERT_EQ(s->holder, (uintptr_t)&a);
	ASSERT(!take(s, &other, 1));
	asp__sample_atfork_prepare(&a);
	ASSERT_EQ(g_fork_took, ~((uint64_t)1 << 17));
	ASSERT_EQ(g_fork_skipped, 0);
	ASSERT_EQ(g_shards[3].holder, (uintptr_t)&a);
	asp__sample_atfork_release();
	ASSERT_EQ(g_shards[3].holder, 0);
	ASSERT_EQ(s->holder, (uintptr_t)&a);
	release(s);
	asp__sample_atfork_prepare(NULL);
	ASSERT_EQ(g_fork_took, ~(uint64_t)0);
	ASSERT_EQ(s->holder, 1);
	asp__sample_atfork_release();
	ASSERT_EQ(s->holder, 0);
}

/* A thread that is not inside the table waits for a shard's holder. */
static volatile int kept_by_thread;

static void *keep_one(void *arg)
{
	static struct asp_thread t2;
	asp__sample_keep(&t2, (uintptr_t)arg, 64, 5);
	kept_by_thread = 1;
	return NULL;
}

TEST(a_thread_waits_for_the_holder)
{
	static struct asp_thread forker;
	alarm(10);
	asp__sample_atfork_prepare(&forker);
	pthread_t th;
	pthread_create(&th, NULL, keep_one, (void *)in_shard(30, 1));
	usleep(50000);
	ASSERT_EQ(kept_by_thread, 0);
	asp__sample_atfork_release();
	pthread_join(th, NULL);
	ASSERT_EQ(kept_by_thread, 1);
	ASSERT(slot_of(in_shard(30, 1)) >= 0);
}

/* A signal handler that lands while its thread is inside the table's code
 * (rec.in_sample) never waits for a shard: with the shard busy (here every
 * shard, held by fork's prepare for another record), its allocation goes
 * untracked and its free is left in the record, the block still allocated,
 * for the thread to make once it is out: the block leaves the table, then
 * goes back to the allocator (asp__next.free), once. Four fit; a fifth
 * free leaves its entry in the table. */
static uintptr_t freed[16];
static size_t nfreed;

static void fake_free(void *p)
{
	/* It has left the table already. */
	ASSERT_EQ(slot_of((uintptr_t)p), -1);
	freed[nfreed++] = (uintptr_t)p;
}

TEST(a_handler_inside_the_table_defers)
{
	static struct asp_thread forker;
	alarm(10);
	asp__next.free = fake_free;
	uintptr_t p[6];
	for (int i = 0; i < 6; i++) {
		p[i] = in_shard(11, (uint64_t)i);
		asp__sample_keep(&rec, p[i], 8, 1);
	}
	uintptr_t late = in_shard(11, 100);
	asp__sample_atfork_prepare(&forker);
	rec.in_sample = 1;		/* the handler lands inside */
	asp__sample_keep(&rec, late, 8, 1);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(asp__sample_forget(&rec, p[i]), 1);
	ASSERT_EQ(asp__sample_forget(&rec, p[4]), 0);	/* no room */
	ASSERT_EQ(rec.nsample_defer, 4);
	ASSERT_EQ(rec.sample_defer[0], p[0]);
	ASSERT_EQ(rec.sample_defer[3], p[3]);
	ASSERT_EQ(rec.in_sample, 1);
	ASSERT_EQ(nfreed, 0);
	asp__sample_atfork_release();
	/* Still inside: another operation of the handler's finds the shard
	 * free now, and leaves the deferred frees alone. */
	ASSERT_EQ(asp__sample_take(&rec, p[5], NULL, 1), 1);
	ASSERT_EQ(rec.nsample_defer, 4);
	ASSERT_EQ(nfreed, 0);
	/* Out: the thread's next operation makes them, last first. */
	rec.in_sample = 0;
	asp__sample_keep(&rec, in_shard(12, 1), 8, 1);
	ASSERT_EQ(rec.nsample_defer, 0);
	ASSERT_EQ(nfreed, 4);
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(freed[i], p[3 - i]);
		ASSERT_EQ(slot_of(p[i]), -1);
	}
	ASSERT_EQ(slot_of(late), -1);	/* untracked */
	ASSERT(slot_of(p[4]) >= 0);	/* an estimate a block too high */
	ASSERT_EQ(g_shards[11].count, 1);
	assert_consistent();
}

/* The same with a real signal: a timer's handler (SIGUSR1 every 20 us;
 * alarm is the test's limit) keeps and forgets blocks of the shard the
 * thread's loop keeps and forgets its own in, on the same record. It lands
 * inside the table, finds the shard busy and defers some frees (some
 * 1,000 in 100 rounds); in the end no block that was freed stays in the
 * table, each deferred one went back once, after it left the table (a
 * handler that lands in the thread's drain drains too), and the table
 * agrees with itself. */
#define H_MAX 200000
static unsigned char h_state[H_MAX];	/* 1 kept, 2 forgotten, 3 deferred, 4 may stay */
static volatile uint64_t h_next, h_deferred;
static unsigned char h_freed[H_MAX];
static volatile int h_bad;

static uintptr_t h_addr(uint64_t i)
{
	return in_shard(7, 1000000 + i);
}

static void count_free(void *p)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (uint64_t i = 0; i < h_next + 1 && i < H_MAX; i++)
		if (h_addr(i) == (uintptr_t)p) {
			if (h_freed[i]++ != 0 || h_state[i] != 3 || slot_of((uintptr_t)p) >= 0)
				h_bad = 1;
			break;
		}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void on_tick(int sig)
{
	(void)sig;
	uint64_t i = h_next;
	if (i >= H_MAX)
		return;
	if (h_state[i] == 0) {
		asp__sample_keep(&rec, h_addr(i), 16, 2);
		h_state[i] = 1;
		return;
	}
	int full = rec.nsample_defer == ASP_ARRAY_SIZE(rec.sample_defer);
	int r = asp__sample_forget(&rec, h_addr(i));
	h_state[i] = full ? 4 : r ? 3 : 2;
	h_deferred += r != 0;
	h_next = i + 1;
}

TEST(a_signal_handler_lands_inside_the_table)
{
	alarm(20);	/* a handler that waited for its own thread would hang */
	asp__next.free = count_free;
	struct sigaction sa = { .sa_handler = on_tick };
	sigaction(SIGUSR1, &sa, NULL);
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR1 };
	timer_t timer;
	ASSERT_EQ(timer_create(CLOCK_MONOTONIC, &ev, &timer), 0);
	struct itimerspec it = { { 0, 20000 }, { 0, 20000 } };
	timer_settime(timer, 0, &it, NULL);
	for (uint64_t round = 0; round < 400 && (h_deferred == 0 || round < 100); round++) {
		for (uint64_t i = 0; i < 3000; i++)
			asp__sample_keep(&rec, in_shard(7, i), 8, 1);
		for (uint64_t i = 0; i < 3000; i++)
			ASSERT_EQ(asp__sample_forget(&rec, in_shard(7, i)), 0);
	}
	timer_delete(timer);
	signal(SIGUSR1, SIG_IGN);
	ASSERT(h_deferred > 0);
	ASSERT_EQ(rec.nsample_defer, 0);
	ASSERT_EQ(h_bad, 0);
	for (uint64_t i = 0; i < 3000; i++)
		ASSERT_EQ(slot_of(in_shard(7, i)), -1);
	for (uint64_t i = 0; i < h_next; i++) {
		ASSERT_EQ(h_freed[i], h_state[i] == 3);
		if (h_state[i] == 2 || h_state[i] == 3)
			ASSERT_EQ(slot_of(h_addr(i)), -1);
	}
	assert_consistent();
}

/* fork while another thread is stuck (in a handler, or waiting for the
 * fork) holding a shard: prepare takes every other shard, and the child,
 * after the release, rebuilds the one skipped from its slots, counts the
 * filter again and lets it go, whatever state its holder left it in. */
static struct asp_thread stuck_rec = { .stuck = 1 }, forker_rec;

enum held_state {
	HELD_WHOLE,	/* between two changes */
	HELD_GROWING,	/* publishing a larger array: the old one is whole */
	HELD_SHIFTING,	/* a backward shift copied an entry, not cleared yet */
	HELD_FIRST,	/* making its first array */
};

static void fork_past_a_stuck_holder(enum held_state state)
{
	const unsigned k = 21;
	struct shard *s = &g_shards[k];
	/* Twenty blocks of shard k at known homes: p[0] and p[1] a run of
	 * two (10, 11), the others two apart from 16. */
	const uint32_t slot = (uint32_t)(k << 12) | 0x42;
	uintptr_t p[20];
	for (uint64_t i = 0; i < 20; i++) {
		p[i] = at(slot, i < 2 ? 10 : 12 + 2 * i, i + 1);
		if (state != HELD_FIRST)
			asp__sample_keep(&rec, p[i], 100 + i, ASP_SITE_SAMPLED | i);
	}
	/* A filter byte that saturated, its blocks all gone since (in the
	 * next shard: the filter is counted again for the whole table). */
	const uint32_t full = (uint32_t)((k + 1) << 12) | 0x77;
	for (uint64_t j = 0; j < 256; j++)
		asp__sample_keep(&rec, at(full, j, 3), 1, 1);
	for (uint64_t j = 0; j < 256; j++)
		asp__sample_take(&rec, at(full, j, 3), NULL, 0);
	ASSERT_EQ(filter_byte(at(full, 0, 3)), 255);
	if (state != HELD_FIRST) {
		ASSERT_EQ(s->count, 20);
		ASSERT_EQ(slot_of(p[0]), 10);
		ASSERT_EQ(slot_of(p[1]), 11);
	} else {
		ASSERT(s->blocks == NULL);
	}
	/* The stuck thread takes the shard and stops half way. */
	ASSERT(take(s, &stuck_rec, 0));
	if (state == HELD_GROWING) {
		/* grow: the new array published, the old one not let go yet;
		 * the new one only partly filled (the child must not read it). */
		size_t slots = (s->mask + 1) * 2;
		struct asp_sample_block *n = asp__pages_alloc(slots * sizeof *n);
		ASSERT(n != NULL);
		n[0] = s->blocks[10];
		s->moving_slots = s->mask + 1;
		s->moving = s->blocks;
		s->blocks = n;
		s->mask = slots - 1;
	} else if (state == HELD_SHIFTING) {
		/* remove_block of p[0]: p[1] copied into its hole, its own
		 * slot not cleared yet, the count not lowered yet. */
		s->blocks[10] = s->blocks[11];
	}
	asp__sample_atfork_prepare(&forker_rec);
	ASSERT_EQ(g_fork_skipped, (uint64_t)1 << k);
	ASSERT_EQ(g_fork_took, ~((uint64_t)1 << k));
	pid_t pid = fork();
	if (pid == 0) {
		asp__sample_atfork_release();
		asp__sample_atfork_child();
		alarm(10);	/* a shard still held would hang */
		for (size_t i = 0; i < ASP_SAMPLE_SHARDS; i++)
			ASSERT_EQ(g_shards[i].holder, 0);
		ASSERT(s->moving == NULL);
		uint64_t first = state == HELD_SHIFTING ? 1 : 0, last = state == HELD_FIRST ? 0 : 20;
		ASSERT_EQ(s->count, last - first);
		assert_consistent();
		/* The filter counted again: the saturated byte is 0 now. */
		ASSERT_EQ(filter_byte(at(full, 0, 3)), 0);
		struct asp_sample_block b;
		for (uint64_t i = 0; i < 20; i++) {
			int there = i >= first && i < last;
			ASSERT_EQ(asp__sample_take(&rec, p[i], &b, 0), there);
			if (there) {
				ASSERT_EQ(b.size, 100 + i);
				ASSERT_EQ(b.site, ASP_SITE_SAMPLED | i);
			}
		}
		asp__sample_keep(&rec, p[0], 5, 5);
		ASSERT_EQ(s->count, 1);
		assert_consistent();
		exit(0);
	}
	asp__sample_atfork_release();
	int st = 0;
	waitpid(pid, &st, 0);
	ASSERT(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
	/* The parent: the stuck thread still holds it, and only it. */
	ASSERT_EQ(s->holder, (uintptr_t)&stuck_rec);
	for (size_t i = 0; i < ASP_SAMPLE_SHARDS; i++)
		if (i != k)
			ASSERT_EQ(g_shards[i].holder, 0);
}

TEST(fork_repairs_a_shard_between_changes)
{
	fork_past_a_stuck_holder(HELD_WHOLE);
}

TEST(fork_repairs_a_shard_being_grown)
{
	fork_past_a_stuck_holder(HELD_GROWING);
}

TEST(fork_repairs_a_shard_half_way_through_a_shift)
{
	fork_past_a_stuck_holder(HELD_SHIFTING);
}

TEST(fork_lets_go_of_a_shard_making_its_first_array)
{
	fork_past_a_stuck_holder(HELD_FIRST);
}

/* The allocation that reaches its thread's sample point: the captured
 * stack tagged, its weight 1 / (1 - e^(-size/mean)), a new point drawn;
 * the same seed and serial draw the same points. */
TEST(a_sample_hit_tags_the_stack)
{
	asp__sample_mean = 1000;
	asp__sample_seed = 42;
	struct asp_thread a = { .serial = 3 }, b = { .serial = 3 };
	uint64_t hits = 0, bytes = 0;
	for (int i = 0; i < 20000; i++) {
		uintptr_t site = asp__sample_site(&a, 0x4000, 100);
		ASSERT_EQ(asp__sample_site(&b, 0x4000, 100), site);
		ASSERT_EQ(a.sample_left, b.sample_left);
		bytes += 100;
		if (site == 0x4000)
			continue;
		hits++;
		ASSERT_EQ(site, ASP_SITE_SAMPLED | 77);
		ASSERT(a.sample_w > 10.50 && a.sample_w < 10.51);	/* 1 / (1 - e^-0.1) */
		ASSERT(a.sample_left > 0);
	}
	/* A sample every 1000 bytes or so: 2000 in 2,000,000 bytes. */
	ASSERT(hits > 1800 && hits < 2200);
	ASSERT_EQ(asp__sample_weight(0), 0);
	ASSERT(asp__sample_weight(1000000) == 1.0);
	/* A stack that could not be had: the caller. */
	captured = 0;
	a.sample_left = 0;
	ASSERT_EQ(asp__sample_site(&a, 0x4000, 100), 0x4000);
}

UNIT_MAIN(UNIT(keep_take_forget), UNIT(filter_bytes_count_and_saturate),
          UNIT(probing_and_the_backward_shift), UNIT(many_blocks_and_the_walk),
          UNIT(shard_locks_know_their_holder), UNIT(a_thread_waits_for_the_holder),
          UNIT(a_handler_inside_the_table_defers), UNIT(a_signal_handler_lands_inside_the_table),
          UNIT(fork_repairs_a_shard_between_changes), UNIT(fork_repairs_a_shard_being_grown),
          UNIT(fork_repairs_a_shard_half_way_through_a_shift),
          UNIT(fork_lets_go_of_a_shard_making_its_first_array), UNIT(a_sample_hit_tags_the_stack))
