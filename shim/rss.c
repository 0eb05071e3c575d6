/* rss.c - the resident memory at exit, split into what holds it.
 *
 * The kernel's list of mappings (/proc/self/smaps) gives each mapping's
 * resident size. A file mapping's is file memory (the shim's, for its live
 * view). An anonymous mapping may hold the memory of several owners, since
 * the kernel merges neighbouring mappings of one kind into one: its pages
 * are read one by one (which are resident: PAGEMAP_SCAN, which leaves out
 * the kernel's shared zero page as the resident size does, or mincore on a
 * kernel without it), and each resident page goes to the first owner whose
 * ranges hold it:
 *   the shim        every mapping asp__arena_ranges lists, the anonymous
 *                   part of its own image (its boot arena and inner heap)
 *                   and its live view;
 *   thread stacks   the main thread's [stack], and each live thread's stack
 *                   mapping, which ends just above its descriptor (glibc
 *                   puts pthread_self() at its top);
 *   large blocks    glibc's mmapped chunks: the mapping of each live block
 *                   whose header says it has one;
 *   the allocator's heaps: [heap] (brk), and the heaps of glibc's other
 *                   arenas, 64 MiB aligned, each beginning with its
 *                   heap_info;
 *   other anonymous memory.
 * The live blocks, in address order, are walked beside the pages: the
 * resident bytes of each block, up to its usable size, are the program's
 * heap and the allocator's slack, and what is left of each owner's pages is
 * that owner's row: the heaps less the blocks in them is the allocator's
 * free memory and its chunk headers. The heap in use is the blocks'
 * requested bytes, resident or not; the bytes of blocks that are not (never
 * written, or swapped out) are taken off again in a row of their own, so
 * that the rows add up to what is resident. */
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arena.h"
#include "liveview.h"
#include "next.h"
#include "rss.h"
#include "sort.h"
#include "thread.h"

/* glibc's arenas other than the main one grow in heaps of this size, each
 * aligned to it (64-bit, without the hugetlb tunable). */
#define HEAP_MAX ((uintptr_t)64 << 20)
#define HEAPS_MAX 4096

/* Pages read at a time. */
#define WINDOW_PAGES 65536u

/* PAGEMAP_SCAN (Linux 6.7), declared here: older headers lack it. */
struct asp_page_region {
	uint64_t start, end, categories;
};

struct asp_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define ASP_PAGEMAP_SCAN _IOWR('f', 16, struct asp_pm_scan_arg)
#define ASP_PAGE_IS_PRESENT (1u << 3)
#define ASP_PAGE_IS_PFNZERO (1u << 5)
#define SCAN_REGIONS 4096u

enum { OWN_SHIM, OWN_STACK, OWN_LARGE, OWN_HEAP, OWN_OTHER, OWNERS };

struct vma {
	uintptr_t start, end;
	uint64_t rss;
	unsigned char file, rw, heap, stack;
};

struct range {
	uintptr_t start, end;
};

struct ranges {
	struct range *v;
	size_t n, cap;
};

/* The live blocks in address order: the table's snapshot is sorted but for
 * its tail (the side table's blocks), which is copied and sorted apart. */
struct span {
	uintptr_t ptr;
	uint64_t size;
};

struct blocks {
	const struct asp_live_entry *a;
	size_t na, ia;
	const struct span *b;
	size_t nb, ib;
};

/* A cursor over the mappings, for addresses that only grow. */
struct vcur {
	const struct vma *v;
	size_t n, i;
};

struct owners;

/* Which owner holds an address, for addresses that only grow: a cursor in
 * each owner's ranges; the large blocks' ranges come from a walk of the
 * blocks of their own. */
struct ocur {
	const struct owners *o;
	size_t i[OWNERS];
	struct blocks large_it;
	struct vcur large_vc;
	struct range large;
	int large_have, large_done;
	uint64_t nlarge;
};

struct owners {
	struct ranges r[OWNERS];	/* OWN_LARGE: unused (struct ocur) */
	const struct asp_live_entry *entries;
	size_t nsorted;
	const struct span *tail;
	size_t ntail;
	const struct vma *vmas;
	size_t nvmas;
	int glibc;
};

static struct {
	int done;
	int glibc;
	const char *pages_from;
	uint64_t rss, peak_rss, in_use, slack, not_resident;
	uint64_t own[OWNERS];	/* each owner's resident bytes, less the blocks' */
	uint64_t file, heaps, large, stacks;
} g;

static uintptr_t g_page = 4096;

static uintptr_t page_up(uintptr_t a)
{
	return (a + g_page - 1) & ~(g_page - 1);
}

/* --- the blocks ------------------------------------------------------------ */

static void blocks_init(struct blocks *it, const struct owners *o)
{
	*it = (struct blocks){ o->entries, o->nsorted, 0, o->tail, o->ntail, 0 };
}

static int blocks_next(struct blocks *it, uintptr_t *p, uint64_t *size)
{
	int ha = it->ia < it->na, hb = it->ib < it->nb;
	if (ha && (!hb || it->a[it->ia].ptr <= it->b[it->ib].ptr)) {
		*p = it->a[it->ia].ptr;
		*size = it->a[it->ia++].size;
		return 1;
	}
	if (hb) {
		*p = it->b[it->ib].ptr;
		*size = it->b[it->ib++].size;
		return 1;
	}
	return 0;
}

static int by_ptr(const void *a, const void *b)
{
	uintptr_t x = ((const struct span *)a)->ptr, y = ((const struct span *)b)->ptr;
	return x < y ? -1 : x > y;
}

static const struct vma *vma_at(struct vcur *c, uintptr_t a)
{
	while (c->i < c->n && c->v[c->i].end <= a)
		c->i++;
	return c->i < c->n && c->v[c->i].start <= a ? &c->v[c->i] : NULL;
}

/* Whether the 16 bytes before p (the allocator's header) are in the same
 * readable, writable anonymous mapping as p: only then are they read. */
static int header_readable(struct vcur *c, uintptr_t p)
{
	const struct vma *v = vma_at(c, p);
	return v != NULL && !v->file && v->rw && p - v->start >= 16;
}

/* The next of glibc's mmapped chunks among the blocks, as its mapping:
 * the chunk's header holds its size with IS_MMAPPED (2), and before it the
 * offset of the chunk in its mapping. */
static int large_next(struct ocur *c, struct range *out)
{
	uintptr_t p;
	uint64_t size;
	while (blocks_next(&c->large_it, &p, &size)) {
		if (!header_readable(&c->large_vc, p))
			continue;
		uint64_t head = ((const uint64_t *)p)[-1];
		if (!(head & 2))
			continue;
		uint64_t prev = ((const uint64_t *)p)[-2];
		uintptr_t chunk = p - 16, lo = chunk - prev, hi = chunk + (head & ~(uint64_t)7);
		if (prev > chunk || hi <= chunk || (lo & (g_page - 1)) != 0 ||
		    (hi & (g_page - 1)) != 0 || hi - p < size)
			continue;
		*out = (struct range){ lo, hi };
		return 1;
	}
	return 0;
}

static void ocur_init(struct ocur *c, const struct owners *o)
{
	memset(c, 0, sizeof *c);
	c->o = o;
	blocks_init(&c->large_it, o);
	c->large_vc = (struct vcur){ o->vmas, o->nvmas, 0 };
	c->large_done = !o->glibc;
}

static int in_ranges(const struct ranges *r, size_t *i, uintptr_t a)
{
	while (*i < r->n && r->v[*i].end <= a)
		++*i;
	return *i < r->n && r->v[*i].start <= a;
}

static int owner_of(struct ocur *c, uintptr_t a)
{
	const struct owners *o = c->o;
	if (in_ranges(&o->r[OWN_SHIM], &c->i[OWN_SHIM], a))
		return OWN_SHIM;
	if (in_ranges(&o->r[OWN_STACK], &c->i[OWN_STACK], a))
		return OWN_STACK;
	while (!c->large_done && (!c->large_have || c->large.end <= a)) {
		c->large_have = large_next(c, &c->large);
		c->large_done = !c->large_have;
		c->nlarge += (uint64_t)c->large_have;
	}
	if (c->large_have && c->large.start <= a && a < c->large.end)
		return OWN_LARGE;
	if (in_ranges(&o->r[OWN_HEAP], &c->i[OWN_HEAP], a))
		return OWN_HEAP;
	return OWN_OTHER;
}

/* --- reading /proc ------------------------------------------------------- */

/* The whole of path into buf (cap bytes): its length, or -1. A length of
 * cap means it may not all have fitted. */
static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t len = 0;
	while (len < cap) {
		ssize_t r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	return (ssize_t)len;
}

/* The lines of path, read a page at a time. */
static size_t count_lines(const char *path)
{
	char buf[4096];
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t r = read(fd, buf, sizeof buf);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (const char *p = buf; (p = memchr(p, '\n', (size_t)(buf + r - p))) != NULL; p++)
			n++;
	}
	close(fd);
	return n;
}

static int hexval(int ch)
{
	return ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
}

static uint64_t hex(const char **p, const char *end)
{
	uint64_t v = 0;
	for (int d; *p < end && (d = hexval(**p)) >= 0; ++*p)
		v = v << 4 | (uint64_t)d;
	return v;
}

static uint64_t dec(const char **p, const char *end)
{
	uint64_t v = 0;
	while (*p < end && (**p == ' ' || **p == '\t'))
		++*p;
	for (; *p < end && **p >= '0' && **p <= '9'; ++*p)
		v = v * 10 + (uint64_t)(**p - '0');
	return v;
}

static int starts(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);
	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

/* The value of the "Name:   N kB" line of text, in bytes, or 0. */
static uint64_t kb_field(const char *text, size_t len, const char *name)
{
	const char *p = text, *end = text + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (starts(p, nl, name)) {
			p += strlen(name);
			return dec(&p, nl) * 1024;
		}
		p = nl + 1;
	}
	return 0;
}

/* "start-end perms offset dev inode   path": one mapping of smaps. */
static int parse_header(const char *p, const char *nl, struct vma *v)
{
	if (hexval(*p) < 0)
		return 0;
	const char *q = p;
	uintptr_t start = hex(&q, nl);
	if (q == nl || *q != '-')
		return 0;
	q++;
	uintptr_t end = hex(&q, nl);
	if (nl - q < 6 || *q != ' ')
		return 0;
	const char *perms = q + 1;
	q += 6;
	hex(&q, nl);			/* offset */
	while (q < nl && *q == ' ')
		q++;
	while (q < nl && *q != ' ')	/* device */
		q++;
	uint64_t inode = dec(&q, nl);
	while (q < nl && *q == ' ')
		q++;
	*v = (struct vma){ start, end, 0, inode != 0 || (q < nl && *q == '/'),
	                   perms[0] == 'r' && perms[1] == 'w',
	                   (size_t)(nl - q) == 6 && memcmp(q, "[heap]", 6) == 0,
	                   (size_t)(nl - q) == 7 && memcmp(q, "[stack]", 7) == 0 };
	return 1;
}

/* The mappings of smaps' text into v (at most cap); returns how many. */
static size_t parse_smaps(const char *text, size_t len, struct vma *v, size_t cap)
{
	const char *p = text, *end = text + len;
	size_t n = 0;
	struct vma *cur = NULL;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		struct vma h;
		if (parse_header(p, nl, &h)) {
			cur = n < cap ? &v[n] : NULL;
			if (cur != NULL)
				*cur = h;
			n++;
		} else if (cur != NULL && starts(p, nl, "Rss:")) {
			p += 4;
			cur->rss = dec(&p, nl) * 1024;
		}
		p = nl + 1;
	}
	return n;
}

static const struct vma *vma_find(const struct vma *v, size_t n, uintptr_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].end <= a)
			lo = mid + 1;
		else if (v[mid].start > a)
			hi = mid;
		else
			return &v[mid];
	}
	return NULL;
}

/* --- which pages are resident ------------------------------------------------ */

struct pages {
	int pagemap;			/* /proc/self/pagemap, or -1: mincore */
	struct asp_page_region *regions;
	unsigned char *vec;
};

/* vec[k] & 1 for each of the n pages from start that is resident. */
static int resident(struct pages *pg, uintptr_t start, size_t n, unsigned char *vec)
{
	uintptr_t end = start + n * g_page;
	if (pg->pagemap >= 0) {
		memset(vec, 0, n);
		struct asp_pm_scan_arg a = {
			.size = sizeof a, .start = start, .end = end,
			.vec = (uintptr_t)pg->regions, .vec_len = SCAN_REGIONS,
			.category_inverted = ASP_PAGE_IS_PFNZERO,
			.category_mask = ASP_PAGE_IS_PRESENT | ASP_PAGE_IS_PFNZERO,
			.return_mask = ASP_PAGE_IS_PRESENT,
		};
		for (;;) {
			long got = ioctl(pg->pagemap, ASP_PAGEMAP_SCAN, &a);
			if (got < 0)
				break;
			for (long i = 0; i < got; i++) {
				const struct asp_page_region *r = &pg->regions[i];
				if (r->start < start || r->end > end || r->end < r->start)
					continue;
				memset(vec + (r->start - start) / g_page, 1, (r->end - r->start) / g_page);
			}
			if (a.walk_end >= end || a.walk_end <= a.start)
				return 0;
			a.start = a.walk_end;
		}
		/* Not this kernel's: mincore from now on. */
		close(pg->pagemap);
		pg->pagemap = -1;
	}
	return mincore((void *)start, end - start, vec);
}

/* mincore counts a page of the kernel's shared zero page (mapped by a read
 * of memory never written) as resident, which the resident size does not:
 * the mapping's excess over its resident size is taken from the owner that
 * has most of it there. (PAGEMAP_SCAN leaves those pages out.) */
static void zero_pages(uint64_t vres[OWNERS], uint64_t rss)
{
	uint64_t all = 0;
	int most = 0;
	for (int k = 0; k < OWNERS; k++) {
		all += vres[k];
		if (vres[k] > vres[most])
			most = k;
	}
	if (all > rss)
		vres[most] -= all - rss < vres[most] ? all - rss : vres[most];
}

static int page_resident(uintptr_t a)
{
	unsigned char c = 0;
	return mincore((void *)a, g_page, &c) == 0 && (c & 1);
}

/* glibc's heap_info at a: the arena, the previous heap, the size in use
 * and the size made writable, both page multiples up to HEAP_MAX. The
 * first heap of an arena holds the arena right after it (32 bytes on, or
 * 48 since glibc 2.35); a later one points at it. */
static int heap_info_at(uintptr_t a)
{
	const uint64_t *h = (const uint64_t *)a;
	uint64_t ar = h[0], prev = h[1], size = h[2], prot = h[3];
	uint64_t in = ar & (HEAP_MAX - 1);
	if (ar == 0 || (prev & (HEAP_MAX - 1)) != 0 || size < g_page || size > HEAP_MAX ||
	    (size & (g_page - 1)) != 0 || prot < size || prot > HEAP_MAX || (prot & (g_page - 1)) != 0)
		return 0;
	if (in != 32 && in != 48)
		return 0;
	return prev != 0 || ar - a == in;
}

/* --- the shim's own ranges ---------------------------------------------------- */

extern const ElfW(Ehdr) __ehdr_start __attribute__((visibility("hidden")));

/* The shim's image, from its own program headers. */
static struct range shim_image(void)
{
	const ElfW(Ehdr) *eh = &__ehdr_start;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	uintptr_t bias = 0, lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
			bias = (uintptr_t)eh - ph[i].p_vaddr;
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD)
			continue;
		if (bias + ph[i].p_vaddr < lo)
			lo = bias + ph[i].p_vaddr;
		if (bias + ph[i].p_vaddr + ph[i].p_memsz > hi)
			hi = bias + ph[i].p_vaddr + ph[i].p_memsz;
	}
	return hi > lo ? (struct range){ lo & ~(g_page - 1), page_up(hi) } : (struct range){ 0, 0 };
}

static void range_add(struct ranges *r, uintptr_t start, uintptr_t end)
{
	if (end > start && r->n < r->cap)
		r->v[r->n++] = (struct range){ start, end };
}

static void count_range(void *arg, const void *start, size_t len)
{
	(void)start;
	(void)len;
	(*(size_t *)arg)++;
}

static void add_range(void *arg, const void *start, size_t len)
{
	range_add(arg, (uintptr_t)start, (uintptr_t)start + len);
}

static int by_start(const void *a, const void *b)
{
	uintptr_t x = ((const struct range *)a)->start, y = ((const struct range *)b)->start;
	return x < y ? -1 : x > y;
}

/* --- the measure ------------------------------------------------------------ */

/* Everything the measure needs, mapped and touched before smaps is read,
 * so that its own pages are resident in the list it reads. */
struct work {
	void *mem;
	size_t bytes;
	char *text;
	size_t text_cap;
	struct vma *vmas;
	size_t vma_cap;
	struct span *tail;
	unsigned char *vec;
	struct asp_page_region *regions;
	struct range *ranges[OWNERS];
	size_t caps[OWNERS];
};

static void *carve(char **p, size_t bytes)
{
	void *r = *p;
	*p += (bytes + 63) & ~(size_t)63;
	return r;
}

static int work_alloc(struct work *w, size_t text_cap, size_t ntail, size_t nthreads)
{
	memset(w, 0, sizeof *w);
	size_t nshim = 0;
	asp__arena_ranges(count_range, &nshim);
	w->text_cap = text_cap;
	w->vma_cap = text_cap / 512 + 64;
	w->caps[OWN_SHIM] = nshim + 16;	/* and this mapping, the image, the live view */
	w->caps[OWN_STACK] = nthreads + 2;
	w->caps[OWN_HEAP] = HEAPS_MAX + 1;
	size_t sizes[] = { text_cap, w->vma_cap * sizeof(struct vma), ntail * sizeof(struct span),
	                   WINDOW_PAGES, SCAN_REGIONS * sizeof(struct asp_page_region),
	                   w->caps[OWN_SHIM] * sizeof(struct range),
	                   w->caps[OWN_STACK] * sizeof(struct range),
	                   w->caps[OWN_HEAP] * sizeof(struct range) };
	for (size_t i = 0; i < ASP_ARRAY_SIZE(sizes); i++)
		w->bytes += (sizes[i] + 63) & ~(size_t)63;
	w->mem = asp__scratch_alloc(w->bytes);
	if (w->mem == NULL)
		return -ENOMEM;
	memset(w->mem, 0, w->bytes);	/* resident from now on */
	char *p = w->mem;
	w->text = carve(&p, sizes[0]);
	w->vmas = carve(&p, sizes[1]);
	w->tail = carve(&p, sizes[2]);
	w->vec = carve(&p, sizes[3]);
	w->regions = carve(&p, sizes[4]);
	w->ranges[OWN_SHIM] = carve(&p, sizes[5]);
	w->ranges[OWN_STACK] = carve(&p, sizes[6]);
	w->ranges[OWN_HEAP] = carve(&p, sizes[7]);
	return 0;
}

static void work_free(struct work *w)
{
	if (w->mem != NULL)
		asp__scratch_free(w->mem, w->bytes);
	w->mem = NULL;
}

/* A block at its place in the walk: [s, e), up to its usable size. */
struct blk {
	uintptr_t s, e;
};

struct walk {
	struct blocks it;
	struct vcur vc;
	uint64_t in_use, slack;
};

static int load_block(struct walk *wk, struct blk *b)
{
	uintptr_t p;
	uint64_t size, usable;
	if (!blocks_next(&wk->it, &p, &size))
		return 0;
	usable = size;
	if (header_readable(&wk->vc, p)) {
		size_t u = asp__next.malloc_usable_size((void *)p);
		if (u > size)
			usable = u;
	}
	wk->in_use += size;
	wk->slack += usable - size;
	*b = (struct blk){ p, p + usable };
	return 1;
}

/* The shim's own: every mapping it made, its image's anonymous part (its
 * .bss), its live view. */
static void find_shim(struct owners *o)
{
	struct ranges *shim = &o->r[OWN_SHIM];
	asp__arena_ranges(add_range, shim);
	struct range img = shim_image();
	range_add(shim, img.start, img.end);
	uintptr_t lv_start;
	size_t lv_len;
	if (asp__liveview_mapping(&lv_start, &lv_len))
		range_add(shim, lv_start, lv_start + lv_len);
	asp__sort(shim->v, shim->n, sizeof *shim->v, by_start);
}

/* The stacks: the main thread's, and each live thread's mapping up to its
 * descriptor (glibc puts it at the top; the mapping above may be another
 * one that the kernel merged). */
static void find_stacks(struct owners *o)
{
	struct ranges *stacks = &o->r[OWN_STACK];
	pid_t pid = getpid();
	for (size_t i = 0; i < o->nvmas; i++)
		if (o->vmas[i].stack)
			range_add(stacks, o->vmas[i].start, o->vmas[i].end);
	for (const struct asp_thread *t = asp__threads_list(); t != NULL; t = t->next) {
		if (t->state != ASP_THREAD_ACTIVE || t->self == 0 || t->tid == pid)
			continue;
		const struct vma *v = vma_find(o->vmas, o->nvmas, t->self);
		uintptr_t top = page_up(t->self + 1);
		if (v != NULL && !v->file && v->rw)
			range_add(stacks, v->start, top < v->end ? top : v->end);
	}
	asp__sort(stacks->v, stacks->n, sizeof *stacks->v, by_start);
}

/* The allocator's heaps: brk's, and glibc's other arenas'. */
static void find_heaps(struct owners *o)
{
	struct ranges *heaps = &o->r[OWN_HEAP];
	for (size_t i = 0; i < o->nvmas; i++) {
		const struct vma *v = &o->vmas[i];
		if (v->heap) {
			range_add(heaps, v->start, v->end);
			continue;
		}
		if (!o->glibc || v->file || !v->rw || v->rss == 0 || v->stack)
			continue;
		for (uintptr_t a = (v->start + HEAP_MAX - 1) & ~(HEAP_MAX - 1); a >= v->start && a < v->end;
		     a += HEAP_MAX) {
			size_t k = 0;
			if (!in_ranges(&o->r[OWN_SHIM], &k, a) && page_resident(a) && heap_info_at(a))
				range_add(heaps, a, a + HEAP_MAX);
		}
	}
	asp__sort(heaps->v, heaps->n, sizeof *heaps->v, by_start);
}

/* What the walk finds: each owner's resident bytes, the blocks' resident
 * bytes on its pages, the file mappings' (the shim's apart). */
struct tally {
	uint64_t res[OWNERS], in_blocks[OWNERS];
	uint64_t file, shim_file;
};

/* The file mappings' resident bytes, from the list. */
static void tally_files(const struct owners *o, struct tally *t)
{
	t->file = t->shim_file = 0;
	for (size_t i = 0; i < o->nvmas; i++) {
		size_t k = 0;
		if (!o->vmas[i].file)
			continue;
		if (in_ranges(&o->r[OWN_SHIM], &k, o->vmas[i].start))
			t->shim_file += o->vmas[i].rss;
		else
			t->file += o->vmas[i].rss;
	}
}

/* The resident pages of anonymous mapping v, window by window, each to
 * its owner, and the bytes of the blocks on them, the blocks loaded as
 * the walk reaches them (*b, *have). */
static void walk_mapping(const struct vma *v, struct pages *pg, struct ocur *pages_at,
                         struct ocur *blocks_at, struct walk *wk, struct blk *b, int *have,
                         struct tally *t)
{
	const uintptr_t window = (uintptr_t)WINDOW_PAGES * g_page;
	uint64_t vres[OWNERS] = { 0 };
	for (uintptr_t ws = v->start; ws < v->end; ws += window) {
		uintptr_t we = v->end - ws > window ? ws + window : v->end;
		size_t np = (we - ws) / g_page;
		if (resident(pg, ws, np, pg->vec) != 0) {
			/* Unreadable: its resident size goes to its first owner. */
			if (ws == v->start) {
				vres[owner_of(pages_at, ws)] += v->rss;
				break;
			}
			memset(pg->vec, 0, np);
		}
		for (size_t k = 0; k < np; k++)
			if (pg->vec[k] & 1)
				vres[owner_of(pages_at, ws + k * g_page)] += g_page;
		for (; *have && b->s < we; *have = load_block(wk, b)) {
			if (b->e <= ws)
				continue;
			uintptr_t a = b->s > ws ? b->s : ws, end = b->e < we ? b->e : we;
			while (a < end) {
				uintptr_t pa = a & ~(g_page - 1), next = pa + g_page < end ? pa + g_page : end;
				if (pg->vec[(pa - ws) / g_page] & 1)
					t->in_blocks[owner_of(blocks_at, pa)] += next - a;
				a = next;
			}
			if (b->e > we)
				break;	/* on into the next window */
		}
	}
	zero_pages(vres, v->rss);
	for (int k = 0; k < OWNERS; k++)
		t->res[k] += vres[k];
}

/* Every mapping with resident pages, and every block. */
static void walk_all(const struct owners *o, struct work *w, struct walk *wk, struct tally *t)
{
	struct pages pg = { open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC), w->regions, w->vec };
	struct ocur pages_at, blocks_at;
	struct blk b;
	ocur_init(&pages_at, o);
	ocur_init(&blocks_at, o);
	*wk = (struct walk){ .vc = { o->vmas, o->nvmas, 0 } };
	blocks_init(&wk->it, o);
	int have = load_block(wk, &b);
	for (size_t i = 0; i < o->nvmas; i++)
		if (o->vmas[i].rss != 0 && !o->vmas[i].file)
			walk_mapping(&o->vmas[i], &pg, &pages_at, &blocks_at, wk, &b, &have, t);
	while (have)
		have = load_block(wk, &b);
	tally_files(o, t);
	g.pages_from = pg.pagemap >= 0 ? "pagemap" : "mincore";
	if (pg.pagemap >= 0)
		close(pg.pagemap);
	g.large = pages_at.nlarge;
}

void asp__rss_measure(const struct asp_live_entry *entries, size_t n)
{
	if (g.done || (entries == NULL && n > 0))
		return;
	long ps = sysconf(_SC_PAGESIZE);
	if (ps > 0)
		g_page = (uintptr_t)ps;
	size_t nthreads = 0;
	for (const struct asp_thread *t = asp__threads_list(); t != NULL; t = t->next)
		nthreads++;
	size_t nsorted = n > 0 ? 1 : 0;
	while (nsorted < n && entries[nsorted - 1].ptr < entries[nsorted].ptr)
		nsorted++;

	/* The code that reads the total and the peak, run once before the
	 * pages are counted (its first run would fault pages in). */
	char small[4096];
	ssize_t got = read_file("/proc/self/status", small, sizeof small);
	if (got > 0)
		kb_field(small, (size_t)got, "VmHWM:");

	/* smaps, with everything this needs mapped before it is read. */
	struct work w;
	size_t nvmas = 0;
	for (size_t cap = (count_lines("/proc/self/maps") + 64) * 1024;; cap *= 2) {
		if (cap > ((size_t)1 << 32) || work_alloc(&w, cap, n - nsorted, nthreads) != 0)
			return;
		got = read_file("/proc/self/smaps", w.text, w.text_cap);
		if (got <= 0) {
			work_free(&w);
			return;
		}
		if ((size_t)got < w.text_cap &&
		    (nvmas = parse_smaps(w.text, (size_t)got, w.vmas, w.vma_cap)) <= w.vma_cap)
			break;
		work_free(&w);
	}
	for (size_t i = nsorted; i < n; i++)
		w.tail[i - nsorted] = (struct span){ entries[i].ptr, entries[i].size };
	asp__sort(w.tail, n - nsorted, sizeof *w.tail, by_ptr);

	struct owners o = { .entries = entries, .nsorted = nsorted, .tail = w.tail,
	                    .ntail = n - nsorted, .vmas = w.vmas, .nvmas = nvmas,
	                    .glibc = !asp__live_shared };
	for (int k = 0; k < OWNERS; k++)
		o.r[k] = (struct ranges){ w.ranges[k], 0, w.caps[k] };
	find_shim(&o);
	find_stacks(&o);
	find_heaps(&o);

	struct walk wk;
	struct tally t;
	memset(&t, 0, sizeof t);
	walk_all(&o, &w, &wk, &t);

	/* The file mappings again, with the pages the walk's own code brought
	 * in (a fault maps up to 16 neighbouring pages of a file), then the
	 * total: between the two only code that ran already runs. */
	got = read_file("/proc/self/smaps", w.text, w.text_cap);
	if (got > 0 && (size_t)got < w.text_cap) {
		size_t again = parse_smaps(w.text, (size_t)got, w.vmas, w.vma_cap);
		if (again <= w.vma_cap) {
			o.nvmas = again;
			tally_files(&o, &t);
		}
	}
	got = read_file("/proc/self/smaps_rollup", small, sizeof small);
	g.rss = got > 0 ? kb_field(small, (size_t)got, "Rss:") : 0;
	got = read_file("/proc/self/status", small, sizeof small);
	g.peak_rss = got > 0 ? kb_field(small, (size_t)got, "VmHWM:") : 0;

	uint64_t resident_blocks = 0;
	for (int k = 0; k < OWNERS; k++) {
		resident_blocks += t.in_blocks[k];
		g.own[k] = t.res[k] > t.in_blocks[k] ? t.res[k] - t.in_blocks[k] : 0;
	}
	g.own[OWN_SHIM] += t.shim_file;
	g.file = t.file;
	g.glibc = o.glibc;
	g.in_use = wk.in_use;
	g.slack = wk.slack;
	g.not_resident = g.in_use + g.slack - resident_blocks;
	g.stacks = o.r[OWN_STACK].n;
	g.heaps = o.r[OWN_HEAP].n;
	work_free(&w);
	g.done = g.rss > 0;
}

static json_t *jint(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

json_t *asp__rss_json(void)
{
	if (!g.done)
		return NULL;
	json_t *o = json_pack("{s:o,s:o,s:s,s:s}", "rss_bytes", jint(g.rss),
	                      "peak_rss_bytes", jint(g.peak_rss),
	                      "allocator", g.glibc ? "glibc" : "other", "pages_from", g.pages_from);
	static const struct {
		const char *key;
		int owner;	/* -1: not an owner's */
	} rows[] = {
		{ "heap_in_use_bytes", -1 }, { "slack_bytes", -1 }, { "not_resident_bytes", -1 },
		{ "allocator_free_bytes", OWN_HEAP }, { "large_blocks_bytes", OWN_LARGE },
		{ "thread_stacks_bytes", OWN_STACK }, { "allocspy_bytes", OWN_SHIM },
		{ "other_anonymous_bytes", OWN_OTHER }, { "file_bytes", -1 },
	};
	const uint64_t mine[] = { g.in_use, g.slack, g.not_resident };
	for (size_t i = 0; o != NULL && i < ASP_ARRAY_SIZE(rows); i++)
		json_object_set_new(o, rows[i].key, jint(rows[i].owner >= 0 ? g.own[rows[i].owner] :
		                                          i < 3 ? mine[i] : g.file));
	if (o != NULL) {
		json_object_set_new(o, "arena_heaps", jint(g.heaps));
		json_object_set_new(o, "large_blocks", jint(g.large));
		json_object_set_new(o, "thread_stacks", jint(g.stacks));
	}
	return o;
}
