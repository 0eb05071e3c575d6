/* world.c - stopping the program's other threads at its end.
 *
 * valgrind stops every other thread before it runs freeres and scans the
 * heap: nothing then runs under the freed stdio buffers or moves pointers
 * while they are read. The shim gets as close as it safely can. Each
 * other thread gets a real-time signal whose handler looks at where the
 * thread was. In code outside the C library, the loader, the C++ runtime
 * and the shim, it holds none of their locks; blocked in a system call
 * that waits (read, poll, futex...), it may hold some, but none that the
 * end of the process needs, unless it waits for one of those locks
 * itself: a thread inside fork(2) may hold the stdio list's lock while it
 * waits for an arena's. So just before the signal goes, the thread's
 * system call is read from /proc, and a wait is approved only when it is
 * not a futex on the C library's or the loader's own data or on an
 * arena's lock; the handler parks the thread only at that very call.
 * Parked, a thread stays for good, its registers noted (the leak scan's
 * roots). Anywhere else the handler returns at once, and the thread is
 * asked again a millisecond later.
 * A thread that blocks the signal counts as stopped only while it waits
 * in futex(2) with no timeout (a join, a mutex, a condition nobody else
 * can signal now). Nothing here allocates. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "arena.h"
#include "glue.h"
#include "loader.h"
#include "thread.h"
#include "world.h"

#define ASP_WORLD_MAX 4096
#define ASP_WORLD_UNSAFE_MAX 16

static struct asp_world_thread *g_threads;
static size_t g_n;
static int g_done, g_all;
static int g_never;		/* parked threads wait on it forever */
static pid_t g_stopper;		/* the thread that stops the others */
static struct { uintptr_t lo, hi; } g_unsafe[ASP_WORLD_UNSAFE_MAX];
static int g_nunsafe;
static struct { uintptr_t lo, hi; } g_lockdata[ASP_WORLD_UNSAFE_MAX];
static int g_nlockdata;
pid_t asp__world_ticker;

/* System calls that wait (x86-64 numbers): a thread in one holds no lock
 * of the C library's. */
static int waits(unsigned long nr)
{
	static const unsigned short nrs[] = {
		0 /* read */, 7 /* poll */, 17 /* pread64 */, 19 /* readv */, 23 /* select */,
		34 /* pause */, 35 /* nanosleep */, 42 /* connect */, 43 /* accept */,
		45 /* recvfrom */, 47 /* recvmsg */, 61 /* wait4 */, 65 /* semop */,
		70 /* msgrcv */, 73 /* flock */, 128 /* rt_sigtimedwait */,
		130 /* rt_sigsuspend */, 202 /* futex */, 208 /* io_getevents */,
		220 /* semtimedop */, 230 /* clock_nanosleep */, 232 /* epoll_wait */,
		243 /* mq_timedreceive */, 247 /* waitid */, 270 /* pselect6 */, 271 /* ppoll */,
		281 /* epoll_pwait */, 288 /* accept4 */, 295 /* preadv */, 299 /* recvmmsg */,
		441 /* epoll_pwait2 */,
	};
	for (size_t i = 0; i < ASP_ARRAY_SIZE(nrs); i++)
		if (nrs[i] == nr)
			return 1;
	return 0;
}

static int unsafe_pc(uintptr_t pc)
{
	for (int i = 0; i < g_nunsafe; i++)
		if (pc >= g_unsafe[i].lo && pc < g_unsafe[i].hi)
			return 1;
	return 0;
}

static struct asp_world_thread *slot_of(pid_t tid)
{
	for (size_t i = 0; i < g_n; i++)
		if (g_threads[i].tid == tid)
			return &g_threads[i];
	return NULL;
}

static void on_stop(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	int saved = errno;
	struct asp_world_thread *w = slot_of(asp_gettid());
	const ucontext_t *uc = ctx;
	if (w == NULL) {
		errno = saved;
		return;
	}
	uintptr_t pc = asp_uc_pc(uc);
	uintptr_t di = asp_uc_arg0(uc);
	/* Outside every library whose locks matter, or at the approved wait:
	 * interrupted in it (pc just after the syscall instruction) or about
	 * to restart it (pc on it). */
	int ok = !unsafe_pc(pc) ||
	         (w->call_pc != 0 && (pc == w->call_pc || pc + 2 == w->call_pc) &&
	          di == w->call_arg);
	if (!ok) {
		asp_atomic_store_release(&w->asked, 0);
		errno = saved;
		return;
	}
	for (int r = 0; r < ASP_UC_NREGS; r++)
		w->gregs[r] = asp_uc_reg(uc, r);
	w->sp = asp_uc_sp(uc);
	asp_atomic_store_release(&w->state, ASP_WORLD_PARKED);
	for (;;)
		syscall(SYS_futex, &g_never, 0 /* FUTEX_WAIT */, 0, NULL, NULL, 0);
}

void asp__world_hold(void)
{
	pid_t s = asp_atomic_load_acquire(&g_stopper);
	if (s == 0 || s == asp_gettid())
		return;
	/* For good: the process ends with the stopper's exit. */
	for (;;)
		syscall(SYS_futex, &g_never, 0 /* FUTEX_WAIT */, 0, NULL, NULL, 0);
}

/* The C library, the loader, the C++ runtime and the shim: their text. */
static int unsafe_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	static const char *const names[] = { "libc.so", "ld-linux", "libstdc++.so", "libgcc_s.so",
	                                     "liballocspy.so" };
	const char *path = info->dlpi_name ? info->dlpi_name : "";
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	int hit = 0;
	for (size_t i = 0; i < ASP_ARRAY_SIZE(names); i++)
		hit |= strncmp(base, names[i], strlen(names[i])) == 0;
	Dl_info me;
	if (dladdr((void *)unsafe_cb, &me) && (uintptr_t)me.dli_fbase == info->dlpi_addr)
		hit = 1;
	/* Whose data holds the locks the end of the process takes. */
	int locks = strncmp(base, "libc.so", 7) == 0 || strncmp(base, "ld-linux", 8) == 0;
	for (int i = 0; hit && i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (ph->p_type != PT_LOAD)
			continue;
		if ((ph->p_flags & PF_X) && g_nunsafe < ASP_WORLD_UNSAFE_MAX) {
			g_unsafe[g_nunsafe].lo = lo;
			g_unsafe[g_nunsafe].hi = hi;
			g_nunsafe++;
		} else if (locks && (ph->p_flags & PF_W) && g_nlockdata < ASP_WORLD_UNSAFE_MAX) {
			g_lockdata[g_nlockdata].lo = lo;
			g_lockdata[g_nlockdata].hi = hi;
			g_nlockdata++;
		}
	}
	return 0;
}

/* A lock of the C library's or the loader's own: in their data, or an
 * arena's mutex (a secondary arena's heap starts 64 MiB aligned, its
 * mutex 0x30 bytes in). */
static int library_lock(uintptr_t addr)
{
	for (int i = 0; i < g_nlockdata; i++)
		if (addr >= g_lockdata[i].lo && addr < g_lockdata[i].hi)
			return 1;
	return (addr & ((64UL << 20) - 1)) == 0x30;
}

static unsigned long hex(const char **p)
{
	unsigned long v = 0;
	if ((*p)[0] == '0' && (*p)[1] == 'x')
		*p += 2;
	for (;; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (unsigned long)d;
	}
}

/* Whether tid blocks sig (its SigBlk mask). -1: the thread is gone, or
 * has ended and waits for the others to end (a zombie: the main thread
 * after pthread_exit), where no signal is ever handled. */
static int blocks_signal(pid_t tid, int sig)
{
	char buf[2048];
	if (asp__task_file(tid, "status", buf, sizeof buf) == 0)
		return -1;
	const char *p = strstr(buf, "\nState:");
	if (p != NULL) {
		p += 7;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == 'Z' || *p == 'X')
			return -1;
	}
	p = strstr(buf, "\nSigBlk:");
	if (p == NULL)
		return 0;
	p += 8;
	while (*p == ' ' || *p == '\t')
		p++;
	return (int)((hex(&p) >> (sig - 1)) & 1);
}

/* The system call thread tid is blocked in, from /proc ("nr arg1 .. arg6
 * sp pc"), into v[9]; 0 when it runs or is gone. */
static int syscall_of(pid_t tid, unsigned long v[9])
{
	char buf[512];
	if (asp__task_file(tid, "syscall", buf, sizeof buf) == 0 || buf[0] < '0' || buf[0] > '9')
		return 0;
	const char *p = buf;
	int n = 0;
	for (; n < 9 && *p; n++) {
		v[n] = n == 0 ? strtoul(p, NULL, 10) : hex(&p);
		if (n == 0)
			while (*p >= '0' && *p <= '9')
				p++;
		while (*p == ' ')
			p++;
	}
	return n == 9;
}

/* Approves, or not, the wait thread tid is in now (w->call_pc: 0 when not
 * approved). */
static void approve_wait(pid_t tid, struct asp_world_thread *w)
{
	unsigned long v[9];
	w->call_pc = 0;
	if (!syscall_of(tid, v) || !waits(v[0]) || (v[0] == SYS_futex && library_lock(v[1])))
		return;
	w->call_arg = v[1];
	w->call_pc = v[8];
}

/* A thread in futex(2) with no timeout: waits for good. The stack pointer
 * of a thread in any system call goes to *sp. */
static int waits_for_good(pid_t tid, uintptr_t *sp)
{
	unsigned long v[9];
	if (!syscall_of(tid, v))
		return 0;
	*sp = v[7];
	unsigned long op = v[2] & 0x7f;	/* FUTEX_PRIVATE_FLAG off */
	return v[0] == SYS_futex && v[4] == 0 &&
	       (op == 0 /* WAIT */ || op == 9 /* WAIT_BITSET */ || op == 6 /* LOCK_PI */);
}

/* The other threads, from /proc/self/task (getdents: opendir would
 * allocate), the ticker aside. */
static void enumerate(void)
{
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	char buf[4096];
	pid_t me = asp_gettid();
	for (;;) {
		long got = syscall(SYS_getdents64, fd, buf, sizeof buf);
		if (got <= 0)
			break;
		for (long off = 0; off < got;) {
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, sizeof reclen);
			pid_t tid = (pid_t)atoi(buf + off + 19);
			off += reclen;
			if (tid > 0 && tid != me && tid != asp__world_ticker && g_n < ASP_WORLD_MAX)
				g_threads[g_n++] = (struct asp_world_thread){ .tid = tid };
		}
	}
	close(fd);
}

/* A real-time signal the program leaves at its default action, from the
 * top; 0 when there is none. */
static int free_rt_signal(void)
{
	for (int sig = SIGRTMAX; sig >= SIGRTMIN + 2; sig--) {
		struct sigaction old;
		if (sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			return sig;
	}
	return 0;
}

int asp__world_stop(void)
{
	if (g_done)
		return g_all;
	g_done = 1;
	asp_atomic_store_release(&g_stopper, asp_gettid());
	g_threads = asp__pages_alloc(ASP_WORLD_MAX * sizeof *g_threads);
	if (g_threads == NULL)
		return 0;
	enumerate();
	if (g_n == 0)
		return g_all = 1;
	asp__loader_list(unsafe_cb, NULL);
	int sig = free_rt_signal();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_stop;
	sa.sa_flags = SA_SIGINFO;
	sigfillset(&sa.sa_mask);
	if (sig == 0 || sigaction(sig, &sa, NULL) != 0)
		sig = 0;
	pid_t pid = getpid();
	/* asked again every millisecond, for ASP_WAIT_NS */
	for (unsigned round = 0; round < ASP_WAIT_NS / 1000000; round++) {
		size_t open_ = 0;
		for (size_t i = 0; i < g_n; i++) {
			struct asp_world_thread *w = &g_threads[i];
			int st = asp_atomic_load_acquire(&w->state);
			if (st == ASP_WORLD_PARKED || st == ASP_WORLD_GONE)
				continue;
			int blocked = sig ? blocks_signal(w->tid, sig) : 1;
			if (blocked < 0) {
				w->state = ASP_WORLD_GONE;
				continue;
			}
			if (blocked) {
				w->state = waits_for_good(w->tid, &w->sp) ? ASP_WORLD_BLOCKED
				                                         : ASP_WORLD_UNKNOWN;
				open_ += w->state == ASP_WORLD_UNKNOWN;
				continue;
			}
			open_++;
			if (asp_atomic_load_acquire(&w->asked))
				continue;	/* not answered yet */
			approve_wait(w->tid, w);
			asp_atomic_store_release(&w->asked, 1);
			if (syscall(SYS_tgkill, pid, w->tid, sig) != 0)
				w->state = ASP_WORLD_GONE;
		}
		if (open_ == 0)
			break;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
	g_all = 1;
	for (size_t i = 0; i < g_n; i++) {
		struct asp_world_thread *w = &g_threads[i];
		if (w->state == ASP_WORLD_UNKNOWN)
			waits_for_good(w->tid, &w->sp);
		g_all &= w->state != ASP_WORLD_UNKNOWN;
	}
	return g_all;
}

const struct asp_world_thread *asp__world_thread(pid_t tid)
{
	return g_done && g_threads ? slot_of(tid) : NULL;
}

const struct asp_world_thread *asp__world_threads(size_t *n)
{
	*n = g_done && g_threads ? g_n : 0;
	return g_threads;
}

void asp__world_atfork_child(void)
{
	g_done = 0;
	g_all = 0;
	g_stopper = 0;
	g_n = 0;
	g_threads = NULL;
}
