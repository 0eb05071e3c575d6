/* merge - the merge command: the dumps of one program's many processes (a
 * forking server, a test suite, a fleet) added up into one dump that every
 * command and every export reads.
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

#include "msg.h"
#include "summary.h"

/* Where a moved module may start: 2 MiB boundaries. */
#define MODULE_ALIGN (UINT64_C(1) << 21)

/* The loader's largest time, in seconds. */
#define MAX_SECONDS 1e9

/* The latest start time accepted, in seconds since the epoch (year 5138). */
#define MAX_START_UNIX 1e11

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

/* One dump, as the merge sees it. */
struct in {
	const asp_dump_t *d;
	double start;		/* time.start_unix, or 0 */
	double offset;		/* its start after the first one's, in seconds */
	size_t *by_base;	/* its modules' indexes, by base */
	uint64_t *lim;		/* each module's end: the dump's, or past its last frame */
	uint64_t *reach;	/* past the last address in each module */
	size_t *mod;		/* each module's index in the merged list */
	size_t *stack;		/* each stack's index in the merged list */
};

struct mstack {
	uint64_t *frames;
	size_t n;
};

struct merge {
	const asp_dump_t *d;
	size_t n;
	struct in *in;
	struct mod *mods;
	size_t nmods, capmods;
	uint64_t *loose;	/* addresses in no module, sorted, distinct */
	size_t nloose;
	uint64_t top;		/* above every address of every dump */
	struct mstack *stacks;
	size_t nstacks;
	size_t *table;		/* the stacks by hash: index + 1, or 0 */
	size_t table_size;
	bool oom;		/* a JSON value could not be made */
	bool leak_part;		/* every dump has a leak part */
	char *err;
	size_t *bad;
	/* What the snapshots found, for the heap and stack_stats. */
	bool has_snapshots;
	uint64_t snap_peak;	/* the largest merged snapshot's bytes */
	double snap_peak_t;
	uint64_t *peak_bytes, *peak_blocks;	/* by merged stack, at that one */
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

/* --- JSON --------------------------------------------------------------------- */

/* Each records a value that could not be made, or stored. */
static void put(struct merge *m, json_t *obj, const char *key, json_t *v)
{
	if (!v || json_object_set_new(obj, key, v) < 0)
		m->oom = true;
}

static void append(struct merge *m, json_t *arr, json_t *v)
{
	if (!v || json_array_append_new(arr, v) < 0)
		m->oom = true;
}

static json_t *jint(uint64_t v)
{
	return json_integer((json_int_t)v);
}

/* A copy of the member key of the dump's object at path (NULL: none). */
static json_t *raw(const asp_dump_t *d, const char *obj, const char *key)
{
	json_t *o = obj ? json_object_get(d->root, obj) : d->root;

	return json_object_get(o, key);
}

/* A non-negative integer member of a dump's object, when it has one. */
static bool raw_count(const asp_dump_t *d, const char *obj, const char *key,
		      uint64_t *out)
{
	json_t *v = raw(d, obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*out = (uint64_t)json_integer_value(v);
	return true;
}

/* --- the inputs ---------------------------------------------------------------- */

/* A time in seconds of a dump's JSON: present, a number in [0, max]. */
static int get_time(struct merge *m, size_t k, json_t *v, const char *what,
		    double max, double *out)
{
	double t;

	if (!json_is_number(v))
		return fail(m, k, "%s: expected a number, found %s", what,
			    v ? "another type" : "nothing");
	t = json_number_value(v);
	if (!(t >= 0 && t <= max))
		return fail(m, k, "%s: %g is out of range", what, t);
	*out = t;
	return 0;
}

/* The checks no loader makes: the modes agree, the start times and the
 * processes of an earlier merge are sound. Then each dump's offset. */
static int check_inputs(struct merge *m)
{
	bool all_start = true;
	double first = 0;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];
		json_t *procs = raw(d, NULL, "processes"), *v;
		size_t i;
		int rc;

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
		v = raw(d, "time", "start_unix");
		if (v) {
			rc = get_time(m, k, v, "time.start_unix", MAX_START_UNIX,
				      &m->in[k].start);
			if (rc < 0)
				return rc;
		} else {
			all_start = false;
		}
		if (procs && !json_is_array(procs))
			return fail(m, k, "processes: expected an array");
		json_array_foreach(procs, i, v) {
			char what[64];
			double t;

			snprintf(what, sizeof what, "processes[%zu].start_s", i);
			if (!json_is_object(v))
				return fail(m, k, "processes[%zu]: expected an object", i);
			rc = get_time(m, k, json_object_get(v, "start_s"), what,
				      MAX_SECONDS, &t);
			if (rc < 0)
				return rc;
		}
	}
	if (!all_start) {
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
	return addr < in->lim[i] ? (long)i : -1;
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

	if (i >= 0 && addr >= in->reach[i])
		in->reach[i] = addr + 1;
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

/* Every dump's module ends, loose addresses and merged modules, placed. */
static int modules(struct merge *m)
{
	size_t total = 0;
	uint64_t top;

	for (size_t k = 0; k < m->n; k++) {
		struct in *in = &m->in[k];
		const asp_dump_t *d = in->d;

		in->by_base = calloc(d->nmodules + 1, sizeof *in->by_base);
		in->lim = calloc(d->nmodules + 1, sizeof *in->lim);
		in->mod = calloc(d->nmodules + 1, sizeof *in->mod);
		in->reach = calloc(d->nmodules + 1, sizeof *in->reach);
		if (!in->by_base || !in->lim || !in->mod || !in->reach)
			return -ENOMEM;
		for (size_t i = 0; i < d->nmodules; i++) {
			long x = module_of(m, &d->modules[i]);

			if (x < 0)
				return -ENOMEM;
			in->by_base[i] = i;
			in->mod[i] = (size_t)x;
			in->lim[i] = d->modules[i].end ? d->modules[i].end : UINT64_MAX;
		}
		qsort_r(in->by_base, d->nmodules, sizeof *in->by_base, by_base,
			(void *)d);
		/* A module without an end reaches past its last address. */
		each_address(d, grow_module, in);
		for (size_t i = 0; i < d->nmodules; i++) {
			const asp_module_t *x = &d->modules[i];
			struct mod *y = &m->mods[in->mod[i]];

			if (!x->end)
				in->lim[i] = in->reach[i] > x->base ? in->reach[i] :
					     x->base + 1;
			if (in->lim[i] - x->base > y->size)
				y->size = in->lim[i] - x->base;
			if (in->lim[i] > m->top)
				m->top = in->lim[i];
			if (!y->has_start) {
				json_t *s = json_object_get(json_array_get(
					raw(d, NULL, "modules"), i), "start");

				if (json_is_integer(s) && json_integer_value(s) >= 0 &&
				    (uint64_t)json_integer_value(s) >= x->base &&
				    (uint64_t)json_integer_value(s) < in->lim[i]) {
					y->has_start = true;
					y->start_off = (uint64_t)json_integer_value(s) - x->base;
				}
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
	for (size_t i = 0; i < m->nmods; i++)
		if (m->mods[i].want <= ASP_DUMP_MAX - m->mods[i].size &&
		    m->mods[i].want + m->mods[i].size > m->top)
			m->top = m->mods[i].want + m->mods[i].size;
	top = align_up(m->top);
	for (size_t i = 0; i < m->nmods; i++) {
		struct mod *x = &m->mods[i];

		if (x->want <= ASP_DUMP_MAX - x->size &&
		    !taken(m, i, x->want, x->want + x->size) &&
		    !loose_in(m, x->want, x->want + x->size)) {
			x->base = x->want;
			continue;
		}
		if (!top || top > ASP_DUMP_MAX - x->size)
			return fail(m, 0, "the modules of the dumps do not fit in one "
				    "address space");
		x->base = top;
		top = align_up(top + x->size);
	}
	return 0;
}

/* addr of dump in, in the merged modules. */
static uint64_t rebase(const struct merge *m, const struct in *in, uint64_t addr)
{
	long i = module_at(in, addr);

	if (i < 0)
		return addr;
	return m->mods[in->mod[i]].base + (addr - in->d->modules[i].base);
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

/* The merged index of the stack f[0..n) (taken over, or freed when the
 * list has it already). */
static long intern(struct merge *m, uint64_t *f, size_t n)
{
	size_t h = hash_frames(f, n) & (m->table_size - 1);

	while (m->table[h]) {
		struct mstack *s = &m->stacks[m->table[h] - 1];

		if (s->n == n && (n == 0 || memcmp(s->frames, f, n * sizeof *f) == 0)) {
			free(f);
			return (long)(m->table[h] - 1);
		}
		h = (h + 1) & (m->table_size - 1);
	}
	m->stacks[m->nstacks] = (struct mstack){ f, n };
	m->table[h] = ++m->nstacks;
	return (long)(m->nstacks - 1);
}

static int stacks(struct merge *m)
{
	size_t total = 0;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nstacks;
	m->table_size = 16;
	while (m->table_size < 2 * total)
		m->table_size *= 2;
	m->table = calloc(m->table_size, sizeof *m->table);
	m->stacks = calloc(total + 1, sizeof *m->stacks);
	if (!m->table || !m->stacks)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		struct in *in = &m->in[k];
		const asp_dump_t *d = in->d;

		in->stack = calloc(d->nstacks + 1, sizeof *in->stack);
		if (!in->stack)
			return -ENOMEM;
		for (size_t i = 0; i < d->nstacks; i++) {
			const asp_stack_t *s = &d->stacks[i];
			uint64_t *f = malloc((s->n ? s->n : 1) * sizeof *f);

			if (!f)
				return -ENOMEM;
			for (size_t j = 0; j < s->n; j++)
				f[j] = rebase(m, in, s->frames[j]);
			in->stack[i] = (size_t)intern(m, f, s->n);
		}
	}
	return 0;
}

static json_t *stacks_json(struct merge *m)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < m->nstacks; i++) {
		json_t *s = json_array();

		for (size_t j = 0; s && j < m->stacks[i].n; j++)
			append(m, s, jint(m->stacks[i].frames[j]));
		append(m, a, s);
	}
	return a;
}

static json_t *modules_json(struct merge *m)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < m->nmods; i++) {
		const struct mod *x = &m->mods[i];
		json_t *o = json_object();

		if (!o) {
			m->oom = true;
			break;
		}
		put(m, o, "path", json_string(x->path));
		put(m, o, "base", jint(x->base));
		if (x->has_start)
			put(m, o, "start", jint(x->base + x->start_off));
		put(m, o, "end", jint(x->base + x->size));
		if (x->build_id)
			put(m, o, "build_id", json_string(x->build_id));
		append(m, a, o);
	}
	return a;
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

/* Who held the memory, by merged stack. */
struct held {
	u128 *bytes, *blocks;
	size_t *used;		/* the stacks with an entry */
	size_t nused;
	bool *in;
};

static int by_held(const void *pa, const void *pb, void *arg)
{
	const struct held *h = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;

	if (h->bytes[a] != h->bytes[b])
		return h->bytes[a] > h->bytes[b] ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The detail of a merged snapshot of bytes and blocks: the details of the
 * processes whose latest snapshot has one, by merged stack, largest first,
 * within the snapshot's figures. With peak, each stack's share goes to
 * m->peak_bytes and m->peak_blocks. */
static json_t *detail_json(struct merge *m, struct held *h, const struct sums *s,
			   uint64_t bytes, uint64_t blocks, bool peak)
{
	json_t *a = json_array();

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
		if (peak) {
			m->peak_bytes[x] = b;
			m->peak_blocks[x] = n;
		}
		if (!b && !n)
			continue;
		if (a)
			append(m, a, json_pack("{s:o,s:o,s:o}", "stack", jint(x),
					       m->d[0].sampled ? "est_bytes" : "bytes", jint(b),
					       m->d[0].sampled ? "est_blocks" : "blocks", jint(n)));
	}
	return a;
}

/* "snapshots": the merged heap over time; NULL with m->has_snapshots
 * false when some dump has none. */
static int snapshots(struct merge *m, json_t **out)
{
	struct sums s = {0};
	struct held h = {0};
	struct ev *ev;
	size_t nev = 0, ngroups = 0, peak = 0, g;
	uint64_t peak_val = 0;
	double last_end = 0;
	json_t *a;
	int rc = -ENOMEM;

	*out = NULL;
	for (size_t k = 0; k < m->n; k++) {
		if (!m->d[k].nsnapshots) {
			if (!m->d[0].count_mode)
				asp_warn("%s: no snapshots: the merged dump has none",
					 m->d[k].file);
			return 0;
		}
		nev += m->d[k].nsnapshots;
	}
	ev = calloc(nev + m->n + 1, sizeof *ev);
	s.latest = calloc(m->n, sizeof *s.latest);
	s.ended = calloc(m->n, sizeof *s.ended);
	h.bytes = calloc(m->nstacks + 1, sizeof *h.bytes);
	h.blocks = calloc(m->nstacks + 1, sizeof *h.blocks);
	h.used = calloc(m->nstacks + 1, sizeof *h.used);
	h.in = calloc(m->nstacks + 1, sizeof *h.in);
	m->peak_bytes = calloc(m->nstacks + 1, sizeof *m->peak_bytes);
	m->peak_blocks = calloc(m->nstacks + 1, sizeof *m->peak_blocks);
	a = json_array();
	if (!ev || !s.latest || !s.ended || !h.bytes || !h.blocks || !h.used || !h.in ||
	    !m->peak_bytes || !m->peak_blocks || !a)
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
	for (size_t k = 0; k < m->n; k++) {
		s.latest[k] = SIZE_MAX;
		s.ended[k] = false;
	}
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
	s.alloc = s.freed = s.bytes = s.blocks = 0;
	for (size_t k = 0; k < m->n; k++) {
		s.latest[k] = SIZE_MAX;
		s.ended[k] = false;
	}
	g = 0;
	for (size_t e = 0; e < nev; g++) {
		double t = ev[e].t;
		bool detailed = g == peak;
		json_t *o;

		for (; e < nev && ev[e].t == t; e++) {
			advance(m, &s, ev[e].k, ev[e].j);
			detailed = detailed || (ev[e].j != SIZE_MAX &&
						m->d[ev[e].k].snapshots[ev[e].j].has_detail);
		}
		o = json_object();
		if (!o)
			goto done;
		put(m, o, "t_s", json_real(t));
		put(m, o, "bytes_allocated", jint(sat(s.alloc)));
		put(m, o, "bytes_freed", jint(sat(s.freed)));
		put(m, o, "in_use_bytes", jint(sat(s.bytes)));
		put(m, o, "in_use_blocks", jint(sat(s.blocks)));
		if (g == peak) {
			put(m, o, "peak", json_true());
			m->snap_peak = sat(s.bytes);
			m->snap_peak_t = t;
		}
		if (detailed)
			put(m, o, "detail", detail_json(m, &h, &s, sat(s.bytes),
							sat(s.blocks), g == peak));
		append(m, a, o);
	}
	m->has_snapshots = true;
	*out = a;
	a = NULL;
	rc = 0;
done:
	json_decref(a);
	free(ev);
	free(s.latest);
	free(s.ended);
	free(h.bytes);
	free(h.blocks);
	free(h.used);
	free(h.in);
	return rc;
}

static json_t *snapshot_info_json(struct merge *m)
{
	bool callers = true;
	u128 max = 0;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		max += d->has_snapshot_info ? d->snapshot_max : d->nsnapshots;
		callers = callers && d->has_snapshot_info && d->detail_callers;
	}
	return json_pack("{s:o,s:s}", "max", jint(sat(max)),
			 "detail", callers ? "callers" : "stacks");
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

static json_t *heap_json(struct merge *m)
{
	u128 sum[6] = {0}, bounds = 0;
	uint64_t failed = 0, untracked = 0, peak = 0, v;
	bool has_failed = true, has_untracked = true, has_peak = true;
	bool has_temp = true, has_in_use = true, has_peak_t = false;
	double peak_t = 0, end = 0;
	json_t *h;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		sum[0] += d->allocs;
		sum[1] += d->frees;
		sum[2] += d->bytes_allocated;
		sum[3] += d->in_use_blocks;
		sum[4] += d->in_use_bytes;
		sum[5] += d->temporary;
		has_temp = has_temp && d->has_temporary;
		has_in_use = has_in_use && d->has_in_use_bytes;
		has_peak = has_peak && d->has_peak;
		if (raw_count(d, "heap", "failed", &v))
			failed = sat((u128)failed + v);
		else
			has_failed = false;
		if (raw_count(d, "heap", "untracked_frees", &v))
			untracked = sat((u128)untracked + v);
		else
			has_untracked = false;
		if (end_of(m, k) > end)
			end = end_of(m, k);
		/* The largest of the processes' own peaks. */
		if (d->has_peak && (k == 0 || d->peak_bytes > peak)) {
			peak = d->peak_bytes;
			has_peak_t = d->has_peak_t;
			peak_t = m->in[k].offset + d->peak_t_s;
		}
	}
	h = json_pack("{s:o,s:o,s:o,s:o}", "allocs", jint(sat(sum[0])),
		      "frees", jint(sat(sum[1])), "bytes_allocated", jint(sat(sum[2])),
		      "in_use_blocks", jint(sat(sum[3])));
	if (!h)
		return NULL;
	if (has_failed)
		put(m, h, "failed", jint(failed));
	if (has_untracked)
		put(m, h, "untracked_frees", jint(untracked));
	put(m, h, "in_use_bytes", has_in_use ? jint(sat(sum[4])) : json_null());
	if (has_peak && m->has_snapshots && m->snap_peak >= peak) {
		peak = m->snap_peak;
		peak_t = m->snap_peak_t;
		has_peak_t = true;
	}
	/* Without snapshots, the processes may all have held what they
	 * held at their ends at once: the peak is at least that. With them,
	 * the snapshots say what they held together. */
	if (has_peak && has_in_use && !m->has_snapshots && sat(sum[4]) > peak) {
		peak = sat(sum[4]);
		peak_t = end;
		has_peak_t = true;
	}
	put(m, h, "peak_bytes", has_peak ? jint(peak) : json_null());
	if (has_peak) {
		/* The true peak is at most the sum of the peaks of those that
		 * ran at one time. */
		bounds = together(m);
		put(m, h, "peak_bytes_bound", jint(sat(bounds) > peak ?
						   sat(bounds) - peak : 0));
		if (has_peak_t)
			put(m, h, "peak_t_s", json_real(peak_t));
	}
	if (has_temp)
		put(m, h, "temporary", jint(sat(sum[5])));
	return h;
}

struct fsum {
	asp_fn_t f;
	u128 calls, bytes, failed, null, temporary;
	bool has_temporary;
};

static int by_fn(const void *a, const void *b)
{
	return asp_fn_cmp(&((const struct fsum *)a)->f, &((const struct fsum *)b)->f);
}

static int functions_json(struct merge *m, json_t **out)
{
	size_t total = 0, n = 0;
	struct fsum *v;
	json_t *o;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nfns;
	v = calloc(total + 1, sizeof *v);
	if (!v)
		return -ENOMEM;
	for (size_t k = 0; k < m->n; k++) {
		for (size_t i = 0; i < m->d[k].nfns; i++) {
			const asp_fn_t *f = &m->d[k].fns[i];
			size_t j;

			for (j = 0; j < n; j++)
				if (strcmp(v[j].f.name, f->name) == 0)
					break;
			if (j == n) {
				v[n++] = (struct fsum){ .f = *f, .has_temporary = true };
			} else if (v[j].f.cls != f->cls) {
				free(v);
				return fail(m, k, "functions.%s: not the same kind of "
					    "function as in the dumps before", f->name);
			}
			v[j].calls += f->calls;
			v[j].bytes += f->bytes;
			v[j].failed += f->failed;
			v[j].null += f->null;
			v[j].temporary += f->temporary;
			v[j].has_temporary = v[j].has_temporary && f->has_temporary;
		}
	}
	qsort(v, n, sizeof *v, by_fn);
	o = json_object();
	for (size_t j = 0; o && j < n; j++) {
		json_t *x = json_pack("{s:o}", "calls", jint(sat(v[j].calls)));

		if (x && v[j].f.cls == ASP_FN_ALLOC) {
			put(m, x, "bytes", jint(sat(v[j].bytes)));
			put(m, x, "failed", jint(sat(v[j].failed)));
			if (v[j].has_temporary)
				put(m, x, "temporary", jint(sat(v[j].temporary)));
		} else if (x && v[j].f.cls == ASP_FN_FREE) {
			put(m, x, "null", jint(sat(v[j].null)));
		}
		put(m, o, v[j].f.name, x);
	}
	free(v);
	*out = o;
	return 0;
}

static int by_le(const void *pa, const void *pb)
{
	const asp_bucket_t *a = pa, *b = pb;

	return a->le < b->le ? -1 : a->le > b->le;
}

static json_t *histogram_json(struct merge *m)
{
	size_t total = 0, n = 0;
	asp_bucket_t *v;
	json_t *a;

	for (size_t k = 0; k < m->n; k++)
		total += m->d[k].nhist;
	v = calloc(total + 1, sizeof *v);
	if (!v)
		return NULL;
	for (size_t k = 0; k < m->n; k++)
		for (size_t i = 0; i < m->d[k].nhist; i++)
			v[n++] = m->d[k].hist[i];
	qsort(v, n, sizeof *v, by_le);
	a = json_array();
	for (size_t i = 0; a && i < n;) {
		u128 count = 0;
		size_t j = i;

		for (; j < n && v[j].le == v[i].le; j++)
			count += v[j].count;
		/* A bound above 2^63 is written as a real, as the shim does. */
		append(m, a, json_pack("{s:o,s:o}", "le", v[i].le == UINT64_MAX ?
				       json_real(18446744073709551615.0) : jint(v[i].le),
				       "count", jint(sat(count))));
		i = j;
	}
	free(v);
	return a;
}

/* The dump's array key, each element copied, with "pid" set where it is
 * not and, with stacks, "stack" made a merged index (the loader checked
 * it). */
static void concat(struct merge *m, json_t *a, size_t k, const char *key,
		   bool stacks)
{
	json_t *src = raw(&m->d[k], NULL, key), *v;
	size_t i;

	json_array_foreach(src, i, v) {
		json_t *c = json_deep_copy(v);
		json_t *s = json_object_get(c, "stack");

		if (!c) {
			m->oom = true;
			return;
		}
		if (!json_object_get(c, "pid"))
			put(m, c, "pid", json_integer(m->d[k].pid));
		if (stacks && json_is_integer(s))
			put(m, c, "stack", jint(m->in[k].stack[json_integer_value(s)]));
		append(m, a, c);
	}
}

static json_t *refs_json(struct merge *m)
{
	u128 v[5] = {0};
	bool cross = true;

	for (size_t k = 0; k < m->n; k++) {
		const asp_refs_t *r = &m->d[k].refs;

		v[0] += r->acquires;
		v[1] += r->releases;
		v[2] += r->created;
		v[3] += r->destroyed;
		v[4] += r->cross_thread;
		cross = cross && r->has_cross_thread;
	}
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "acquires", jint(sat(v[0])),
			 "releases", jint(sat(v[1])), "objects_created", jint(sat(v[2])),
			 "objects_destroyed", jint(sat(v[3])),
			 "cross_thread", cross ? jint(sat(v[4])) : json_null());
}

/* --- leaks ----------------------------------------------------------------------------- */

/* The kinds of records times suppressed or not. */
#define REC_SLOTS (2 * ASP_LEAK_SUPPRESSED)

/* A merged loss record: those of one kind from one merged stack. */
struct mrec {
	const asp_record_t *r;	/* the first one, for its other keys */
	size_t k;		/* its dump */
	size_t stack;
	u128 bytes, blocks, ibytes, iblocks;
};

static int by_record(const void *pa, const void *pb)
{
	const struct mrec *a = pa, *b = pb;
	u128 ta = a->bytes + a->ibytes, tb = b->bytes + b->ibytes;

	/* valgrind's order: by total bytes, then blocks, ascending. */
	if (ta != tb)
		return ta < tb ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks < b->blocks ? -1 : 1;
	if (a->r->kind != b->r->kind)
		return a->r->kind < b->r->kind ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static json_t *record_json(struct merge *m, const struct mrec *x)
{
	const asp_record_t *r = x->r;
	json_t *raw_rec = json_array_get(raw(&m->d[x->k], NULL, "loss_records"),
					 (size_t)(r - m->d[x->k].records));
	json_t *o = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b}",
			      "kind", asp_leak_kind_name[r->kind],
			      "bytes", jint(sat(x->bytes)), "blocks", jint(sat(x->blocks)),
			      "indirect_bytes", jint(sat(x->ibytes)),
			      "indirect_blocks", jint(sat(x->iblocks)),
			      "stack", jint(x->stack), "suppressed", r->suppressed);
	json_t *v;

	if (!o)
		return NULL;
	if ((v = json_object_get(raw_rec, "suppression")) && json_is_string(v))
		put(m, o, "suppression", json_deep_copy(v));
	if (r->alloc_fn)
		put(m, o, "alloc_fn", json_string(r->alloc_fn));
	if (r->alloc_pc)
		put(m, o, "alloc_pc", jint(rebase(m, &m->in[x->k], r->alloc_pc)));
	if ((v = json_object_get(raw_rec, "alloc_stack")))
		put(m, o, "alloc_stack", json_deep_copy(v));
	return o;
}

/* "leaks" and "loss_records" when every dump has a leak part (a leak
 * check, or none left to make); NULL otherwise. */
static int leaks_json(struct merge *m, json_t **leaks, json_t **records)
{
	bool all = true, any_leaks = false, records_ok = true, any_records = false;
	size_t total = 0, n = 0;
	struct mrec *v;
	size_t *at;

	*leaks = *records = NULL;
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
	*leaks = json_object();
	for (int kind = 0; *leaks && kind < ASP_LEAK_NKINDS; kind++) {
		u128 bytes = 0, blocks = 0;

		for (size_t k = 0; k < m->n; k++) {
			bytes += m->d[k].leaks[kind].bytes;
			blocks += m->d[k].leaks[kind].blocks;
		}
		put(m, *leaks, asp_leak_key[kind], json_pack("{s:o,s:o}",
			"bytes", jint(sat(bytes)), "blocks", jint(sat(blocks))));
	}
	if (!records_ok || !any_records)
		return 0;
	v = calloc(total + 1, sizeof *v);
	/* The merged record of each stack, kind and suppression: its index + 1. */
	at = calloc(REC_SLOTS * (m->nstacks + 1), sizeof *at);
	if (!v || !at) {
		free(v);
		free(at);
		return -ENOMEM;
	}
	for (size_t k = 0; k < m->n; k++) {
		for (size_t i = 0; i < m->d[k].nrecords; i++) {
			const asp_record_t *r = &m->d[k].records[i];
			size_t s = m->in[k].stack[r->stack];
			size_t *slot = &at[REC_SLOTS * s + 2 * r->kind + r->suppressed];
			size_t j;

			if (!*slot) {
				v[n++] = (struct mrec){ .r = r, .k = k, .stack = s };
				*slot = n;
			}
			j = *slot - 1;
			v[j].bytes += r->bytes;
			v[j].blocks += r->blocks;
			v[j].ibytes += r->indirect_bytes;
			v[j].iblocks += r->indirect_blocks;
		}
	}
	qsort(v, n, sizeof *v, by_record);
	*records = json_array();
	for (size_t i = 0; *records && i < n; i++)
		append(m, *records, record_json(m, &v[i]));
	free(v);
	free(at);
	return 0;
}

/* --- heap errors ---------------------------------------------------------------------- */

/* Context i of dump k as the merged dump has it: as the dump wrote it,
 * its stacks and its interposers' addresses moved as the frames are; the
 * addresses it is about are its process's own, and stay. */
static json_t *error_json(struct merge *m, size_t k, size_t i)
{
	const asp_heap_error_t *e = &m->d[k].heap_errors[i];
	const struct in *in = &m->in[k];
	json_t *o = json_deep_copy(json_array_get(raw(&m->d[k], NULL, "errors"), i));
	json_t *b = json_object_get(o, "block");

	if (!o)
		return NULL;
	put(m, o, "stack", jint(in->stack[e->stack]));
	if (e->call.pc)
		put(m, o, "call_pc", jint(rebase(m, in, e->call.pc)));
	if (b && asp_herr_has_block(e->where)) {
		put(m, b, "alloc_stack", jint(in->stack[e->alloc_stack]));
		if (e->alloc.pc)
			put(m, b, "alloc_pc", jint(rebase(m, in, e->alloc.pc)));
	}
	if (b && e->where == ASP_WHERE_FREED) {
		put(m, b, "free_stack", jint(in->stack[e->free_stack]));
		if (e->free.pc)
			put(m, b, "free_pc", jint(rebase(m, in, e->free.pc)));
	}
	return o;
}

/* "errors" and "error_summary" when every dump has them (true): each
 * dump's contexts in turn (a context is one process's), and the summaries
 * added up; NULL where memory ran out. */
static bool errors_json(struct merge *m, json_t **errors, json_t **summary)
{
	u128 sum[4] = { 0 };

	*errors = *summary = NULL;
	for (size_t k = 0; k < m->n; k++) {
		if (!m->d[k].has_heap_errors) {
			if (!m->d[k].count_mode)
				asp_warn("%s: no heap errors: the merged dump has none", m->d[k].file);
			return false;
		}
	}
	*errors = json_array();
	for (size_t k = 0; *errors && k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		for (size_t i = 0; i < d->nheap_errors; i++)
			append(m, *errors, error_json(m, k, i));
		sum[0] += d->errors;
		sum[1] += d->error_contexts;
		sum[2] += d->errors_suppressed;
		sum[3] += d->error_contexts_suppressed;
	}
	*summary = json_pack("{s:o,s:o,s:o,s:o}", "errors", jint(sat(sum[0])),
			     "contexts", jint(sat(sum[1])), "suppressed", jint(sat(sum[2])),
			     "suppressed_contexts", jint(sat(sum[3])));
	return true;
}

/* --- stack_stats ---------------------------------------------------------------------- */

struct mstat {
	size_t stack;
	u128 samples, allocs, bytes, iblocks, ibytes, temporary;
	bool has_temporary, seen;
};

static int by_stat(const void *pa, const void *pb)
{
	const struct mstat *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static json_t *stack_stats_json(struct merge *m)
{
	struct mstat *v = calloc(m->nstacks + 1, sizeof *v);
	size_t n = 0;
	json_t *a;

	if (!v)
		return NULL;
	for (size_t k = 0; k < m->n; k++) {
		for (size_t i = 0; i < m->d[k].nstack_stats; i++) {
			const asp_stack_stat_t *s = &m->d[k].stack_stats[i];
			struct mstat *x = &v[m->in[k].stack[s->stack]];

			if (!x->seen) {
				x->seen = x->has_temporary = true;
				x->stack = m->in[k].stack[s->stack];
				n++;
			}
			x->samples += s->samples;
			x->allocs += s->allocs;
			x->bytes += s->bytes;
			x->iblocks += s->in_use_blocks;
			x->ibytes += s->in_use_bytes;
			x->temporary += s->temporary;
			x->has_temporary = x->has_temporary && s->has_temporary;
		}
	}
	/* The entries that were seen, at the front. */
	n = 0;
	for (size_t i = 0; i < m->nstacks; i++)
		if (v[i].seen)
			v[n++] = v[i];
	qsort(v, n, sizeof *v, by_stat);
	a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		const struct mstat *x = &v[i];
		/* A sampled dump's figures are estimates, named est_*. */
		bool e = m->d[0].sampled;
		json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o}", "stack", jint(x->stack),
				      e ? "est_allocs" : "allocs", jint(sat(x->allocs)),
				      e ? "est_bytes" : "bytes", jint(sat(x->bytes)),
				      e ? "est_in_use_blocks" : "in_use_blocks", jint(sat(x->iblocks)),
				      e ? "est_in_use_bytes" : "in_use_bytes", jint(sat(x->ibytes)));

		if (o && e)
			put(m, o, "samples", jint(sat(x->samples)));
		if (o && x->has_temporary)
			put(m, o, e ? "est_temporary" : "temporary", jint(sat(x->temporary)));
		if (o && m->has_snapshots) {
			put(m, o, e ? "est_peak_bytes" : "peak_bytes", jint(m->peak_bytes[x->stack]));
			put(m, o, e ? "est_peak_blocks" : "peak_blocks",
			    jint(m->peak_blocks[x->stack]));
		}
		append(m, a, o);
	}
	free(v);
	return a;
}

/* --- the rest --------------------------------------------------------------------------- */

static json_t *time_json(struct merge *m, bool *has_start)
{
	double user = 0, sys = 0, wall = 0, first = 0;

	*has_start = true;
	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		user += d->user_s;
		sys += d->sys_s;
		if (m->in[k].offset + d->wall_s > wall)
			wall = m->in[k].offset + d->wall_s;
		if (m->in[k].offset == 0)
			first = m->in[k].start;
		*has_start = *has_start && raw(d, "time", "start_unix");
	}
	return *has_start ?
	       json_pack("{s:f,s:f,s:f,s:f}", "wall_s", wall, "user_s", user,
			 "sys_s", sys, "start_unix", first) :
	       json_pack("{s:f,s:f,s:f}", "wall_s", wall, "user_s", user, "sys_s", sys);
}

static json_t *dump_json(struct merge *m)
{
	bool exit = true;
	double end = 0;

	for (size_t k = 0; k < m->n; k++) {
		exit = exit && m->d[k].reason == ASP_REASON_EXIT;
		if (end_of(m, k) > end)
			end = end_of(m, k);
	}
	return json_pack("{s:s,s:f}", "reason", exit ? "exit" : "interval", "t_s", end);
}

static json_t *options_json(struct merge *m, bool leaks)
{
	json_t *o = json_deep_copy(raw(&m->d[0], NULL, "options"));
	uint64_t bt = 0, v;
	bool full = false;

	if (!o)
		return NULL;
	for (size_t k = 0; k < m->n; k++) {
		if (raw_count(&m->d[k], "options", "backtrace", &v) && v > bt)
			bt = v;
		full = full || (m->d[k].leak_check && !strcmp(m->d[k].leak_check, "full"));
	}
	put(m, o, "backtrace", jint(bt));
	if (!leaks)
		put(m, o, "leak_check", json_string("no"));
	else if (full)
		put(m, o, "leak_check", json_string("full"));
	return o;
}

/* "guard" when a dump has one (each process has a pool of its own): the
 * slots, the blocks guarded and those live added up, the mean the first
 * guarded dump's. */
static json_t *guard_json(struct merge *m)
{
	u128 sum[3] = { 0 };
	uint64_t mean = 0;

	for (size_t k = 0; k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];

		if (!d->has_guard)
			continue;
		if (mean == 0)
			mean = d->guard_mean;
		sum[0] += d->guard_slots;
		sum[1] += d->guard_guarded;
		sum[2] += d->guard_live;
	}
	if (mean == 0)
		return NULL;
	return json_pack("{s:o,s:o,s:o,s:o}", "mean", jint(mean), "slots", jint(sat(sum[0])),
			 "guarded", jint(sat(sum[1])), "live", jint(sat(sum[2])));
}

/* "processes": each dump's, or the ones an earlier merge kept. */
static json_t *processes_json(struct merge *m)
{
	json_t *a = json_array();

	for (size_t k = 0; a && k < m->n; k++) {
		const asp_dump_t *d = &m->d[k];
		json_t *procs = raw(d, NULL, "processes"), *v, *o;
		size_t i;

		json_array_foreach(procs, i, v) {
			o = json_deep_copy(v);
			if (o)
				put(m, o, "start_s", json_real(m->in[k].offset +
					json_number_value(json_object_get(v, "start_s"))));
			append(m, a, o);
		}
		if (procs)
			continue;
		o = json_object();
		if (!o) {
			m->oom = true;
			break;
		}
		put(m, o, "pid", json_integer(d->pid));
		if ((v = raw(d, "program", "ppid")))
			put(m, o, "ppid", json_deep_copy(v));
		put(m, o, "exe", json_deep_copy(raw(d, "program", "exe")));
		put(m, o, "argv", json_deep_copy(raw(d, "program", "argv")));
		put(m, o, "file", json_string(d->file));
		put(m, o, "start_s", json_real(m->in[k].offset));
		put(m, o, "heap", json_deep_copy(raw(d, NULL, "heap")));
		put(m, o, "time", json_deep_copy(raw(d, NULL, "time")));
		v = raw(d, NULL, "dump");
		put(m, o, "dump", v ? json_deep_copy(v) : json_pack("{s:s}", "reason", "exit"));
		if ((v = raw(d, NULL, "guard")))
			put(m, o, "guard", json_deep_copy(v));
		append(m, a, o);
	}
	return a;
}

/* Whether one of the dumps has the top-level key. */
static bool any_has(const struct merge *m, const char *key)
{
	for (size_t k = 0; k < m->n; k++)
		if (raw(&m->d[k], NULL, key))
			return true;
	return false;
}

/* The sum of a top-level count of every dump, when one has it. */
static void put_sum(struct merge *m, json_t *root, const char *key)
{
	u128 sum = 0;
	bool any = false;
	uint64_t v;

	for (size_t k = 0; k < m->n; k++) {
		if (raw_count(&m->d[k], NULL, key, &v)) {
			sum += v;
			any = true;
		}
	}
	if (any)
		put(m, root, key, jint(sat(sum)));
}

static int build(struct merge *m, json_t *root)
{
	json_t *snaps = NULL, *fns = NULL, *leaks, *records, *errs, *errsum, *a;
	bool has_start;
	int rc;

	put(m, root, "format", json_string("allocspy-dump"));
	put(m, root, "version", json_integer(ASP_DUMP_VERSION));
	put(m, root, "dump", dump_json(m));
	put(m, root, "program", json_deep_copy(raw(&m->d[0], NULL, "program")));
	put(m, root, "time", time_json(m, &has_start));
	rc = leaks_json(m, &leaks, &records);
	if (rc < 0)
		return rc;
	put(m, root, "options", options_json(m, m->leak_part));
	if (m->d[0].sampled)
		put(m, root, "sample", json_pack("{s:o}", "mean_bytes", jint(m->d[0].sample_bytes)));
	rc = snapshots(m, &snaps);
	if (rc == 0)
		rc = functions_json(m, &fns);
	if (rc < 0) {
		json_decref(snaps);
		json_decref(leaks);
		json_decref(records);
		return rc;
	}
	put(m, root, "heap", heap_json(m));
	put(m, root, "functions", fns);
	put(m, root, "histogram", histogram_json(m));
	a = json_array();
	for (size_t k = 0; a && k < m->n; k++)
		concat(m, a, k, "threads", false);
	put(m, root, "threads", a);
	put_sum(m, root, "threads_omitted");
	put(m, root, "refs", refs_json(m));
	if (leaks)
		put(m, root, "leaks", leaks);
	if (records)
		put(m, root, "loss_records", records);
	if (errors_json(m, &errs, &errsum)) {
		put(m, root, "errors", errs);
		put(m, root, "error_summary", errsum);
	}
	if ((a = guard_json(m))) {
		/* options.guard says the mean "guard" has */
		put(m, json_object_get(root, "options"), "guard",
		    json_deep_copy(json_object_get(a, "mean")));
		put(m, root, "guard", a);
	}
	if (any_has(m, "thread_stacks")) {
		a = json_array();
		for (size_t k = 0; a && k < m->n; k++)
			concat(m, a, k, "thread_stacks", true);
		put(m, root, "thread_stacks", a);
	}
	if (any_has(m, "stack_stats"))
		put(m, root, "stack_stats", stack_stats_json(m));
	put_sum(m, root, "stack_stats_omitted");
	if (snaps) {
		put(m, root, "snapshots", snaps);
		put(m, root, "snapshot_info", snapshot_info_json(m));
	}
	put(m, root, "stacks", stacks_json(m));
	put(m, root, "modules", modules_json(m));
	put(m, root, "processes", processes_json(m));
	return m->oom ? -ENOMEM : 0;
}

static void merge_free(struct merge *m)
{
	for (size_t k = 0; m->in && k < m->n; k++) {
		free(m->in[k].by_base);
		free(m->in[k].lim);
		free(m->in[k].mod);
		free(m->in[k].stack);
		free(m->in[k].reach);
	}
	for (size_t i = 0; i < m->nstacks; i++)
		free(m->stacks[i].frames);
	free(m->in);
	free(m->mods);
	free(m->loose);
	free(m->stacks);
	free(m->table);
	free(m->peak_bytes);
	free(m->peak_blocks);
}

int asp_merge(const asp_dump_t *d, size_t n, char **text, size_t *bad,
	      char err[ASP_ERR_MAX])
{
	struct merge m = { .d = d, .n = n, .err = err, .bad = bad };
	json_t *root = json_object();
	asp_dump_t check;
	char why[ASP_ERR_MAX];
	int rc = -ENOMEM;

	*text = NULL;
	m.in = calloc(n, sizeof *m.in);
	if (!root || !m.in)
		goto done;
	for (size_t k = 0; k < n; k++)
		m.in[k].d = &d[k];
	rc = check_inputs(&m);
	if (rc == 0)
		rc = modules(&m);
	if (rc == 0)
		rc = stacks(&m);
	if (rc == 0)
		rc = build(&m, root);
	if (rc < 0)
		goto done;
	rc = -ENOMEM;
	*text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER |
			   JSON_REAL_PRECISION(17));
	if (!*text)
		goto done;
	/* The merged dump must read as any dump does. */
	rc = asp_dump_parse(&check, "merged", *text, strlen(*text), why);
	if (rc == 0) {
		asp_dump_free(&check);
		/* json_dumps leaves no newline at the end. */
		size_t len = strlen(*text);
		char *t = realloc(*text, len + 2);

		rc = -ENOMEM;
		if (t) {
			memcpy(t + len, "\n", 2);
			*text = t;
			rc = 0;
		}
	} else if (rc == -EINVAL) {
		snprintf(err, ASP_ERR_MAX, "%s", why);
		rc = -EPROTO;
	}
done:
	if (rc < 0) {
		free(*text);
		*text = NULL;
	}
	json_decref(root);
	merge_free(&m);
	return rc;
}
