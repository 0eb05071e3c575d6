/* flame - flame graph trees: the samples of a profile merged by function
 * from the root down, each node weighing what its samples do, thinned so
 * that a page can draw them. */
#include "flame.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "hash.h"
#include "strtab.h"

#define NONE SIZE_MAX

struct asp_flame_strings {
	asp_strtab_t in;
};

asp_flame_strings_t *asp_flame_strings_new(void)
{
	return calloc(1, sizeof(asp_flame_strings_t));
}

json_t *asp_flame_strings_json(const asp_flame_strings_t *s)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < s->in.n; i++)
		if (json_array_append_new(a, asp_json_text(s->in.v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

void asp_flame_strings_free(asp_flame_strings_t *s)
{
	if (s)
		asp_strtab_free(&s->in);
	free(s);
}

/* --- the tree ---------------------------------------------------------------- */

struct node {
	size_t name, loc;	/* into the tree's names; loc NONE: unknown */
	bool several;		/* frames of other locations were merged in */
	uint64_t value;
	size_t parent;
	size_t first_child, next_sibling;	/* NONE: none */
};

struct asp_flame {
	struct node *nodes;	/* [0] is the root */
	size_t n, cap;
	size_t *slot;		/* by (parent, name): node index + 1 */
	size_t nslot;
	asp_strtab_t names;	/* of frames and places */
};

static size_t hash_child(size_t parent, size_t name, size_t nslot)
{
	uint64_t h = asp_hash(parent) ^ (uint64_t)name;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)h & (nslot - 1);
}

static int rehash(asp_flame_t *f)
{
	size_t nslot = f->nslot ? f->nslot * 2 : 1024;
	size_t *slot = calloc(nslot, sizeof *slot);

	if (!slot)
		return -ENOMEM;
	for (size_t c = 1; c < f->n; c++) {
		size_t h = hash_child(f->nodes[c].parent, f->nodes[c].name, nslot);

		while (slot[h])
			h = (h + 1) & (nslot - 1);
		slot[h] = c + 1;
	}
	free(f->slot);
	f->slot = slot;
	f->nslot = nslot;
	return 0;
}

/* The child of parent called name, added when new; NONE: no memory. */
static size_t child(asp_flame_t *f, size_t parent, size_t name)
{
	size_t h;
	struct node *x;

	if (2 * f->n >= f->nslot && rehash(f) < 0)
		return NONE;
	h = hash_child(parent, name, f->nslot);
	for (; f->slot[h]; h = (h + 1) & (f->nslot - 1)) {
		size_t c = f->slot[h] - 1;

		if (f->nodes[c].name == name && f->nodes[c].parent == parent)
			return c;
	}
	if (f->n == f->cap) {
		size_t cap = f->cap * 2 + 256;
		struct node *v = realloc(f->nodes, cap * sizeof *v);

		if (!v)
			return NONE;
		f->nodes = v;
		f->cap = cap;
	}
	x = &f->nodes[f->n];
	*x = (struct node){ .name = name, .loc = NONE, .parent = parent,
			    .first_child = NONE,
			    .next_sibling = f->nodes[parent].first_child };
	f->nodes[parent].first_child = f->n;
	f->slot[h] = ++f->n;
	return f->n - 1;
}

/* Adding one sample: the path walked so far. */
struct walk {
	asp_flame_t *f;
	const asp_profile_t *p;
	size_t at;		/* the node of the last frame */
	uint64_t w;
	int err;
};

static void walk_frame(void *arg, const asp_loc_t *loc, const asp_line_t *l)
{
	struct walk *k = arg;
	char buf[ASP_NAME_MAX], where[ASP_PATH_MAX + 16];
	size_t name, at, place = NONE;

	if (k->err)
		return;
	name = asp_strtab_intern(&k->f->names, asp_profile_name(k->p, loc, l, buf));
	if (l->file) {
		snprintf(where, sizeof where, "%s:%u", l->file, l->line);
		place = asp_strtab_intern(&k->f->names, where);
	} else if (l->module) {
		place = asp_strtab_intern(&k->f->names, l->module);
	}
	at = name == NONE || ((l->file || l->module) && place == NONE) ? NONE :
	     child(k->f, k->at, name);
	if (at == NONE) {
		k->err = -ENOMEM;
		return;
	}
	if (k->f->nodes[at].loc == NONE && k->f->nodes[at].value == 0)
		k->f->nodes[at].loc = place;
	else if (k->f->nodes[at].loc != place)
		k->f->nodes[at].several = true;
	k->f->nodes[at].value = asp_add_sat(k->f->nodes[at].value, k->w);
	k->at = at;
}

/* Adds sample s of weight w; under a first frame called prefix, when
 * given. */
static int add(asp_flame_t *f, const asp_profile_t *p, const asp_sample_t *s,
	       uint64_t w, const char *prefix)
{
	struct walk k = { .f = f, .p = p, .at = 0, .w = w };

	if (w == 0)
		return 0;
	f->nodes[0].value = asp_add_sat(f->nodes[0].value, w);
	if (prefix) {
		size_t name = asp_strtab_intern(&f->names, prefix);

		if (name == NONE || (k.at = child(f, 0, name)) == NONE)
			return -ENOMEM;
		f->nodes[k.at].value = asp_add_sat(f->nodes[k.at].value, w);
	}
	asp_export_frames(s, walk_frame, &k);
	return k.err;
}

void asp_flame_free(asp_flame_t *f)
{
	if (!f)
		return;
	free(f->nodes);
	free(f->slot);
	asp_strtab_free(&f->names);
	free(f);
}

static asp_flame_t *flame_new(void)
{
	asp_flame_t *f = calloc(1, sizeof *f);

	if (!f || (f->nodes = malloc(256 * sizeof *f->nodes)) == NULL) {
		free(f);
		return NULL;
	}
	f->cap = 256;
	f->n = 1;
	f->nodes[0] = (struct node){ .loc = NONE, .parent = NONE,
				     .first_child = NONE, .next_sibling = NONE };
	f->nodes[0].name = asp_strtab_intern(&f->names, ASP_FLAME_ROOT);
	if (f->nodes[0].name == NONE) {
		asp_flame_free(f);
		return NULL;
	}
	return f;
}

/* a - b, or 0 when b is larger. */
static uint64_t rest(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* The samples of the loss records (bytes in use) or of the peak
 * snapshot's detail (bytes at the peak), then one of ASP_PROFILE_OTHER for
 * what they leave out of the dump's figure. */
static int add_others(asp_flame_t *f, const asp_profile_t *p,
		      enum asp_export_weight w)
{
	const asp_dump_t *d = p->d;
	const asp_snapshot_t *peak = w == ASP_WEIGHT_PEAK_BYTES ?
				     &d->snapshots[d->peak_snapshot] : NULL;
	size_t n = peak ? peak->ndetail : d->nrecords;
	uint64_t sum = 0, all = peak ? peak->in_use_bytes : d->in_use_bytes;
	asp_sample_t s = {0};
	int rc = 0;

	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t stack = peak ? peak->detail[i].stack : d->records[i].stack;
		uint64_t bytes = peak ? peak->detail[i].bytes : d->records[i].bytes;

		s = (asp_sample_t){ .stack = &p->stacks[stack], .stack_index = stack,
				    .in_use_bytes = bytes, .peak_bytes = bytes };
		sum = asp_add_sat(sum, bytes);
		rc = add(f, p, &s, bytes, NULL);
	}
	s = (asp_sample_t){ .stack = NULL, .stack_index = SIZE_MAX };
	return rc ? rc : add(f, p, &s, rest(all, sum), NULL);
}

int asp_flame_build(asp_flame_t **out, const asp_profile_t *p,
		    enum asp_export_weight w, const char **source)
{
	const asp_dump_t *d = p->d;
	bool stats = d->nstack_stats > 0, others = false;
	asp_flame_t *f;
	int rc = 0;

	*out = NULL;
	*source = "stack_stats";
	switch (w) {
	case ASP_WEIGHT_ALLOC_BYTES:
	case ASP_WEIGHT_ALLOCS:
		break;
	case ASP_WEIGHT_TEMPORARY:
		stats = stats && d->has_temporary;
		break;
	case ASP_WEIGHT_INUSE_BYTES:
		others = !stats && d->has_records;
		*source = others ? "loss_records" : *source;
		break;
	case ASP_WEIGHT_PEAK_BYTES:
		stats = stats && p->has_peak;
		others = !stats && d->nsnapshots &&
			 d->snapshots[d->peak_snapshot].has_detail;
		*source = others ? "snapshot detail" : *source;
		break;
	}
	if (!stats && !others)
		return 0;
	f = flame_new();
	if (!f)
		return -ENOMEM;
	if (others)
		rc = add_others(f, p, w);
	for (size_t i = 0; !others && i < p->nsamples && rc == 0; i++)
		rc = add(f, p, &p->samples[i], asp_export_weight(&p->samples[i], w), NULL);
	if (rc < 0 || f->nodes[0].value == 0) {
		asp_flame_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

static int by_tid(const void *pa, const void *pb)
{
	const asp_thread_t *a = *(const asp_thread_t *const *)pa;
	const asp_thread_t *b = *(const asp_thread_t *const *)pb;

	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* "thread 4097 (worker-1)", or without the name when the dump has none. */
static void thread_label(char *buf, size_t size, const asp_dump_t *d,
			 const asp_thread_t *const *by_tid_v, int64_t tid)
{
	asp_thread_t key = { .tid = tid };
	const asp_thread_t *kp = &key, *const *t;

	/* An array of pointers: sizeof *by_tid_v is a pointer's size. */
	t = bsearch(&kp, by_tid_v, d->nthreads, sizeof *by_tid_v, by_tid); // NOLINT(bugprone-sizeof-expression)
	if (t && (*t)->name && (*t)->name[0])
		snprintf(buf, size, "thread %lld (%s)", (long long)tid, (*t)->name);
	else
		snprintf(buf, size, "thread %lld", (long long)tid);
}

int asp_flame_build_threads(asp_flame_t **out, const asp_profile_t *p,
			    enum asp_export_weight w)
{
	const asp_dump_t *d = p->d;
	const asp_thread_t **tv;
	bool several = false;
	uint64_t sum = 0, all = w == ASP_WEIGHT_ALLOCS ? d->allocs : d->bytes_allocated;
	asp_sample_t s;
	asp_flame_t *f;
	int rc = 0;

	*out = NULL;
	for (size_t k = 1; k < d->nthread_stacks; k++)
		several = several || d->thread_stacks[k].tid != d->thread_stacks[0].tid;
	if (!several || (w != ASP_WEIGHT_ALLOC_BYTES && w != ASP_WEIGHT_ALLOCS))
		return 0;
	/* An array of pointers: sizeof *tv is a pointer's size. */
	tv = malloc((d->nthreads ? d->nthreads : 1) * sizeof *tv); // NOLINT(bugprone-sizeof-expression)
	f = tv ? flame_new() : NULL;
	if (!f) {
		free(tv);
		return -ENOMEM;
	}
	for (size_t i = 0; i < d->nthreads; i++)
		tv[i] = &d->threads[i];
	qsort(tv, d->nthreads, sizeof *tv, by_tid); // NOLINT(bugprone-sizeof-expression)
	for (size_t k = 0; k < d->nthread_stacks && rc == 0; k++) {
		const asp_thread_stack_t *t = &d->thread_stacks[k];
		uint64_t v = w == ASP_WEIGHT_ALLOCS ? t->allocs : t->bytes;
		char label[ASP_PATH_MAX + 48];

		thread_label(label, sizeof label, d, tv, t->tid);
		s = (asp_sample_t){ .stack = &p->stacks[t->stack], .stack_index = t->stack };
		sum = asp_add_sat(sum, v);
		rc = add(f, p, &s, v, label);
	}
	s = (asp_sample_t){ .stack = NULL, .stack_index = SIZE_MAX };
	if (rc == 0)
		rc = add(f, p, &s, rest(all, sum), NULL);
	free(tv);
	if (rc < 0 || f->nodes[0].value == 0) {
		asp_flame_free(f);
		return rc;
	}
	*out = f;
	return 0;
}

/* --- JSON ------------------------------------------------------------------------ */

/* Orders children heaviest first, then by name. */
static int by_value(const void *pa, const void *pb, void *arg)
{
	const asp_flame_t *f = arg;
	const struct node *a = &f->nodes[*(const size_t *)pa];
	const struct node *b = &f->nodes[*(const size_t *)pb];

	if (a->value != b->value)
		return a->value > b->value ? -1 : 1;
	return strcmp(f->names.v[a->name], f->names.v[b->name]);
}

/* What is left to write: a node, or the merged small children of one. */
struct pending {
	size_t node;		/* NONE: merged */
	size_t depth;
	uint64_t value;		/* merged */
	size_t count;		/* merged */
};

struct out {
	json_t *n, *l, *v, *d, *m;
	asp_flame_strings_t *strings;
	size_t nodes, merged;
};

static json_t *count_json(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static int put(struct out *o, size_t name, size_t loc, uint64_t value,
	       size_t depth, size_t merged)
{
	if (name == NONE)
		return -ENOMEM;
	if (json_array_append_new(o->n, json_integer((json_int_t)name)) < 0 ||
	    json_array_append_new(o->l, loc == NONE ? json_integer(-1) :
				  json_integer((json_int_t)loc)) < 0 ||
	    json_array_append_new(o->v, count_json(value)) < 0 ||
	    json_array_append_new(o->d, json_integer((json_int_t)depth)) < 0 ||
	    json_array_append_new(o->m, json_integer((json_int_t)merged)) < 0)
		return -ENOMEM;
	o->nodes++;
	o->merged += merged;
	return 0;
}

/* Writes node x; pushes its children onto the stack (top: the heaviest). */
static int put_node(const asp_flame_t *f, struct out *o, const struct pending *e,
		    struct pending *stack, size_t *top, size_t *kids)
{
	const struct node *x = &f->nodes[e->node];
	uint64_t total = f->nodes[0].value;
	size_t nk = 0, keep = 0, loc = NONE;
	struct pending merged = { .node = NONE, .depth = e->depth + 1 };

	if (x->loc != NONE) {
		char buf[ASP_PATH_MAX + 64];

		snprintf(buf, sizeof buf, "%s%s", f->names.v[x->loc],
			 x->several ? " and other lines" : "");
		if ((loc = asp_strtab_intern(&o->strings->in, buf)) == NONE)
			return -ENOMEM;
	}
	if (put(o, asp_strtab_intern(&o->strings->in, f->names.v[x->name]), loc,
		x->value, e->depth, 0) < 0)
		return -ENOMEM;
	for (size_t c = x->first_child; c != NONE; c = f->nodes[c].next_sibling)
		kids[nk++] = c;
	qsort_r(kids, nk, sizeof *kids, by_value, (void *)f);
	for (size_t i = 0; i < nk; i++) {
		uint64_t v = f->nodes[kids[i]].value;

		if ((double)v * ASP_FLAME_MIN_FRACTION < (double)total) {
			merged.value = asp_add_sat(merged.value, v);
			merged.count++;
		} else {
			keep++;
		}
	}
	/* Kept children are the heaviest: kids[0..keep). The merged node is
	 * written after them, so it goes onto the stack first. */
	if (merged.count)
		stack[(*top)++] = merged;
	for (size_t i = keep; i-- > 0;)
		stack[(*top)++] = (struct pending){ .node = kids[i],
						    .depth = e->depth + 1 };
	return 0;
}

json_t *asp_flame_json(const asp_flame_t *f, asp_flame_strings_t *strings)
{
	struct out o = { .n = json_array(), .l = json_array(), .v = json_array(),
			 .d = json_array(), .m = json_array(), .strings = strings };
	/* Every node is pushed at most once, and so is the merged node of
	 * each: the stack holds at most twice the tree. */
	struct pending *stack = malloc((2 * f->n + 1) * sizeof *stack);
	size_t *kids = malloc((f->n + 1) * sizeof *kids);
	size_t top = 0;
	json_t *j = NULL;
	int rc = o.n && o.l && o.v && o.d && o.m && stack && kids ? 0 : -ENOMEM;

	if (rc == 0)
		stack[top++] = (struct pending){ .node = 0, .depth = 0 };
	while (rc == 0 && top > 0) {
		struct pending e = stack[--top];

		if (e.node == NONE)
			rc = put(&o, asp_strtab_intern(&strings->in, ASP_FLAME_MERGED), NONE,
				 e.value, e.depth, e.count);
		else
			rc = put_node(f, &o, &e, stack, &top, kids);
	}
	if (rc == 0)
		j = json_pack("{s:o,s:I,s:I,s:O,s:O,s:O,s:O,s:O}",
			      "total", count_json(f->nodes[0].value),
			      "nodes", (json_int_t)o.nodes,
			      "merged", (json_int_t)o.merged,
			      "n", o.n, "l", o.l, "v", o.v, "d", o.d, "m", o.m);
	json_decref(o.n);
	json_decref(o.l);
	json_decref(o.v);
	json_decref(o.d);
	json_decref(o.m);
	free(stack);
	free(kids);
	return j;
}
