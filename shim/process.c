/* process.c - the process's life under the shim, in one place: start-up,
 * threads, fork, the periodic ticker, fatal signals and the exit report.
 *
 * The invariants, to be checked against the code below and in the files
 * named:
 *
 * 1. Locks. The shim owns these, taken in this order and never the other
 *    way round (each named by its file and variable: t72 holds this list
 *    against the code):
 *      the fork gate                               (thread.c: g_gate)
 *      the stack store's stripes                   (stack.c: lock)
 *      the snapshot lock                           (snapshot.c: g_lock)
 *      the 64 side shards of the live table        (live.c: holder)
 *      the registry of thread records              (thread.c: g_lock)
 *      the thread-start list                       (process.c: g_start_lock)
 *      the 64 shards of the sampled blocks         (sample.c: holder)
 *      the index of call sites                     (sitemap.c: g_holder)
 *      the heap errors                             (errors.c: g_lock)
 *      the arena                                   (arena.c: g_lock)
 *    The arena is a leaf; so are the site index and the heap errors but
 *    for the arena. Every lock but the shards (of the live table and of
 *    the table of sampled blocks) and the site index is held only with all
 *    signals blocked, so a signal handler never finds its own thread
 *    holding one. A shard is held only around one table operation and its
 *    counts, and its holder waits for nothing but the arena; a signal
 *    handler that lands while its thread is inside the table never waits
 *    for a shard: it tries once and otherwise defers its operation to the
 *    thread's next one (account.c, sample.c); one that lands in its
 *    thread's add to the site index gives its block no index.
 * 2. fork. The prepare handler is registered at start-up, before the
 *    program can register its own, so it runs last: the program's handlers
 *    may take locks whose holders allocate. It blocks signals and takes
 *    every lock above in that order, except the site index and the heap
 *    errors, which the child lets go of (a site added again, an error
 *    half kept: sitemap.c, errors.c), a shard the forking thread
 *    holds already (a fork from a signal handler inside the table), or one
 *    of the sampled blocks' that a thread stuck in such a handler holds
 *    (the child rebuilds it). It waits only for holders to let go, and no
 *    holder waits for it; for threads to finish a change of the table
 *    (account.h: they take no lock in one); and,
 *    for other threads to leave the loader's module list (libunwind's, a
 *    dump's: at most 100 ms while they wait for its lock, as long as it
 *    takes once they hold it: thread.h, asp__loader_enter). Parent
 *    and child let go of the same locks; before that the child marks the
 *    other threads' records dead, makes their deferred table operations,
 *    publishes their in-use deltas, and restarts what it inherited half
 *    done: an exit report or a periodic dump of another thread, the ticker.
 * 3. The state (account.h: asp__state) changes here only: counting
 *    starts in asp__init_slow and stops once (asp__counting_stop), for
 *    the exit report or a fatal signal's, which call it. The report holds
 *    every shard while it reads the counters and the table, so the two
 *    agree (allocs - frees == blocks in use); from then until the leak scan
 *    is done, other threads' frees wait (asp__frozen) so that no block it
 *    reads goes back to the allocator.
 * 4. The exit report runs after every exit handler and destructor: it is
 *    an exit handler registered before __libc_start_main registers the
 *    loader's, so it runs after that one (they run in reverse order). Then
 *    glibc's and libstdc++'s freeres, as valgrind runs them at the very
 *    end; an exit status asked for by ALLOCSPY_ERROR_EXITCODE is applied
 *    after stdio has been flushed.
 * 5. The shim's signal handlers (fatal signals, the registers of the leak
 *    scan) allocate nothing from the program's heap and take no lock their
 *    own thread may hold: the report writes its dump with a private jansson
 *    whose memory comes from the arena.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "account.h"
#include "arena.h"
#include "guard.h"
#include "leak.h"
#include "loader.h"
#include "live.h"
#include "liveview.h"
#include "lock.h"
#include "next.h"
#include "options.h"
#include "process.h"
#include "report.h"
#include "sample.h"
#include "sitemap.h"
#include "snapshot.h"
#include "stack.h"
#include "thread.h"
#include "world.h"

extern void __libc_freeres(void);
extern FILE *_IO_list_all;	/* glibc: every open stream, chained by _chain */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

static pid_t g_pid;
static pid_t g_loading;		/* the thread setting the shim up */
static int g_freeres_ran;
static void (*g_cxx_freeres)(void);	/* libstdc++'s __gnu_cxx::__freeres */

/* The report formats numbers in the C locale, whatever the program chose
 * (its data is static). After freeres: glibc's frees the names of the
 * global locale only for the categories the thread's locale uses. */
static void c_locale(void)
{
	locale_t c = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c != (locale_t)0)
		uselocale(c);
}

pid_t asp__process_pid(void)
{
	return g_pid;
}

/* Start-up ------------------------------------------------------------------ */

static void atfork_prepare(void);
static void atfork_parent(void);
static void atfork_child(void);
static void catch_fatal_signals(void);
static void leave_ld_preload(void);
static void start_ticker(void);

/* glibc's registration under pthread_atfork; dso NULL: for good. */
extern int __register_atfork(void (*prepare)(void), void (*parent)(void), void (*child)(void),
                             void *dso);

static void catch_fatal_signals(void);
static void guard_signals(void);

int asp__init_slow(void)
{
	static int once;
	if (asp__next_init() < 0)
		return 0;
	if (g_loading != 0 && g_loading == asp_gettid())
		return 0;
	int expected = 0;
	if (__atomic_compare_exchange_n(&once, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/* What this thread allocates meanwhile (dlsym, the loader) is
		 * the shim's: it comes from the bootstrap arena. */
		g_loading = asp_gettid();
		asp__report_start();
		asp__options_init();
		asp__thread_init();
		asp__loader_init();
		/* Not pthread_atfork: it names the shim's DSO, and the DSO's
		 * destructor at exit would then take the handlers away, even
		 * between one fork's prepare and parent handlers, while other
		 * threads still fork. */
		__register_atfork(atfork_prepare, atfork_parent, atfork_child, NULL);
		g_pid = getpid();
		asp__thread_exit_hook = asp__account_thread_exit;
		asp__live_stuck = asp__thread_stuck;
		asp__thread_gone_hook = asp__account_thread_gone;
		if (!asp__opt.follow_children)
			leave_ld_preload();
		if (asp__opt.dump_on_signal)
			catch_fatal_signals();
		asp__guard_init();
		guard_signals();
		asp__sample_init();
		asp__snapshot_init();
		asp__stack_init();
		asp__liveview_init();
		/* Looked up now: a failed dlsym allocates its message. */
		g_cxx_freeres = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv");
		g_loading = 0;
		asp_atomic_store_release(&asp__state, asp__fast_mode());
		start_ticker();
	} else {
		while (asp_atomic_load_acquire(&asp__state) == ASP_STATE_START)
			sched_yield();
	}
	return 1;
}

void asp__counting_stop(int freeze)
{
	if (freeze)
		asp_atomic_store_release(&asp__frozen, asp_gettid());
	asp_atomic_store_release(&asp__state, ASP_STATE_STOPPED);
}

void asp__counting_restart(void)
{
	asp_atomic_store_release(&asp__frozen, 0);
	asp_atomic_store_release(&asp__state, asp__fast_mode());
}

void asp__init(void)
{
	if (asp_atomic_load_acquire(&asp__state) == ASP_STATE_START)
		asp__init_slow();
}

void *asp__load_private(const char *name)
{
	/* Only at set-up (g_loading is this thread), so that this thread's
	 * calls all take the bootstrap path; or in a fatal signal's copy of
	 * the process (report.c). In a link namespace of its own, with its
	 * own copy of the C library and of its dependencies (libunwind's
	 * liblzma): a library the program loads later is loaded for it as it
	 * would be without the shim, and the unwinder's allocations go to
	 * that copy's heap, never the program's. Where that namespace cannot
	 * be made (the loader's static TLS room used up, the namespaces all
	 * taken), the program's namespace, as before. */
	void *h = dlmopen(LM_ID_NEWLM, name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	return h;
}

/* ALLOCSPY_FOLLOW_CHILDREN=no: the shim leaves LD_PRELOAD, so programs
 * this one executes run untraced. The entry is blanked in place (a space
 * separates LD_PRELOAD entries as a colon does). */
static void leave_ld_preload(void)
{
	Dl_info me;
	if (!dladdr((void *)leave_ld_preload, &me) || me.dli_fname == NULL)
		return;
	const char *base = strrchr(me.dli_fname, '/');
	base = base ? base + 1 : me.dli_fname;
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11) != 0)
			continue;
		for (char *p = *e + 11; *p;) {
			size_t len = strcspn(p, ": ");
			const char *slash = memrchr(p, '/', len);
			const char *name = slash ? slash + 1 : p;
			size_t nlen = len - (size_t)(name - p);
			if (nlen == strlen(base) && memcmp(name, base, nlen) == 0)
				memset(p, ' ', len);
			p += len;
			p += *p != '\0';
		}
	}
}

/* The program's arguments, copied before it can change them. */
static int g_argc;
static char **g_argv;

int asp__argc(void)
{
	return g_argc;
}

char *const *asp__argv(void)
{
	return g_argv;
}

static void copy_argv(int argc, char **argv)
{
	size_t bytes = 0;
	int n = 0;
	while (n < argc && argv && argv[n] && n < 65536)
		bytes += strlen(argv[n++]) + 1;
	char **v = asp__pages_alloc((size_t)(n + 1) * sizeof *v + bytes);
	if (v == NULL)
		return;
	char *s = (char *)(v + n + 1);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(argv[i]) + 1;
		memcpy(s, argv[i], len);
		v[i] = s;
		s += len;
	}
	g_argv = v;
	g_argc = n;
}

void asp__constructor(int argc, char **argv)
{
	asp__init();
	if (g_argv == NULL)
		copy_argv(argc, argv);
}

/* Threads -------------------------------------------------------------------- */

/* Thread start records, recycled through a free list of mmap'd memory. */
struct start {
	void *(*fn)(void *);
	void *arg;
	struct start *next;
};

static asp_lock_t g_start_lock = ASP_LOCK_INIT;
static struct start *g_free_starts;

static void start_put(struct start *st)
{
	sigset_t old;
	asp_lock_nosig(&g_start_lock, &old);
	st->next = g_free_starts;
	g_free_starts = st;
	asp_unlock_nosig(&g_start_lock, &old);
}

static struct start *start_get(void)
{
	sigset_t old;
	asp_lock_nosig(&g_start_lock, &old);
	struct start *st = g_free_starts;
	if (st != NULL)
		g_free_starts = st->next;
	asp_unlock_nosig(&g_start_lock, &old);
	return st != NULL ? st : asp__arena_alloc(sizeof *st);
}

static void *thread_trampoline(void *p)
{
	struct start *st = p;
	void *(*fn)(void *) = st->fn;
	void *arg = st->arg;
	start_put(st);
	asp__init();
	struct asp_thread *t = asp__thread_self();
	t->start_sp = (uintptr_t)__builtin_frame_address(0);
	if (asp__stack_bounds_wanted()) {
		/* Where its stack lies (the stack cache keeps only stacks taken
		 * on it); what pthread_getattr_np allocates is the shim's. */
		pthread_attr_t a;
		void *lo;
		size_t size;
		t->depth++;
		if (pthread_getattr_np(pthread_self(), &a) == 0) {
			if (pthread_attr_getstack(&a, &lo, &size) == 0)
				t->stack_lo = (uintptr_t)lo;
			pthread_attr_destroy(&a);
		}
		t->depth--;
	}
	return fn(arg);
}

int asp__pthread_create(pthread_t *thread, const pthread_attr_t *attr,
                        void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	asp__init();
	if (real == NULL)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			asp__next_sym("pthread_create");
	struct start *st = start_get();
	if (st == NULL)
		return real(thread, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	int err = real(thread, attr, thread_trampoline, st);
	if (err != 0)
		start_put(st);
	return err;
}

/* dlopen with RTLD_DEEPBIND would bind the library's malloc to libc past
 * the shim: the flag is dropped, with one warning. The real dlopen is
 * reached by a tail call, so it still sees the program as its caller (for
 * the caller's RUNPATH and namespace). */
void *asp__dlopen(const char *file, int flags)
{
	static void *(*real)(const char *, int);
	static int warned;
	if (real == NULL)
		real = (void *(*)(const char *, int))asp__next_sym("dlopen");
	if ((flags & RTLD_DEEPBIND) && !warned++)
		asp__warn("dlopen(", file ? file : "NULL", ", RTLD_DEEPBIND): the flag is dropped");
	return real(file, flags & ~RTLD_DEEPBIND);
}

int asp__dlclose(void *handle)
{
	static int (*real)(void *);
	if (real == NULL)
		real = (int (*)(void *))asp__next_sym("dlclose");
	int r = real(handle);
	__atomic_fetch_add(&asp__code_gen, 1, __ATOMIC_RELEASE);
	return r;
}

/* fork ------------------------------------------------------------------------ */

static uint64_t g_fork_shards;	/* the shards the forking thread took */
static uint64_t g_fork_skipped;	/* and those another forking thread held */
static struct asp_thread *g_forker;
static sigset_t g_fork_mask;	/* its signal mask before prepare */

static void atfork_prepare(void)
{
	/* The process is ending: its report comes before any fork. */
	asp__world_hold();
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	struct asp_thread *t = asp__state > 0 ? asp__thread_self() : NULL;
	if (t != NULL)
		asp_atomic_store_release(&t->stuck, 1);
	asp__loader_fork_close(t);
	asp__stack_atfork_prepare();
	asp__snapshot_atfork_prepare();
	uint64_t skipped;
	asp__gather_begin(t);
	uint64_t taken = asp__live_lock_all((uintptr_t)t, &skipped);
	asp__threads_atfork_prepare();
	asp_lock(&g_start_lock);
	asp__sample_atfork_prepare(t);
	asp__arena_atfork_prepare();
	g_fork_shards = taken;
	g_fork_skipped = skipped;
	g_forker = t;
	g_fork_mask = old;
}

static void unlock_after_fork(int child)
{
	sigset_t mask = g_fork_mask;
	struct asp_thread *t = g_forker;
	if (!child)
		asp__arena_atfork_release();
	asp__sample_atfork_release();
	asp_unlock(&g_start_lock);
	asp__threads_atfork_release();
	asp__live_unlock_all(g_fork_shards);
	asp__gather_end();
	asp__snapshot_atfork_release();
	asp__stack_atfork_release();
	asp__loader_fork_open();
	if (t != NULL)
		asp_atomic_store_release(&t->stuck, 0);
	pthread_sigmask(SIG_SETMASK, &mask, NULL);
}

static void atfork_parent(void)
{
	unlock_after_fork(0);
}

static void atfork_child(void)
{
	g_pid = getpid();
	asp__loader_atfork_child();
	/* Only this thread is left: every lock is this thread's. The arena,
	 * a leaf, is let go first: the table grows from it as the other
	 * threads' pending blocks and deferred operations go in. */
	asp__arena_atfork_release();
	asp__threads_atfork_child();
	asp__world_atfork_child();
	asp__snapshot_atfork_child();
	asp__report_atfork_child();
	/* Gatherers of the parent's other threads are gone: only the fork's
	 * own count is left, let go below. A site index another thread was
	 * adding is free again. */
	asp__gathering = 1;
	asp__sitemap_atfork_child();
	uint64_t skipped = g_fork_skipped;
	unlock_after_fork(1);
	asp__live_repair(skipped);
	asp__sample_atfork_child();
	asp__liveview_atfork_child();
	start_ticker();
}

/* The ticker: ALLOCSPY_INTERVAL_MS asks for work every so often whether or
 * not the program allocates much, and the live view (liveview.c) is
 * updated every second. It bumps asp__epoch, and the next allocation of
 * any thread then does the work (a dump); the live view it writes itself.
 *
 * It shares the program's memory but is neither one of its threads nor
 * one of its children: a program that counts its threads (waits until it
 * has one left, or warns before a fork when it has more) finds only its
 * own, and one that waits for every child, as strace waits for every
 * clone it knows (__WALL), is not kept waiting. So it is made as a daemon
 * is, twice: clone(CLONE_VM) makes a first process that makes the ticker
 * the same way and ends at once, reaped here; the ticker's parent is then
 * init (or the nearest subreaper). Every signal blocked, no TLS of its own
 * (its thread pointer is its creator's): system calls raw, no errno, no
 * allocation; it adds nothing to the program's figures. It closes the
 * descriptors it was made with (a pipe the program closes must reach its
 * end), waits on a pidfd of the program, and ends when the program does,
 * or when the program no longer has this memory (it ran execve: kcmp). */
#define TICKER_STACK (64 * 1024)
#define KCMP_VM_TYPE 1		/* <linux/kcmp.h>'s KCMP_VM */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

static pid_t g_ticker_parent;	/* the program */
static char *g_ticker_stack;

/* 2 when the program is gone, 1 when it runs another program than this
 * one, else 0. */
static int ticker_orphan(long pidfd, long self)
{
	struct pollfd p = { (int)pidfd, POLLIN, 0 };
	struct timespec none = { 0, 0 };
	if (pidfd >= 0 && asp__raw_syscall(SYS_ppoll, (long)&p, 1, (long)&none, 0, 8, 0) > 0)
		return 2;
	long k = asp__raw_syscall(SYS_kcmp, g_ticker_parent, self, KCMP_VM_TYPE, 0, 0, 0);
	if (k == -ESRCH || asp__raw_syscall(SYS_kill, g_ticker_parent, 0, 0, 0, 0, 0) == -ESRCH)
		return 2;
	return k > 0;
}

static int ticker_main(void *arg)
{
	long half_ms = (long)(intptr_t)arg;	/* 0: the live view only */
	long step = half_ms > 0 && half_ms < 1000 ? half_ms : 1000, since = 0;
	struct timespec ts = { step / 1000, (step % 1000) * 1000000 };
	long pidfd = asp__raw_syscall(SYS_pidfd_open, g_ticker_parent, 0, 0, 0, 0, 0);
	long self = asp__raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	asp__raw_syscall(SYS_prctl, PR_SET_NAME, (long)"allocspy-tick", 0, 0, 0, 0);
	if (pidfd >= 0) {
		/* every descriptor but the pidfd */
		if ((pidfd > 0 && asp__raw_syscall(SYS_close_range, 0, pidfd - 1, 0, 0, 0, 0) != 0) ||
		    asp__raw_syscall(SYS_close_range, pidfd + 1, ~0u, 0, 0, 0, 0) != 0)
			for (long fd = 0; fd < 4096; fd++)
				if (fd != pidfd)
					asp__raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	} else if (asp__raw_syscall(SYS_close_range, 0, ~0u, 0, 0, 0, 0) != 0) {
		for (long fd = 0; fd < 4096; fd++)
			asp__raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	for (;;) {
		/* The pidfd turns readable when the program ends. (ppoll
		 * leaves what was left of the time in its argument: a copy.) */
		struct pollfd p = { (int)pidfd, POLLIN, 0 };
		struct timespec left = ts;
		if (pidfd >= 0)
			asp__raw_syscall(SYS_ppoll, (long)&p, 1, (long)&left, 0, 8, 0);
		else
			asp__raw_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
		int gone = ticker_orphan(pidfd, self);
		if (gone) {
			/* Killed before its exit report, or it ran another
			 * program: the view goes too. */
			asp__liveview_gone(gone == 1);
			asp__raw_syscall(SYS_exit, 0, 0, 0, 0, 0, 0);
		}
		since += step;
		if (half_ms > 0 && since >= half_ms) {
			since = 0;
			__atomic_add_fetch(&asp__epoch, 1, __ATOMIC_RELAXED);
		}
		asp__liveview_tick();
	}
	return 0;
}

/* The first process: it makes the ticker, on the upper part of the
 * stack, and ends. */
static int ticker_maker(void *arg)
{
	clone(ticker_main, g_ticker_stack + TICKER_STACK, CLONE_VM, arg);
	return 0;
}

static void start_ticker(void)
{
	if (asp__opt.interval_ms <= 0 && !asp__liveview_wanted())
		return;
	char *stack = asp__pages_alloc(TICKER_STACK);
	if (stack == NULL)
		return;
	long half = asp__opt.interval_ms <= 0 ? 0 : asp__opt.interval_ms / 2 > 0 ? asp__opt.interval_ms / 2 : 1;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int saved = errno;
	g_ticker_parent = getpid();
	g_ticker_stack = stack;
	int pid = clone(ticker_maker, stack + TICKER_STACK / 4, CLONE_VM, (void *)(intptr_t)half);
	if (pid > 0)
		while (waitpid(pid, NULL, __WALL) < 0 && errno == EINTR)
			;
	errno = saved;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Fatal signals (ALLOCSPY_DUMP_ON_SIGNAL) -------------------------------------
 *
 * As valgrind does by default, a signal that ends the process by its
 * default action first gets the report: valgrind's "Process terminating
 * with default action of signal N" lines, the summaries and the dump; then
 * the process dies of that signal, with the wait status it would have had.
 * The shim's handler sits where the program left the default action, and
 * the program cannot tell: sigaction and signal (interposed below) show it
 * the default action there, and its asking for the default action keeps
 * the handler (or puts it back), since that is what the default action
 * now does. A program's own handler, or SIG_IGN, replaces it as usual. */

/* The signals whose default action ends the process; not the real-time
 * ones, of which the leak scan's stop of the other threads takes one
 * (world.c). */
static const int g_fatal_sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS,
                                    SIGFPE, SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                                    SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO,
                                    SIGPWR, SIGSYS };

static int g_fatal;
static pid_t g_fatal_tid;		/* the thread making the report */
static unsigned char g_caught[NSIG];	/* the shim's handler is there */

/* The C library's own (sigaction below is the program's view). */
extern int __sigaction(int sig, const struct sigaction *act, struct sigaction *old);

int asp__fatal_signal(void)
{
	return g_fatal;
}

static int is_fatal(int sig)
{
	for (size_t i = 0; i < ASP_ARRAY_SIZE(g_fatal_sigs); i++)
		if (g_fatal_sigs[i] == sig)
			return 1;
	return 0;
}

static void on_fatal(int sig, siginfo_t *si, void *uc);

/* Puts the shim's handler on sig. */
static int catch_one(int sig)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fatal;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_NODEFER;
	int r = __sigaction(sig, &sa, NULL);
	if (r == 0)
		asp_atomic_store_release(&g_caught[sig], 1);
	return r;
}

/* The report is made in the handler, on the thread the signal landed on:
 * it takes no lock that thread may hold and allocates nothing from the
 * program's heap (invariant 5); the interrupted stack is taken and named
 * by a copy of the process (report.c). Then the signal's default action:
 * a fault the kernel raised for an instruction happens again when the
 * handler returns to it (a core dump then shows it), any other signal is
 * raised again. */
static void on_fatal(int sig, siginfo_t *si, void *uc)
{
	/* Nothing interrupts the report: a second signal waits for the end,
	 * when the process dies of the first. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int mine = getpid() == g_pid;	/* not a vfork child's */
	if (mine)
		asp_atomic_store_release(&g_caught[sig], 0);
	int expected = 0;
	int first = mine && __atomic_compare_exchange_n(&g_fatal, &expected, sig, 0,
	                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (first && !asp__report_begun()) {
		asp_atomic_store_release(&g_fatal_tid, asp_gettid());
		struct asp_thread *t = asp__state > 0 ? asp__thread_self() : NULL;
		/* This thread may hold a shard: others must not wait for it. */
		if (t != NULL)
			asp_atomic_store_release(&t->stuck, 1);
		asp__world_stop();
		asp__report_fatal(sig, si, uc);
		c_locale();
		asp__finish();
	} else if (mine && !first) {
		/* Another thread makes the report, then ends the process. */
		pid_t tid;
		while ((tid = asp_atomic_load_acquire(&g_fatal_tid)) != asp_gettid() &&
		       (tid == 0 || syscall(SYS_tgkill, g_pid, tid, 0) == 0))
			sched_yield();
	} else if (mine) {
		/* The exit report is under way on another thread: the process
		 * dies of the signal once the dump and the text are written. */
		pid_t tid;
		while (!asp__report_done() && (tid = asp__report_begun()) != asp_gettid() &&
		       syscall(SYS_tgkill, g_pid, tid, 0) == 0)
			sched_yield();
	}
	struct sigaction dfl;
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	__sigaction(sig, &dfl, NULL);
	int fault = si != NULL && si->si_code > 0 &&
	            (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE);
	if (fault) {
		/* Back to the instruction, with the mask it had. */
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return;
	}
	sigset_t one;
	sigemptyset(&one);
	sigaddset(&one, sig);
	pthread_sigmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ALLOCSPY_GUARD: the shim's handler stays on SIGSEGV and SIGBUS whatever
 * the program asks (sigaction and signal below keep what it asks here,
 * and show it back), so that a fault on the pool is the shim's (guard.h);
 * any other fault goes to what the program asked for, as the kernel would
 * have sent it. */
static struct sigaction g_guard_prog[NSIG];	/* SIGSEGV's and SIGBUS's */

static int guards(int sig)
{
	return asp__guard_mean != 0 && (sig == SIGSEGV || sig == SIGBUS);
}

static void on_guard_fault(int sig, siginfo_t *si, void *uc)
{
	if (getpid() == g_pid && asp__guard_fault(si, uc)) {
		/* the pool's: reported with the signal's default action */
		on_fatal(sig, si, uc);
		return;
	}
	struct sigaction *p = &g_guard_prog[sig];
	if (p->sa_handler == SIG_IGN) {
		return;		/* the fault comes again: the kernel ends it */
	} else if (p->sa_handler == SIG_DFL) {
		if (asp__opt.dump_on_signal) {
			on_fatal(sig, si, uc);
		} else {
			struct sigaction dfl;
			memset(&dfl, 0, sizeof dfl);
			dfl.sa_handler = SIG_DFL;
			__sigaction(sig, &dfl, NULL);
		}
		return;
	}
	/* The program's handler, as the kernel would call it: its mask (and
	 * the signal, unless SA_NODEFER) blocked meanwhile, SA_RESETHAND. */
	struct sigaction h = *p;
	sigset_t mask = h.sa_mask, old;
	if (!(h.sa_flags & SA_NODEFER))
		sigaddset(&mask, sig);
	if (h.sa_flags & SA_RESETHAND) {
		memset(p, 0, sizeof *p);
		p->sa_handler = SIG_DFL;
	}
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (h.sa_flags & SA_SIGINFO)
		h.sa_sigaction(sig, si, uc);
	else
		h.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void guard_signals(void)
{
	for (int sig = SIGBUS; sig <= SIGSEGV; sig++) {
		if (!guards(sig))
			continue;
		__sigaction(sig, NULL, &g_guard_prog[sig]);
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_guard_fault;
		sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
		__sigaction(sig, &sa, NULL);
	}
}

/* The program's sigaction or signal on a guarded signal: kept for it. */
static int guard_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction was = g_guard_prog[sig];
	if (act != NULL)
		g_guard_prog[sig] = *act;
	if (old != NULL)
		*old = was;
	return 0;
}

static void catch_fatal_signals(void)
{
	for (size_t i = 0; i < ASP_ARRAY_SIZE(g_fatal_sigs); i++) {
		struct sigaction old;
		if (__sigaction(g_fatal_sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			continue;	/* the program's own handler, or SIG_IGN, stays */
		catch_one(g_fatal_sigs[i]);
	}
}

/* The program's sigaction: the shim's handler is the default action. */
int asp__sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig > 0 && sig < NSIG && guards(sig) && getpid() == g_pid)
		return guard_sigaction(sig, act, old);
	if (sig <= 0 || sig >= NSIG || !asp__opt.dump_on_signal || !is_fatal(sig) ||
	    getpid() != g_pid)
		return __sigaction(sig, act, old);
	int ours = asp_atomic_load_acquire(&g_caught[sig]);
	struct sigaction was;
	if (act != NULL && act->sa_handler == SIG_DFL) {
		/* The default action: the shim's handler stays, or comes back. */
		if (!ours && (__sigaction(sig, NULL, &was) != 0 || catch_one(sig) != 0))
			return __sigaction(sig, act, old);
	} else if (__sigaction(sig, act, &was) != 0) {
		return -1;
	} else if (act != NULL) {
		asp_atomic_store_release(&g_caught[sig], 0);
	}
	if (old != NULL) {
		if (ours) {
			memset(old, 0, sizeof *old);
			old->sa_handler = SIG_DFL;
		} else {
			*old = was;
		}
	}
	return 0;
}

/* signal and its aliases: the same view. */
sighandler_t asp__signal(int sig, sighandler_t handler)
{
	static sighandler_t (*real)(int, sighandler_t);
	if (sig > 0 && sig < NSIG && guards(sig) && getpid() == g_pid) {
		struct sigaction act, was;
		memset(&act, 0, sizeof act);
		act.sa_handler = handler;
		act.sa_flags = SA_RESTART;	/* signal's BSD semantics */
		guard_sigaction(sig, &act, &was);
		return was.sa_handler;
	}
	if (sig <= 0 || sig >= NSIG || !asp__opt.dump_on_signal || !is_fatal(sig) ||
	    getpid() != g_pid) {
		if (real == NULL)
			real = (sighandler_t (*)(int, sighandler_t))asp__next_sym("signal");
		return real(sig, handler);
	}
	int ours = asp_atomic_load_acquire(&g_caught[sig]);
	struct sigaction was;
	if (handler == SIG_DFL) {
		if (!ours && (__sigaction(sig, NULL, &was) != 0 || catch_one(sig) != 0))
			return SIG_ERR;
		return ours ? SIG_DFL : was.sa_handler;
	}
	if (real == NULL)
		real = (sighandler_t (*)(int, sighandler_t))asp__next_sym("signal");
	sighandler_t prev = real(sig, handler);
	if (prev == SIG_ERR)
		return prev;
	asp_atomic_store_release(&g_caught[sig], 0);
	return ours ? SIG_DFL : prev;
}

/* The end ------------------------------------------------------------------------ */

static int g_in_freeres;

int asp__in_freeres(void)
{
	return g_in_freeres;
}

/* What freeres frees is counted, as every free is, but not given back to
 * the allocator underneath: the process is ending, and the bare program
 * runs no freeres at all. glibc's free of a chunk beside the top of the
 * heap first merges every small chunk the program has freed (its
 * malloc_consolidate): a C++ program that freed a map of 400,000 nodes
 * before it returned spent 70 ms there, in the shim's time. */
static void keep_block(void *p)
{
	(void)p;
}

/* valgrind's last act before its leak check: libstdc++'s freeres, then
 * glibc's, which free what they keep for the whole run (the emergency
 * exception pool, stdio buffers, thread stacks and DTVs, locale data).
 * Only when no other thread can run (world.c): freeing those under a
 * running thread could crash it. */
static void run_freeres(void)
{
	if (asp__opt.freeres == 0 || !asp__world_stop())
		return;
	void (*free_)(void *) = asp__next.free;
	asp__next.free = keep_block;
	g_in_freeres = 1;
	if ((asp__opt.freeres & ASP_FREERES_CXX) && g_cxx_freeres != NULL)
		g_cxx_freeres();
	if (asp__opt.freeres & ASP_FREERES_LIBC)
		__libc_freeres();
	g_in_freeres = 0;
	asp__next.free = free_;
	g_freeres_ran = 1;
}

int asp__freeres_ran(void)
{
	return g_freeres_ran;
}

/* _exit leaves stdio's buffers unwritten, and glibc's freeres would write
 * them: what is pending is dropped first (and what was read ahead is kept
 * unread, so that no file offset moves). */
static void drop_stdio_buffers(void)
{
	for (FILE *fp = _IO_list_all; fp != NULL; fp = fp->_chain) {
		fp->_IO_write_ptr = fp->_IO_write_base;
		fp->_IO_read_ptr = fp->_IO_read_end;
	}
}

static int g_final_registered;

/* Applies ALLOCSPY_ERROR_EXITCODE, once stdio's buffers are out. */
static void exit_status_now(void)
{
	int st = asp__report_exit_status();
	if (st < 0)
		return;
	fflush(NULL);
	asp__exit_now(st);
}

/* Registers final_exit as an exit handler. Done inside the shim: a block
 * glibc may allocate for the list of handlers is the shim's, which the
 * program under valgrind would not have. */
static int register_final(void (*fn)(void *))
{
	struct asp_thread *t = asp__thread_self();
	t->depth++;
	int err = __cxa_atexit(fn, NULL, NULL);
	t->depth--;
	return err;
}

static void final_exit(void *arg);

/* The report is made by the last exit handler. glibc keeps the handlers
 * in blocks of 32, the first one static, the others allocated, and frees
 * each allocated block once its handlers have run. When more than 31
 * handlers were registered before main (libraries' constructors: one per
 * global object of a C++ library, say), final_exit sits in an allocated
 * block, and glibc frees that block and the older ones after it returns:
 * frees valgrind counts, as it reports at the very end. So final_exit
 * first registers itself again, once. During exit glibc puts a new
 * handler in the oldest block whose handlers have all run (the libraries'
 * have: ld.so's destructors ran them, and those of the program's blocks
 * newer than final_exit's ran before it), frees the blocks above, and then
 * runs it. */
static void final_again(void *arg)
{
	(void)arg;
	if (getpid() != g_pid)
		return;
	if (register_final(final_exit) == 0)
		return;
	final_exit(NULL);
}

static void final_exit(void *arg)
{
	(void)arg;
	if (getpid() != g_pid || asp__opt.skipped)
		return;
	if (asp_gettid() == g_pid)	/* exit's frames, above this one */
		asp__leak_note_handler((uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *));
	asp__world_stop();
	run_freeres();
	c_locale();
	asp__finish();
	exit_status_now();
}

typedef int (*main_fn)(int, char **, char **);
static main_fn g_main;

static int main_trampoline(int argc, char **argv, char **envp)
{
	/* Main's frame lies below this frame's return address. */
	asp__leak_note_main_frame((uintptr_t)__builtin_frame_address(0) + 2 * sizeof(void *));
	int status = g_main(argc, argv, envp);
	asp__leak_note_main_returned();
	return status;
}

/* quick_exit runs the at_quick_exit handlers, then ends as _exit does,
 * exit's handlers left out. The report then comes from a handler of the
 * shim's, registered with the first so that it runs last, with the status
 * quick_exit was given. */
static int g_quick_status;

static void quick_final(void)
{
	asp__exit_fast(asp_atomic_load_relaxed(&g_quick_status));
}

void asp__quick_exit(int status, uintptr_t sp)
{
	asp__leak_note_exit(sp);
	asp_atomic_store_relaxed(&g_quick_status, status);
	void (*real)(int) = (void (*)(int))asp__next_sym("quick_exit");
	real(status);
	__builtin_unreachable();
}

int asp__libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                         void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	asp__init();
	if (g_argv == NULL)
		copy_argv(argc, argv);
	int (*real)(void *, int, char **, void (*)(void), void (*)(void), void (*)(void), void *) =
		(int (*)(void *, int, char **, void (*)(void), void (*)(void), void (*)(void), void *))
		asp__next_sym("__libc_start_main");
	g_main = (main_fn)main;
	g_final_registered = register_final(final_again) == 0;
	struct asp_thread *t = asp__thread_self();
	t->depth++;
	if (at_quick_exit(quick_final) != 0)
		asp__warn("at_quick_exit failed: no report if the program ends by quick_exit", "", "");
	t->depth--;
	return real((void *)main_trampoline, argc, argv, init, fini, rtld_fini, stack_end);
}

void asp__exit(int status, uintptr_t sp)
{
	asp__leak_note_exit(sp);
	void (*real)(int) = (void (*)(int))asp__next_sym("exit");
	real(status);
	__builtin_unreachable();
}

/* _exit and _Exit: the report too, and freeres, as valgrind's. */
void asp__exit_fast(int status)
{
	/* A vfork child (the memory is the parent's), or a program not traced */
	if (getpid() != g_pid || asp__opt.skipped)
		asp__exit_now(status);
	int all = asp__world_stop();
	if (asp__opt.freeres != 0 && all) {
		drop_stdio_buffers();
		run_freeres();
	}
	c_locale();
	asp__finish();
	int st = asp__report_exit_status();
	asp__exit_now(st >= 0 ? st : status);
}

/* Without __libc_start_main (a program started some other way), the
 * report is made at the shim's own destructor. */
void asp__destructor(void)
{
	if (g_final_registered || getpid() != g_pid || asp__opt.skipped)
		return;
	c_locale();
	asp__finish();
	exit_status_now();
}
