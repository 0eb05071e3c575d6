/* figures.c - the heap figures a program asks for while it runs
 * (include/allocspy.h, asp_heap_figures): this process's and the calling
 * thread's counts so far, so that a unit test can assert what one call
 * allocated.
 *
 * The figures come from what the shim keeps anyway: the per-thread records
 * (summed without the registry's lock: asp__threads_sum_nolock) and the
 * published in-use total and peak (account.h, asp__figures) with each
 * thread's unpublished change. Nothing here allocates or takes a lock, so
 * any thread may call it at any moment, a signal handler too, and what it
 * reads is only what the allocation paths write with plain stores. */
#include <allocspy.h>
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "account.h"
#include "glue.h"
#include "options.h"
#include "thread.h"

/* The calling thread's record, found without making one (which takes the
 * registry's lock and may allocate): NULL when it has none yet, having
 * never allocated. */
static struct asp_thread *own_record(void)
{
	struct asp_thread *t = asp__thread_peek();
	if (t == NULL && asp__thread_key_ok)
		t = pthread_getspecific(asp__thread_key);
	if (t != NULL)
		return t;
	/* No key (its slot is past the descriptor's first block), or the
	 * key's destructor already ran: the record by the thread's ids, as
	 * asp__thread_self_slow finds it. */
	pid_t tid = asp_gettid();
	uintptr_t self = (uintptr_t)pthread_self();
	for (t = asp__threads_list(); t; t = asp_atomic_load_acquire(&t->next))
		if (asp_atomic_load_relaxed(&t->tid) == tid && t->self == self)
			return t;
	return NULL;
}

/* Whether the program's calls reach the shim: its malloc is the first in
 * the global scope, as when it is preloaded. A shim loaded later (dlopen
 * with RTLD_GLOBAL) defines the same symbols but sees none of the
 * program's calls, and its figures would be those of nothing. Found at
 * the first call, which follows the header's own dlsym. */
static int interposing(void)
{
	static int known;	/* 0: not yet; 1: yes; -1: no */
	int k = asp_atomic_load_relaxed(&known);
	if (k == 0) {
		k = dlsym(RTLD_DEFAULT, "malloc") == asp__fn_address(ASP_FN_MALLOC) ? 1 : -1;
		asp_atomic_store_relaxed(&known, k);
	}
	return k > 0;
}

static void from_totals(struct asp_heap_figures *f, const struct asp_counts *c)
{
	struct asp_totals tot;
	asp__totals(c, &tot);
	f->allocs = tot.allocs;
	f->frees = tot.frees;
	f->bytes = tot.bytes_allocated;
	f->in_use_blocks = (int64_t)(tot.allocs - tot.frees);
	f->in_use_bytes = -1;
	f->peak_bytes = -1;
}

ASP_EXTERN int asp_heap_figures_read(struct asp_heap_figures *process,
                                     struct asp_heap_figures *thread, size_t size)
{
	/* Counting: not before start-up, not once the exit report began,
	 * and not in a process whose calls go elsewhere. */
	if (asp_atomic_load_acquire(&asp__state) <= 0 ||
	    !interposing())
		return ASP_FIGURES_UNAVAILABLE;
	if (size > sizeof(struct asp_heap_figures))
		size = sizeof(struct asp_heap_figures);
	int tracked = asp__opt.mode == ASP_MODE_TRACK;

	if (process != NULL) {
		struct asp_heap_figures f;
		struct asp_counts c;
		/* no exact sum (a thread stopped inside its exit): none */
		if (asp__threads_sum_nolock(&c) != 0)
			return ASP_FIGURES_UNAVAILABLE;
		from_totals(&f, &c);
		if (tracked) {
			/* what threads published, and what each has not yet */
			int64_t bytes, blocks;
			asp__in_use_read(&bytes, &blocks);
			int64_t peak = asp_atomic_load_relaxed(&asp__figures.peak);
			f.in_use_bytes = bytes;
			f.in_use_blocks = blocks;
			/* never below what is in use now, as the exit report */
			f.peak_bytes = peak > bytes ? peak : bytes;
		}
		memcpy(process, &f, size);
	}
	if (thread != NULL) {
		struct asp_heap_figures f;
		struct asp_counts c;
		const struct asp_thread *self = own_record();
		memset(&c, 0, sizeof c);
		if (self != NULL)
			for (size_t i = 0; i < ASP_COUNTS_WORDS; i++)
				((uint64_t *)&c)[i] = asp_atomic_load_relaxed(&((const uint64_t *)&self->c)[i]);
		from_totals(&f, &c);
		if (tracked) {
			/* The bytes this thread allocated less those it freed: a
			 * thread that frees others' blocks goes below 0. */
			struct asp_totals tot;
			asp__totals(&c, &tot);
			f.in_use_bytes = (int64_t)(tot.bytes_allocated - tot.bytes_freed);
		}
		memcpy(thread, &f, size);
	}
	return 0;
}
