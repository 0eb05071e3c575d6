/* leak.c - the reachability scan at exit, as valgrind memcheck does it.
 *
 * Blocks come from the live table, sorted here by address (the table gives
 * most of them in order already). Roots are every
 * readable and writable mapping of the process, less what is not the
 * program's: the shim's own memory, the allocator's heap regions (a heap
 * block is scanned only once something reaches it; free chunks never),
 * and dead stack: below the stack pointer of every live thread, below the
 * first frame of every thread that has exited, and below the frame main
 * was called from once main has returned. Other threads' registers are
 * roots too: each live thread is asked, by a signal, for its registers.
 *
 * Marking follows memcheck: a pointer to a block's start makes it
 * reachable, a pointer only into its interior possibly lost (unless one of
 * memcheck's heuristics, all on by default, explains the interior pointer),
 * and a block reached only from possibly lost blocks is at most possibly
 * lost. Blocks still unreached are definitely lost; each one leads a
 * clique and collects, as indirectly lost, the unreached blocks it reaches.
 *
 * One allocator detail is cured here: glibc's arena points at its top
 * chunk, whose header can lie inside the last block's requested range;
 * such a word in libc's data is taken for allocator metadata. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include "account.h"
#include "arena.h"
#include "guard.h"
#include "leak.h"
#include "live.h"
#include "loader.h"
#include "next.h"
#include "options.h"
#include "sample.h"
#include "stack.h"
#include "sort.h"
#include "suppress.h"
#include "thread.h"
#include "world.h"

/* memcheck's states, in its order (loss records sort by it). */
enum { REACHABLE, POSSIBLE, INDIRECT, UNREACHED };

enum {
	HEUR_NONE,
	HEUR_STDSTRING,
	HEUR_LENGTH64,
	HEUR_NEWARRAY,
	HEUR_MULTIPLE_INHERITANCE,
	HEUR_COUNT
};

enum { VT_UNKNOWN, VT_NO, VT_YES };

/* The blocks are the table's entries (live.h), in address order; what the
 * scan adds to each is kept apart, in arrays small enough to stay in the
 * cache where the entries (24 bytes each) cannot: a byte of marks and
 * the size, when under 64 KiB. A list whose blocks are far apart is
 * marked one block after another, each found in the one before: the
 * page's entry, then these, while its memory comes. */
#define MARK_STATE 3	/* memcheck's state */
#define MARK_PENDING 4	/* in the queue */
#define MARK_HEUR_SHIFT 3	/* reachable through a heuristic: which (3 bits) */
#define MARK_HEUR (7 << MARK_HEUR_SHIFT)
#define MARK_VT_SHIFT 6	/* its first word: VT_UNKNOWN, VT_NO or VT_YES */
#define MARK_VT (3 << MARK_VT_SHIFT)
#define SIZE16_BIG 0xffff	/* the size is the block's */

struct range {
	uintptr_t start, end;
};

struct mapping {
	uintptr_t start, end;
	char r, w, x, file;	/* file: backed by a file (not a device) */
	char stack;		/* the main thread's [stack] */
};

/* block_before looks up the page an address is in among the pages blocks
 * start in (a hash table: the first and last block starting there, and a
 * bit for each 16 bytes a block starts at, in one cache line), and counts
 * the bits at or below the address: the block's index, with no search,
 * from the one entry. A page where a block starts off a 16-byte boundary
 * (tcmalloc's 8-byte objects; never glibc's) has no bits, and its blocks
 * are searched. An address in a page no block starts in (deep inside a
 * large block, or in no block) is searched for among the blocks, through
 * every ASP_FIND_STRIDEth one's start first (a few KiB that stay cached).
 * The table's slots are 64 bytes, aligned: a lookup reads one line. */
#define ASP_FIND_STRIDE 32
#define ASP_SCAN_BATCH 32	/* words looked up side by side (scan_words) */
#define ASP_START_GRAIN 16
#define ASP_AHEAD_ENTRY 16	/* blocks queued ahead: entry, memory (process) */
#define ASP_AHEAD_BLOCK 8
#define ASP_START_WORDS (ASP_PAGE / ASP_START_GRAIN / 64)

struct __attribute__((aligned(64))) start_page {
	uintptr_t key;		/* the page (address >> ASP_PAGE_SHIFT), then the
				 * first block's offset in it (ASP_PAGE_SHIFT bits);
				 * 0: an empty slot */
	uint32_t first, last;	/* the blocks starting in it */
	uint64_t bits[ASP_START_WORDS];	/* where blocks start; all 0 when one
					 * starts off ASP_START_GRAIN */
};

struct scan {
	const struct asp_live_entry *b;	/* the blocks, n, in address order */
	size_t n;
	/* Unreached blocks: the bytes each one's clique collected; each
	 * indirect block, the index of the leader whose clique took it
	 * (itself indirect when a later clique took that leader). Pages
	 * never written cost nothing: a heap the roots reach has none. */
	uint64_t *indirect;
	uint32_t *clique;
	uintptr_t *coarse;	/* every ASP_FIND_STRIDEth block's start; ncoarse */
	size_t ncoarse;
	struct start_page *pages;	/* npages (a power of 2) slots, or NULL */
	size_t npages;
	uint8_t *mark;		/* each block's MARK_ bits */
	uint16_t *size16;	/* each block's size, or SIZE16_BIG */
	uint32_t *queue;	/* the blocks to scan, a ring of n + 1: queued
				 * from head on (a block is in it once at most) */
	size_t head, queued;
	/* The block queued last and where it starts: a list's next block,
	 * scanned at once, is not read to learn where it starts (those
	 * behind others are fetched ahead, process). */
	size_t last_queued;
	uintptr_t last_queued_start;
	/* Words that may point into blocks, waiting to be looked up (a
	 * batch, scan_words), each with prior_definite. */
	uintptr_t batch[ASP_SCAN_BATCH];
	uint8_t batch_definite[ASP_SCAN_BATCH];
	size_t nbatch;
	struct mapping *maps;
	size_t nmaps;
	struct range *skip;	/* not roots; sorted, disjoint after tidy */
	size_t nskip, capskip;
	int glibc;		/* the allocator underneath is glibc's */
	struct range libc_data;	/* libc's writable segments */
	int in_libc;		/* scanning a root inside libc_data */
	pid_t pid;
	size_t root_pages;	/* read from the roots so far */
	char *pool, *pool_end;	/* small arrays (scan_alloc) */
	uint64_t heur_bytes[HEUR_COUNT], heur_blocks[HEUR_COUNT];
};

/* Where main's frame ended, and where exit() was called from. */
static uintptr_t g_main_frame;
static int g_main_returned;
static uintptr_t g_exit_sp;

void asp__leak_note_main_frame(uintptr_t sp)
{
	g_main_frame = sp;
}

void asp__leak_note_main_returned(void)
{
	g_main_returned = 1;
}

void asp__leak_note_exit(uintptr_t sp)
{
	if (g_exit_sp == 0)
		g_exit_sp = sp;
}

/* Where exit's handlers are called from: exit's own frames, above it, hold
 * what the program kept in registers when it called exit, and are live
 * until the process ends, as valgrind sees them. */
static uintptr_t g_handler_sp;

void asp__leak_note_handler(uintptr_t sp)
{
	g_handler_sp = sp;
}

/* Memory ------------------------------------------------------------------- */

/* The scan's arrays. Small ones are cut from a pool of the shim's pages,
 * never reused and never given back (the scan runs once, at exit): each
 * array a mapping of its own cost a fault and four system calls to map
 * and list, as many to unmap, a few dozen at every exit. Large ones are
 * mappings of their own, in huge pages where the system has them (a
 * million blocks' arrays: a fault per 2 MiB, and lookups that miss the
 * TLB less), given back when done. Either way the memory is the shim's
 * (left out of the roots) and zeroed. */
#define ASP_POOL_CHUNK ((size_t)64 << 10)
#define ASP_POOL_MAX (ASP_POOL_CHUNK / 4)

static void *scan_alloc(struct scan *s, size_t size)
{
	if (size > ASP_POOL_MAX)
		return asp__pages_alloc_dense(size);
	size = (size + 63) & ~(size_t)63;
	if ((size_t)(s->pool_end - s->pool) < size) {
		char *chunk = asp__pages_alloc(ASP_POOL_CHUNK);
		if (chunk == NULL)
			return NULL;
		s->pool = chunk;
		s->pool_end = chunk + ASP_POOL_CHUNK;
	}
	void *p = s->pool;
	s->pool += size;
	return p;
}

static void scan_free(void *p, size_t size)
{
	if (p != NULL && size > ASP_POOL_MAX)
		asp__pages_free(p, size);
}

static void *grow_array(struct scan *s, void *old, size_t *cap, size_t elem, size_t need)
{
	if (need <= *cap)
		return old;
	size_t n = *cap ? *cap : 256;
	while (n < need)
		n *= 2;
	void *p = scan_alloc(s, n * elem);
	if (p == NULL)
		return NULL;
	if (old != NULL) {
		memcpy(p, old, *cap * elem);
		scan_free(old, *cap * elem);
	}
	*cap = n;
	return p;
}

static void skip_range(struct scan *s, uintptr_t start, uintptr_t end)
{
	if (end <= start)
		return;
	struct range *r = grow_array(s, s->skip, &s->capskip, sizeof *r, s->nskip + 1);
	if (r == NULL)
		return;
	s->skip = r;
	s->skip[s->nskip++] = (struct range){ start, end };
}

/* /proc/self/maps ------------------------------------------------------------ */

static uintptr_t hex(const char **p)
{
	uintptr_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (uintptr_t)d;
	}
}

/* Reads the mappings; 0 or -errno. The buffers it reads them into are
 * listed there and gone once it returns: they are left out of the roots,
 * or each of their pages would be asked about alone (resident_runs). */
static int read_maps(struct scan *s)
{
	size_t cap = ASP_POOL_MAX, len = 0;
	char *buf = scan_alloc(s, cap);
	if (buf == NULL)
		return -ENOMEM;
	/* The calling thread's view: /proc/self is the main thread's, which
	 * lists no mapping once that thread has ended (pthread_exit). */
	int fd = open("/proc/thread-self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;
		scan_free(buf, cap);
		return err;
	}
	for (;;) {
		if (len + 4096 > cap) {
			size_t ncap = cap * 2;
			char *n = scan_alloc(s, ncap);
			if (n == NULL)
				break;
			memcpy(n, buf, len);
			scan_free(buf, cap);
			skip_range(s, (uintptr_t)buf, (uintptr_t)buf + cap);
			buf = n;
			cap = ncap;
		}
		ssize_t got = read(fd, buf + len, cap - len - 1);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		len += (size_t)got;
	}
	close(fd);
	buf[len] = '\0';

	size_t capmaps = 0;
	for (const char *p = buf; *p;) {
		const char *eol = strchr(p, '\n');
		if (eol == NULL)
			eol = p + strlen(p);
		struct mapping m = { 0 };
		m.start = hex(&p);
		if (*p == '-')
			p++;
		m.end = hex(&p);
		if (*p == ' ')
			p++;
		if (eol - p >= 4) {
			m.r = p[0] == 'r';
			m.w = p[1] == 'w';
			m.x = p[2] == 'x';
		}
		/* offset, dev, inode, then the path. */
		const char *q = p;
		int field = 0;
		while (q < eol && field < 4) {
			while (q < eol && *q != ' ')
				q++;
			while (q < eol && *q == ' ')
				q++;
			field++;
		}
		const char *path = q;
		size_t plen = (size_t)(eol - q);
		if (plen > 0 && path[0] == '/') {
			int dev = plen >= 5 && strncmp(path, "/dev/", 5) == 0 &&
			          !(plen == 9 && strncmp(path, "/dev/zero", 9) == 0);
			if (dev)
				m.r = 0;	/* never poke device mappings */
			m.file = !dev;
		}
		m.stack = plen == 7 && strncmp(path, "[stack]", 7) == 0;
		struct mapping *maps = grow_array(s, s->maps, &capmaps, sizeof *maps, s->nmaps + 1);
		if (maps != NULL) {
			s->maps = maps;
			s->maps[s->nmaps++] = m;
		}
		p = *eol ? eol + 1 : eol;
	}
	scan_free(buf, cap);
	skip_range(s, (uintptr_t)buf, (uintptr_t)buf + cap);
	return 0;
}

static const struct mapping *mapping_of(const struct scan *s, uintptr_t a)
{
	size_t lo = 0, hi = s->nmaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->maps[mid].end <= a)
			lo = mid + 1;
		else if (s->maps[mid].start > a)
			hi = mid;
		else
			return &s->maps[mid];
	}
	return NULL;
}

/* Reading memory that may vanish (another thread's munmap) ------------------ */

/* Copies len bytes at addr into out through the kernel, so an unmapped page
 * is an error instead of a crash. Returns the bytes copied. */
static size_t safe_read(const struct scan *s, void *out, uintptr_t addr, size_t len)
{
	struct iovec local = { out, len }, remote = { (void *)addr, len };
	ssize_t n = process_vm_readv(s->pid, &local, 1, &remote, 1, 0);
	return n < 0 ? 0 : (size_t)n;
}

/* Blocks ------------------------------------------------------------------- */

/* Sorts the blocks by address: a radix sort of (address, index) pairs on
 * three 16-bit digits of address >> 4 (blocks are 16-aligned; 48-bit
 * addresses), then one pass that moves the blocks. (qsort of the pairs
 * mallocs a buffer: the scan's own frees do not wait, see wait_scan.) */
struct key {
	uint64_t addr;
	uint64_t index;
};

static int by_addr(const void *x, const void *y)
{
	uint64_t a = ((const struct key *)x)->addr, b = ((const struct key *)y)->addr;
	return a < b ? -1 : a > b;
}

static int sort_blocks(struct scan *s)
{
	size_t n = s->n, bytes = n * sizeof(struct key);
	/* The table gives its blocks in address order (live.h), but for
	 * those in its side table: in order, they are left as they are, and
	 * the sort's arrays (56 bytes a block) never made. */
	size_t ordered = 1;
	while (ordered < n && s->b[ordered - 1].ptr < s->b[ordered].ptr)
		ordered++;
	if (ordered >= n)
		return 0;
	/* A few blocks: a plain sort costs less than three passes over a
	 * 256 KiB count table. */
	int radix = n >= 16384;
	struct key *a = scan_alloc(s, bytes + 1), *b = radix ? scan_alloc(s, bytes + 1) : NULL;
	uint32_t *count = radix ? scan_alloc(s, 65536 * sizeof *count) : NULL;
	struct asp_live_entry *sorted = scan_alloc(s, (n + 1) * sizeof *sorted);
	if (a == NULL || sorted == NULL || (radix && (b == NULL || count == NULL)))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		a[i] = (struct key){ s->b[i].ptr, i };
	if (!radix) {
		asp__sort(a, n, sizeof *a, by_addr);
		goto place;
	}
	for (int shift = 4; shift < 52; shift += 16) {
		memset(count, 0, 65536 * sizeof *count);
		for (size_t i = 0; i < n; i++)
			count[(a[i].addr >> shift) & 0xffff]++;
		uint32_t sum = 0;
		for (size_t d = 0; d < 65536; d++) {
			uint32_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[(a[i].addr >> shift) & 0xffff]++] = a[i];
		struct key *t = a;
		a = b;
		b = t;
	}
place:
	for (size_t i = 0; i < n; i++)
		sorted[i] = s->b[a[i].index];
	s->b = sorted;	/* (the table's are the caller's) */
	scan_free(a, bytes + 1);
	if (radix) {
		scan_free(b, bytes + 1);
		scan_free(count, 65536 * sizeof *count);
	}
	return 0;
}

/* The last index in [lo, hi) whose key is at most addr (keys[lo] is). */
static inline size_t last_at_most(const uintptr_t *keys, size_t lo, size_t hi, uintptr_t addr)
{
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (keys[mid] <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The bits set in x. (__builtin_popcountll is a call into libgcc unless
 * the build targets a CPU with POPCNT.) */
static inline unsigned bits_set(uint64_t x)
{
	x -= (x >> 1) & 0x5555555555555555ULL;
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
	return (unsigned)((x * 0x0101010101010101ULL) >> 56);
}

/* The same among the blocks (their starts ascend). */
static inline size_t last_block_at_most(const struct asp_live_entry *b, size_t lo, size_t hi,
                                        uintptr_t addr)
{
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (b[mid].ptr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static inline size_t page_slot(const struct scan *s, uintptr_t page)
{
	return (size_t)asp_hash(page) & (s->npages - 1);
}

static int index_blocks(struct scan *s)
{
	s->ncoarse = (s->n + ASP_FIND_STRIDE - 1) / ASP_FIND_STRIDE;
	s->coarse = scan_alloc(s, s->ncoarse * sizeof *s->coarse);
	if (s->coarse == NULL)
		return -ENOMEM;
	size_t distinct = 0;
	for (size_t i = 0; i < s->n; i++)
		distinct += i == 0 || s->b[i].ptr >> ASP_PAGE_SHIFT != s->b[i - 1].ptr >> ASP_PAGE_SHIFT;
	for (size_t j = 0; j < s->ncoarse; j++)
		s->coarse[j] = s->b[j * ASP_FIND_STRIDE].ptr;
	/* At most half full; without it (no memory) block_before searches. */
	s->npages = 16;
	while (s->npages < 2 * distinct)
		s->npages *= 2;
	s->pages = scan_alloc(s, s->npages * sizeof *s->pages);
	if (s->pages == NULL)
		return 0;
	struct start_page *e = NULL;
	int off_word = 0;	/* e has a block off ASP_START_GRAIN: no bits */
	for (size_t i = 0; i < s->n; i++) {
		uintptr_t page = s->b[i].ptr >> ASP_PAGE_SHIFT;
		if (e == NULL || e->key >> ASP_PAGE_SHIFT != page) {
			size_t k = page_slot(s, page);
			while (s->pages[k].key != 0)
				k = (k + 1) & (s->npages - 1);
			e = &s->pages[k];
			e->key = page << ASP_PAGE_SHIFT | ASP_PAGE_OFFSET(s->b[i].ptr);
			e->first = (uint32_t)i;
			off_word = 0;
		}
		e->last = (uint32_t)i;
		uintptr_t off = ASP_PAGE_OFFSET(s->b[i].ptr);
		if (off % ASP_START_GRAIN != 0 && !off_word) {
			off_word = 1;
			memset(e->bits, 0, sizeof e->bits);
		}
		if (!off_word)
			e->bits[off / ASP_START_GRAIN / 64] |= (uint64_t)1 << (off / ASP_START_GRAIN % 64);
	}
	return 0;
}

/* The last block starting at or before addr (>= the first block's start),
 * and where it starts: read from the page's entry when it tells, so that
 * the block itself is not read. */
static size_t block_before(const struct scan *s, uintptr_t addr, uintptr_t *start)
{
	size_t i;
	if (s->pages != NULL) {
		uintptr_t page = addr >> ASP_PAGE_SHIFT;
		for (size_t k = page_slot(s, page); s->pages[k].key != 0; k = (k + 1) & (s->npages - 1)) {
			const struct start_page *e = &s->pages[k];
			if (e->key >> ASP_PAGE_SHIFT != page)
				continue;
			uintptr_t off = ASP_PAGE_OFFSET(addr);
			if (off < ASP_PAGE_OFFSET(e->key)) {
				i = e->first - 1;	/* (the first block is not in it) */
				goto read;
			}
			if (e->first == e->last) {
				*start = page << ASP_PAGE_SHIFT | ASP_PAGE_OFFSET(e->key);
				return e->first;
			}
			if (e->bits[ASP_PAGE_OFFSET(e->key) / ASP_START_GRAIN / 64] == 0) {
				i = last_block_at_most(s->b, e->first, (size_t)e->last + 1, addr);
				goto read;
			}
			/* The first block is at or below addr: some bit is; the
			 * last of them is where the block starts. */
			size_t w = off / ASP_START_GRAIN / 64, n = 0, last = 0;
			uint64_t at = e->bits[w] & (~(uint64_t)0 >> (63 - off / ASP_START_GRAIN % 64));
			for (size_t j = 0; j < w; j++) {
				n += (size_t)bits_set(e->bits[j]);
				if (e->bits[j] != 0)
					last = j;
			}
			if (at != 0)
				last = w;
			uint64_t top = last == w ? at : e->bits[last];
			size_t grain = last * 64 + 63 - (size_t)__builtin_clzll(top);
			*start = page << ASP_PAGE_SHIFT | grain * ASP_START_GRAIN;
			return e->first + n + (size_t)bits_set(at) - 1;
		}
	}
	size_t lo = last_at_most(s->coarse, 0, s->ncoarse, addr) * ASP_FIND_STRIDE;
	size_t hi = lo + ASP_FIND_STRIDE < s->n ? lo + ASP_FIND_STRIDE : s->n;
	i = last_block_at_most(s->b, lo, hi, addr);
read:
	*start = s->b[i].ptr;
	return i;
}

static inline uint64_t block_size(const struct scan *s, size_t i)
{
	return s->size16[i] != SIZE16_BIG ? s->size16[i] : s->b[i].size;
}

static int readable_word(const struct scan *s, uintptr_t a)
{
	const struct mapping *m = mapping_of(s, a);
	return m != NULL && m->r && a + sizeof(uintptr_t) <= m->end;
}

/* A vtable: in a file mapping, with two function pointers into executable
 * file mappings among its first words (memcheck's test). */
static int is_vtable(const struct scan *s, uintptr_t p)
{
	const struct mapping *m = mapping_of(s, p);
	if (m == NULL || !m->file || !m->r)
		return 0;
	int fns = 0;
	for (uintptr_t a = p; a + sizeof(uintptr_t) <= m->end && a < p + 20 * sizeof(uintptr_t);
	     a += sizeof(uintptr_t)) {
		uintptr_t fn = *(const uintptr_t *)a;
		if (fn == 0)
			continue;
		const struct mapping *f = mapping_of(s, fn);
		if (f == NULL || !f->file || !f->x)
			return 0;
		if (++fns == 2)
			return 1;
	}
	return 0;
}

/* Whether block i (of 8 bytes or more) begins with a vtable's address: the
 * half of the multiple-inheritance heuristic that depends on the block
 * alone, worked out once. Every interior pointer to a block not yet
 * reachable asks (perl's arenas of scalars are reached by millions), and
 * the answer saves a read of the memory each one points to. */
static int block_first_vtable(const struct scan *s, size_t i)
{
	if ((s->mark[i] & MARK_VT) == VT_UNKNOWN << MARK_VT_SHIFT) {
		uintptr_t first = *(const uintptr_t *)s->b[i].ptr;
		int vt = (first & (sizeof(uintptr_t) - 1)) == 0 && first >= ASP_PAGE &&
		         is_vtable(s, first) ? VT_YES : VT_NO;
		s->mark[i] = (uint8_t)(s->mark[i] | vt << MARK_VT_SHIFT);
	}
	return (s->mark[i] & MARK_VT) == VT_YES << MARK_VT_SHIFT;
}

/* Which of memcheck's heuristics explains an interior pointer into block
 * i, if any. */
static int heuristic(const struct scan *s, uintptr_t ptr, size_t i)
{
	const uintptr_t w = sizeof(uintptr_t);
	const uintptr_t start = s->b[i].ptr;
	const uint64_t size = s->b[i].size;
	const uint64_t *data = (const uint64_t *)start;
	if (ptr == start + 3 * w && size >= 3 * w) {
		uint64_t capacity = data[1];
		if (3 * w + capacity + 1 == size && data[0] <= capacity)
			return HEUR_STDSTRING;
	}
	if (ptr == start + w && size >= w) {
		if (data[0] > 0 && size - w == data[0])
			return HEUR_LENGTH64;
		if (data[0] > 0 && (size - w) % data[0] == 0)
			return HEUR_NEWARRAY;
	}
	if ((ptr & (w - 1)) == 0 && size >= w && block_first_vtable(s, i) &&
	    readable_word(s, ptr)) {
		uintptr_t inner = *(const uintptr_t *)ptr;
		if ((inner & (w - 1)) == 0 && inner >= ASP_PAGE && is_vtable(s, inner))
			return HEUR_MULTIPLE_INHERITANCE;
	}
	return HEUR_NONE;
}

/* The place in the ring k places after the head. */
static inline size_t ring_at(const struct scan *s, size_t k)
{
	size_t at = s->head + k;
	return at <= s->n ? at : at - (s->n + 1);
}

static void push(struct scan *s, size_t i, uintptr_t start)
{
	if (!(s->mark[i] & MARK_PENDING)) {
		s->mark[i] |= MARK_PENDING;
		s->queue[ring_at(s, s->queued++)] = (uint32_t)i;
		s->last_queued = i;
		s->last_queued_start = start;
	}
}

/* The block queued k places after the head. */
static inline size_t queued_at(const struct scan *s, size_t k)
{
	return s->queue[ring_at(s, k)];
}

/* glibc's arena (in libc's data) points at chunk headers: the top chunk's
 * and free chunks'. A chunk header begins at usable_size - 8 into the block
 * before it, inside that block's requested range when the request filled
 * its usable size. Such a word, read from libc's data, is not a pointer
 * the program holds. */
static int allocator_metadata(const struct scan *s, uintptr_t ptr, uintptr_t start)
{
	if (!s->in_libc || ptr == start)
		return 0;
	size_t usable = asp__guard_owns((void *)start) ? asp__guard_size((void *)start)
	              : asp__next.malloc_usable_size((void *)start);
	return usable >= 8 && ptr - start == usable - 8;
}

static inline int state_of(const struct scan *s, size_t i)
{
	return s->mark[i] & MARK_STATE;
}

static inline void set_state(struct scan *s, size_t i, int state)
{
	s->mark[i] = (uint8_t)((s->mark[i] & ~MARK_STATE) | state);
}

/* One word seen while marking from the roots (clique < 0) or while
 * collecting the clique of leader `clique`: ptr, which points into block
 * at, which starts at start. */
static void visit(struct scan *s, uintptr_t ptr, size_t at, uintptr_t start, int prior_definite,
                  ptrdiff_t clique)
{
	if (allocator_metadata(s, ptr, start))
		return;
	int state = state_of(s, at);

	if (clique >= 0) {
		if (state == UNREACHED && at != (size_t)clique) {
			push(s, at, start);
			s->indirect[clique] += s->b[at].size + s->indirect[at];
			set_state(s, at, INDIRECT);
			s->clique[at] = (uint32_t)clique;
		}
		return;
	}

	if (state == REACHABLE) {
		if ((s->mark[at] & MARK_HEUR) && ptr == start)
			s->mark[at] &= (uint8_t)~MARK_HEUR;
		return;
	}
	int reach = ptr == start;
	if (!reach) {
		int h = heuristic(s, ptr, at);
		s->mark[at] = (uint8_t)((s->mark[at] & ~MARK_HEUR) | h << MARK_HEUR_SHIFT);
		reach = h != HEUR_NONE;
	}
	if (reach && prior_definite) {
		set_state(s, at, REACHABLE);
		push(s, at, start);
	} else if (state == UNREACHED) {
		set_state(s, at, POSSIBLE);
		push(s, at, start);
	}
}

/* Words of a range the program owns are looked up ASP_SCAN_BATCH at a
 * time, in three passes: as each word joins the batch, the start table's
 * entry it falls in is fetched; then the blocks the batch's words name are
 * found and their entries fetched; then each is checked and visited. A
 * heap of millions of blocks pays its cache misses side by side, not one
 * after another. A batch gathers words from many blocks (a tree's nodes
 * hold a few pointers each): it is looked up when full, or when the queue
 * of blocks to scan has run dry (flush_batch). */
static void flush_batch(struct scan *s, ptrdiff_t clique)
{
	size_t at[ASP_SCAN_BATCH], k = s->nbatch;
	uintptr_t start[ASP_SCAN_BATCH];
	s->nbatch = 0;
	for (size_t j = 0; j < k; j++) {
		at[j] = block_before(s, s->batch[j], &start[j]);
		__builtin_prefetch(&s->mark[at[j]]);
		__builtin_prefetch(&s->size16[at[j]]);
	}
	for (size_t j = 0; j < k; j++) {
		uintptr_t ptr = s->batch[j];
		if (ptr == start[j] || ptr - start[j] < block_size(s, at[j]))
			visit(s, ptr, at[j], start[j], s->batch_definite[j], clique);
	}
}

static void scan_words(struct scan *s, const uintptr_t *w, size_t n, int prior_definite,
                       ptrdiff_t clique)
{
	uintptr_t lo = s->b[0].ptr, hi = s->b[s->n - 1].ptr + s->b[s->n - 1].size + 1;
	for (size_t j = 0; j < n; j++) {
		if (w[j] < lo || w[j] >= hi)
			continue;
		if (s->pages != NULL)
			__builtin_prefetch(&s->pages[page_slot(s, w[j] >> ASP_PAGE_SHIFT)]);
		/* A block this word names, queued now, would be too near
		 * the head for process to fetch its memory ahead: fetched
		 * here, beside its entry. (A list: the one fetch there is.) */
		if (s->queued < ASP_AHEAD_BLOCK)
			__builtin_prefetch((const void *)w[j]);
		s->batch[s->nbatch] = w[j];
		s->batch_definite[s->nbatch] = (uint8_t)prior_definite;
		if (++s->nbatch == ASP_SCAN_BATCH)
			flush_batch(s, clique);
	}
}

/* Calls fn on each run of [start, end) whose pages are resident: a page
 * never touched holds zeros and no pointer, and a huge sparse block (an
 * over-committed 4 TiB one, say) must not be read page by page. Small
 * ranges are passed whole. */
#define ASP_WINDOW_PAGES 8192

static void resident_runs(struct scan *s, uintptr_t start, uintptr_t end,
                          void (*fn)(struct scan *, uintptr_t, uintptr_t, void *), void *arg)
{
	if (end - start <= 16 * ASP_PAGE) {
		fn(s, start, end, arg);
		return;
	}
	unsigned char vec[ASP_WINDOW_PAGES];
	for (uintptr_t w = ASP_PAGE_DOWN(start); w < end; w += ASP_WINDOW_PAGES * ASP_PAGE) {
		size_t pages = ASP_WINDOW_PAGES;
		if ((end - w + (ASP_PAGE - 1)) / ASP_PAGE < pages)
			pages = (end - w + (ASP_PAGE - 1)) / ASP_PAGE;
		if (mincore((void *)w, pages * ASP_PAGE, vec) != 0) {
			/* Unmapped in part (the mappings changed since they
			 * were read): ask page by page. */
			for (size_t p = 0; p < pages; p++)
				if (mincore((void *)(w + p * ASP_PAGE), ASP_PAGE, &vec[p]) != 0)
					vec[p] = 0;
		}
		for (size_t p = 0; p < pages;) {
			if (!(vec[p] & 1)) {
				p++;
				continue;
			}
			size_t q = p;
			while (q < pages && (vec[q] & 1))
				q++;
			uintptr_t a = w + p * ASP_PAGE, b = w + q * ASP_PAGE;
			fn(s, a < start ? start : a, b > end ? end : b, arg);
			p = q;
		}
	}
}

struct block_scan {
	int prior_definite;
	ptrdiff_t clique;
};

static void scan_block_run(struct scan *s, uintptr_t start, uintptr_t end, void *arg)
{
	const struct block_scan *bs = arg;
	start = (start + 7) & ~(uintptr_t)7;
	end &= ~(uintptr_t)7;
	if (end > start)
		scan_words(s, (const uintptr_t *)start, (end - start) / 8, bs->prior_definite,
		           bs->clique);
}

/* The blocks are scanned in the order they were queued (breadth first):
 * the ones waiting are known, and fetched ahead of their turn, the entry
 * ASP_AHEAD_ENTRY blocks ahead, the memory it describes ASP_AHEAD_BLOCK
 * ahead. A list, each block found in the one before, has no blocks
 * waiting: the word naming the next one fetches its memory (scan_words)
 * while its entry is looked up. The order changes nothing found: a block
 * is scanned again whenever its state rises (visit). */
static void process(struct scan *s, ptrdiff_t clique)
{
	for (;;) {
		if (s->queued == 0) {
			if (s->nbatch == 0)
				return;
			flush_batch(s, clique);
			continue;
		}
		if (s->queued > ASP_AHEAD_ENTRY) {
			size_t ahead = queued_at(s, ASP_AHEAD_ENTRY);
			__builtin_prefetch(&s->b[ahead].ptr);
			__builtin_prefetch(&s->mark[ahead]);
			__builtin_prefetch(&s->size16[ahead]);
		}
		if (s->queued > ASP_AHEAD_BLOCK)
			__builtin_prefetch((const void *)s->b[queued_at(s, ASP_AHEAD_BLOCK)].ptr);
		size_t i = queued_at(s, 0);
		s->head = s->head == s->n ? 0 : s->head + 1;
		s->queued--;
		uintptr_t start = i == s->last_queued ? s->last_queued_start : s->b[i].ptr;
		s->mark[i] &= (uint8_t)~MARK_PENDING;
		struct block_scan bs = { state_of(s, i) != POSSIBLE, clique };
		resident_runs(s, start, start + block_size(s, i), scan_block_run, &bs);
	}
}

/* Scans [start, end) of a root mapping through a bounce buffer. */
static void scan_root_run(struct scan *s, uintptr_t start, uintptr_t end, void *arg);

static void scan_root(struct scan *s, uintptr_t start, uintptr_t end)
{
	resident_runs(s, start, end, scan_root_run, NULL);
}

/* The bounce buffer's pages are touched as the reads grow, each a fault
 * (some 12 us on a virtual machine, the cost of a dozen reads): the
 * reads go by 1 page while the roots read so far are few, and double with
 * them up to 16. */
static size_t root_chunk(const struct scan *s)
{
	size_t pages = 1;
	while (pages < 16 && s->root_pages >= 12 * pages * pages)
		pages *= 2;
	return pages * ASP_PAGE;
}

static void scan_root_run(struct scan *s, uintptr_t start, uintptr_t end, void *arg)
{
	(void)arg;
	static uintptr_t buf[16 * ASP_PAGE / sizeof(uintptr_t)];
	start = (start + 7) & ~(uintptr_t)7;
	end &= ~(uintptr_t)7;
	while (start < end) {
		size_t chunk = root_chunk(s);
		size_t len = end - start < chunk ? end - start : chunk;
		size_t got = safe_read(s, buf, start, len);
		s->root_pages += (got + (ASP_PAGE - 1)) / ASP_PAGE;
		if (got == 0) {
			start = ASP_PAGE_DOWN(start + ASP_PAGE);	/* skip the page */
			continue;
		}
		/* The batch's words are looked up with in_libc of the range
		 * they came from. */
		int in_libc = s->glibc && start >= s->libc_data.start && start < s->libc_data.end;
		if (in_libc)
			flush_batch(s, -1);
		s->in_libc = in_libc;
		scan_words(s, buf, got / 8, 1, -1);
		if (in_libc)
			flush_batch(s, -1);
		s->in_libc = 0;
		start += got;
	}
}

/* What is not a root ----------------------------------------------------------- */

static void skip_arena(void *arg, const void *start, size_t len)
{
	skip_range(arg, (uintptr_t)start, (uintptr_t)start + len);
}

/* The shim's own writable segments. */
static int skip_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	Dl_info me;
	if (!dladdr((void *)skip_self_cb, &me) || (uintptr_t)me.dli_fbase != info->dlpi_addr)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W)) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;
			skip_range(arg, ASP_PAGE_DOWN(a), ASP_PAGE_UP(a + ph->p_memsz));
		}
	}
	return 1;
}

/* The writable segments of the object that holds fn. */
static void writable_of(const void *fn, struct range *out)
{
	Dl_info info;
	const ElfW(Ehdr) *eh;
	struct link_map *lm = NULL;
	out->start = out->end = 0;
	if (!dladdr1(fn, &info, (void **)&lm, RTLD_DL_LINKMAP) || lm == NULL)
		return;
	eh = info.dli_fbase;
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)((const char *)eh + eh->e_phoff);
	for (int i = 0; i < eh->e_phnum; i++) {
		if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_W))
			continue;
		uintptr_t a = lm->l_addr + ph[i].p_vaddr;
		uintptr_t e = ASP_PAGE_UP(a + ph[i].p_memsz);
		a = ASP_PAGE_DOWN(a);
		if (out->end == 0 || a < out->start)
			out->start = a;
		if (e > out->end)
			out->end = e;
	}
}

/* glibc's heap regions: the brk heap, the heaps of the other arenas (64 MiB
 * aligned, a heap_info header first) and the mapping of each large block. */
#define ASP_HEAP_MAX (64ul << 20)

struct glibc_heap_info {
	void *ar_ptr;
	struct glibc_heap_info *prev;
	size_t size, mprotect_size, pagesize;
};

static int by_range(const void *a, const void *b);

static void skip_glibc_heaps(struct scan *s)
{
	size_t from = s->nskip;
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct mapping *m = &s->maps[i];
		if (!m->r || !m->w || m->file)
			continue;
		/* The brk heap is the mapping that follows the program's bss
		 * and holds blocks; [heap] is not always labelled after exec. */
		for (uintptr_t h = (m->start + ASP_HEAP_MAX - 1) & ~(ASP_HEAP_MAX - 1);
		     h + sizeof(struct glibc_heap_info) <= m->end; h += ASP_HEAP_MAX) {
			struct glibc_heap_info hi = { 0 };
			if (safe_read(s, &hi, h, sizeof hi) != sizeof hi)
				continue;
			uintptr_t ar = (uintptr_t)hi.ar_ptr;
			int first = hi.prev == NULL && ar > h && ar < h + 256;
			int later = hi.prev != NULL && ((uintptr_t)hi.prev & (ASP_HEAP_MAX - 1)) == 0;
			if ((first || later) && hi.size > 0 && hi.size <= ASP_HEAP_MAX &&
			    hi.mprotect_size >= hi.size && hi.mprotect_size <= ASP_HEAP_MAX)
				skip_range(s, h, h + hi.mprotect_size);
		}
	}
	/* The brk heap: sbrk(0) ends it; it begins at the mapping holding the
	 * lowest block below the break. */
	uintptr_t brk_end = (uintptr_t)sbrk(0);
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct mapping *m = &s->maps[i];
		if (m->end == ASP_PAGE_UP(brk_end) && !m->file && m->w)
			skip_range(s, m->start, m->end);
	}
	/* Large blocks live in their own mappings (chunk flag IS_MMAPPED).
	 * A live block's header is mapped with it and frees wait for the
	 * scan, so it is read directly; but only outside the heaps found
	 * above, where every other block lies (reading every header costs a
	 * cache and TLB miss per block: a tenth of the scan). Blocks and
	 * heaps are walked in address order. */
	size_t nheaps = s->nskip - from;
	struct range *heaps = scan_alloc(s, (nheaps + 1) * sizeof *heaps);
	if (heaps == NULL)
		nheaps = 0;
	else
		memcpy(heaps, s->skip + from, nheaps * sizeof *heaps);
	asp__sort(heaps, nheaps, sizeof *heaps, by_range);
	size_t k = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct asp_live_entry *b = &s->b[i];
		while (k < nheaps && heaps[k].end <= b->ptr)
			k++;
		if ((k < nheaps && b->ptr >= heaps[k].start) || asp__guard_owns((void *)b->ptr))
			continue;	/* (a guarded block has no header: guard.h) */
		const uint64_t *hdr = (const uint64_t *)(b->ptr - 16);
		if (!(hdr[1] & 2))
			continue;
		uintptr_t chunk = b->ptr - 16;
		skip_range(s, chunk - hdr[0], chunk + (hdr[1] & ~(uint64_t)7));
	}
	scan_free(heaps, (nheaps + 1) * sizeof *heaps);
}

/* Another allocator: leave out every mapping that holds a block. */
static void skip_block_mappings(struct scan *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct mapping *m = mapping_of(s, s->b[i].ptr);
		if (m != NULL)
			skip_range(s, m->start, m->end);
	}
}

/* Threads ---------------------------------------------------------------------- */

/* The stack pointer of a live thread, as world.c found it (0: unknown). */
static uintptr_t live_sp(pid_t tid)
{
	const struct asp_world_thread *w = asp__world_thread(tid);
	return w != NULL ? w->sp : 0;
}

/* Whether the main thread has ended while others run on (pthread_exit):
 * the world stop found it gone. */
static int main_gone(void)
{
	const struct asp_world_thread *w = asp__world_thread(getpid());
	return w != NULL && asp_atomic_load_acquire(&w->state) == ASP_WORLD_GONE;
}

/* Dead stack: below the first frame of exited threads, below the stack
 * pointer of live ones, and on the main stack as described above. */
static void skip_dead_stacks(struct scan *s, uintptr_t my_sp)
{
	struct asp_thread_stack *t = scan_alloc(s, ASP_MAX_THREAD_SUMMARIES * sizeof *t);
	if (t == NULL)
		return;
	size_t n = asp__threads_stacks(t, ASP_MAX_THREAD_SUMMARIES);
	asp__world_stop();
	pid_t me = asp_gettid();
	for (size_t i = 0; i < n; i++) {
		uintptr_t below;
		if (t[i].live && t[i].tid == me)
			below = my_sp;
		else if (t[i].live)
			below = live_sp(t[i].tid);
		else
			below = t[i].start_sp;
		const struct mapping *m = below ? mapping_of(s, below) : NULL;
		if (m != NULL && !m->stack)
			skip_range(s, m->start, below);
	}
	/* The main thread's stack. */
	uintptr_t main_sp = g_main_returned && g_main_frame ? g_main_frame : 0;
	if (main_sp == 0 && me == getpid())
		main_sp = g_exit_sp ? g_exit_sp : my_sp;
	if (main_sp == g_exit_sp && g_exit_sp != 0 && g_handler_sp != 0 && g_handler_sp < main_sp)
		main_sp = g_handler_sp;
	if (main_sp == 0)
		main_sp = live_sp(getpid());
	/* Ended by pthread_exit: main's frame and all below it are gone. */
	if (main_sp == 0 && main_gone())
		main_sp = g_main_frame;
	for (size_t i = 0; i < s->nmaps; i++)
		if (s->maps[i].stack && main_sp > s->maps[i].start && main_sp <= s->maps[i].end)
			skip_range(s, s->maps[i].start, main_sp);
	scan_free(t, ASP_MAX_THREAD_SUMMARIES * sizeof *t);
}

static int by_range(const void *a, const void *b)
{
	uintptr_t x = ((const struct range *)a)->start, y = ((const struct range *)b)->start;
	return x < y ? -1 : x > y;
}

/* Scans every root: rw mappings less the skipped ranges, then registers. */
static void scan_roots(struct scan *s)
{
	asp__sort(s->skip, s->nskip, sizeof *s->skip, by_range);
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct mapping *m = &s->maps[i];
		if (!m->r || !m->w)
			continue;
		uintptr_t at = m->start;
		for (size_t k = 0; k < s->nskip && at < m->end; k++) {
			const struct range *r = &s->skip[k];
			if (r->end <= at || r->start >= m->end)
				continue;
			if (r->start > at)
				scan_root(s, at, r->start);
			if (r->end > at)
				at = r->end;
		}
		if (at < m->end)
			scan_root(s, at, m->end);
	}
	size_t n;
	const struct asp_world_thread *w = asp__world_threads(&n);
	for (size_t i = 0; i < n; i++)
		if (asp_atomic_load_acquire(&w[i].state) == ASP_WORLD_PARKED)
			scan_words(s, w[i].gregs, NGREG, 1, -1);
}

/* Loss records ---------------------------------------------------------------- */

static const int kind_of_state[4] = {
	[REACHABLE] = ASP_LEAK_REACHABLE, [POSSIBLE] = ASP_LEAK_POSSIBLE,
	[INDIRECT] = ASP_LEAK_INDIRECT, [UNREACHED] = ASP_LEAK_DEFINITE,
};

static const int state_of_kind[ASP_LEAK_RECORD_KINDS] = {
	[ASP_LEAK_REACHABLE] = REACHABLE, [ASP_LEAK_POSSIBLE] = POSSIBLE,
	[ASP_LEAK_INDIRECT] = INDIRECT, [ASP_LEAK_DEFINITE] = UNREACHED,
};

static int by_loss(const void *va, const void *vb)
{
	const struct asp_loss_record *a = va, *b = vb;
	uint64_t ta = a->bytes + a->indirect_bytes, tb = b->bytes + b->indirect_bytes;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	int sa = state_of_kind[a->kind], sb = state_of_kind[b->kind];
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->blocks != b->blocks)
		return a->blocks < b->blocks ? -1 : 1;
	return a->site < b->site ? -1 : a->site > b->site;
}

/* Groups blocks by (kind, site) with an open-addressing table. */
static int make_records(struct scan *s, struct asp_leak_result *out)
{
	size_t slots = 1024;
	while (slots < s->n * 2)
		slots *= 2;
	uint32_t *table = scan_alloc(s, slots * sizeof *table);	/* record index + 1 */
	struct asp_loss_record *rec = scan_alloc(s, s->n * sizeof *rec);
	uint32_t *recno = scan_alloc(s, s->n * sizeof *recno);	/* block -> record */
	if (table == NULL || rec == NULL || recno == NULL)
		return -ENOMEM;
	size_t nrec = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct asp_live_entry *b = &s->b[i];
		int state = state_of(s, i), heur = (s->mark[i] & MARK_HEUR) >> MARK_HEUR_SHIFT;
		int kind = kind_of_state[state];
		uint64_t h = asp_hash(b->site) ^ (uint64_t)kind ^
		             ((uint64_t)b->fn << 8);
		size_t j = (size_t)(h >> 20) & (slots - 1);
		for (; table[j] != 0; j = (j + 1) & (slots - 1)) {
			struct asp_loss_record *r = &rec[table[j] - 1];
			if (r->site == b->site && (int)r->kind == kind && r->fn == b->fn)
				break;
		}
		if (table[j] == 0) {
			rec[nrec] = (struct asp_loss_record){ .kind = (enum asp_leak_kind)kind,
			                                      .fn = (unsigned)b->fn, .site = b->site };
			table[j] = (uint32_t)++nrec;
		}
		recno[i] = table[j] - 1;
		struct asp_loss_record *r = &rec[table[j] - 1];
		r->bytes += b->size;
		r->blocks++;
		if (state == UNREACHED)
			r->indirect_bytes += s->indirect[i];
		if (state == REACHABLE && heur != HEUR_NONE) {
			s->heur_bytes[heur] += b->size;
			s->heur_blocks[heur]++;
		}
	}
	/* Each indirectly lost block also counts in its leader's record: the
	 * leader its clique's leader was taken by, and so on, to one still
	 * unreached. Leaders are taken only by later ones, so the links end;
	 * each walk points the links it passed at the end (a lost list whose
	 * every node led a clique before the next took it would otherwise
	 * cost a walk the length of the list for each of its nodes). */
	for (size_t i = 0; i < s->n; i++) {
		if (state_of(s, i) != INDIRECT)
			continue;
		size_t leader = s->clique[i];
		for (size_t hops = 0; state_of(s, leader) == INDIRECT && hops < s->n; hops++)
			leader = s->clique[leader];
		for (size_t j = i, next; state_of(s, j) == INDIRECT && s->clique[j] != leader;
		     j = next) {
			next = s->clique[j];
			s->clique[j] = (uint32_t)leader;
		}
		if (state_of(s, leader) == UNREACHED)
			rec[recno[leader]].indirect_blocks++;
	}
	scan_free(recno, s->n * sizeof *recno);
	scan_free(table, slots * sizeof *table);
	asp__sort(rec, nrec, sizeof *rec, by_loss);
	out->records = rec;
	out->nrecords = nrec;
	return 0;
}

int asp__fn_frames(unsigned fn, const char *out[3])
{
	static const char *const frames[ASP_FN_COUNT][3] = {
#define ASP_FN_FRAMES(id, name, role, family, sym, a0, a1) [ASP_FN_##id] = { a0, a1, #sym },
		ASP_FNS(ASP_FN_FRAMES)
#undef ASP_FN_FRAMES
	};
	int n = 0;
	if (fn >= ASP_FN_COUNT) {
		out[n++] = "malloc";
		return n;
	}
	for (int k = 0; k < 3; k++)
		if (frames[fn][k][0] != '\0')
			out[n++] = frames[fn][k];
	return n;
}

size_t asp__site_frames(uintptr_t site, const uintptr_t **out, uintptr_t *one)
{
	/* With ALLOCSPY_SAMPLE, only sampled blocks have a stack id. */
	if (asp__sample_mean != 0 && asp__site_sampled(site))
		return asp__stack_frames(asp__site_plain(site), out);
	if (asp__opt.backtrace > 1 && asp__sample_mean == 0)
		return asp__stack_frames(site, out);
	*one = site;
	*out = one;
	return site != 0;
}

/* The scan ----------------------------------------------------------------- */

int asp__leak_check(const struct asp_live_entry *e, size_t n, struct asp_leak_result *out)
{
	struct scan s;
	memset(&s, 0, sizeof s);
	memset(out, 0, sizeof *out);
	s.pid = asp_gettid();	/* alive, unlike the main thread after pthread_exit */
	uintptr_t my_sp = (uintptr_t)__builtin_frame_address(0);

	s.n = n;
	s.b = e;
	if (s.n == 0)
		return 0;
	int err = sort_blocks(&s);
	if (err == 0)
		err = index_blocks(&s);
	if (err != 0)
		return err;
	/* (after the sort, whose peak they would add to) */
	s.queue = scan_alloc(&s, (s.n + 1) * sizeof *s.queue);
	s.mark = scan_alloc(&s, s.n);
	s.size16 = scan_alloc(&s, s.n * sizeof *s.size16);
	s.indirect = scan_alloc(&s, s.n * sizeof *s.indirect);
	s.clique = scan_alloc(&s, s.n * sizeof *s.clique);
	if (s.queue == NULL || s.mark == NULL || s.size16 == NULL || s.indirect == NULL ||
	    s.clique == NULL)
		return -ENOMEM;
	for (size_t i = 0; i < s.n; i++) {
		s.mark[i] = UNREACHED;
		s.size16[i] = s.b[i].size < SIZE16_BIG ? (uint16_t)s.b[i].size : SIZE16_BIG;
	}

	err = read_maps(&s);
	if (err != 0)
		return err;
	Dl_info info;
	s.glibc = dladdr((void *)asp__next.malloc, &info) && info.dli_fname &&
	          strstr(info.dli_fname, "/libc.so") != NULL;
	if (s.glibc)
		writable_of((void *)asp__next.malloc, &s.libc_data);
	asp__arena_ranges(skip_arena, &s);
	asp__loader_list(skip_self_cb, &s);
	if (s.glibc)
		skip_glibc_heaps(&s);
	else
		skip_block_mappings(&s);
	skip_dead_stacks(&s, my_sp);

	scan_roots(&s);
	/* What the loader allocated for the shim's own libraries lives in the
	 * bootstrap arena, inside the shim's skipped data: the loader's list of
	 * objects runs through it, so it is a root. */
	scan_root(&s, (uintptr_t)asp__boot, (uintptr_t)asp__boot + asp__boot_used());
	process(&s, -1);
	for (size_t i = 0; i < s.n; i++) {
		if (state_of(&s, i) != UNREACHED)
			continue;
		push(&s, i, s.b[i].ptr);
		process(&s, (ptrdiff_t)i);
	}

	err = make_records(&s, out);
	if (err != 0)
		return err;
	asp__suppress_apply(out);
	for (size_t i = 0; i < out->nrecords; i++) {
		struct asp_loss_record *r = &out->records[i];
		if (r->suppressed) {
			out->suppressed_bytes += r->bytes;
			out->suppressed_blocks += r->blocks;
		} else {
			out->bytes[r->kind] += r->bytes;
			out->blocks[r->kind] += r->blocks;
		}
	}
	for (int h = 1; h < HEUR_COUNT; h++) {
		out->heur_bytes[h - 1] = s.heur_bytes[h];
		out->heur_blocks[h - 1] = s.heur_blocks[h];
	}
	return 0;
}
