/* test_thread - per-thread records: a record per thread, counts summed on
 * read, folded at thread exit with none lost, derived heap totals, the
 * size histogram's buckets, and which threads a waiter waits for past its
 * deadline. */
#include <pthread.h>
#include <sched.h>
#include <time.h>

#include "thread.h"
#include "unit.h"

static void setup(void)
{
	ASSERT_EQ(asp__thread_init(), 0);
}

TEST(histogram_buckets)
{
	ASSERT_EQ(asp_hist_bucket(0), 0);
	ASSERT_EQ(asp_hist_bucket(1), 1);
	ASSERT_EQ(asp_hist_bucket(2), 2);
	ASSERT_EQ(asp_hist_bucket(3), 3);
	ASSERT_EQ(asp_hist_bucket(4), 3);
	ASSERT_EQ(asp_hist_bucket(5), 4);
	ASSERT_EQ(asp_hist_bucket(1024), 11);
	ASSERT_EQ(asp_hist_bucket(1025), 12);
	ASSERT_EQ(asp_hist_bucket(UINT64_MAX), 65);
}

TEST(one_record_per_thread)
{
	setup();
	struct asp_thread *a = asp__thread_self();
	ASSERT(a != NULL);
	ASSERT(asp__thread_self() == a);
	ASSERT_EQ(a->tid, asp_gettid());
	ASSERT_EQ(asp__threads_active, 1);
}

static void bump(int allocs, int frees)
{
	struct asp_thread *t = asp__thread_self();
	t->c.fn[ASP_FN_MALLOC].calls += allocs;
	t->c.fn[ASP_FN_MALLOC].bytes += 10u * allocs;
	t->c.fn[ASP_FN_FREE].calls += frees;
}

static void *worker(void *arg)
{
	int n = (int)(intptr_t)arg;
	bump(n, n - 1);
	return NULL;
}

/* 2000 short threads, 100 at a time: every count reaches the sum. */
TEST(no_count_lost_at_thread_exit)
{
	setup();
	bump(5, 0);
	long want_allocs = 5, want_frees = 0;
	for (int round = 0; round < 20; round++) {
		pthread_t t[100];
		for (int i = 0; i < 100; i++) {
			pthread_create(&t[i], NULL, worker, (void *)(intptr_t)(i + 1));
			want_allocs += i + 1;
			want_frees += i;
		}
		for (int i = 0; i < 100; i++)
			pthread_join(t[i], NULL);
	}
	struct asp_counts c;
	struct asp_totals tot;
	asp__threads_sum(&c);
	asp__totals(&c, &tot);
	ASSERT_EQ(tot.allocs, want_allocs);
	ASSERT_EQ(tot.frees, want_frees);
	ASSERT_EQ(tot.bytes_allocated, 10 * want_allocs);
	/* Every thread has its line; the exited ones say so. */
	static struct asp_thread_summary s[ASP_MAX_THREAD_SUMMARIES];
	size_t n = asp__threads_summaries(s, ASP_MAX_THREAD_SUMMARIES);
	ASSERT_EQ(n, 2001);
	long sum = 0;
	size_t exited = 0;
	for (size_t i = 0; i < n; i++) {
		sum += (long)s[i].allocs;
		exited += s[i].exited;
	}
	ASSERT_EQ(sum, want_allocs);
	ASSERT_EQ(exited, 2000);
}

TEST(totals_follow_valgrind_rules)
{
	struct asp_counts c = { 0 };
	struct asp_totals t;
	c.fn[ASP_FN_MALLOC] = (struct asp_fn_stat){ .calls = 4, .bytes = 40, .failed = 1 };
	c.fn[ASP_FN_REALLOC] = (struct asp_fn_stat){ .calls = 3, .bytes = 300 };
	c.fn[ASP_FN_REALLOCARRAY] = (struct asp_fn_stat){ .calls = 2, .bytes = 16 };
	c.fn[ASP_FN_FREE] = (struct asp_fn_stat){ .calls = 2, .null = 5 };
	c.realloc_frees = 2;		/* two reallocs released a block */
	c.realloc_free_only = 1;	/* one of them was realloc(p, 0) */
	asp__totals(&c, &t);
	ASSERT_EQ(t.allocs, 3 + 3 - 1);	/* reallocarray is not seen */
	ASSERT_EQ(t.frees, 2 + 2);	/* free(NULL) is no free */
	ASSERT_EQ(t.bytes_allocated, 340);
	ASSERT_EQ(t.failed, 1);
}

/* asp__thread_behind: a thread that runs is behind until it has run
 * ASP_WAIT_NS since first asked; one asleep, or gone, is not. */
static volatile pid_t g_tid;
static volatile int g_stop;

static void *spinner(void *arg)
{
	(void)arg;
	g_tid = asp_gettid();
	while (!g_stop)
		;
	return NULL;
}

static void *sleeper(void *arg)
{
	int *fds = arg;
	g_tid = asp_gettid();
	char c;
	ssize_t got = read(fds[0], &c, 1);	/* until the test writes */
	(void)got;
	return NULL;
}

static uint64_t cpu_of(pthread_t t)
{
	clockid_t id;
	struct timespec ts;
	ASSERT_EQ(pthread_getcpuclockid(t, &id), 0);
	ASSERT_EQ(clock_gettime(id, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST(thread_behind_while_it_runs)
{
	setup();
	pthread_t t;
	g_tid = 0;
	ASSERT_EQ(pthread_create(&t, NULL, spinner, NULL), 0);
	while (g_tid == 0)
		sched_yield();
	uint64_t cpu0 = 0;
	ASSERT_EQ(asp__thread_behind(g_tid, &cpu0), 1);
	ASSERT(cpu0 != 0);
	uint64_t first = cpu0;
	/* still behind, and cpu0 kept, until it has run 100 ms more */
	while (cpu_of(t) - first < ASP_WAIT_NS / 2)
		sched_yield();
	ASSERT_EQ(asp__thread_behind(g_tid, &cpu0), 1);
	ASSERT_EQ(cpu0, first);
	while (cpu_of(t) - first < ASP_WAIT_NS + ASP_WAIT_NS / 10)
		sched_yield();
	ASSERT_EQ(asp__thread_behind(g_tid, &cpu0), 0);
	g_stop = 1;
	pthread_join(t, NULL);
}

TEST(thread_not_behind_asleep_or_gone)
{
	setup();
	int fds[2];
	ASSERT_EQ(pipe(fds), 0);
	pthread_t t;
	g_tid = 0;
	ASSERT_EQ(pthread_create(&t, NULL, sleeper, fds), 0);
	while (g_tid == 0)
		sched_yield();
	pid_t tid = g_tid;
	/* asleep in read within 5 s: not behind, and cpu0 left alone */
	uint64_t cpu0 = 0;
	int behind = 1;
	for (int i = 0; i < 500 && behind; i++) {
		cpu0 = 0;
		behind = asp__thread_behind(tid, &cpu0);
		if (behind)
			usleep(10000);
	}
	ASSERT_EQ(behind, 0);
	ASSERT_EQ(cpu0, 0);
	ASSERT_EQ(write(fds[1], "x", 1), 1);
	pthread_join(t, NULL);
	ASSERT_EQ(asp__thread_behind(tid, &cpu0), 0);	/* gone */
	ASSERT_EQ(asp__thread_behind(0x7ffffff0, &cpu0), 0);	/* never was */
}

UNIT_MAIN(UNIT(histogram_buckets), UNIT(one_record_per_thread),
          UNIT(no_count_lost_at_thread_exit), UNIT(totals_follow_valgrind_rules),
          UNIT(thread_behind_while_it_runs), UNIT(thread_not_behind_asleep_or_gone))
