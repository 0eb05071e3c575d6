/* snapshot.c - the heap over time.
 *
 * The unit of time is the volume of the heap's traffic, bytes allocated
 * plus bytes freed (massif's --time-unit=B), so that snapshots follow what
 * the program does rather than how fast the machine is; each snapshot also
 * keeps its wall time. Threads publish their in-use deltas at least every
 * asp__snapshot_volume_step bytes of traffic; a publish that takes the
 * process past the next snapshot's volume takes it. When ALLOCSPY_SNAPSHOTS
 * are kept, every other one is dropped and the interval doubles, as massif
 * culls.
 *
 * Detail (who held the memory) is read from what each site holds
 * (account.h, "Sites in use"), added up over the threads: its cost is
 * one entry per site and thread, whatever the number of blocks. With
 * ALLOCSPY_SAMPLE, only the sampled blocks, each weighted by what it
 * stands for (sample.h): the detail is an estimate. The peak's: a free
 * that finds the heap 5% above the last peak detail takes a new one
 * first, so the kept one is within 5% of the peak, and no sooner than the
 * heap has grown by ASP_DETAIL_GROWTH bytes for each entry the last one
 * read: a heap that grows steadily pays at most one entry read per
 * ASP_DETAIL_GROWTH bytes of its peak for all its peak details, and a
 * program with few sites about 20 x ln(peak / 4 KiB) details. The exit
 * report's own last snapshot groups the table's blocks, which it reads
 * anyway. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "account.h"
#include "arena.h"
#include "live.h"
#include "lock.h"
#include "options.h"
#include "sample.h"
#include "snapshot.h"
#include "thread.h"

#define ASP_DETAIL_MAX 64	/* sites kept in one snapshot's detail */
#define ASP_DETAIL_EVERY 10	/* every tenth snapshot has detail */
#define ASP_GROUP_SLOTS (1u << 16)
#define ASP_DETAIL_GROWTH 256	/* bytes of heap growth per entry a peak detail read */

uint64_t asp__snapshot_volume_step = UINT64_MAX;
int64_t asp__snapshot_peak_next = INT64_MAX;

static asp_lock_t g_lock = ASP_LOCK_INIT;
static struct asp_snapshot *g_snaps;	/* max + 1 slots */
static size_t g_nsnaps, g_max, g_taken;
static struct asp_snapshot g_peak;
static uint64_t g_next, g_interval;	/* g_lock */

/* Sites grouped while the table is read: one page run, reused. */
static struct asp_snap_detail *g_group;

/* ALLOCSPY_SAMPLE: the estimates of a grouping, beside its slots. */
struct estimate {
	double bytes, blocks;
};
static struct estimate *g_group_est;

void asp__snapshot_init(void)
{
	if (asp__opt.mode != ASP_MODE_TRACK || asp__opt.snapshots == 0)
		return;
	g_max = (size_t)asp__opt.snapshots;
	g_snaps = asp__pages_alloc((g_max + 1) * sizeof *g_snaps);
	g_group = asp__pages_alloc(ASP_GROUP_SLOTS * sizeof *g_group);
	if (asp__sample_mean != 0)
		g_group_est = asp__pages_alloc(ASP_GROUP_SLOTS * sizeof *g_group_est);
	if (g_snaps == NULL || g_group == NULL || (asp__sample_mean != 0 && g_group_est == NULL)) {
		g_snaps = NULL;
		return;
	}
	/* The first interval: 64 KiB of traffic, doubled as the run grows. */
	g_interval = 64 * 1024;
	g_next = g_interval;
	asp__snapshot_volume_step = g_interval / 4;
	asp__snapshot_peak_next = 4096;
}

/* The ASP_DETAIL_MAX sites of g[0..slots) that hold the most, largest
 * first, into memory of their own; *n their number. A slot's site 0 is
 * empty, unless by_index is set: then g is by site index (the site is
 * asp__site_of(index)), s gets the slots' sums, and est, when not NULL
 * (ALLOCSPY_SAMPLE), gives the figures of the sampled sites, the only
 * ones kept. Without by_index, est replaces the figures of every slot. */
static struct asp_snap_detail *largest(struct asp_snap_detail *g, uint32_t slots, uint32_t *n,
                                       struct asp_snapshot *s, const struct estimate *est)
{
	if (s != NULL) {
		s->in_use = s->blocks = 0;
		for (uint32_t j = 0; j < slots; j++) {
			s->in_use += (int64_t)g[j].bytes;
			s->blocks += (int64_t)g[j].blocks;
			uintptr_t site = asp__site_of(j);
			g[j].site = site != 0 ? site : j == 0 && g[j].blocks != 0 ? 1 : 0;
			if (est != NULL && !asp__site_sampled(site))
				g[j].site = 0;
		}
	}
	for (uint32_t j = 0; est != NULL && j < slots; j++) {
		g[j].bytes = asp__sample_round(est[j].bytes);
		g[j].blocks = asp__sample_round(est[j].blocks);
	}
	/* The largest ASP_DETAIL_MAX, by selection: few, and rare. */
	struct asp_snap_detail *d = asp__scratch_alloc(ASP_DETAIL_MAX * sizeof *d);
	if (d == NULL)
		return NULL;
	uint32_t k = 0;
	for (uint32_t j = 0; j < slots; j++) {
		if (g[j].site == 0 || (int64_t)g[j].bytes <= 0)
			continue;
		if (k < ASP_DETAIL_MAX) {
			d[k++] = g[j];
		} else {
			uint32_t least = 0;
			for (uint32_t m = 1; m < k; m++)
				if (d[m].bytes < d[least].bytes)
					least = m;
			if (g[j].bytes > d[least].bytes)
				d[least] = g[j];
		}
	}
	for (uint32_t a = 1; a < k; a++)
		for (uint32_t b = a; b > 0 && d[b].bytes > d[b - 1].bytes; b--) {
			struct asp_snap_detail x = d[b];
			d[b] = d[b - 1];
			d[b - 1] = x;
		}
	*n = k;
	return d;
}

/* The blocks e[0..all) grouped by site, largest first, at most
 * ASP_DETAIL_MAX of them, into memory of their own; *n their number, and
 * their bytes and blocks into s.
 * With ALLOCSPY_SAMPLE (est: scratch beside g), the sampled blocks only,
 * weighted. g (and est) have room for ASP_GROUP_SLOTS sites; only the part
 * the sites need is cleared and used: twice as many slots as the last
 * grouping found sites, at least 64, doubled and the grouping begun again
 * when they pass three quarters of it. A heap of many blocks from few
 * sites (the common case) then touches a page or two of it, not one slot
 * pair per block: 10 threads with 1,000 blocks each from one site cleared
 * and scanned 786 KiB at each detailed snapshot. */
static uint32_t g_group_sites;	/* found by the last grouping (a hint) */

static struct asp_snap_detail *group(const struct asp_live_entry *e, size_t all, uint32_t *n,
                                     struct asp_snapshot *s,
                                     struct asp_snap_detail *g, struct estimate *est)
{
	uint32_t slots = 64;
	uint32_t hint = asp_atomic_load_relaxed(&g_group_sites);
	while (slots < ASP_GROUP_SLOTS && slots < 2 * hint)
		slots *= 2;
again:
	memset(g, 0, slots * sizeof *g);
	if (est != NULL)
		memset(est, 0, slots * sizeof *est);
	s->in_use = 0;
	s->blocks = (int64_t)all;
	uint32_t sites = 0;
	for (size_t i = 0; i < all; i++) {
		s->in_use += (int64_t)e[i].size;
		if (est != NULL && !asp__site_sampled(e[i].site))
			continue;
		uintptr_t site = e[i].site ? e[i].site : 1;
		uint32_t j = (uint32_t)(asp_hash(site) >> 48) & (slots - 1);
		uint32_t probes = 0;
		while (g[j].site != 0 && g[j].site != site && probes++ < 64)
			j = (j + 1) & (slots - 1);
		if (g[j].site != 0 && g[j].site != site)
			continue;	/* a crowded table: this block is left out */
		if (g[j].site == 0 && ++sites > slots / 4 * 3 && slots < ASP_GROUP_SLOTS) {
			slots *= 2;
			goto again;
		}
		g[j].site = site;
		g[j].bytes += e[i].size;
		g[j].blocks++;
		if (est != NULL) {
			double w = asp__sample_weight(e[i].size);
			est[j].bytes += w * (double)e[i].size;
			est[j].blocks += w;
		}
	}
	asp_atomic_store_relaxed(&g_group_sites, sites);
	return largest(g, slots, n, NULL, est);
}

/* The same of the whole heap, read now: from what each site holds
 * (account.h, "Sites in use"), the threads' entries added up by site
 * index, never from the table: its cost is one entry per site and
 * thread. *read gets that number of entries. */
struct site_sum {
	struct asp_snap_detail *g;	/* by site index */
	struct estimate *est;
	uint32_t n;
	uint64_t read;
};

static void sum_site(void *arg, uint32_t index, const struct asp_site_use *u)
{
	struct site_sum *x = arg;
	x->read++;
	if (index >= x->n)
		return;
	x->g[index].bytes += (uint64_t)u->bytes;
	x->g[index].blocks += (uint64_t)u->blocks;
	if (x->est != NULL) {
		x->est[index].bytes += u->est_bytes;
		x->est[index].blocks += u->est_blocks;
	}
}

/* The sums' memory: kept from one snapshot to the next (only the thread
 * that claimed the snapshot uses it), replaced by a larger one when the
 * sites outgrow it, so that a snapshot neither maps fresh pages nor unmaps
 * them (each unmap interrupts every CPU that runs the program). */
static struct asp_snap_detail *g_sums;
static struct estimate *g_sums_est;
static size_t g_sums_cap;

static struct asp_snap_detail *detail_of(struct asp_thread *t, uint32_t *n, struct asp_snapshot *s,
                                         uint64_t *read)
{
	(void)t;
	uint32_t sites = asp_atomic_load_acquire(&asp__site_count);
	size_t cap = (size_t)sites + ASP_SITE_USE_CHUNK;
	if (cap > g_sums_cap) {
		size_t want = 2 * cap;
		struct asp_snap_detail *g = asp__pages_alloc(want * sizeof *g);
		struct estimate *est = asp__sample_mean != 0 ? asp__pages_alloc(want * sizeof *est) : NULL;
		if (g == NULL || (asp__sample_mean != 0 && est == NULL)) {
			if (g != NULL)
				asp__pages_free(g, want * sizeof *g);
			return NULL;
		}
		if (g_sums != NULL)
			asp__pages_free(g_sums, g_sums_cap * sizeof *g_sums);
		if (g_sums_est != NULL)
			asp__pages_free(g_sums_est, g_sums_cap * sizeof *g_sums_est);
		g_sums = g;
		g_sums_est = est;
		g_sums_cap = want;
	} else {
		memset(g_sums, 0, cap * sizeof *g_sums);
		if (g_sums_est != NULL)
			memset(g_sums_est, 0, cap * sizeof *g_sums_est);
	}
	struct site_sum x = { g_sums, g_sums_est, (uint32_t)cap, 0 };
	asp__site_use_sum(sum_site, &x);
	*read = x.read;
	return largest(g_sums, (uint32_t)cap, n, s, g_sums_est);
}

static void drop_detail(struct asp_snapshot *s)
{
	if (s->detail != NULL)
		asp__scratch_free(s->detail, ASP_DETAIL_MAX * sizeof *s->detail);
	s->detail = NULL;
	s->ndetail = 0;
}

/* A snapshot of now, in_use bytes in use, without its detail: the time,
 * the process's cumulative traffic (the sum of every record's counters)
 * and the blocks in use, t's own not yet published included. */
static void snapshot_now(const struct asp_thread *t, struct asp_snapshot *s, int64_t in_use)
{
	struct asp_counts c;
	struct asp_totals tot;
	*s = (struct asp_snapshot){ 0 };
	s->t_ns = asp_now_ns(CLOCK_MONOTONIC);
	asp__threads_sum(&c);
	asp__totals(&c, &tot);
	s->allocated = tot.bytes_allocated;
	s->freed = tot.bytes_freed;
	s->in_use = in_use;
	s->blocks = asp_atomic_load_relaxed(&asp__figures.in_use_blocks) + t->net_blocks;
}

/* The tid of the thread taking a snapshot, or 0: another thread that finds
 * one under way skips its own, so no thread ever waits for it. The table is
 * read without any lock of this file held (a holder of a shard may want the
 * snapshot lock: fork's prepare handler run by a signal handler). */
static int g_busy;

/* Looked at before it is tried: a thread that keeps finding another one's
 * snapshot under way costs a load, not a locked instruction. */
static int claim(void)
{
	int none = 0;
	return asp_atomic_load_relaxed(&g_busy) == 0 &&
	       __atomic_compare_exchange_n(&g_busy, &none, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void unclaim(void)
{
	__atomic_store_n(&g_busy, 0, __ATOMIC_RELEASE);
}

/* Stores s as the newest snapshot, thinning the list when it is full. */
static void store(struct asp_snapshot *s, uint64_t total)
{
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	if (g_nsnaps == g_max) {
		/* Full: keep every other one, and take half as many from now. */
		size_t k = 0;
		for (size_t i = 0; i < g_nsnaps; i++) {
			if (i % 2 == 1)
				drop_detail(&g_snaps[i]);
			else
				g_snaps[k++] = g_snaps[i];
		}
		g_nsnaps = k;
		g_interval *= 2;
		asp_atomic_store_relaxed(&asp__snapshot_volume_step, g_interval / 4);
	}
	g_snaps[g_nsnaps++] = *s;
	asp_atomic_store_relaxed(&g_next, total - total % g_interval + g_interval);
	asp_unlock_nosig(&g_lock, &old);
}

void asp__snapshot_note(struct asp_thread *t, uint64_t volume, int64_t in_use)
{
	/* Not from a signal handler inside the table: reading the table
	 * then could wait for a shard while this thread holds another. */
	if (g_snaps == NULL || t->chg != 0)
		return;
	uint64_t total = asp_atomic_add_relaxed(&asp__figures.volume, volume);
	if (total < asp_atomic_load_relaxed(&g_next) || !claim())
		return;
	if (total >= asp_atomic_load_relaxed(&g_next)) {
		t->depth++;
		struct asp_snapshot s;
		snapshot_now(t, &s, in_use);
		if (g_taken++ % ASP_DETAIL_EVERY == 0) {
			uint64_t read;
			s.detail = detail_of(t, &s.ndetail, &s, &read);
			asp__peak_at_least(s.in_use);
		}
		store(&s, total);
		t->depth--;
	}
	unclaim();
}

void asp__snapshot_peak(struct asp_thread *t, int64_t seen)
{
	if (g_snaps == NULL || t->chg != 0 || !claim())
		return;
	if (seen >= asp_atomic_load_relaxed(&asp__snapshot_peak_next)) {
		/* Raised first: the other threads' frees stop asking for this
		 * peak while its detail is read; raised again below, by what
		 * the detail cost. */
		asp_atomic_store_relaxed(&asp__snapshot_peak_next, seen + seen / 20 + 1);
		t->depth++;
		struct asp_snapshot s;
		snapshot_now(t, &s, seen);
		s.peak = 1;
		uint64_t read = 0;
		s.detail = detail_of(t, &s.ndetail, &s, &read);
		/* The next detail once the heap is 5% larger, and at least
		 * ASP_DETAIL_GROWTH bytes larger for each entry this one read:
		 * all of a run's peak details together read one entry per
		 * ASP_DETAIL_GROWTH bytes of its peak, and no more than about
		 * 20 x ln(peak / 4 KiB) of them are taken. */
		int64_t step = seen / 20 + 1;
		if ((int64_t)(read * ASP_DETAIL_GROWTH) > step)
			step = (int64_t)(read * ASP_DETAIL_GROWTH);
		asp_atomic_store_relaxed(&asp__snapshot_peak_next, seen + step);
		asp__peak_at_least(s.in_use);
		sigset_t old;
		asp_lock_nosig(&g_lock, &old);
		drop_detail(&g_peak);
		g_peak = s;
		asp_unlock_nosig(&g_lock, &old);
		t->depth--;
	}
	unclaim();
}

/* Copies s into l's next slot, its detail into l's own memory. */
static void copy_into(struct asp_snapshot_list *l, const struct asp_snapshot *s)
{
	struct asp_snapshot *c = &l->v[l->n];
	*c = *s;
	c->detail = NULL;
	c->ndetail = 0;
	if (s->detail != NULL && s->ndetail > 0) {
		c->detail = l->details + l->n * ASP_DETAIL_MAX;
		c->ndetail = s->ndetail;
		memcpy(c->detail, s->detail, s->ndetail * sizeof *c->detail);
	}
	l->n++;
}

static size_t list_size(void)
{
	return (g_max + 3) * (sizeof(struct asp_snapshot) + ASP_DETAIL_MAX * sizeof(struct asp_snap_detail));
}

int asp__snapshots(struct asp_snapshot_list *l, uint64_t t_ns, uint64_t allocated, uint64_t freed,
                   const struct asp_live_entry *e, size_t ne)
{
	memset(l, 0, sizeof *l);
	if (g_snaps == NULL)
		return 0;
	/* Another thread may store, thin or replace snapshots meanwhile (a
	 * periodic dump): everything is copied under the list's lock, whose
	 * holders wait for nothing, and the memory allocated before. */
	void *mem = asp__scratch_alloc(list_size());
	struct asp_snap_detail *scratch = asp__scratch_alloc(ASP_GROUP_SLOTS * sizeof *scratch);
	struct estimate *est = asp__sample_mean != 0 ?
		asp__scratch_alloc(ASP_GROUP_SLOTS * sizeof *est) : NULL;
	if (mem == NULL || scratch == NULL || (asp__sample_mean != 0 && est == NULL)) {
		if (mem != NULL)
			asp__scratch_free(mem, list_size());
		if (scratch != NULL)
			asp__scratch_free(scratch, ASP_GROUP_SLOTS * sizeof *scratch);
		if (est != NULL)
			asp__scratch_free(est, ASP_GROUP_SLOTS * sizeof *est);
		return 0;
	}
	l->v = mem;
	l->details = (struct asp_snap_detail *)(l->v + g_max + 3);
	/* The heap now, from the table: the peak's place when it holds as
	 * much as the peak snapshot or there is none. */
	struct asp_snapshot last = { 0 };
	last.t_ns = t_ns;
	last.allocated = allocated;
	last.freed = freed;
	last.detail = group(e, ne, &last.ndetail, &last, scratch, est);
	asp__scratch_free(scratch, ASP_GROUP_SLOTS * sizeof *scratch);
	if (est != NULL)
		asp__scratch_free(est, ASP_GROUP_SLOTS * sizeof *est);
	sigset_t old;
	asp_lock_nosig(&g_lock, &old);
	int peak_in = !g_peak.peak || last.in_use >= g_peak.in_use;
	last.peak = peak_in;
	for (size_t i = 0; i < g_nsnaps && l->n < g_max + 1; i++) {
		if (!peak_in && g_peak.t_ns < g_snaps[i].t_ns) {
			copy_into(l, &g_peak);
			peak_in = 1;
		}
		copy_into(l, &g_snaps[i]);
	}
	if (!peak_in)
		copy_into(l, &g_peak);
	asp_unlock_nosig(&g_lock, &old);
	copy_into(l, &last);
	drop_detail(&last);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].peak)
			l->peak = &l->v[i];
	return 1;
}

void asp__snapshots_free(struct asp_snapshot_list *l)
{
	if (l->v != NULL)
		asp__scratch_free(l->v, list_size());
	memset(l, 0, sizeof *l);
}

void asp__snapshot_atfork_prepare(void)
{
	asp_lock(&g_lock);
}

void asp__snapshot_atfork_release(void)
{
	asp_unlock(&g_lock);
}

void asp__snapshot_atfork_child(void)
{
	/* A snapshot was under way in the parent: the sums' memory may be
	 * the one it was replacing, already unmapped. The child takes new
	 * memory. */
	if (g_busy != 0) {
		g_sums = NULL;
		g_sums_est = NULL;
		g_sums_cap = 0;
	}
	g_busy = 0;
}
