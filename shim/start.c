/* start.c - where programs and threads begin and end: __libc_start_main,
 * exit and pthread_create are wrapped to learn the frames that bound the
 * live part of each stack (for the leak scan). Nothing here allocates. */
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "account.h"
#include "arena.h"
#include "leak.h"
#include "lock.h"
#include "next.h"
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
