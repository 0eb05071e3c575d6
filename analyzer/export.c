/* export - the export command: a dump in the file formats of the tools
 * people already use (pprof, gperftools, massif, callgrind, heaptrack,
 * folded stacks, speedscope). */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "peak.h"
#include "pprof.h"
#include "profile.h"

/* The most allocation events the heaptrack format is written with: it
 * has a line for every allocation and free. */
#define HEAPTRACK_MAX_ALLOCS 100000000ULL

static const char *const format_names[] = {
	[ASP_EXPORT_PPROF] = "pprof", [ASP_EXPORT_GPERFTOOLS] = "gperftools",
	[ASP_EXPORT_MASSIF] = "massif", [ASP_EXPORT_CALLGRIND] = "callgrind",
	[ASP_EXPORT_HEAPTRACK] = "heaptrack", [ASP_EXPORT_FOLDED] = "folded",
	[ASP_EXPORT_SPEEDSCOPE] = "speedscope",
};

static const char *const weight_names[] = {
	[ASP_WEIGHT_ALLOC_BYTES] = "alloc_bytes", [ASP_WEIGHT_ALLOCS] = "allocs",
	[ASP_WEIGHT_INUSE_BYTES] = "inuse_bytes",
	[ASP_WEIGHT_PEAK_BYTES] = "peak_bytes", [ASP_WEIGHT_TEMPORARY] = "temporary",
};

const char *const *asp_export_format_names(size_t *n)
{
	*n = sizeof format_names / sizeof *format_names;
	return format_names;
}

const char *const *asp_export_weight_names(size_t *n)
{
	*n = sizeof weight_names / sizeof *weight_names;
	return weight_names;
}

int asp_export_parse_format(const char *s, enum asp_export_format *f)
{
	for (size_t i = 0; i < sizeof format_names / sizeof *format_names; i++) {
		if (strcmp(s, format_names[i]) == 0) {
			*f = (enum asp_export_format)i;
			return 0;
		}
	}
	return -EINVAL;
}

int asp_export_parse_weight(const char *s, enum asp_export_weight *w)
{
	for (size_t i = 0; i < sizeof weight_names / sizeof *weight_names; i++) {
		if (strcmp(s, weight_names[i]) == 0) {
			*w = (enum asp_export_weight)i;
			return 0;
		}
	}
	return -EINVAL;
}

bool asp_export_binary(enum asp_export_format f)
{
	return f == ASP_EXPORT_PPROF;
}

/* --- frames ------------------------------------------------------------------- */

/* The stand-in location of ASP_PROFILE_OTHER. */
static const asp_line_t other_line = { .fn = ASP_PROFILE_OTHER };
static const asp_loc_t other_loc = {
	.lines = (asp_line_t *)&other_line, .nlines = 1, .module = -1,
};

/* The stand-in location of ASP_PROFILE_TRUNCATED. */
static const asp_line_t truncated_line = { .fn = ASP_PROFILE_TRUNCATED };
static const asp_loc_t truncated_loc = {
	.lines = (asp_line_t *)&truncated_line, .nlines = 1, .module = -1,
};

void asp_export_frames(const asp_sample_t *s, asp_frame_fn *fn, void *arg)
{
	if (!s->stack) {
		fn(arg, &other_loc, &other_loc.lines[0]);
		return;
	}
	if (s->stack->truncated)
		fn(arg, &truncated_loc, &truncated_loc.lines[0]);
	for (size_t j = s->stack->n; j-- > 0;) {
		const asp_loc_t *loc = s->stack->locs[j];

		for (size_t k = loc->nlines; k-- > 0;)
			fn(arg, loc, &loc->lines[k]);
	}
}

/* Writes s with control bytes, and the bytes in avoid, as '?'. */
static void put_clean(FILE *out, const char *s, const char *avoid)
{
	for (; *s; s++)
		putc((unsigned char)*s < 0x20 || *s == 0x7f || strchr(avoid, *s) ?
		     '?' : *s, out);
}

/* "fn (file:line)", or the name alone without line information. */
static void put_frame(FILE *out, const asp_profile_t *p, const asp_loc_t *loc,
		      const asp_line_t *l, const char *avoid)
{
	char buf[ASP_NAME_MAX];

	put_clean(out, asp_profile_name(p, loc, l, buf), avoid);
	if (l->file) {
		fputs(" (", out);
		put_clean(out, l->file, avoid);
		fprintf(out, ":%u)", l->line);
	}
}

uint64_t asp_export_weight(const asp_sample_t *s, enum asp_export_weight w)
{
	switch (w) {
	case ASP_WEIGHT_ALLOC_BYTES: return s->bytes;
	case ASP_WEIGHT_ALLOCS: return s->allocs;
	case ASP_WEIGHT_INUSE_BYTES: return s->in_use_bytes;
	case ASP_WEIGHT_PEAK_BYTES: return s->peak_bytes;
	case ASP_WEIGHT_TEMPORARY: return s->temporary;
	}
	return 0;
}

/* --- folded --------------------------------------------------------------------- */

struct folded {
	FILE *out;
	const asp_profile_t *p;
	bool first;
};

static void folded_frame(void *arg, const asp_loc_t *loc, const asp_line_t *l)
{
	struct folded *f = arg;

	if (!f->first)
		putc(';', f->out);
	f->first = false;
	put_frame(f->out, f->p, loc, l, ";");
}

static void folded(FILE *out, const asp_profile_t *p, enum asp_export_weight w)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];
		struct folded f = { out, p, true };

		if (!asp_export_weight(s, w))
			continue;
		asp_export_frames(s, folded_frame, &f);
		fprintf(out, " %" PRIu64 "\n", asp_export_weight(s, w));
	}
}

/* --- gperftools ------------------------------------------------------------------ */

static void gperftools(FILE *out, const asp_profile_t *p)
{
	const asp_dump_t *d = p->d;
	uint64_t in_objs = 0, in_bytes = 0, objs = 0, bytes = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		in_objs = asp_add_sat(in_objs, p->samples[i].in_use_blocks);
		in_bytes = asp_add_sat(in_bytes, p->samples[i].in_use_bytes);
		objs = asp_add_sat(objs, p->samples[i].allocs);
		bytes = asp_add_sat(bytes, p->samples[i].bytes);
	}
	fprintf(out, "heap profile: %6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8"
		PRIu64 "] @ heapprofile\n", in_objs, in_bytes, objs, bytes);
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];

		fprintf(out, "%6" PRIu64 ": %8" PRIu64 " [%6" PRIu64 ": %8" PRIu64
			"] @", s->in_use_blocks, s->in_use_bytes, s->allocs, s->bytes);
		if (s->stack)
			for (size_t j = 0; j < s->stack->n; j++)
				fprintf(out, " 0x%016" PRIx64, s->stack->locs[j]->addr);
		else
			fputs(" 0x0000000000000000", out);
		putc('\n', out);
	}
	/* The modules as /proc/self/maps lines: one executable mapping each,
	 * at its load bias, offset 0, so that an address less the start is
	 * the address in the file. */
	fputs("\nMAPPED_LIBRARIES:\n", out);
	for (size_t i = 0; i < d->nmodules; i++) {
		const asp_module_t *m = &d->modules[i];

		if (m->path[0] != '/')
			continue;
		fprintf(out, "%012" PRIx64 "-%012" PRIx64 " r-xp 00000000 00:00 0 ",
			m->base, m->end > m->base ? m->end : m->base + 1);
		put_clean(out, m->path, "\n");
		putc('\n', out);
	}
}

/* --- callgrind ---------------------------------------------------------------------- */

/* The frames of a sample, innermost first, flattened over inlining. */
struct flat {
	const asp_loc_t **loc;
	const asp_line_t **line;
	size_t n;
};

static void flat_frame(void *arg, const asp_loc_t *loc, const asp_line_t *l)
{
	struct flat *f = arg;

	f->loc[f->n] = loc;
	f->line[f->n++] = l;
}

static void callgrind_costs(FILE *out, unsigned line, const asp_sample_t *s)
{
	fprintf(out, "%u %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
		"\n", line, s->bytes, s->allocs, s->in_use_bytes, s->in_use_blocks,
		s->temporary);
}

static void callgrind_fn(FILE *out, const char *key_fl, const char *key_fn,
			 const asp_profile_t *p, const asp_loc_t *loc,
			 const asp_line_t *l)
{
	char buf[ASP_NAME_MAX];

	fprintf(out, "%s=", key_fl);
	put_clean(out, l->file ? l->file : "???", "");
	fprintf(out, "\n%s=", key_fn);
	put_clean(out, asp_profile_name(p, loc, l, buf), "");
	putc('\n', out);
}

static int callgrind(FILE *out, const asp_profile_t *p)
{
	const asp_dump_t *d = p->d;
	size_t most = 1;
	struct flat f;
	uint64_t t[5] = {0};

	/* The longest stack, in lines: a recursive one holds a location
	 * more than once, so this can pass the lines of all locations. */
	for (size_t i = 0; i < p->d->nstacks; i++) {
		size_t n = 2;	/* with ASP_PROFILE_TRUNCATED */

		for (size_t j = 0; j < p->stacks[i].n; j++)
			n += p->stacks[i].locs[j]->nlines;
		most = n > most ? n : most;
	}
	f.loc = malloc(most * sizeof(const asp_loc_t *));
	f.line = malloc(most * sizeof(const asp_line_t *));
	if (!f.loc || !f.line) {
		free(f.loc);
		free(f.line);
		return -ENOMEM;
	}
	fputs("# callgrind format\nversion: 1\ncreator: allocspy-report " ASP_VERSION
	      "\n", out);
	if (d->sampled)
		fprintf(out, "desc: Sampled: ALLOCSPY_SAMPLE=%" PRIu64 "; the costs are "
			"estimates\n", d->sample_bytes);
	{
		char text[ASP_PEAK_TEXT_MAX];

		fputs("desc: Peak: ", out);
		put_clean(out, asp_peak_text(text, d), "");
		putc('\n', out);
	}
	fprintf(out, "pid: %lld\ncmd: ", (long long)d->pid);
	put_clean(out, d->exe, "");
	for (size_t i = 1; i < d->argc; i++) {
		putc(' ', out);
		put_clean(out, d->argv[i], "");
	}
	fputs("\npart: 1\n\npositions: line\n"
	      "event: AllocBytes : bytes allocated\n"
	      "event: Allocs : blocks allocated\n"
	      "event: InUseBytes : bytes in use at the end\n"
	      "event: InUseBlocks : blocks in use at the end\n"
	      "event: Temporary : temporary allocations\n"
	      "events: AllocBytes Allocs InUseBytes InUseBlocks Temporary\n", out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];

		t[0] = asp_add_sat(t[0], s->bytes);
		t[1] = asp_add_sat(t[1], s->allocs);
		t[2] = asp_add_sat(t[2], s->in_use_bytes);
		t[3] = asp_add_sat(t[3], s->in_use_blocks);
		t[4] = asp_add_sat(t[4], s->temporary);
	}
	fprintf(out, "summary: %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %"
		PRIu64 "\n\n", t[0], t[1], t[2], t[3], t[4]);
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];

		f.n = 0;
		asp_export_frames(s, flat_frame, &f);
		if (f.n == 0)	/* a stack without frames */
			continue;
		/* f is root first: the allocation is made by the last frame,
		 * and each frame calls the one after it. */
		callgrind_fn(out, "fl", "fn", p, f.loc[f.n - 1], f.line[f.n - 1]);
		callgrind_costs(out, f.line[f.n - 1]->line, s);
		for (size_t k = 0; k + 1 < f.n; k++) {
			callgrind_fn(out, "fl", "fn", p, f.loc[k], f.line[k]);
			callgrind_fn(out, "cfi", "cfn", p, f.loc[k + 1], f.line[k + 1]);
			fprintf(out, "calls=%" PRIu64 " %u\n", s->allocs,
				f.line[k + 1]->line);
			callgrind_costs(out, f.line[k]->line, s);
		}
		putc('\n', out);
	}
	free(f.loc);
	free(f.line);
	return 0;
}

/* --- massif ------------------------------------------------------------------------------ */

/* A node of a snapshot's tree: the detail entries whose stacks share the
 * frames above it, [lo, hi) of a list sorted by stack, root first. */
struct massif {
	FILE *out;
	const asp_profile_t *p;
	const asp_detail_t *det;	/* sorted by their stacks, root first */
	size_t n;
};

/* The frame at depth k (0: the innermost) of a detail entry's stack, as
 * (loc, line), flattened over inlining; false past its end. */
static bool frame_at(const asp_profile_t *p, const asp_detail_t *x, size_t k,
		     const asp_loc_t **loc, const asp_line_t **line)
{
	const asp_pstack_t *ps = &p->stacks[x->stack];

	for (size_t j = 0; j < ps->n; j++) {
		if (k < ps->locs[j]->nlines) {
			*loc = ps->locs[j];
			*line = &ps->locs[j]->lines[k];
			return true;
		}
		k -= ps->locs[j]->nlines;
	}
	return false;
}

static bool same_frame(const asp_profile_t *p, const asp_detail_t *a,
		       const asp_detail_t *b, size_t k)
{
	const asp_loc_t *la, *lb;
	const asp_line_t *xa, *xb;

	return frame_at(p, a, k, &la, &xa) && frame_at(p, b, k, &lb, &xb) &&
	       la == lb && xa == xb;
}

/* A frame as massif writes it, valgrind's way: "0x10916B: ??? (in
 * /usr/bin/sort)" without a symbol. */
static void massif_label(struct massif *m, const asp_loc_t *loc,
			 const asp_line_t *l)
{
	fprintf(m->out, " 0x%" PRIX64 ": ", loc->addr);
	put_clean(m->out, l->fn ? l->fn : "???", "#");
	if (l->file) {
		fputs(" (", m->out);
		put_clean(m->out, l->file, "#");
		fprintf(m->out, ":%u)", l->line);
	} else if (l->module) {
		fputs(" (in ", m->out);
		put_clean(m->out, l->module, "#");
		putc(')', m->out);
	}
	putc('\n', m->out);
}

/* The children of the node at depth k over entries [lo, hi), which share
 * their first k frames: groups of entries sharing frame k, largest first. */
static void massif_children(struct massif *m, size_t lo, size_t hi, size_t k,
			    int indent);

static uint64_t group_bytes(struct massif *m, size_t lo, size_t hi)
{
	uint64_t b = 0;

	for (size_t i = lo; i < hi; i++)
		b = asp_add_sat(b, m->det[i].bytes);
	return b;
}

static void massif_children(struct massif *m, size_t lo, size_t hi, size_t k,
			    int indent)
{
	size_t ngroups = 0;
	size_t *starts = malloc((hi - lo + 1) * sizeof *starts);
	const asp_loc_t *loc;
	const asp_line_t *l;

	if (!starts)
		return;
	for (size_t i = lo; i < hi; i++)
		if (frame_at(m->p, &m->det[i], k, &loc, &l) &&
		    (i == lo || !same_frame(m->p, &m->det[i - 1], &m->det[i], k)))
			starts[ngroups++] = i;
	/* Entries whose stacks end before depth k are the node's own. */
	for (size_t g = 0; g < ngroups; g++) {
		size_t b = starts[g], e = b + 1;
		size_t ng = 0;

		while (e < hi && same_frame(m->p, &m->det[b], &m->det[e], k))
			e++;
		for (size_t i = b; i < e; i++)
			if (frame_at(m->p, &m->det[i], k + 1, &loc, &l) &&
			    (i == b || !same_frame(m->p, &m->det[i - 1], &m->det[i], k + 1)))
				ng++;
		frame_at(m->p, &m->det[b], k, &loc, &l);
		fprintf(m->out, "%*sn%zu: %" PRIu64, indent, "", ng,
			group_bytes(m, b, e));
		massif_label(m, loc, l);
		massif_children(m, b, e, k + 1, indent + 1);
	}
	free(starts);
}

/* Orders detail entries by their frames from the innermost out, so that
 * entries sharing a prefix are adjacent. */
static int by_frames(const void *pa, const void *pb, void *arg)
{
	const asp_profile_t *p = arg;
	const asp_detail_t *a = pa, *b = pb;

	for (size_t k = 0;; k++) {
		const asp_loc_t *la, *lb;
		const asp_line_t *xa, *xb;
		bool ha = frame_at(p, a, k, &la, &xa), hb = frame_at(p, b, k, &lb, &xb);

		if (!ha || !hb)
			return ha - hb;
		if (la != lb)
			return la->id < lb->id ? -1 : 1;
		if (xa != xb)
			return xa < xb ? -1 : 1;
	}
}

/* The heap tree of a point: its detail, largest groups first, then what
 * the detail leaves out of its bytes as one more node, named rest. */
static int massif_tree(struct massif *m, const asp_snapshot_t *s, uint64_t bytes,
		       const char *rest)
{
	const asp_profile_t *p = m->p;
	asp_detail_t *det = malloc((s->ndetail ? s->ndetail : 1) * sizeof *det);
	size_t ng = 0;
	uint64_t held;
	const asp_loc_t *loc;
	const asp_line_t *l;

	if (!det)
		return -ENOMEM;
	memcpy(det, s->detail, s->ndetail * sizeof *det);
	qsort_r(det, s->ndetail, sizeof *det, by_frames, (void *)p);
	m->det = det;
	m->n = s->ndetail;
	held = group_bytes(m, 0, m->n);
	/* Sampled: estimates may hold more than the heap; the tree is scaled
	 * to fit under its root. */
	if (held > bytes) {
		for (size_t k = 0; k < m->n; k++)
			det[k].bytes = (uint64_t)((unsigned __int128)det[k].bytes * bytes / held);
		held = group_bytes(m, 0, m->n);
	}
	for (size_t k = 0; k < m->n; k++)
		if (frame_at(p, &det[k], 0, &loc, &l) &&
		    (k == 0 || !same_frame(p, &det[k - 1], &det[k], 0)))
			ng++;
	fprintf(m->out, "n%zu: %" PRIu64 " (heap allocation functions) "
		"malloc/new/new[], --alloc-fns, etc.\n", ng + (bytes > held), bytes);
	massif_children(m, 0, m->n, 0, 1);
	if (bytes > held) {
		fprintf(m->out, " n0: %" PRIu64 " 0x0: ", bytes - held);
		put_clean(m->out, rest, "#");
		putc('\n', m->out);
	}
	free(det);
	return 0;
}

/* The snapshots as massif's, and the peak as one of its own where no
 * snapshot holds it (asp_peak_points): its tree is the peak snapshot's,
 * what that leaves out of the peak's bytes one node that says so. */
static int massif(FILE *out, const asp_profile_t *p)
{
	const asp_dump_t *d = p->d;
	struct massif m = { .out = out, .p = p };
	char text[ASP_PEAK_TEXT_MAX], rest[ASP_PEAK_TEXT_MAX + 32];
	size_t n, pk;
	asp_point_t *v = asp_peak_points(d, &n, &pk);
	int rc = 0;

	if (!v)
		return -ENOMEM;
	fputs("desc: allocspy-report export --format=massif", out);
	if (d->sampled)
		fprintf(out, " (sampled: ALLOCSPY_SAMPLE=%" PRIu64 ", the trees are estimates)",
			d->sample_bytes);
	fputs("; peak: ", out);
	put_clean(out, asp_peak_text(text, d), "#");
	if (v[pk].snapshot == SIZE_MAX) {
		fputs("; its tree is that of ", out);
		put_clean(out, asp_peak_detail_text(text, d), "#");
	}
	fputs("\ncmd:", out);
	for (size_t i = 0; i < d->argc; i++) {
		putc(' ', out);
		put_clean(out, d->argv[i], "#");
	}
	fputs("\ntime_unit: B\n", out);
	snprintf(rest, sizeof rest, "[not in the tree of %s]", asp_peak_detail_text(text, d));
	for (size_t i = 0; i < n && rc == 0; i++) {
		const asp_point_t *x = &v[i];
		const asp_snapshot_t *s = x->snapshot == SIZE_MAX ?
					  &d->snapshots[d->peak_snapshot] :
					  &d->snapshots[x->snapshot];

		fprintf(out, "#-----------\nsnapshot=%zu\n#-----------\n", i);
		fprintf(out, "time=%" PRIu64 "\nmem_heap_B=%" PRIu64 "\n"
			"mem_heap_extra_B=0\nmem_stacks_B=0\n",
			asp_add_sat(x->bytes_allocated, x->bytes_freed), x->in_use_bytes);
		if (!s->has_detail) {
			fputs(x->peak ? "heap_tree=peak\n" : "heap_tree=empty\n", out);
			if (x->peak)
				fprintf(out, "n0: %" PRIu64 " (heap allocation functions) "
					"malloc/new/new[], --alloc-fns, etc.\n", x->in_use_bytes);
			continue;
		}
		fprintf(out, "heap_tree=%s\n", x->peak ? "peak" : "detailed");
		rc = massif_tree(&m, s, x->in_use_bytes, x->snapshot == SIZE_MAX ? rest :
				 ASP_PROFILE_OTHER);
	}
	free(v);
	return rc;
}

/* --- speedscope --------------------------------------------------------------------------- */

struct sframes {
	json_t *frames;		/* shared.frames */
	json_t *stack;		/* the sample being built, root first */
	const asp_profile_t *p;
	size_t *index;		/* by location id and line: the frame index */
	size_t *first_line;	/* by location id - 1: its first slot in index */
};

static void speedscope_frame(void *arg, const asp_loc_t *loc, const asp_line_t *l)
{
	struct sframes *sf = arg;
	size_t slot = loc == &other_loc ? 0 : loc == &truncated_loc ? 1 :
		      sf->first_line[loc->id - 1] + (size_t)(l - loc->lines);

	if (!sf->index[slot]) {
		char buf[ASP_NAME_MAX];
		json_t *f = json_pack("{s:o}", "name",
				      asp_json_text(asp_profile_name(sf->p, loc, l, buf)));

		if (l->file) {
			json_object_set_new(f, "file", asp_json_text(l->file));
			json_object_set_new(f, "line", json_integer(l->line));
		} else if (l->module) {
			json_object_set_new(f, "file", asp_json_text(l->module));
		}
		json_array_append_new(sf->frames, f);
		sf->index[slot] = json_array_size(sf->frames);
	}
	json_array_append_new(sf->stack, json_integer((json_int_t)sf->index[slot] - 1));
}

static int speedscope(FILE *out, const asp_profile_t *p)
{
	static const char *const names[] = {
		[ASP_WEIGHT_ALLOC_BYTES] = "bytes allocated",
		[ASP_WEIGHT_ALLOCS] = "blocks allocated",
		[ASP_WEIGHT_INUSE_BYTES] = "bytes in use at the end",
		[ASP_WEIGHT_PEAK_BYTES] = "bytes in use at the peak",
	};
	size_t slots = 2;
	struct sframes sf = { .p = p };
	json_t *root, *profiles;
	char title[ASP_PATH_MAX + 64];

	for (size_t i = 0; i < p->nlocs; i++)
		slots += p->locs[i]->nlines;
	sf.index = calloc(slots, sizeof *sf.index);
	sf.first_line = calloc(p->nlocs + 1, sizeof *sf.first_line);
	sf.frames = json_array();
	profiles = json_array();
	if (!sf.index || !sf.first_line) {
		free(sf.index);
		free(sf.first_line);
		json_decref(sf.frames);
		json_decref(profiles);
		return -ENOMEM;
	}
	slots = 2;
	for (size_t i = 0; i < p->nlocs; i++) {
		sf.first_line[i] = slots;
		slots += p->locs[i]->nlines;
	}
	for (int w = 0; w <= ASP_WEIGHT_PEAK_BYTES; w++) {
		json_t *samples = json_array(), *weights = json_array();
		uint64_t total = 0;

		if (w == ASP_WEIGHT_PEAK_BYTES && !p->has_peak)
			break;
		for (size_t i = 0; i < p->nsamples; i++) {
			const asp_sample_t *s = &p->samples[i];
			uint64_t v = asp_export_weight(s, (enum asp_export_weight)w);

			if (!v)
				continue;
			sf.stack = json_array();
			asp_export_frames(s, speedscope_frame, &sf);
			json_array_append_new(samples, sf.stack);
			json_array_append_new(weights, json_integer((json_int_t)v));
			total = asp_add_sat(total, v);
		}
		char name[ASP_PEAK_TEXT_MAX + 64], text[ASP_PEAK_TEXT_MAX];

		/* The stacks' peak figures are the peak snapshot's: named so
		 * when it holds less than the peak. */
		if (w == ASP_WEIGHT_PEAK_BYTES && !asp_peak_snapshot_exact(p->d))
			snprintf(name, sizeof name, "bytes in use at %s%s",
				 asp_peak_detail_text(text, p->d),
				 p->d->sampled ? " (estimated from samples)" : "");
		else
			snprintf(name, sizeof name, "%s%s", names[w],
				 p->d->sampled ? " (estimated from samples)" : "");
		json_array_append_new(profiles, json_pack("{s:s,s:s,s:s,s:i,s:I,s:o,s:o}",
			"type", "sampled", "name", name,
			"unit", w == ASP_WEIGHT_ALLOCS ? "none" : "bytes",
			"startValue", 0,
			"endValue", (json_int_t)(total > INT64_MAX ? INT64_MAX : total),
			"samples", samples, "weights", weights));
	}
	snprintf(title, sizeof title, "%s (pid %lld)", asp_dump_exe_name(p->d),
		 (long long)p->d->pid);
	root = json_pack("{s:s,s:{s:o},s:o,s:o,s:i,s:s}",
		"$schema", "https://www.speedscope.app/file-format-schema.json",
		"shared", "frames", sf.frames, "profiles", profiles,
		"name", asp_json_text(title), "activeProfileIndex", 0,
		"exporter", "allocspy-report " ASP_VERSION);
	free(sf.index);
	free(sf.first_line);
	if (!root)
		return -ENOMEM;
	json_dumpf(root, out, JSON_COMPACT);
	putc('\n', out);
	json_decref(root);
	return 0;
}

/* --- heaptrack ------------------------------------------------------------------------------ */

struct ht {
	FILE *out;
	const asp_profile_t *p;
	uint64_t nstrings, ninfos;
};

static uint64_t ht_string(struct ht *h, const char *s)
{
	fputs("s ", h->out);
	put_clean(h->out, s, "");
	putc('\n', h->out);
	return ++h->nstrings;
}

/* "i ADDR MODULE [FUNCTION FILE LINE]...": the frame, then the ones inlined
 * into it, innermost first. */
static void ht_ip(struct ht *h, const asp_loc_t *loc)
{
	char buf[ASP_NAME_MAX];
	uint64_t *fs = malloc(loc->nlines * 2 * sizeof *fs);
	uint64_t mod;

	if (!fs)
		return;
	mod = ht_string(h, loc->lines[0].module ? loc->lines[0].module : "??");
	for (size_t k = 0; k < loc->nlines; k++) {
		fs[2 * k] = ht_string(h, asp_profile_name(h->p, loc, &loc->lines[k], buf));
		fs[2 * k + 1] = loc->lines[k].file ? ht_string(h, loc->lines[k].file) : 0;
	}
	fprintf(h->out, "i %" PRIx64 " %" PRIx64, loc->addr, mod);
	for (size_t k = loc->nlines; k-- > 0;)
		fprintf(h->out, " %" PRIx64 " %" PRIx64 " %x", fs[2 * k], fs[2 * k + 1],
			loc->lines[k].file ? loc->lines[k].line : 0);
	putc('\n', h->out);
	free(fs);
}

/* The events a heaptrack file is made of, in the order this export
 * invents (the dump keeps totals, not events):
 *
 * 1. Before the peak, the blocks that were allocated and freed and were
 *    held neither in the peak snapshot nor at the end: each temporary one
 *    allocated and at once freed ("+ x", "- x": heaptrack counts a free
 *    that follows the allocation of the same allocation info as
 *    temporary), each other one allocated, then freed after an event of
 *    no allocation (a free of an allocation info of 0 bytes never
 *    allocated), so that one block at a time is held.
 * 2. At the peak's time: the blocks of the peak snapshot (those held at
 *    the end too first), then, when the snapshot holds less than the
 *    peak, blocks taken from those freed later or held at the end only,
 *    sized so that the heap holds the dump's peak, and last, when the
 *    dump counts a temporary allocation more than step 1 can hold, one
 *    held at the peak and freed right after it.
 * 3. Just after: the blocks held at the peak but not at the end are
 *    freed, then those held at the end only are allocated.
 *
 * So heaptrack_print's allocations, temporary allocations, peak and bytes
 * leaked are the dump's; each stack's blocks are as even in size as their
 * bytes allow. */

/* n blocks of b bytes in all: the sizes, as even as they can be. */
static uint64_t share(uint64_t b, uint64_t n, uint64_t i)
{
	return b / n + (i < b % n);
}

/* The groups each sample's blocks are written in. */
enum {
	G_BOTH,		/* held in the peak snapshot and at the end */
	G_PEAK,		/* held in the peak snapshot only */
	G_XMID,		/* freed, held at the peak beyond the snapshot */
	G_XEND,		/* held at the end, and at the peak beyond the snapshot */
	G_XTEMP,	/* the one temporary held at the peak */
	G_END,		/* held at the end only */
	G_TEMP,		/* temporary, before the peak */
	G_MID,		/* freed, before the peak */
	G_N
};

/* n blocks of b bytes; info[0] is the allocation info of size b / n,
 * info[1] that of b / n + 1 (when b % n). */
struct ht_group {
	uint64_t n, b;
	uint64_t info[2];
};

struct ht_sample {
	uint64_t trace;
	struct ht_group g[G_N];
};

/* The allocation info never used: heaptrack's "last allocation" is 0 at
 * the start and after every free, so a free of info 0 would be taken for
 * temporary. */
#define HT_UNUSED 0
/* An allocation info of 0 bytes that is only ever freed: between an
 * allocation and its free, it makes the free not temporary. */
#define HT_BREAK 1
#define HT_NONE UINT64_MAX

static void ht_infos(struct ht *h, uint64_t trace, struct ht_group *g)
{
	g->info[0] = g->info[1] = HT_NONE;
	if (!g->n)
		return;
	fprintf(h->out, "a %" PRIx64 " %" PRIx64 "\n", g->b / g->n, trace);
	g->info[0] = h->ninfos++;
	if (g->b % g->n) {
		fprintf(h->out, "a %" PRIx64 " %" PRIx64 "\n", g->b / g->n + 1, trace);
		g->info[1] = h->ninfos++;
	}
}

static uint64_t ht_info(const struct ht_group *g, uint64_t i)
{
	return share(g->b, g->n, i) > g->b / g->n ? g->info[1] : g->info[0];
}

/* The event writer, which knows what heaptrack will take for temporary. */
struct ht_ev {
	FILE *out;
	uint64_t last;		/* the info of the last event if an allocation */
	uint64_t temporary;	/* the temporary allocations written */
};

static void ht_plus(struct ht_ev *e, uint64_t info)
{
	fprintf(e->out, "+ %" PRIx64 "\n", info);
	e->last = info;
}

static void ht_minus(struct ht_ev *e, uint64_t info, bool temporary)
{
	if (!temporary && e->last == info)
		fprintf(e->out, "- %x\n", HT_BREAK);
	fprintf(e->out, "- %" PRIx64 "\n", info);
	e->temporary += temporary;
	e->last = HT_NONE;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	return a > b ? a - b : 0;
}

/* Moves k blocks of c bytes from group from to group to: what the rest
 * keeps must be one block at least for bytes left (k < n unless c == b). */
static void ht_move(struct ht_group *from, struct ht_group *to, uint64_t k, uint64_t c)
{
	from->n -= k;
	from->b -= c;
	to->n += k;
	to->b += c;
}

/* Takes up to *left bytes from group g into group x, as few blocks as the
 * bytes allow while the blocks left keep a byte each where they can. */
static void ht_carve(struct ht_group *g, struct ht_group *x, uint64_t *left)
{
	uint64_t c = *left < g->b ? *left : g->b, k;

	if (!g->n || !c)
		return;
	if (c == g->b) {
		k = g->n;
	} else if (g->n >= 2) {
		k = g->n > g->b - c ? g->n - (g->b - c) : 1;
		if (k > g->n - 1)
			k = g->n - 1;
	} else {
		return;		/* one block, larger than what is left */
	}
	ht_move(g, x, k, c);
	*left -= c;
}

/* Whether n blocks of b bytes can be: no bytes without a block. */
static bool fits(uint64_t n, uint64_t b)
{
	return n || !b;
}

/* Splits sample s's blocks held in the peak snapshot or at the end into
 * g[G_BOTH], g[G_PEAK] and g[G_END]: as many held at both as can be (the
 * blocks of the peak still there at the end, and the most left for the
 * blocks freed, among which the temporary ones must be), with bytes that
 * agree with the totals; fewer when they cannot; none held at both when
 * the figures do not agree at all (a hostile dump's, or a merged one's
 * whose peak snapshot gives its blocks to no stack), each group then cut
 * to what the stack allocated. */
static void ht_split(const asp_sample_t *s, struct ht_group *g)
{
	uint64_t P = s->peak_blocks, Pb = s->peak_bytes, U = s->in_use_blocks;
	uint64_t Ub = s->in_use_bytes, A = s->allocs, B = s->bytes;
	uint64_t most = P < U ? P : U, least = sub0(P + U, A);
	uint64_t cand[3] = { most, most ? most - 1 : 0, least };

	for (int c = 0; c < 3 && P <= A && U <= A && Pb <= B && Ub <= B; c++) {
		uint64_t n = cand[c], lo = sub0(Pb + Ub, B), hi = Pb < Ub ? Pb : Ub, b;

		if (n < least || n > most)
			continue;
		if (!n)
			b = 0;
		else if (n == P)
			b = Pb;
		else if (n == U)
			b = Ub;
		else {
			uint64_t x = (uint64_t)((unsigned __int128)Pb * n / P);
			uint64_t y = (uint64_t)((unsigned __int128)Ub * n / U);

			b = x < y ? x : y;
			b = b < lo ? lo : b > hi ? hi : b;
		}
		if (b < lo || b > hi || (n == U && b != Ub) || !fits(n, b) ||
		    !fits(P - n, Pb - b) || !fits(U - n, Ub - b) ||
		    !fits(A - P - U + n, B - Pb - Ub + b))
			continue;
		g[G_BOTH] = (struct ht_group){ .n = n, .b = b };
		g[G_PEAK] = (struct ht_group){ .n = P - n, .b = Pb - b };
		g[G_END] = (struct ht_group){ .n = U - n, .b = Ub - b };
		return;
	}
	g[G_BOTH] = (struct ht_group){ 0 };
	g[G_PEAK] = (struct ht_group){ .n = P < A ? P : A, .b = Pb < B ? Pb : B };
	g[G_END] = (struct ht_group){ .n = U < A - g[G_PEAK].n ? U : A - g[G_PEAK].n,
				      .b = Ub < B - g[G_PEAK].b ? Ub : B - g[G_PEAK].b };
}

static int heaptrack(FILE *out, const asp_profile_t *p, char err[ASP_ERR_MAX])
{
	const asp_dump_t *d = p->d;
	struct ht h = { .out = out, .p = p };
	struct ht_ev ev = { .out = out, .last = HT_NONE };
	struct ht_sample *ph;
	uint64_t ntraces = 0, other_ip = p->nlocs + 1, held = 0, left;
	double peak_t = d->has_peak_t ? d->peak_t_s : d->snapshots[d->peak_snapshot].t_s;
	double end_t = d->has_dump_t ? d->dump_t_s : d->wall_s;
	size_t xtemp = SIZE_MAX;

	if (d->allocs > HEAPTRACK_MAX_ALLOCS) {
		snprintf(err, ASP_ERR_MAX, "%" PRIu64 " allocations are too many to "
			 "write one by one for heaptrack (at most %llu)", d->allocs,
			 HEAPTRACK_MAX_ALLOCS);
		return -EINVAL;
	}
	ph = calloc(p->nsamples + 1, sizeof *ph);
	if (!ph)
		return -ENOMEM;
	fputs("v 10400 2\nX ", out);
	for (size_t i = 0; i < d->argc; i++) {
		put_clean(out, d->argv[i], "");
		putc(i + 1 < d->argc ? ' ' : '\n', out);
	}
	if (!d->argc)
		put_clean(out, d->exe, "\n");
	fputs("I 1000 100000\n", out);
	for (size_t i = 0; i < p->nlocs; i++)
		ht_ip(&h, p->locs[i]);
	{
		uint64_t mod = ht_string(&h, "??");
		uint64_t fn = ht_string(&h, ASP_PROFILE_OTHER);

		fprintf(out, "i 0 %" PRIx64 " %" PRIx64 " 0 0\n", mod, fn);
	}
	/* The traces: the root first, each node naming its parent. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];
		uint64_t parent = 0;

		if (s->stack) {
			for (size_t j = s->stack->n; j-- > 0;) {
				fprintf(out, "t %" PRIx64 " %" PRIx64 "\n",
					(uint64_t)s->stack->locs[j]->id, parent);
				parent = ++ntraces;
			}
		} else {
			fprintf(out, "t %" PRIx64 " 0\n", other_ip);
			parent = ++ntraces;
		}
		ph[i].trace = parent;
	}
	/* HT_UNUSED and HT_BREAK. */
	fprintf(out, "a 0 %" PRIx64 "\na 0 %" PRIx64 "\n", ph[0].trace, ph[0].trace);
	h.ninfos = 2;
	/* Each sample's blocks in their groups. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];
		struct ht_group *g = ph[i].g;
		uint64_t mid_n, mid_b;

		ht_split(s, g);
		mid_n = sub0(s->allocs, g[G_BOTH].n + g[G_PEAK].n + g[G_END].n);
		mid_b = sub0(s->bytes, g[G_BOTH].b + g[G_PEAK].b + g[G_END].b);
		g[G_TEMP].n = s->temporary < mid_n ? s->temporary : mid_n;
		g[G_TEMP].b = mid_n ? (uint64_t)((unsigned __int128)mid_b * g[G_TEMP].n / mid_n) : 0;
		g[G_MID].n = mid_n - g[G_TEMP].n;
		g[G_MID].b = mid_b - g[G_TEMP].b;
	}
	/* More temporary allocations than blocks freed outside the peak
	 * snapshot: a program that frees what it holds from the last block
	 * allocated holds that temporary one at its peak, and a merged dump's
	 * processes each hold one. The first is the one temporary held at the
	 * peak, freed right after it (heaptrack's temporary is a free right
	 * after its allocation, so only one can be held at the peak); each of
	 * the others comes and goes before the peak instead, as a block of
	 * the stack's temporary ones, its bytes left to the stack's blocks at
	 * the peak, so that the peak keeps its bytes; when it is the stack's
	 * last block at the peak, with its bytes, and other blocks take their
	 * place at the peak below. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const asp_sample_t *s = &p->samples[i];
		struct ht_group *g = ph[i].g;
		uint64_t k = sub0(s->temporary, g[G_TEMP].n), n, b, big;

		if (k && g[G_PEAK].n && xtemp == SIZE_MAX) {
			n = g[G_PEAK].n;
			ht_move(&g[G_PEAK], &g[G_XTEMP], 1, g[G_PEAK].b / n);
			xtemp = i;
			k--;
		}
		if (k && g[G_PEAK].n > 1) {
			uint64_t e = k < g[G_PEAK].n - 1 ? k : g[G_PEAK].n - 1;

			ht_move(&g[G_PEAK], &g[G_TEMP], e, 0);
			k -= e;
		}
		if (k && g[G_PEAK].n) {
			n = g[G_PEAK].n;
			b = g[G_PEAK].b;
			big = b % n;	/* the first blocks, of b / n + 1 bytes */
			if (k > n)
				k = n;
			ht_move(&g[G_PEAK], &g[G_TEMP], k,
				k * (b / n) + (k > n - big ? k - (n - big) : 0));
		}
		held = asp_add_sat(held, g[G_BOTH].b + g[G_PEAK].b + g[G_XTEMP].b);
	}
	/* What the peak holds beyond the snapshot: blocks freed later, then
	 * blocks held at the end only, then one temporary. */
	left = d->has_peak ? sub0(d->peak_bytes, held) : 0;
	for (size_t i = 0; left && i < p->nsamples; i++)
		ht_carve(&ph[i].g[G_MID], &ph[i].g[G_XMID], &left);
	for (size_t i = 0; left && i < p->nsamples; i++)
		ht_carve(&ph[i].g[G_END], &ph[i].g[G_XEND], &left);
	for (size_t i = 0; left && xtemp == SIZE_MAX && i < p->nsamples; i++) {
		struct ht_group *t = &ph[i].g[G_TEMP];

		/* One block: as much of what is left as the others allow, a
		 * byte each kept for them; the whole group's if it is one. */
		uint64_t most = t->n > 1 && t->b >= t->n ? t->b - (t->n - 1) : t->b;
		uint64_t c = t->n > 1 ? (most < left ? most : left) : t->b;

		if (t->n && c && c <= left) {
			ht_move(t, &ph[i].g[G_XTEMP], 1, c);
			left -= c;
			xtemp = i;
		}
	}
	for (size_t i = 0; i < p->nsamples; i++)
		for (int k = 0; k < G_N; k++)
			ht_infos(&h, ph[i].trace, &ph[i].g[k]);
	/* 1. Before the peak: what came and went. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct ht_group *t = &ph[i].g[G_TEMP], *m = &ph[i].g[G_MID];

		for (uint64_t k = 0; k < t->n; k++) {
			ht_plus(&ev, ht_info(t, k));
			ht_minus(&ev, ht_info(t, k), true);
		}
		for (uint64_t k = 0; k < m->n; k++) {
			ht_plus(&ev, ht_info(m, k));
			ht_minus(&ev, ht_info(m, k), false);
		}
	}
	/* 2. The peak. */
	fprintf(out, "c %" PRIx64 "\n", (uint64_t)(peak_t * 1000));
	for (int k = G_BOTH; k <= G_XEND; k++)
		for (size_t i = 0; i < p->nsamples; i++)
			for (uint64_t j = 0; j < ph[i].g[k].n; j++)
				ht_plus(&ev, ht_info(&ph[i].g[k], j));
	if (xtemp != SIZE_MAX)
		ht_plus(&ev, ht_info(&ph[xtemp].g[G_XTEMP], 0));
	/* 3. After it. */
	fprintf(out, "c %" PRIx64 "\n", (uint64_t)(peak_t * 1000) + 1);
	if (xtemp != SIZE_MAX)
		ht_minus(&ev, ht_info(&ph[xtemp].g[G_XTEMP], 0), true);
	for (int k = G_PEAK; k <= G_XMID; k++)
		for (size_t i = 0; i < p->nsamples; i++)
			for (uint64_t j = 0; j < ph[i].g[k].n; j++)
				ht_minus(&ev, ht_info(&ph[i].g[k], j), false);
	for (size_t i = 0; i < p->nsamples; i++)
		for (uint64_t j = 0; j < ph[i].g[G_END].n; j++)
			ht_plus(&ev, ht_info(&ph[i].g[G_END], j));
	fprintf(out, "c %" PRIx64 "\n", (uint64_t)(end_t * 1000) > (uint64_t)(peak_t * 1000) + 1 ?
		(uint64_t)(end_t * 1000) : (uint64_t)(peak_t * 1000) + 2);
	free(ph);
	return 0;
}

/* --- the command ---------------------------------------------------------------------------- */

int asp_export(FILE *out, const asp_dump_t *d, enum asp_export_format f,
	       enum asp_export_weight w, char err[ASP_ERR_MAX])
{
	asp_profile_t p;
	int rc = 0;

	if (f == ASP_EXPORT_MASSIF || f == ASP_EXPORT_HEAPTRACK ||
	    (f == ASP_EXPORT_FOLDED && w == ASP_WEIGHT_PEAK_BYTES)) {
		if (d->nsnapshots == 0) {
			snprintf(err, ASP_ERR_MAX, "no snapshots in this dump, which %s needs",
				 f == ASP_EXPORT_FOLDED ? "--weight=peak_bytes" :
				 format_names[f]);
			return -EINVAL;
		}
	}
	if (f != ASP_EXPORT_MASSIF && d->nstack_stats == 0) {
		/* A caller-only run (ALLOCSPY_BACKTRACE=1) has stacks in its
		 * snapshots and loss records, which timeline, leaks and html
		 * show, but no stack's totals. */
		snprintf(err, ASP_ERR_MAX, "no per-stack totals (stack_stats) in this dump, "
			 "which %s needs: run with ALLOCSPY_BACKTRACE=2 or more%s",
			 format_names[f], d->nstacks ? " (its callers are in its snapshots "
			 "and loss records: timeline, leaks and html show them)" : "");
		return -EINVAL;
	}
	if (asp_profile_build(&p, d) < 0)
		return -ENOMEM;
	if ((f == ASP_EXPORT_HEAPTRACK || (f == ASP_EXPORT_FOLDED &&
					    w == ASP_WEIGHT_PEAK_BYTES)) && !p.has_peak) {
		snprintf(err, ASP_ERR_MAX, "the dump does not say what each stack "
			 "held at the peak, which %s needs",
			 f == ASP_EXPORT_FOLDED ? "--weight=peak_bytes" : format_names[f]);
		asp_profile_free(&p);
		return -EINVAL;
	}
	switch (f) {
	case ASP_EXPORT_PPROF: rc = asp_pprof_write(out, &p); break;
	case ASP_EXPORT_GPERFTOOLS: gperftools(out, &p); break;
	case ASP_EXPORT_MASSIF: rc = massif(out, &p); break;
	case ASP_EXPORT_CALLGRIND: rc = callgrind(out, &p); break;
	case ASP_EXPORT_HEAPTRACK: rc = heaptrack(out, &p, err); break;
	case ASP_EXPORT_FOLDED: folded(out, &p, w); break;
	case ASP_EXPORT_SPEEDSCOPE: rc = speedscope(out, &p); break;
	}
	asp_profile_free(&p);
	return rc;
}
