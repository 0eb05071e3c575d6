/* glue.h - the shim's glue: atomics with their order in the name, raw
 * output, clocks, thread ids, branch hints, the export macro, the tables'
 * hash (common/hash.h) and how long the shim waits for another thread
 * (ASP_WAIT_NS). What the
 * shim assumes of its platform is in platform.h, which this includes. */
#ifndef ASP_GLUE_H
#define ASP_GLUE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include "hash.h"
#include "platform.h"

#define ASP_EXTERN __attribute__((visibility("default")))
/* The shim's own data, declared in one file and defined in another: hidden
 * in the declaration too, so that the compiler reads it directly rather
 * than through the global offset table (-fvisibility=hidden covers only
 * definitions). */
#define ASP_HIDDEN __attribute__((visibility("hidden")))
#define ASP_LIKELY(x) __builtin_expect(!!(x), 1)
#define ASP_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ASP_NOINLINE __attribute__((noinline))
#define ASP_ALWAYS_INLINE inline __attribute__((always_inline))
#define ASP_COLD __attribute__((cold, noinline))
#define ASP_CACHE_LINE 64
#define ASP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Atomics. The order is part of the name; a relaxed store of a value the
 * owning thread computed is how per-thread counters are bumped: a plain
 * add, no read-modify-write on the bus. */
#define asp_atomic_load_relaxed(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#define asp_atomic_load_acquire(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define asp_atomic_store_relaxed(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define asp_atomic_store_release(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define asp_atomic_add_relaxed(p, v) __atomic_add_fetch((p), (v), __ATOMIC_RELAXED)
#define asp_atomic_exchange_acq_rel(p, v) __atomic_exchange_n((p), (v), __ATOMIC_ACQ_REL)
#define asp_atomic_exchange_relaxed(p, v) __atomic_exchange_n((p), (v), __ATOMIC_RELAXED)
#define asp_atomic_cas_relaxed(p, expp, v) \
	__atomic_compare_exchange_n((p), (expp), (v), 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)

static inline pid_t asp_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* How long the shim waits for another thread to finish what it is in
 * the middle of (a change of the counts, a module listing, answering a
 * stop) before it goes on without it: 100 ms. */
#define ASP_WAIT_NS 100000000u

/* How long a gatherer goes on waiting past ASP_WAIT_NS for a thread that
 * has only not had a core since (asp__thread_behind): 5 s. */
#define ASP_WAIT_BEHIND_NS 5000000000u

static inline uint64_t asp_now_ns(int clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* write(2) all of buf, retrying on EINTR and short writes. */
int asp__write_all(int fd, const char *buf, size_t len);

#endif
