/* lock.h - a small spin lock for the shim's own tables. It never calls
 * into libc (pthread mutexes may allocate or be interposed), and it yields
 * the CPU after a short spin so that 2-core machines do not live-lock. */
#ifndef ASP_LOCK_H
#define ASP_LOCK_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include "glue.h"

typedef struct { unsigned char held; } asp_lock_t;

#define ASP_LOCK_INIT { 0 }

static inline int asp_lock_try(asp_lock_t *l)
{
	return !__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE);
}

static inline void asp_lock(asp_lock_t *l)
{
	if (ASP_LIKELY(asp_lock_try(l)))
		return;
	for (unsigned spins = 0;; spins++) {
		while (asp_atomic_load_relaxed(&l->held)) {
			if (spins++ < 64)
				asp_cpu_relax();
			else
				sched_yield();
		}
		if (asp_lock_try(l))
			return;
	}
}

static inline void asp_unlock(asp_lock_t *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}

/* Locks that a signal handler's allocation could also want are taken with
 * signals blocked, so the handler never waits for its own thread. For rare
 * paths only: two system calls each way. */
static inline void asp_lock_nosig(asp_lock_t *l, sigset_t *old)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
	asp_lock(l);
}

static inline void asp_unlock_nosig(asp_lock_t *l, const sigset_t *old)
{
	asp_unlock(l);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* After fork only one thread exists: whatever it did not hold is free. */
static inline void asp_lock_reset(asp_lock_t *l)
{
	__atomic_store_n(&l->held, 0, __ATOMIC_RELAXED);
}

#endif
