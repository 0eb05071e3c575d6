/* thread.c - the registry of per-thread records.
 *
 * A thread's record is found through a pthread key below 32, whose slot
 * lives inside the thread descriptor: reading it allocates nothing and
 * needs no TLS module. When the thread exits, the key's destructor folds
 * the record into the dead total and marks it dying. Calls the thread makes
 * after that (later TLS destructors, libc's own clean-up) find the dying
 * record by tid and keep counting there, so no count is lost. A dying record
 * is reused once its thread is certainly gone: a new thread has the same
 * descriptor address, or the tid no longer exists. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stddef.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>

#include "arena.h"
#include "lock.h"
#include "thread.h"

const char *const asp__fn_names[ASP_FN_COUNT] = {
#define ASP_FN_NAME(id, name, role, family, sym, a0, a1) [ASP_FN_##id] = name,
	ASP_FNS(ASP_FN_NAME)
#undef ASP_FN_NAME
};


/* Dying records past this many are checked for a gone tid on reuse. */
#define ASP_DYING_RECHECK 64

void (*asp__thread_exit_hook)(struct asp_thread *t);
void (*asp__thread_gone_hook)(struct asp_thread *t);
pthread_key_t asp__thread_key;
int asp__thread_key_ok;
uintptr_t asp__thread_slot __attribute__((aligned(ASP_CACHE_LINE)));	/* read by every operation */
int asp__threads_active;
int asp__threads_active_max;

static asp_lock_t g_lock = ASP_LOCK_INIT;
static struct asp_thread *g_records;	/* every record, live or dying */
static size_t g_dying;
static struct asp_counts g_dead;	/* records folded at thread exit */
static uint32_t g_folds;		/* odd while a fold moves counts (see
					 * asp__threads_sum_nolock) */
static uint32_t g_serial;
static struct asp_thread_summary *g_summaries;
static size_t g_nsummaries;		/* threads seen, even past the cap */

static void counts_add(struct asp_counts *dst, const struct asp_counts *src)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	for (size_t i = 0; i < ASP_COUNTS_WORDS; i++)
		d[i] += asp_atomic_load_relaxed(&s[i]);
}

/* valgrind 3.19's figures: every non-NULL free counts, known block or not;
 * a failed realloc of a block counts an alloc and a free (the free in
 * realloc_frees, as for every realloc of a block); reallocarray's blocks
 * are not seen at all. */
void asp__totals(const struct asp_counts *c, struct asp_totals *out)
{
	struct asp_totals t = { 0 };
	for (int i = 0; i < ASP_FN_ALLOC_END; i++) {
		if (i == ASP_FN_REALLOCARRAY)
			continue;
		t.allocs += c->fn[i].calls - c->fn[i].failed;
		t.bytes_allocated += c->fn[i].bytes;
		t.failed += c->fn[i].failed;
	}
	t.failed += c->fn[ASP_FN_REALLOCARRAY].failed;
	t.allocs += c->realloc_failed_moves - c->realloc_free_only;
	for (int i = ASP_FN_FREE; i < ASP_FN_USABLE_SIZE; i++) {
		t.frees += c->fn[i].calls;
		t.bytes_freed += c->fn[i].bytes;
	}
	t.frees += c->realloc_frees;
	t.bytes_freed += c->realloc_freed_bytes;
	*out = t;
}

static void summary_add(struct asp_thread_summary *s, const struct asp_counts *c)
{
	struct asp_totals t;
	asp__totals(c, &t);
	s->allocs += t.allocs;
	s->frees += t.frees;
	s->bytes_allocated += t.bytes_allocated;
	s->ref_acquires += asp_ref_acquires(c);
	s->ref_releases += asp_ref_releases(c);
}

static struct asp_thread_summary *summary_of(const struct asp_thread *t)
{
	return t->summary < ASP_MAX_THREAD_SUMMARIES && g_summaries ? &g_summaries[t->summary] : NULL;
}


/* Moves what t counted into the dead total and its thread line. Lock held.
 * Readers without the lock see g_folds odd meanwhile, and changed after. */
static void fold(struct asp_thread *t)
{
	struct asp_thread_summary *s = summary_of(t);
	asp_atomic_store_relaxed(&g_folds, g_folds + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	counts_add(&g_dead, &t->c);
	if (s != NULL)
		summary_add(s, &t->c);
	memset(&t->c, 0, sizeof t->c);
	asp_atomic_store_release(&g_folds, g_folds + 1);
}

/* The key destructor: the thread is exiting. */
static void thread_exit(void *arg)
{
	struct asp_thread *t = arg;
	char name[16] = "";
	int saved = errno;
	sigset_t old;
	prctl(PR_GET_NAME, name, 0, 0, 0);
	if (asp__thread_exit_hook != NULL)
		asp__thread_exit_hook(t);
	asp_lock_nosig(&g_lock, &old);
	fold(t);
	struct asp_thread_summary *s = summary_of(t);
	if (s != NULL) {
		memcpy(s->name, name, sizeof s->name);
		s->name[15] = '\0';
		s->exited = 1;
	}
	if (t->state == ASP_THREAD_ACTIVE) {
		t->state = ASP_THREAD_DYING;
		g_dying++;
		asp_atomic_add_relaxed(&asp__threads_active, -1);
	}
	asp_unlock_nosig(&g_lock, &old);
	errno = saved;
}

/* Finds where, from the thread pointer, the thread descriptor keeps the
 * key's value: the fast path then reads it with one instruction. The slot
 * is found by storing two markers and reading the descriptor back; any
 * doubt leaves asp__thread_slot 0 and pthread_getspecific in use. */
static void find_slot(void)
{
	static char marker[2];
	uintptr_t tp = asp_thread_pointer();
	uintptr_t words[512];
	struct iovec local = { words, sizeof words }, remote = { (void *)tp, sizeof words };
	uintptr_t found = 0;
	for (int round = 0; round < 2; round++) {
		pthread_setspecific(asp__thread_key, &marker[round]);
		if (process_vm_readv(asp_gettid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof words)
			break;
		uintptr_t hit = 0;
		for (size_t i = 1; i < ASP_ARRAY_SIZE(words); i++) {
			if (words[i] != (uintptr_t)&marker[round])
				continue;
			if (hit != 0) {		/* twice: not sure which */
				hit = 0;
				break;
			}
			hit = i * sizeof(uintptr_t);
		}
		if (hit == 0 || (round == 1 && hit != found)) {
			found = 0;
			break;
		}
		found = hit;
	}
	pthread_setspecific(asp__thread_key, NULL);
	asp__thread_slot = found;
}

static void gate_init(void);

int asp__thread_init(void)
{
	if (pthread_key_create(&asp__thread_key, thread_exit) != 0)
		return -1;
	/* Keys from 32 up live in a second-level block that setspecific
	 * callocs: that would recurse into the shim. Use the slow path then. */
	asp__thread_key_ok = asp__thread_key < 32;
	g_summaries = asp__pages_alloc(ASP_MAX_THREAD_SUMMARIES * sizeof *g_summaries);
	if (asp__thread_key_ok)
		find_slot();
	gate_init();
	return 0;
}

/* A dying record whose thread is certainly gone: a new thread has its
 * descriptor or its tid. Lock held. */
static struct asp_thread *reusable(uintptr_t self, pid_t tid)
{
	for (struct asp_thread *t = g_records; t; t = t->next)
		if (t->state == ASP_THREAD_DYING && (t->self == self || t->tid == tid))
			return t;
	if (g_dying < ASP_DYING_RECHECK)
		return NULL;
	pid_t pid = getpid();
	for (struct asp_thread *t = g_records; t; t = t->next)
		if (t->state == ASP_THREAD_DYING &&
		    syscall(SYS_tgkill, pid, t->tid, 0) != 0 && errno == ESRCH)
			return t;
	return NULL;
}

struct asp_thread *asp__thread_self_slow(void)
{
	int saved = errno;
	pid_t tid = asp_gettid();
	uintptr_t self = (uintptr_t)pthread_self();
	struct asp_thread *t;
	sigset_t old;

	asp_lock_nosig(&g_lock, &old);
	for (t = g_records; t; t = t->next) {
		if (t->tid != tid || t->self != self)
			continue;
		/* Without a key, every call looks its thread up here. After
		 * its destructor ran, a thread still calls (later keys'
		 * destructors, libc's clean-up): it counts in its dying record,
		 * which is summed like any other until it is reused. */
		if (!asp__thread_key_ok || t->state == ASP_THREAD_DYING)
			goto out;
	}
	t = reusable(self, tid);
	if (t != NULL) {
		fold(t);
		g_dying--;
		struct asp_thread keep = *t;
		/* Cleared but for the link (a walker would see the list end
		 * here) and what stays with the record: what its thread added
		 * to the per-site figures is summed with every record's. */
		memset(t, 0, offsetof(struct asp_thread, next));
		t->sites = keep.sites;
		t->site_mask = keep.site_mask;
		t->nsites = keep.nsites;
		t->stack_cache = keep.stack_cache;
		t->site_use = keep.site_use;
		_Static_assert(offsetof(struct asp_thread, next) + sizeof(void *) ==
		               sizeof(struct asp_thread) ||
		               offsetof(struct asp_thread, next) + sizeof(void *) +
		               ASP_CACHE_LINE > sizeof(struct asp_thread),
		               "the link comes last");
	} else {
		t = asp__arena_alloc(sizeof *t);
		if (t == NULL) {
			/* Out of memory for records: share the first one. The
			 * counts stay right up to lost updates; nothing crashes. */
			t = g_records;
			goto out;
		}
		t->next = g_records;
		asp_atomic_store_release(&g_records, t);	/* read without the lock */
	}
	t->state = ASP_THREAD_ACTIVE;
	t->tid = tid;
	t->self = self;
	t->serial = ++g_serial;
	t->summary = (uint32_t)g_nsummaries++;
	struct asp_thread_summary *s = summary_of(t);
	if (s != NULL) {
		memset(s, 0, sizeof *s);
		s->tid = tid;
	}
	int active = asp_atomic_add_relaxed(&asp__threads_active, 1);
	if (active > asp__threads_active_max)
		asp__threads_active_max = active;
	if (asp__thread_key_ok)
		pthread_setspecific(asp__thread_key, t);
out:
	asp_unlock_nosig(&g_lock, &old);
	errno = saved;
	return t;
}

void asp__threads_sum(struct asp_counts *out)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	*out = g_dead;
	for (struct asp_thread *t = g_records; t; t = t->next)
		counts_add(out, &t->c);
	asp_unlock_nosig(&g_lock, &old);
}

/* A fold is a few hundred adds, made with signals blocked, so a reader
 * never waits for its own thread. A reader meets one fold after another
 * while threads exit, or one whose thread lost its core: it yields a few
 * times, then sleeps between tries, and gives up on an exact sum after
 * ASP_WAIT_NS (a thread stopped inside its fold). */
#define ASP_SUM_TRIES 64

/* Whether a reader that has tried round times may try again: after
 * ASP_SUM_TRIES yields, 100 microseconds' sleeps until *deadline. */
static int sum_again(int round, uint64_t *deadline)
{
	if (round < ASP_SUM_TRIES) {
		sched_yield();
		return 1;
	}
	uint64_t now = asp_now_ns(CLOCK_MONOTONIC);
	if (*deadline == 0)
		*deadline = now + ASP_WAIT_NS;
	if (now >= *deadline)
		return 0;
	struct timespec pause = { 0, 100000 };
	nanosleep(&pause, NULL);
	return 1;
}

/* counts_add from the last word to the first: the frees (after the
 * allocation functions in struct asp_counts) are read before the
 * allocations, so that a thread that frees its own blocks while it is read
 * never shows more frees than allocations. */
static void counts_add_backwards(struct asp_counts *dst, const struct asp_counts *src)
{
	uint64_t *d = (uint64_t *)dst;
	const uint64_t *s = (const uint64_t *)src;
	for (size_t i = ASP_COUNTS_WORDS; i-- > 0;)
		d[i] += asp_atomic_load_relaxed(&s[i]);
}

int asp__threads_sum_nolock(struct asp_counts *out)
{
	uint64_t deadline = 0;
	for (int round = 0;; round++) {
		uint32_t before = asp_atomic_load_acquire(&g_folds);
		if (before & 1u) {
			if (!sum_again(round, &deadline))
				return -1;
			continue;
		}
		memset(out, 0, sizeof *out);
		counts_add(out, &g_dead);
		for (struct asp_thread *t = asp_atomic_load_acquire(&g_records); t;
		     t = asp_atomic_load_acquire(&t->next))
			counts_add_backwards(out, &t->c);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (asp_atomic_load_relaxed(&g_folds) == before)
			return 0;
		if (!sum_again(round, &deadline))
			return -1;
	}
}

size_t asp__task_file(pid_t tid, const char *name, char *buf, size_t size)
{
	char path[64] = "/proc/self/task/";
	char *p = path + strlen(path);
	char digits[16];
	int n = 0;
	do digits[n++] = (char)('0' + tid % 10); while ((tid /= 10) > 0);
	while (n > 0)
		*p++ = digits[--n];
	*p++ = '/';
	memcpy(p, name, strlen(name) + 1);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, buf, size - 1);
	close(fd);
	if (got <= 0)
		return 0;
	buf[got] = '\0';
	return (size_t)got;
}

/* The CPU time thread tid has used, in ns (0: unknown): its clock's id
 * is the kernel's per-thread one (~tid << 3 | 6: per thread, "sched"). */
static uint64_t thread_cpu_ns(pid_t tid)
{
	struct timespec ts;
	if (clock_gettime((clockid_t)(~(unsigned)tid << 3 | 6), &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int asp__thread_behind(pid_t tid, uint64_t *cpu0)
{
	int saved = errno;
	char buf[512];
	const char *state = NULL;
	if (asp__task_file(tid, "stat", buf, sizeof buf) != 0)
		state = strrchr(buf, ')');	/* the name may hold any byte */
	uint64_t cpu = 0;
	if (state != NULL && state[1] == ' ' && state[2] == 'R')
		cpu = thread_cpu_ns(tid);
	errno = saved;
	if (cpu == 0)
		return 0;
	if (*cpu0 == 0)
		*cpu0 = cpu;
	return cpu - *cpu0 < ASP_WAIT_NS;
}

/* The name of a live thread of this process, from /proc. */
static void live_name(pid_t tid, char name[16])
{
	if (asp__task_file(tid, "comm", name, 16) == 0)
		return;
	char *nl = strchr(name, '\n');
	if (nl)
		*nl = '\0';
}

size_t asp__threads_summaries(struct asp_thread_summary *out, size_t max)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	size_t n = g_nsummaries < ASP_MAX_THREAD_SUMMARIES ? g_nsummaries : ASP_MAX_THREAD_SUMMARIES;
	if (n > max)
		n = max;
	if (g_summaries != NULL)
		memcpy(out, g_summaries, n * sizeof *out);
	else
		n = 0;
	for (struct asp_thread *t = g_records; t; t = t->next) {
		if (t->summary < n) {
			summary_add(&out[t->summary], &t->c);
			if (t->state == ASP_THREAD_ACTIVE)
				out[t->summary].exited = 0;
		}
	}
	size_t all = g_nsummaries;
	asp_unlock_nosig(&g_lock, &old);
	for (size_t i = 0; i < n; i++)
		if (!out[i].exited && out[i].name[0] == '\0')
			live_name(out[i].tid, out[i].name);
	return all;
}

void asp__threads_sites(void (*fn)(void *arg, pid_t tid, const struct asp_site_stat *s), void *arg)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	for (struct asp_thread *t = g_records; t; t = t->next) {
		/* the table's mask from the table: the owner may be growing it */
		struct asp_site_stat *sites = asp_atomic_load_acquire(&t->sites);
		uintptr_t mask = sites != NULL ? sites[-1].site : 0;
		for (size_t i = 0; sites && i <= mask; i++)
			if (asp_atomic_load_relaxed(&sites[i].site) != 0)
				fn(arg, t->tid, &sites[i]);
	}
	asp_unlock_nosig(&g_lock, &old);
}

size_t asp__threads_stacks(struct asp_thread_stack *out, size_t max)
{
	size_t n = 0;
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	for (struct asp_thread *t = g_records; t && n < max; t = t->next)
		out[n++] = (struct asp_thread_stack){ t->tid, t->state == ASP_THREAD_ACTIVE, t->start_sp };
	asp_unlock_nosig(&g_lock, &old);
	return n;
}

static asp_lock_t g_gate = ASP_LOCK_INIT;	/* one fork at a time */
static int g_forking;
static int g_membarrier;	/* the membarrier command, or 0 */
int asp__fence_others_ok;

/* The gate is Dekker's: a reader stores its flag, then loads g_forking;
 * fork stores g_forking, then loads the flags. Each side needs a full
 * fence between its store and its load. With the kernel's membarrier,
 * fork (rare) pays for both: it makes every running thread of the
 * process execute a fence, and readers (every backtrace) need only keep
 * the compiler from reordering. */
static void gate_init(void)
{
	enum { QUERY = 0, PRIVATE_EXPEDITED = 1 << 3, REGISTER_PRIVATE_EXPEDITED = 1 << 4 };
	long cmds = syscall(SYS_membarrier, QUERY, 0);
	if (cmds > 0 && (cmds & PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0) == 0)
		g_membarrier = PRIVATE_EXPEDITED;
	asp__fence_others_ok = g_membarrier != 0;
}

void asp__fence_others(void)
{
	if (g_membarrier == 0 || syscall(SYS_membarrier, g_membarrier, 0) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

struct asp_thread *asp__threads_list(void)
{
	return asp_atomic_load_acquire(&g_records);
}

/* The fence between a side's store and its load. */
static inline void gate_fence(int forker)
{
	if (g_membarrier == 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	else if (!forker)
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	else if (syscall(SYS_membarrier, g_membarrier, 0) != 0)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* not reached: registered */
}

void asp__loader_enter(struct asp_thread *t)
{
	for (;;) {
		asp_atomic_store_relaxed(&t->in_loader, 1);
		gate_fence(0);
		if (!asp_atomic_load_relaxed(&g_forking) || t->chg != 0 || t->stuck)
			return;
		asp_atomic_store_release(&t->in_loader, 0);
		while (asp_atomic_load_acquire(&g_forking))
			sched_yield();
	}
}

void asp__loader_holding(struct asp_thread *t)
{
	if (asp_atomic_load_relaxed(&t->in_loader) == 1)
		asp_atomic_store_release(&t->in_loader, 2);
}

void asp__loader_leave(struct asp_thread *t)
{
	asp_atomic_store_release(&t->in_loader, 0);
}

void asp__loader_fork_close(const struct asp_thread *self)
{
	asp_lock(&g_gate);
	asp_atomic_store_relaxed(&g_forking, 1);
	gate_fence(1);
	/* The records inside now, read under the registry lock; waited
	 * for without it. Records are never unmapped. */
	struct asp_thread *inside[64];
	size_t n = 0;
	asp_lock(&g_lock);
	for (struct asp_thread *t = g_records; t && n < ASP_ARRAY_SIZE(inside); t = t->next)
		if (t != self && asp_atomic_load_acquire(&t->in_loader))
			inside[n++] = t;
	asp_unlock(&g_lock);
	uint64_t deadline = asp_now_ns(CLOCK_MONOTONIC) + ASP_WAIT_NS;
	for (size_t i = 0; i < n; i++)
		for (;;) {
			int in = asp_atomic_load_acquire(&inside[i]->in_loader);
			if (in == 0 || (in == 1 && asp_now_ns(CLOCK_MONOTONIC) >= deadline))
				break;
			sched_yield();
		}
}

void asp__loader_fork_open(void)
{
	asp_atomic_store_release(&g_forking, 0);
	asp_unlock(&g_gate);
}

int asp__thread_stuck(uintptr_t holder)
{
	return asp_atomic_load_acquire(&((const struct asp_thread *)holder)->stuck);
}

void asp__threads_atfork_prepare(void)
{
	asp_lock(&g_lock);
}

void asp__threads_atfork_release(void)
{
	asp_unlock(&g_lock);
}

void asp__threads_atfork_child(void)
{
	/* The child has one thread: the others' records keep what they
	 * counted before the fork, as valgrind's child inherits its parent's
	 * heap figures. The surviving thread's tid has changed. */
	pid_t tid = asp_gettid();
	uintptr_t self = (uintptr_t)pthread_self();
	int active = 0;
	gate_init();	/* the child's memory is new: registered again */
	for (struct asp_thread *t = g_records; t; t = t->next) {
		if (t->self == self && t->state == ASP_THREAD_ACTIVE) {
			t->tid = tid;
			struct asp_thread_summary *s = summary_of(t);
			if (s)
				s->tid = tid;
			active = 1;
		} else if (t->state == ASP_THREAD_ACTIVE) {
			if (asp__thread_gone_hook != NULL)
				asp__thread_gone_hook(t);
			t->state = ASP_THREAD_DYING;
			g_dying++;
			struct asp_thread_summary *s = summary_of(t);
			if (s)
				s->exited = 1;
		}
	}
	asp__threads_active = active;
}
