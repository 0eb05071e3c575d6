/* start.c - where programs and threads begin and end: __libc_start_main,
 * exit and pthread_create are wrapped to learn the frames that bound the
 * live part of each stack (for the leak scan). Nothing here allocates. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "account.h"
#include "arena.h"
#include "leak.h"
#include "lock.h"
#include "next.h"
#include "options.h"
#include "start.h"

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

int asp__libc_start_main(void *main, int argc, char **argv, void (*init)(void),
                         void (*fini)(void), void (*rtld_fini)(void), void *stack_end)
{
	asp__init();
	int (*real)(void *, int, char **, void (*)(void), void (*)(void), void (*)(void), void *) =
		(int (*)(void *, int, char **, void (*)(void), void (*)(void), void (*)(void), void *))
		asp__next_sym("__libc_start_main");
	g_main = (main_fn)main;
	return real((void *)main_trampoline, argc, argv, init, fini, rtld_fini, stack_end);
}

void asp__exit(int status, uintptr_t sp)
{
	asp__leak_note_exit(sp);
	void (*real)(int) = (void (*)(int))asp__next_sym("exit");
	real(status);
	__builtin_unreachable();
}

/* Thread start records, recycled through a free list of mmap'd memory. */
struct start {
	void *(*fn)(void *);
	void *arg;
	struct start *next;
};

static asp_lock_t g_lock = ASP_LOCK_INIT;
static struct start *g_free;

static void *thread_trampoline(void *p)
{
	struct start *st = p;
	void *(*fn)(void *) = st->fn;
	void *arg = st->arg;
	asp_lock(&g_lock);
	st->next = g_free;
	g_free = st;
	asp_unlock(&g_lock);
	asp__init();
	struct asp_thread *t = asp__thread_self();
	t->start_sp = (uintptr_t)__builtin_frame_address(0);
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
	asp_lock(&g_lock);
	struct start *st = g_free;
	if (st != NULL)
		g_free = st->next;
	asp_unlock(&g_lock);
	if (st == NULL)
		st = asp__arena_alloc(sizeof *st);
	if (st == NULL)
		return real(thread, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	int err = real(thread, attr, thread_trampoline, st);
	if (err != 0) {
		asp_lock(&g_lock);
		st->next = g_free;
		g_free = st;
		asp_unlock(&g_lock);
	}
	return err;
}

/* Process-wide settings made once at start-up --------------------------------- */

static pid_t g_pid;

pid_t asp__process_pid(void)
{
	return g_pid;
}

static void note_fork_child(void)
{
	g_pid = getpid();
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

/* ALLOCSPY_DUMP_ON_SIGNAL: on a fatal signal the report is written (on a
 * best-effort basis: the process may be broken), then the signal is
 * re-raised with its default action, so the exit status is unchanged. */
static void on_fatal(int sig)
{
	asp__finish();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_fatal_signals(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM };
	for (size_t i = 0; i < ASP_ARRAY_SIZE(sigs); i++) {
		struct sigaction old, sa;
		if (sigaction(sigs[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			continue;	/* the program's own handler stays */
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_fatal;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigaction(sigs[i], &sa, NULL);
	}
}

void asp__start_process(void)
{
	g_pid = getpid();
	pthread_atfork(NULL, NULL, note_fork_child);
	if (!asp__opt.follow_children)
		leave_ld_preload();
	if (asp__opt.dump_on_signal)
		catch_fatal_signals();
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
