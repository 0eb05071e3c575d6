/* sitemap.c - site -> small index, and back.
 *
 * The sites are an array, asp__site_vals, reserved at the first index for
 * every index there can be (2^25 words, backed only as far as it is used)
 * and never moved, so readers need no lock. A hash index finds a site's
 * index: open addressing over index numbers, read without a lock; new
 * sites are added under a lock, and a full index is replaced by one twice
 * its size, the old one left mapped for readers still in it (a site they
 * miss there is looked for again under the lock).
 *
 * The lock is never waited for by a signal handler that interrupted its
 * holder on the same thread: the handler's block gets no index then, and
 * goes where a whole site fits. */
#include <errno.h>
#include <sched.h>
#include <sys/mman.h>

#include "arena.h"
#include "sitemap.h"

uintptr_t *asp__site_vals;
uint32_t asp__site_count;

struct index {
	uint32_t mask;
	uint32_t used;
	uint32_t slots[];	/* site indexes; 0 is empty */
};

static struct index *g_index;
/* The holder's record (1 without one), or 0. */
static uintptr_t g_holder;

#define VALS_BYTES ((size_t)(ASP_SITE_INDEX_MAX + 1) * sizeof(uintptr_t))
#define INDEX_FIRST 1024u

static inline uint32_t hash_slot(uintptr_t site, uint32_t mask)
{
	return (uint32_t)(asp_hash(site) >> 32) & mask;
}

/* The index of site in x, or 0. */
static uint32_t find(const struct index *x, uintptr_t site)
{
	for (uint32_t j = hash_slot(site, x->mask);; j = (j + 1) & x->mask) {
		uint32_t i = asp_atomic_load_acquire(&x->slots[j]);
		if (i == 0)
			return 0;
		if (asp__site_vals[i] == site)
			return i;
	}
}

static void place(struct index *x, uint32_t i)
{
	uint32_t j = hash_slot(asp__site_vals[i], x->mask);
	while (x->slots[j] != 0)
		j = (j + 1) & x->mask;
	asp_atomic_store_release(&x->slots[j], i);
	x->used++;
}

/* Lock held: a larger index, published; 0 or -ENOMEM. */
static int grow(void)
{
	const struct index *old = g_index;
	uint32_t slots = old ? (old->mask + 1) * 2 : INDEX_FIRST;
	struct index *x = asp__pages_alloc(sizeof *x + (size_t)slots * sizeof x->slots[0]);
	if (x == NULL)
		return -ENOMEM;
	x->mask = slots - 1;
	for (uint32_t j = 0; old != NULL && j <= old->mask; j++)
		if (old->slots[j] != 0)
			place(x, old->slots[j]);
	asp_atomic_store_release(&g_index, x);
	return 0;
}

/* Lock held: the index of site, added when new; 0 when it cannot be. */
static uint32_t add(uintptr_t site)
{
	if (asp__site_vals == NULL) {
		int saved = errno;
		void *v = mmap(NULL, VALS_BYTES, PROT_READ | PROT_WRITE,
		               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		errno = saved;
		if (v == MAP_FAILED)
			return 0;
		asp__arena_adopt(v, VALS_BYTES);
		asp_atomic_store_release(&asp__site_vals, v);
		asp_atomic_store_release(&asp__site_count, 1);	/* index 0: site 0 */
	}
	if (g_index != NULL) {
		uint32_t i = find(g_index, site);
		if (i != 0)
			return i;
	}
	uint32_t n = asp__site_count;
	if (n > ASP_SITE_INDEX_MAX)
		return 0;
	if ((g_index == NULL || (g_index->used + 1) * 2 > g_index->mask + 1) && grow() != 0)
		return 0;
	asp__site_vals[n] = site;
	asp_atomic_store_release(&asp__site_count, n + 1);
	place(g_index, n);
	return n;
}

uint32_t asp__site_index_slow(struct asp_thread *t, uintptr_t site)
{
	if (site == 0)
		return 0;
	const struct index *x = asp_atomic_load_acquire(&g_index);
	uint32_t i = x != NULL ? find(x, site) : 0;
	if (i == 0) {
		uintptr_t self = (uintptr_t)t | (t == NULL);
		uintptr_t free_ = 0;
		for (unsigned spins = 0; !__atomic_compare_exchange_n(&g_holder, &free_, self, 0,
		                                                      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
		     spins++) {
			if (free_ == self)
				return 0;	/* a handler inside its own thread's add */
			free_ = 0;
			if (spins > 64)
				sched_yield();
			else
				asp_cpu_relax();
		}
		i = add(site);
		__atomic_store_n(&g_holder, 0, __ATOMIC_RELEASE);
		if (i == 0)
			return 0;
	}
	if (t != NULL) {
		struct asp_site_cache *c = &t->site_cache[asp__site_cache_slot(site)];
		c->index = 0;		/* a handler never sees half an entry */
		c->use = NULL;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		c->site = site;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		c->index = i;
	}
	return i;
}

void asp__sitemap_atfork_child(void)
{
	/* A thread that did not come along may have held the lock in the
	 * middle of an add: a site written with no slot yet (it is added
	 * again under a new index: harmless), or a larger index not yet
	 * published (left). */
	__atomic_store_n(&g_holder, 0, __ATOMIC_RELAXED);
}
