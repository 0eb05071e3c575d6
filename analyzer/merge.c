/* merge - the merge command: the dumps of one program's many processes (a
 * forking server, a test suite, a fleet) added up into one dump that every
 * command and every export reads.
 *
 * The loaded dumps make one model of a dump (load.h), which dump_write
 * writes as the shim writes a dump; the merged dump is then loaded back,
 * as any reader will, so that merge never writes one they refuse.
 *
 * Counts add up, saturating at the dump's largest count. The processes
 * are kept one by one in "processes".
 *
 * Stacks: the modules of every dump make one list, a module being a path
 * and a build-id. A module keeps the base it had in the first dump that
 * has it, unless that range is taken (by another module, or by an address
 * that is in no module); then it moves above every address of every dump.
 * Each frame keeps its offset in its module, so one code path run in
 * several processes, whose modules ASLR put at different addresses, is one
 * stack. Frames in no module stay as they are. The heap errors of each
 * dump follow the previous one's, their stacks and interposers moved so.
 *
 * Time: a dump's times count from its own start, time.start_unix; the
 * merged ones from the first start. The heap of the processes together at
 * an instant is the sum of each one's most recent snapshot, none before
 * its first, nothing after its end (unless it is among the last to end):
 * there is a merged snapshot at every instant one of them took one, and
 * at each end. */
#include "merge.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dump_write.h"
#include "msg.h"
#include "summary.h"

/* Where a moved module may start: 2 MiB boundaries. */
#define MODULE_ALIGN (UINT64_C(1) << 21)

/* The loader's largest time, in seconds. */
#define MAX_SECONDS 1e9

typedef unsigned __int128 u128;

/* A module of the merged list. */
struct mod {
	const char *path;
	const char *build_id;	/* NULL when the dumps give none */
	uint64_t want;		/* its base in the first dump that has it */
	uint64_t size;		/* the largest extent a dump gives it */
	bool has_start;
	uint64_t start_off;	/* "start" less "base", when a dump gives it */
	uint64_t base;		/* its base in the merged dump */
};

/* A module of one dump, as the merge sees it. */
struct inmod {
	uint64_t lim;		/* its end: the dump's, or past its last frame */
	uint64_t reach;		/* past the last address in it */
	size_t merged;		/* its index in the merged list */
};

/* One dump, as the merge sees it. */
struct in {
	const asp_dump_t *d;
	double start;		/* time.start_unix, or 0 */
	double offset;		/* its start after the first one's, in seconds */
	size_t *by_base;	/* its modules' indexes, by base */
	struct inmod *mod;	/* by module */
	size_t *stack;		/* each stack's index in the merged list (in
				 * merge.stack) */
};

struct merge {
	const asp_dump_t *d;
	size_t n;
	struct in *in;
	asp_dump_t *out;	/* the merged dump: every array its own */
	struct mod *mods;
	size_t nmods, capmods;
	uint64_t *loose;	/* addresses in no module, sorted, distinct
				 * (modules() to place()) */
	size_t nloose;
	uint64_t top;		/* above every address of every dump */
	size_t nframes;		/* of out->frames, those of its stacks */
	size_t *stack;		/* every dump's in.stack, one after the other */
	size_t *table;		/* the stacks by hash: index + 1, or 0 (stacks()) */
	size_t table_size;
	bool all_start;		/* every dump has time.start_unix */
	bool leak_part;		/* every dump has a leak part */
	char *err;
	size_t *bad;
};

static int fail(struct merge *m, size_t k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct merge *m, size_t k, const char *fmt, ...)
{
	va_list ap;

	*m->bad = k;
	va_start(ap, fmt);
	vsnprintf(m->err, ASP_ERR_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static uint64_t sat(u128 v)
{
	return v > ASP_DUMP_MAX ? ASP_DUMP_MAX : (uint64_t)v;
}

/* *to += v, saturating: as the sum saturated once, for counts only grow. */
static void add(uint64_t *to, uint64_t v)
{
	*to = sat((u128)*to + v);
}

/* An array of n elements of size (one at least), or NULL. */
static void *array(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

/* --- the inputs ---------------------------------------------------------------- */

/* The checks no loader makes: the modes agree, and the times fit. Then
 * each dump's offset. */
static int check_inputs(struct merge *m)
{
	double first = 0;

	m->all_start = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		if (d->count_mode != m->d[0].count_mode)
			return fail(m, k, "a %s-mode dump cannot be merged with %s, a "
				    "%s-mode one", d->count_mode ? "count" : "track",
				    m->d[0].file, m->d[0].count_mode ? "count" : "track");
		/* Estimates and exact figures do not add up to either. */
		if (d->sampled != m->d[0].sampled || d->sample_bytes != m->d[0].sample_bytes)
			return fail(m, k, "ALLOCSPY_SAMPLE=%llu here and %llu in %s: dumps "
				    "sampled differently cannot be merged",
				    (unsigned long long)d->sample_bytes,
				    (unsigned long long)m->d[0].sample_bytes, m->d[0].file);
		m->in[k].start = d->start_unix;
		m->all_start = m->all_start && d->has_start_unix;
	}
	if (!m->all_start) {
		asp_warn("not every dump has time.start_unix: their times are "
			 "taken to start together");
		for (size_t k = 0; k < m->n; k++)
			m->in[k].start = 0;
	}
	for (size_t k = 0; k < m->n; k++)
		if (k == 0 || m->in[k].start < first)
			first = m->in[k].start;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];
		double end = d->has_dump_t && d->dump_t_s > d->wall_s ?
			     d->dump_t_s : d->wall_s;

		m->in[k].offset = m->in[k].start - first;
		for (size_t j = 0; j < d->nsnapshots; j++)
			if (d->snapshots[j].t_s > end)
				end = d->snapshots[j].t_s;
		if (m->in[k].offset + end > MAX_SECONDS)
			return fail(m, k, "started %.0f s after the first dump: too "
				    "far apart to merge", m->in[k].offset);
	}
	for (size_t k = 1; k < m->n; k++)
		if (strcmp(m->d[k].exe, m->d[0].exe) != 0)
			asp_warn("%s: another program (%s) than %s's (%s); merged "
				 "all the same", m->d[k].file, m->d[k].exe,
				 m->d[0].file, m->d[0].exe);
	return 0;
}

/* --- modules -------------------------------------------------------------------- */

static int by_base(const void *pa, const void *pb, void *arg)
{
	const asp_dump_t *d = arg;
	uint64_t a = d->modules[*(const size_t *)pa].base;
	uint64_t b = d->modules[*(const size_t *)pb].base;

	return a < b ? -1 : a > b;
}

/* The module of a dump that holds addr, as the symbolizer finds it: the
 * largest base at or below it, if addr is below that module's end; or -1. */
static long module_at(const struct in *in, uint64_t addr)
{
	const asp_dump_t *d = in->d;
	size_t lo = 0, hi = d->nmodules, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->modules[in->by_base[mid]].base <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	i = in->by_base[lo - 1];
	return addr < in->mod[i].lim ? (long)i : -1;
}

/* Calls fn for every address of a dump: its stacks' frames and the loss
 * records' allocation functions. */
static void each_address(const asp_dump_t *d, void (*fn)(void *, uint64_t),
			 void *arg)
{
	for (size_t i = 0; i < d->nstacks; i++)
		for (size_t j = 0; j < d->stacks[i].n; j++)
			fn(arg, d->stacks[i].frames[j]);
	for (size_t i = 0; i < d->nrecords; i++)
		if (d->records[i].alloc_pc)
			fn(arg, d->records[i].alloc_pc);
}

static bool same_id(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The merged module of x: the same path and build-id, or a new one. */
static long module_of(struct merge *m, const asp_module_t *x)
{
	struct mod *v;

	for (size_t i = 0; i < m->nmods; i++)
		if (strcmp(m->mods[i].path, x->path) == 0 &&
		    same_id(m->mods[i].build_id, x->build_id))
			return (long)i;
	if (m->nmods == m->capmods) {
		size_t cap = m->capmods ? 2 * m->capmods : 16;

		v = realloc(m->mods, cap * sizeof *v);
		if (!v)
			return -1;
		m->mods = v;
		m->capmods = cap;
	}
	m->mods[m->nmods] = (struct mod){
		.path = x->path, .build_id = x->build_id, .want = x->base,
	};
	return (long)m->nmods++;
}

/* Collecting the loose addresses. */
struct collect {
	struct merge *m;
	struct in *in;
	size_t n;
};

static void grow_module(void *arg, uint64_t addr)
{
	struct in *in = arg;
	long i = module_at(in, addr);

	if (i >= 0 && addr >= in->mod[i].reach)
		in->mod[i].reach = addr + 1;
}

/* Counts the loose addresses of a dump, or with m->loose, lists them. */
static void note_loose(void *arg, uint64_t addr)
{
	struct collect *c = arg;

	if (addr >= c->m->top)	/* addresses are at most 2^63 - 1 */
		c->m->top = addr + 1;
	if (module_at(c->in, addr) >= 0)
		return;
	if (c->m->loose)
		c->m->loose[c->m->nloose++] = addr;
	else
		c->n++;
}

static int cmp_u64(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;

	return a < b ? -1 : a > b;
}

/* Whether a loose address lies in [lo, hi). */
static bool loose_in(const struct merge *m, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = m->nloose;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (m->loose[mid] < lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < m->nloose && m->loose[a] < hi;
}

/* Whether [lo, hi) meets one of the first n merged modules. */
static bool taken(const struct merge *m, size_t n, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (lo < m->mods[i].base + m->mods[i].size && m->mods[i].base < hi)
			return true;
	return false;
}

/* The first multiple of MODULE_ALIGN at or above v, or 0 past the limit. */
static uint64_t align_up(uint64_t v)
{
	if (v > ASP_DUMP_MAX - (MODULE_ALIGN - 1))
		return 0;
	return (v + MODULE_ALIGN - 1) & ~(MODULE_ALIGN - 1);
}

/* Every dump's module ends, the merged modules, and the loose addresses. */
static int modules(struct merge *m)
{
	size_t total = 0;

	for (size_t k = 0; k < m->n; k++) {
		struct in *in = &m->in[k];
		const asp_dump_t *d = in->d;

		in->by_base = array(d->nmodules, sizeof *in->by_base);
		in->mod = array(d->nmodules, sizeof *in->mod);
		if (!in->by_base || !in->mod)
			return -ENOMEM;
		for (size_t i = 0; i < d->nmodules; i++) {
			long x = module_of(m, &d->modules[i]);

			if (x < 0)
				return -ENOMEM;
			in->by_base[i] = i;
			in->mod[i].merged = (size_t)x;
			in->mod[i].lim = d->modules[i].end ? d->modules[i].end : UINT64_MAX;
		}
		qsort_r(in->by_base, d->nmodules, sizeof *in->by_base, by_base,
			(void *)d);
		/* A module without an end reaches past its last address. */
		each_address(d, grow_module, in);
		for (size_t i = 0; i < d->nmodules; i++) {
			const asp_module_t *x = &d->modules[i];
			struct inmod *im = &in->mod[i];
			struct mod *y = &m->mods[im->merged];

			if (!x->end)
				im->lim = im->reach > x->base ? im->reach : x->base + 1;
			if (im->lim - x->base > y->size)
				y->size = im->lim - x->base;
			if (im->lim > m->top)
				m->top = im->lim;
			if (!y->has_start && x->has_start && x->start >= x->base &&
			    x->start < im->lim) {
				y->has_start = true;
				y->start_off = x->start - x->base;
			}
		}
		{
			struct collect c = { m, in, 0 };

			each_address(d, note_loose, &c);
			total += c.n;
		}
	}
	m->loose = calloc(total + 1, sizeof *m->loose);
	if (!m->loose)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		struct collect c = { m, &m->in[k], 0 };

		each_address(m->d + k, note_loose, &c);
	}
	qsort(m->loose, m->nloose, sizeof *m->loose, cmp_u64);
	total = 0;
	for (size_t i = 0; i < m->nloose; i++)
		if (i == 0 || m->loose[i] != m->loose[total - 1])
			m->loose[total++] = m->loose[i];
	m->nloose = total;
	return 0;
}

/* Each merged module at its base in the first dump that has it, unless
 * that range is taken; else above every address. Then the loose
 * addresses are of no more use. */
static int place(struct merge *m)
{
	uint64_t top;
	int rc = 0;

	for (size_t i = 0; i < m->nmods; i++)
		if (m->mods[i].want <= ASP_DUMP_MAX - m->mods[i].size &&
		    m->mods[i].want + m->mods[i].size > m->top)
			m->top = m->mods[i].want + m->mods[i].size;
	top = align_up(m->top);
	for (size_t i = 0; i < m->nmods && rc == 0; i++) {
		struct mod *x = &m->mods[i];

		if (x->want <= ASP_DUMP_MAX - x->size &&
		    !taken(m, i, x->want, x->want + x->size) &&
		    !loose_in(m, x->want, x->want + x->size)) {
			x->base = x->want;
		} else if (!top || top > ASP_DUMP_MAX - x->size) {
			rc = fail(m, 0, "the modules of the dumps do not fit in one "
				  "address space");
		} else {
			x->base = top;
			top = align_up(top + x->size);
		}
	}
	free(m->loose);
	m->loose = NULL;
	return rc;
}

/* addr of dump in, in the merged modules. */
static uint64_t rebase(const struct merge *m, const struct in *in, uint64_t addr)
{
	long i = module_at(in, addr);

	if (i < 0)
		return addr;
	return m->mods[in->mod[i].merged].base + (addr - in->d->modules[i].base);
}

/* An interposer's address, moved as the frames are; 0 (not said) stays. */
static uint64_t rebase_pc(const struct merge *m, const struct in *in, uint64_t pc)
{
	return pc ? rebase(m, in, pc) : 0;
}

/* The merged modules. */
static int modules_out(struct merge *m)
{
	asp_dump_t *o = m->out;

	if (!(o->modules = array(m->nmods, sizeof *o->modules)))
		return -ENOMEM;
	for (size_t i = 0; i < m->nmods; i++) {
		const struct mod *x = &m->mods[i];

		o->modules[i] = (asp_module_t){
			.path = x->path, .base = x->base, .end = x->base + x->size,
			.has_start = x->has_start, .start = x->base + x->start_off,
			.build_id = x->build_id,
		};
	}
	o->nmodules = m->nmods;
	return 0;
}

/* --- stacks ----------------------------------------------------------------------- */

static size_t hash_frames(const uint64_t *f, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ n;

	for (size_t i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0x100000001b3ULL;
		h ^= h >> 29;
	}
	return (size_t)h;
}

/* The merged index of the stack of n frames at the end of out->frames:
 * kept there, or left for the next one when the list has it already. */
static size_t intern(struct merge *m, size_t n)
{
	asp_dump_t *o = m->out;
	const uint64_t *f = o->frames + m->nframes;
	size_t h = hash_frames(f, n) & (m->table_size - 1);

	while (m->table[h]) {
		const asp_stack_t *s = &o->stacks[m->table[h] - 1];

		if (s->n == n && (n == 0 || memcmp(s->frames, f, n * sizeof *f) == 0))
			return m->table[h] - 1;
		h = (h + 1) & (m->table_size - 1);
	}
	o->stacks[o->nstacks] = (asp_stack_t){ .n = n, .frames = f };
	m->nframes += n;
	m->table[h] = ++o->nstacks;
	return o->nstacks - 1;
}

/* Every dump's stacks, their frames moved with the modules, each distinct
 * one once; cut at the depth limit when one of those it stands for is. */
static int stacks(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t total = 0, frames = 0;

	for (size_t k = 0; k < m->n; k++) {
		total += m->d[k].nstacks;
		for (size_t i = 0; i < m->d[k].nstacks; i++)
			frames += m->d[k].stacks[i].n;
	}
	m->table_size = 16;
	while (m->table_size < 2 * total)
		m->table_size *= 2;
	m->table = calloc(m->table_size, sizeof *m->table);
	m->stack = array(total, sizeof *m->stack);
	o->stacks = array(total, sizeof *o->stacks);
	o->frames = array(frames, sizeof *o->frames);
	if (!m->table || !m->stack || !o->stacks || !o->frames) {
		free(m->table);
		return -ENOMEM;
	}
	total = 0;
	for (size_t k = 0; k < m->n; k++) {
		struct in *in = &m->in[k];
		const asp_dump_t *d = in->d;

		in->stack = m->stack + total;
		total += d->nstacks;
		for (size_t i = 0; i < d->nstacks; i++) {
			const asp_stack_t *s = &d->stacks[i];
			size_t x;

			for (size_t j = 0; j < s->n; j++)
				o->frames[m->nframes + j] = rebase(m, in, s->frames[j]);
			x = intern(m, s->n);
			o->stacks[x].truncated = o->stacks[x].truncated || s->truncated;
			in->stack[i] = x;
		}
	}
	free(m->table);
	return 0;
}

/* --- snapshots --------------------------------------------------------------------- */

/* The end of dump k on the merged clock. */
static double end_of(const struct merge *m, size_t k)
{
	const asp_dump_t *d = &m->d[k];

	return m->in[k].offset + (d->has_dump_t ? d->dump_t_s : d->wall_s);
}

/* One snapshot of one dump, on the merged clock; j SIZE_MAX: the dump's
 * end, after which its process holds nothing. */
struct ev {
	double t;
	size_t k, j;
};

static int by_time(const void *pa, const void *pb)
{
	const struct ev *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->k != b->k)
		return a->k < b->k ? -1 : 1;
	return a->j < b->j ? -1 : a->j > b->j;
}

/* The running sums of the processes' latest snapshots. */
struct sums {
	size_t *latest;		/* by dump: its latest snapshot, or SIZE_MAX */
	bool *ended;		/* by dump: its process has ended */
	u128 alloc, freed, bytes, blocks;
};

/* Dump k's latest snapshot becomes j; or with j SIZE_MAX, its process
 * ends: what it held is freed (the system takes it back), what it
 * allocated stays allocated so far. */
static void advance(struct merge *m, struct sums *s, size_t k, size_t j)
{
	const asp_snapshot_t *o = s->latest[k] != SIZE_MAX ?
				  &m->d[k].snapshots[s->latest[k]] : NULL;

	if (o && !s->ended[k]) {
		s->alloc -= o->bytes_allocated;
		s->freed -= o->bytes_freed;
		s->bytes -= o->in_use_bytes;
		s->blocks -= o->in_use_blocks;
	}
	if (j == SIZE_MAX) {
		if (o && !s->ended[k]) {
			s->alloc += o->bytes_allocated;
			s->freed += (u128)o->bytes_freed + o->in_use_bytes;
		}
		s->ended[k] = true;
		return;
	}
	{
		const asp_snapshot_t *v = &m->d[k].snapshots[j];

		s->alloc += v->bytes_allocated;
		s->freed += v->bytes_freed;
		s->bytes += v->in_use_bytes;
		s->blocks += v->in_use_blocks;
		s->latest[k] = j;
	}
}

/* Who held the memory, by merged stack; and the merged snapshots' detail
 * entries, one array for all of them. */
struct held {
	u128 *bytes, *blocks;
	size_t *used;		/* the stacks with an entry */
	size_t nused;
	bool *in;
	asp_detail_t *v;
	size_t n, cap;
	size_t *at;		/* by merged snapshot: its first entry in v */
};

static int by_held(const void *pa, const void *pb, void *arg)
{
	const struct held *h = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	if (h->bytes[a] != h->bytes[b])
		return h->bytes[a] > h->bytes[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The detail of merged snapshot s: the details of the processes whose
 * latest snapshot has one, by merged stack, largest first, within the
 * snapshot's figures, appended to h->v. */
static int detail(struct merge *m, struct held *h, const struct sums *s,
		  asp_snapshot_t *snap)
{
	uint64_t bytes = snap->in_use_bytes, blocks = snap->in_use_blocks;

	h->nused = 0;
	for (size_t k = 0; k < m->n; k++) {
		const asp_snapshot_t *v;

		if (s->latest[k] == SIZE_MAX || s->ended[k])
			continue;
		v = &m->d[k].snapshots[s->latest[k]];
		for (size_t i = 0; v->has_detail && i < v->ndetail; i++) {
			size_t x = m->in[k].stack[v->detail[i].stack];

			if (!h->in[x]) {
				h->in[x] = true;
				h->bytes[x] = h->blocks[x] = 0;
				h->used[h->nused++] = x;
			}
			h->bytes[x] += v->detail[i].bytes;
			h->blocks[x] += v->detail[i].blocks;
		}
	}
	if (h->n + h->nused > h->cap) {
		size_t cap = 2 * h->cap + h->nused + 64;
		asp_detail_t *v = realloc(h->v, cap * sizeof *v);

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	snap->has_detail = true;
	qsort_r(h->used, h->nused, sizeof *h->used, by_held, h);
	for (size_t i = 0; i < h->nused; i++) {
		size_t x = h->used[i];
		uint64_t b = sat(h->bytes[x]), n = sat(h->blocks[x]);

		h->in[x] = false;
		/* Saturated sums can pass the snapshot's: keep within it.
		 * Estimates (sampled dumps) are left as they are. */
		if (!m->d[0].sampled) {
			b = b < bytes ? b : bytes;
			n = n < blocks ? n : blocks;
			bytes -= b;
			blocks -= n;
		}
		if (b || n)
			h->v[h->n + snap->ndetail++] = (asp_detail_t){ x, b, n };
	}
	h->n += snap->ndetail;
	return 0;
}

/* "snapshots": the merged heap over time; none when some dump has none. */
static int snapshots(struct merge *m)
{
	asp_dump_t *o = m->out;
	struct sums s = {0};
	struct held h = {0};
	struct ev *ev;
	size_t nev = 0, ngroups = 0, peak = 0, g;
	uint64_t peak_val = 0;
	double last_end = 0;
	int rc = -ENOMEM;

	for (size_t k = 0; k < m->n; k++) {
		if (!m->d[k].nsnapshots) {
			if (!m->d[0].count_mode)
				asp_warn("%s: no snapshots: the merged dump has none",
					 m->d[k].file);
			return 0;
		}
		nev += m->d[k].nsnapshots;
	}
	ev = array(nev + m->n, sizeof *ev);
	s.latest = array(m->n, sizeof *s.latest);
	s.ended = array(m->n, sizeof *s.ended);
	h.bytes = array(o->nstacks, sizeof *h.bytes);
	h.blocks = array(o->nstacks, sizeof *h.blocks);
	h.used = array(o->nstacks, sizeof *h.used);
	h.in = array(o->nstacks, sizeof *h.in);
	if (!ev || !s.latest || !s.ended || !h.bytes || !h.blocks || !h.used || !h.in)
		goto done;
	nev = 0;
	for (size_t k = 0; k < m->n; k++)
		for (size_t j = 0; j < m->d[k].nsnapshots; j++)
			ev[nev++] = (struct ev){
				m->in[k].offset + m->d[k].snapshots[j].t_s, k, j };
	/* A process's blocks stop counting when it ends, unless it is among
	 * the last to end: the merged heap over time is what the processes
	 * running then held. */
	for (size_t k = 0; k < m->n; k++)
		last_end = end_of(m, k) > last_end ? end_of(m, k) : last_end;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];
		double t = end_of(m, k), last = m->in[k].offset + d->snapshots[d->nsnapshots - 1].t_s;

		if (t < last_end)
			ev[nev++] = (struct ev){ t > last ? t : last, k, SIZE_MAX };
	}
	qsort(ev, nev, sizeof *ev, by_time);
	/* First the sums at each instant, for the peak: the largest, the
	 * first of equals. */
	for (size_t k = 0; k < m->n; k++)
		s.latest[k] = SIZE_MAX;
	for (size_t e = 0; e < nev; ngroups++) {
		double t = ev[e].t;

		for (; e < nev && ev[e].t == t; e++)
			advance(m, &s, ev[e].k, ev[e].j);
		if (ngroups == 0 || sat(s.bytes) > peak_val) {
			peak_val = sat(s.bytes);
			peak = ngroups;
		}
	}
	/* Then the snapshots: with detail where one of the processes took a
	 * detailed one, and at the peak. */
	o->snapshots = array(ngroups, sizeof *o->snapshots);
	h.at = array(ngroups, sizeof *h.at);
	if (!o->snapshots || !h.at)
		goto done;
	s.alloc = s.freed = s.bytes = s.blocks = 0;
	for (size_t k = 0; k < m->n; k++) {
		s.latest[k] = SIZE_MAX;
		s.ended[k] = false;
	}
	g = 0;
	for (size_t e = 0; e < nev; g++) {
		asp_snapshot_t *v = &o->snapshots[g];
		double t = ev[e].t;
		bool detailed = g == peak;

		for (; e < nev && ev[e].t == t; e++) {
			advance(m, &s, ev[e].k, ev[e].j);
			detailed = detailed || (ev[e].j != SIZE_MAX &&
						m->d[ev[e].k].snapshots[ev[e].j].has_detail);
		}
		*v = (asp_snapshot_t){
			.t_s = t, .bytes_allocated = sat(s.alloc), .bytes_freed = sat(s.freed),
			.in_use_bytes = sat(s.bytes), .in_use_blocks = sat(s.blocks),
			.peak = g == peak,
		};
		if (v->peak)
			o->peak_snapshot = g;
		h.at[g] = h.n;
		if (detailed && detail(m, &h, &s, v) < 0)
			goto done;
	}
	o->nsnapshots = ngroups;
	/* The entries are where they stay: each snapshot's detail, in them. */
	o->details = h.v;
	h.v = NULL;
	for (g = 0; g < ngroups; g++)
		if (o->snapshots[g].has_detail)
			o->snapshots[g].detail = o->details + h.at[g];
	rc = 0;
done:
	free(ev);
	free(s.latest);
	free(s.ended);
	free(h.bytes);
	free(h.blocks);
	free(h.used);
	free(h.in);
	free(h.v);
	free(h.at);
	return rc;
}

static void snapshot_info(struct merge *m)
{
	asp_dump_t *o = m->out;

	o->has_snapshot_info = o->detail_callers = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		add(&o->snapshot_max, d->has_snapshot_info ? d->snapshot_max : d->nsnapshots);
		o->detail_callers = o->detail_callers && d->has_snapshot_info && d->detail_callers;
	}
}

/* --- the heap and the tables ---------------------------------------------------------- */

/* One process's life, for the bound of the peak. */
struct life {
	double t;
	bool start;
	uint64_t v;		/* its peak and its bound */
};

static int by_life(const void *pa, const void *pb)
{
	const struct life *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (int)b->start - (int)a->start;	/* starts first */
}

/* The most the processes alive at one moment could hold: the largest sum,
 * over the instants, of the peaks and bounds of those running then (from
 * its start to its end). Processes that never ran together add nothing to
 * each other's. */
static u128 together(struct merge *m)
{
	struct life *v = malloc((2 * m->n + 1) * sizeof *v);
	u128 sum = 0, most = 0;

	if (!v) {
		for (size_t k = 0; k < m->n; k++)
			most += (u128)m->d[k].peak_bytes + m->d[k].peak_bytes_bound;
		return most;
	}
	for (size_t k = 0; k < m->n; k++) {
		uint64_t x = sat((u128)m->d[k].peak_bytes + m->d[k].peak_bytes_bound);

		v[2 * k] = (struct life){ m->in[k].offset, true, x };
		v[2 * k + 1] = (struct life){ end_of(m, k), false, x };
	}
	qsort(v, 2 * m->n, sizeof *v, by_life);
	for (size_t i = 0; i < 2 * m->n; i++) {
		if (v[i].start)
			sum += v[i].v;
		else
			sum -= v[i].v;
		most = sum > most ? sum : most;
	}
	free(v);
	return most;
}

static void heap(struct merge *m)
{
	asp_dump_t *o = m->out;
	bool has_peak_t = false;
	double peak_t = 0, end = 0;
	uint64_t peak = 0, bound;

	o->has_failed = o->has_untracked_frees = o->has_temporary = true;
	o->has_in_use_bytes = o->has_peak = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		add(&o->allocs, d->allocs);
		add(&o->frees, d->frees);
		add(&o->bytes_allocated, d->bytes_allocated);
		add(&o->in_use_blocks, d->in_use_blocks);
		add(&o->in_use_bytes, d->in_use_bytes);
		add(&o->temporary, d->temporary);
		add(&o->failed, d->failed);
		add(&o->untracked_frees, d->untracked_frees);
		o->has_temporary = o->has_temporary && d->has_temporary;
		o->has_in_use_bytes = o->has_in_use_bytes && d->has_in_use_bytes;
		o->has_peak = o->has_peak && d->has_peak;
		o->has_failed = o->has_failed && d->has_failed;
		o->has_untracked_frees = o->has_untracked_frees && d->has_untracked_frees;
		if (end_of(m, k) > end)
			end = end_of(m, k);
		/* The largest of the processes' own peaks. */
		if (d->has_peak && (k == 0 || d->peak_bytes > peak)) {
			peak = d->peak_bytes;
			has_peak_t = d->has_peak_t;
			peak_t = m->in[k].offset + d->peak_t_s;
		}
	}
	/* The figures some dumps lack are left out. */
	o->in_use_bytes = o->has_in_use_bytes ? o->in_use_bytes : 0;
	o->temporary = o->has_temporary ? o->temporary : 0;
	o->failed = o->has_failed ? o->failed : 0;
	o->untracked_frees = o->has_untracked_frees ? o->untracked_frees : 0;
	if (!o->has_peak)
		return;
	if (o->nsnapshots && o->snapshots[o->peak_snapshot].in_use_bytes >= peak) {
		peak = o->snapshots[o->peak_snapshot].in_use_bytes;
		peak_t = o->snapshots[o->peak_snapshot].t_s;
		has_peak_t = true;
	}
	/* Without snapshots, the processes may all have held what they
	 * held at their ends at once: the peak is at least that. With them,
	 * the snapshots say what they held together. */
	if (o->has_in_use_bytes && !o->nsnapshots && o->in_use_bytes > peak) {
		peak = o->in_use_bytes;
		peak_t = end;
		has_peak_t = true;
	}
	o->peak_bytes = peak;
	/* The true peak is at most the sum of the peaks of those that ran
	 * at one time. */
	bound = sat(together(m));
	o->has_peak_bytes_bound = true;
	o->peak_bytes_bound = bound > peak ? bound - peak : 0;
	o->has_peak_t = has_peak_t;
	o->peak_t_s = has_peak_t ? peak_t : 0;
}

static int by_fn(const void *a, const void *b)
{
	return asp_fn_cmp(a, b);
}

/* The functions of every dump, by name, added up. */
static int functions(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t total = 0;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nfns;
	if (!(o->fns = array(total, sizeof *o->fns)))
		return -ENOMEM;
	size_t n = 0;
	o->nfns = 0;
	for (size_t k = 0; k < m->n; k++) {
		for (size_t i = 0; i < m->d[k].nfns; i++) {
			const asp_fn_t *f = &m->d[k].fns[i];
			size_t j = 0;

			while (j < n && strcmp(o->fns[j].name, f->name) != 0)
				j++;
			if (j == n) {
				o->fns[n++] = *f;
				o->nfns = n;
				continue;
			}
			asp_fn_t *x = &o->fns[j];
			if (x->cls != f->cls)
				return fail(m, k, "functions.%s: not the same kind of "
					    "function as in the dumps before", f->name);
			add(&x->calls, f->calls);
			add(&x->bytes, f->bytes);
			add(&x->failed, f->failed);
			add(&x->null, f->null);
			add(&x->temporary, f->temporary);
			x->has_temporary = x->has_temporary && f->has_temporary;
		}
	}
	for (size_t j = 0; j < o->nfns; j++)
		o->fns[j].temporary = o->fns[j].has_temporary ? o->fns[j].temporary : 0;
	qsort(o->fns, o->nfns, sizeof *o->fns, by_fn);
	return 0;
}

static int by_le(const void *pa, const void *pb)
{
	const asp_bucket_t *a = pa, *b = pb;

	return a->le < b->le ? -1 : a->le > b->le;
}

/* The size histograms' buckets, those of one bound added up. */
static int histogram(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t total = 0, n = 0;
	asp_bucket_t *v;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nhist;
	if (!(v = array(total, sizeof *v)))
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++)
		for (size_t i = 0; i < m->d[k].nhist; i++)
			v[n++] = m->d[k].hist[i];
	qsort(v, n, sizeof *v, by_le);
	for (size_t i = 0; i < n; i++) {
		if (o->nhist && v[o->nhist - 1].le == v[i].le)
			add(&v[o->nhist - 1].count, v[i].count);
		else
			v[o->nhist++] = v[i];
	}
	o->hist = v;
	return 0;
}

/* Every dump's threads and thread_stacks in turn, each with its process's
 * pid (an earlier merge's have one), the stacks merged ones. */
static int threads(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t nthreads = 0, nstacks = 0;

	for (size_t k = 0; k < m->n; k++) {
		nthreads += m->d[k].nthreads;
		nstacks += m->d[k].nthread_stacks;
		add(&o->threads_omitted, m->d[k].threads_omitted);
		o->has_thread_stacks = o->has_thread_stacks || m->d[k].has_thread_stacks;
	}
	o->threads = array(nthreads, sizeof *o->threads);
	o->thread_stacks = array(nstacks, sizeof *o->thread_stacks);
	if (!o->threads || !o->thread_stacks)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		for (size_t i = 0; i < d->nthreads; i++) {
			asp_thread_t *t = &o->threads[o->nthreads++];

			*t = d->threads[i];
			t->pid = t->has_pid ? t->pid : d->pid;
			t->has_pid = true;
		}
		for (size_t i = 0; i < d->nthread_stacks; i++) {
			asp_thread_stack_t *t = &o->thread_stacks[o->nthread_stacks++];

			*t = d->thread_stacks[i];
			t->stack = m->in[k].stack[t->stack];
			t->pid = t->has_pid ? t->pid : d->pid;
			t->has_pid = true;
		}
	}
	return 0;
}

static void refs(struct merge *m)
{
	asp_refs_t *o = &m->out->refs;

	o->has_cross_thread = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_refs_t *r = &m->d[k].refs;

		add(&o->acquires, r->acquires);
		add(&o->releases, r->releases);
		add(&o->created, r->created);
		add(&o->destroyed, r->destroyed);
		add(&o->cross_thread, r->cross_thread);
		o->has_cross_thread = o->has_cross_thread && r->has_cross_thread;
	}
	o->cross_thread = o->has_cross_thread ? o->cross_thread : 0;
}

/* --- leaks ----------------------------------------------------------------------------- */

/* The kinds of records times suppressed or not. */
#define REC_SLOTS (2 * ASP_LEAK_SUPPRESSED)

static int by_record(const void *pa, const void *pb)
{
	const asp_record_t *a = pa, *b = pb;
	uint64_t ta = a->bytes + a->indirect_bytes, tb = b->bytes + b->indirect_bytes;

	/* valgrind's order: by total bytes, then blocks, ascending. */
	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks < b->blocks ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* "leaks" and "loss_records" when every dump has a leak part (a leak
 * check, or none left to make). The records of one kind from one merged
 * stack are one, with the first one's other keys. */
static int leaks(struct merge *m)
{
	asp_dump_t *o = m->out;
	bool all = true, any_leaks = false, records_ok = true, any_records = false;
	size_t total = 0, *at;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		if (!asp_summary_has_leak_part(d)) {
			if (all && !d->count_mode)
				asp_warn("%s: no leak check: the merged dump has no LEAK "
					 "SUMMARY", d->file);
			all = false;
		}
		any_leaks = any_leaks || d->has_leaks;
		records_ok = records_ok && (!d->has_leaks || d->has_records);
		any_records = any_records || d->has_records;
		total += d->nrecords;
	}
	m->leak_part = all;
	if (!all || !any_leaks)
		return 0;
	o->has_leaks = true;
	for (size_t k = 0; k < m->n; k++) {
		for (int kind = 0; kind < ASP_LEAK_NKINDS; kind++) {
			add(&o->leaks[kind].bytes, m->d[k].leaks[kind].bytes);
			add(&o->leaks[kind].blocks, m->d[k].leaks[kind].blocks);
		}
	}
	if (!records_ok || !any_records)
		return 0;
	/* The merged record of each stack, kind and suppression: its index + 1. */
	at = array(REC_SLOTS * (o->nstacks + 1), sizeof *at);
	o->records = array(total, sizeof *o->records);
	if (!at || !o->records) {
		free(at);
		return -ENOMEM;
	}
	for (size_t k = 0; k < m->n; k++) {
		for (size_t i = 0; i < m->d[k].nrecords; i++) {
			const asp_record_t *r = &m->d[k].records[i];
			size_t s = m->in[k].stack[r->stack];
			size_t *slot = &at[REC_SLOTS * s + 2 * r->kind + r->suppressed];
			asp_record_t *x = &o->records[*slot ? *slot - 1 : o->nrecords];

			if (!*slot) {
				*x = *r;
				x->stack = s;
				x->alloc_pc = rebase_pc(m, &m->in[k], r->alloc_pc);
				*slot = ++o->nrecords;
				continue;
			}
			add(&x->bytes, r->bytes);
			add(&x->blocks, r->blocks);
			add(&x->indirect_bytes, r->indirect_bytes);
			add(&x->indirect_blocks, r->indirect_blocks);
		}
	}
	o->has_records = true;
	qsort(o->records, o->nrecords, sizeof *o->records, by_record);
	free(at);
	return 0;
}

/* --- heap errors ---------------------------------------------------------------------- */

/* "errors" and "error_summary" when every dump has them: each dump's
 * contexts in turn (a context is one process's), as the dump has it, its
 * stacks and its interposers' addresses moved as the frames are (the
 * addresses it is about are its process's own, and stay); the summaries
 * added up. */
static int errors(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t total = 0;

	for (size_t k = 0; k < m->n; k++) {
		if (!m->d[k].has_heap_errors) {
			if (!m->d[k].count_mode)
				asp_warn("%s: no heap errors: the merged dump has none", m->d[k].file);
			return 0;
		}
		total += m->d[k].nheap_errors;
	}
	if (!(o->heap_errors = array(total, sizeof *o->heap_errors)))
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];
		const struct in *in = &m->in[k];

		for (size_t i = 0; i < d->nheap_errors; i++) {
			asp_heap_error_t *e = &o->heap_errors[o->nheap_errors++];

			*e = d->heap_errors[i];
			e->stack = in->stack[e->stack];
			e->call.pc = rebase_pc(m, in, e->call.pc);
			if (asp_herr_has_block(e->where)) {
				e->alloc_stack = in->stack[e->alloc_stack];
				e->alloc.pc = rebase_pc(m, in, e->alloc.pc);
			}
			if (e->where == ASP_WHERE_FREED) {
				e->free_stack = in->stack[e->free_stack];
				e->free.pc = rebase_pc(m, in, e->free.pc);
			}
		}
		add(&o->errors, d->errors);
		add(&o->error_contexts, d->error_contexts);
		add(&o->errors_suppressed, d->errors_suppressed);
		add(&o->error_contexts_suppressed, d->error_contexts_suppressed);
		add(&o->heap_error_total, d->heap_error_total);
	}
	o->has_heap_errors = o->has_error_summary = true;
	return 0;
}

/* --- stack_stats ---------------------------------------------------------------------- */

static int by_stat(const void *pa, const void *pb)
{
	const asp_stack_stat_t *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* The stacks' totals added up by merged stack, largest first; their peak
 * figures those of the merged peak snapshot. */
static int stack_stats(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t *at = array(o->nstacks, sizeof *at);	/* by merged stack: index + 1 */

	o->stack_stats = array(o->nstacks, sizeof *o->stack_stats);
	if (!at || !o->stack_stats) {
		free(at);
		return -ENOMEM;
	}
	for (size_t k = 0; k < m->n; k++) {
		o->has_stack_stats = o->has_stack_stats || m->d[k].has_stack_stats;
		add(&o->stack_stats_omitted, m->d[k].stack_stats_omitted);
		for (size_t i = 0; i < m->d[k].nstack_stats; i++) {
			const asp_stack_stat_t *s = &m->d[k].stack_stats[i];
			size_t x = m->in[k].stack[s->stack];
			asp_stack_stat_t *t = &o->stack_stats[at[x] ? at[x] - 1 : o->nstack_stats];

			if (!at[x]) {
				*t = (asp_stack_stat_t){ .stack = x, .has_temporary = true };
				at[x] = ++o->nstack_stats;
			}
			add(&t->samples, s->samples);
			add(&t->allocs, s->allocs);
			add(&t->bytes, s->bytes);
			add(&t->in_use_blocks, s->in_use_blocks);
			add(&t->in_use_bytes, s->in_use_bytes);
			add(&t->temporary, s->temporary);
			t->has_temporary = t->has_temporary && s->has_temporary;
		}
	}
	for (size_t i = 0; i < o->nstack_stats; i++) {
		if (!o->stack_stats[i].has_temporary)
			o->stack_stats[i].temporary = 0;
		o->stack_stats[i].has_peak = o->nsnapshots > 0;
	}
	/* What each held in the merged peak snapshot. */
	for (size_t i = 0; o->nsnapshots && i < o->snapshots[o->peak_snapshot].ndetail; i++) {
		const asp_detail_t *x = &o->snapshots[o->peak_snapshot].detail[i];

		if (at[x->stack]) {
			o->stack_stats[at[x->stack] - 1].peak_bytes = x->bytes;
			o->stack_stats[at[x->stack] - 1].peak_blocks = x->blocks;
		}
	}
	qsort(o->stack_stats, o->nstack_stats, sizeof *o->stack_stats, by_stat);
	free(at);
	return 0;
}

/* --- the rest --------------------------------------------------------------------------- */

/* "program" and "options": the first dump's, with the deepest backtrace,
 * and a leak check as the merged leak part has it. */
static int program(struct merge *m)
{
	asp_dump_t *o = m->out;
	const asp_dump_t *d = &m->d[0];
	bool full = false;

	o->pid = d->pid;
	o->has_ppid = d->has_ppid;
	o->ppid = d->ppid;
	o->exe = d->exe;
	o->argc = d->argc;
	if (!(o->argv = array(d->argc, sizeof *o->argv)))
		return -ENOMEM;
	memcpy(o->argv, d->argv, d->argc * sizeof *o->argv);
	o->count_mode = d->count_mode;
	o->sampled = d->sampled;
	o->sample_bytes = d->sample_bytes;
	o->options = d->options;
	for (size_t k = 0; k < m->n; k++) {
		if (m->d[k].backtrace > o->backtrace)
			o->backtrace = m->d[k].backtrace;
		full = full || (m->d[k].leak_check && !strcmp(m->d[k].leak_check, "full"));
	}
	o->leak_check = !m->leak_part ? "no" : full ? "full" : d->leak_check;
	return 0;
}

/* "time" and "dump": the user and system times added up, the wall time
 * and the dump's to the end of the last process, from the first start. */
static void times(struct merge *m)
{
	asp_dump_t *o = m->out;
	bool exit = true;

	o->has_start_unix = m->all_start;
	o->has_dump_t = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		o->user_s += d->user_s;
		o->sys_s += d->sys_s;
		if (m->in[k].offset + d->wall_s > o->wall_s)
			o->wall_s = m->in[k].offset + d->wall_s;
		if (m->in[k].offset == 0)
			o->start_unix = m->in[k].start;
		exit = exit && d->reason == ASP_REASON_EXIT;
		if (end_of(m, k) > o->dump_t_s)
			o->dump_t_s = end_of(m, k);
	}
	o->reason = exit ? ASP_REASON_EXIT : ASP_REASON_INTERVAL;
}

/* "guard" when a dump has one (each process has a pool of its own): the
 * slots, the blocks guarded and those live added up, the mean the first
 * guarded dump's, which options.guard then gives. */
static void guard(struct merge *m)
{
	asp_dump_t *o = m->out;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		if (!d->has_guard)
			continue;
		if (!o->has_guard)
			o->guard_mean = o->options.guard = d->guard_mean;
		o->has_guard = o->options.has_guard = true;
		add(&o->guard_slots, d->guard_slots);
		add(&o->guard_guarded, d->guard_guarded);
		add(&o->guard_live, d->guard_live);
	}
}

/* "processes": each dump's own parts, or the processes an earlier merge
 * kept, their starts on the merged clock. */
static int processes(struct merge *m)
{
	asp_dump_t *o = m->out;
	size_t total = 0;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nprocesses ? m->d[k].nprocesses : 1;
	if (!(o->processes = array(total, sizeof *o->processes)))
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		for (size_t i = 0; i < d->nprocesses; i++)
			o->processes[o->nprocesses++] = (asp_process_t){
				d->processes[i].d, m->in[k].offset + d->processes[i].start_s };
		if (!d->nprocesses)
			o->processes[o->nprocesses++] = (asp_process_t){ d, m->in[k].offset };
	}
	return 0;
}

/* The figures that only add up, once the snapshots have given the peak. */
static int sums(struct merge *m)
{
	if (m->out->nsnapshots)
		snapshot_info(m);
	heap(m);
	times(m);
	refs(m);
	guard(m);
	return histogram(m);
}

/* The merged dump, its parts in the order their warnings come. */
static int build(struct merge *m)
{
	static int (*const steps[])(struct merge *) = {
		check_inputs, modules, place, modules_out, stacks, leaks, program, snapshots,
		functions, sums, threads, errors, stack_stats, processes,
	};
	int rc = 0;

	for (size_t i = 0; rc == 0 && i < sizeof steps / sizeof *steps; i++)
		rc = steps[i](m);
	return rc;
}

static void merge_free(struct merge *m)
{
	for (size_t k = 0; m->in && k < m->n; k++) {
		free(m->in[k].by_base);
		free(m->in[k].mod);
	}
	free(m->in);
	free(m->stack);
	free(m->mods);
}

/* The merged dump's text: written, then loaded back as every reader loads
 * it (the one statement of what a dump must hold). */
static int write_text(const asp_dump_t *o, char **text, char err[ASP_ERR_MAX])
{
	size_t len = 0;
	FILE *f = open_memstream(text, &len);
	asp_dump_t check;
	int rc;

	if (!f)
		return -ENOMEM;
	rc = asp_dump_write(f, o);
	if (fclose(f) != 0 && rc == 0)
		rc = -ENOMEM;
	if (rc < 0)
		return rc;
	rc = asp_dump_parse(&check, "merged", *text, len, err);
	if (rc == 0)
		asp_dump_free(&check);
	return rc == -EINVAL ? -EPROTO : rc;
}

int asp_merge(const asp_dump_t *d, size_t n, char **text, size_t *bad,
	      char err[ASP_ERR_MAX])
{
	asp_dump_t out = { .file = "merged" };
	struct merge m = { .d = d, .n = n, .out = &out, .err = err, .bad = bad };
	int rc = -ENOMEM;

	*text = NULL;
	if ((m.in = calloc(n, sizeof *m.in))) {
		for (size_t k = 0; k < n; k++)
			m.in[k].d = &d[k];
		rc = build(&m);
	}
	if (rc == 0)
		rc = write_text(&out, text, err);
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	asp_dump_free(&out);
	merge_free(&m);
	return rc;
}
