/* liveview.c - the live view for `allocspy top`: the figures of the heap
 * and its largest sites now, in a page shared with whoever reads it.
 *
 * The ticker writes it (process.c): a process of the shim's that shares
 * the program's memory and runs whether or not the program allocates, so
 * the view keeps up with a program that only frees, or waits. It has no
 * TLS of its own (its thread pointer is its creator's): everything here makes its system
 * calls raw, never touches errno, takes no lock and allocates nothing. It
 * reads what the threads keep for themselves as they run, as a reader of
 * the figures would (asp__threads_sum_nolock, account.h's sites in use):
 * a view a second old at most, and never waited for.
 *
 * The file is made a second after start-up, by the ticker, so a short
 * process leaves no trace, and removed at the exit report. Its life, in
 * g_state: none, being made (the exit report waits for that), open, being
 * written (the exit report waits for that too), ended. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <time.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "account.h"
#include "leak.h"
#include "livefmt.h"
#include "liveview.h"
#include "options.h"
#include "process.h"
#include "sitemap.h"
#include "thread.h"

enum { LV_NONE, LV_MAKING, LV_OPEN, LV_WRITING, LV_ENDED };

static int g_state;
static struct asp_live_view *g_view;
static uint64_t g_ino;		/* the file's, as made */
static char g_path[64];
static uint64_t g_start_ns, g_last_ns;

#define LV_EVERY_NS 1000000000ull

static uint64_t raw_now_ns(void)
{
	struct timespec ts = { 0, 0 };
	asp__raw_syscall(SYS_clock_gettime, CLOCK_MONOTONIC, (long)&ts, 0, 0, 0, 0);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void u64_str(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n > 0)
		*out++ = tmp[--n];
	*out = '\0';
}

int asp__liveview_wanted(void)
{
	return asp__opt.live && !asp__opt.secure;
}

void asp__liveview_init(void)
{
	if (!asp__liveview_wanted())
		return;
	static const char dir[] = ASP_LIVE_DIR "/" ASP_LIVE_PREFIX;
	memcpy(g_path, dir, sizeof dir);
	u64_str(g_path + sizeof dir - 1, (uint64_t)getpid());
	/* The pid's previous program (it exec'd this one) may have left its
	 * view: it is this process's to remove. */
	int saved = errno;
	unlink(g_path);
	errno = saved;
	g_start_ns = g_last_ns = asp_now_ns(CLOCK_MONOTONIC);
}

int asp__liveview_mapping(uintptr_t *start, size_t *len)
{
	struct asp_live_view *v = asp_atomic_load_acquire(&g_view);
	if (v == NULL)
		return 0;
	*start = (uintptr_t)v;
	*len = ASP_LIVE_BYTES;
	return 1;
}

/* The file, made and mapped by the ticker: never over a file that is
 * there (a link, another user's), readable by its user only. */
static struct asp_live_view *make_view(void)
{
	long fd = asp__raw_syscall(SYS_openat, AT_FDCWD, (long)g_path,
	               O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600, 0, 0);
	if (fd < 0)
		return NULL;
	long p = -1;
	struct stat st;
	memset(&st, 0, sizeof st);
	if (asp__raw_syscall(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0)
		g_ino = (uint64_t)st.st_ino;
	if (asp__raw_syscall(SYS_ftruncate, fd, ASP_LIVE_BYTES, 0, 0, 0, 0) == 0)
		p = asp__raw_syscall(SYS_mmap, 0, ASP_LIVE_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	asp__raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if ((p < 0 && p > -4096) || p == 0) {
		asp__raw_syscall(SYS_unlink, (long)g_path, 0, 0, 0, 0, 0);
		return NULL;
	}
	struct asp_live_view *v = (struct asp_live_view *)p;
	memcpy(v->magic, ASP_LIVE_MAGIC, sizeof ASP_LIVE_MAGIC);
	v->version = ASP_LIVE_VERSION;
	v->size = sizeof *v;
	v->pid = (int32_t)asp__process_pid();
	v->start_ns = g_start_ns;
	v->interval_ms = 1000;
	return v;
}

/* The largest sites, by bytes in use, into v->sites. Each site's figure is
 * the sum of every thread's entry for it: the threads' entries are read a
 * chunk of indexes at a time, all threads' chunk before the next. */
struct best {
	int64_t bytes, blocks;
	uint32_t index;
};

static void sites(struct asp_live_view *v)
{
	struct best best[ASP_LIVE_SITES];
	uint32_t nbest = 0, in_use = 0;
	uint32_t n = asp_atomic_load_acquire(&asp__site_count);
	for (uint32_t c = 0; n > 0 && c <= ((n - 1) >> ASP_SITE_USE_CHUNK_BITS); c++) {
		int64_t bytes[ASP_SITE_USE_CHUNK], blocks[ASP_SITE_USE_CHUNK];
		int any = 0;
		memset(bytes, 0, sizeof bytes);
		memset(blocks, 0, sizeof blocks);
		for (const struct asp_thread *x = asp__threads_list(); x != NULL; x = x->next) {
			struct asp_site_use **dir = asp_atomic_load_acquire(&x->site_use);
			const struct asp_site_use *chunk = dir != NULL ? asp_atomic_load_acquire(&dir[c]) : NULL;
			if (chunk == NULL)
				continue;
			any = 1;
			for (uint32_t k = 0; k < ASP_SITE_USE_CHUNK; k++) {
				bytes[k] += asp_atomic_load_relaxed(&chunk[k].bytes);
				blocks[k] += asp_atomic_load_relaxed(&chunk[k].blocks);
			}
		}
		for (uint32_t k = 0; any && k < ASP_SITE_USE_CHUNK; k++) {
			if (blocks[k] <= 0 && bytes[k] <= 0)
				continue;
			in_use++;
			if (nbest == ASP_LIVE_SITES && bytes[k] <= best[nbest - 1].bytes)
				continue;
			uint32_t at = nbest < ASP_LIVE_SITES ? nbest++ : nbest - 1;
			while (at > 0 && best[at - 1].bytes < bytes[k]) {
				best[at] = best[at - 1];
				at--;
			}
			best[at] = (struct best){ bytes[k], blocks[k], (c << ASP_SITE_USE_CHUNK_BITS) | k };
		}
	}
	for (uint32_t i = 0; i < nbest; i++) {
		struct asp_live_site *s = &v->sites[i];
		const uintptr_t *pcs = NULL;
		uintptr_t one = 0;
		size_t nf = asp__site_frames(asp__site_of(best[i].index), &pcs, &one);
		s->bytes = best[i].bytes;
		s->blocks = best[i].blocks;
		s->nframes = nf < ASP_LIVE_FRAMES ? (uint32_t)nf : ASP_LIVE_FRAMES;
		for (uint32_t k = 0; k < ASP_LIVE_FRAMES; k++)
			s->frames[k] = k < s->nframes ? pcs[k] : 0;
	}
	v->nsites = nbest;
	v->sites_in_use = in_use;
}

static void update(struct asp_live_view *v, uint64_t now)
{
	struct asp_counts c;
	struct asp_totals tot;
	int tracked = asp__opt.mode == ASP_MODE_TRACK;
	uint32_t seq = v->seq;
	asp_atomic_store_relaxed(&v->seq, seq + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	v->t_ns = now;
	v->updates++;
	v->flags = (tracked ? ASP_LIVE_TRACKED : 0) | (asp__opt.backtrace > 1 ? ASP_LIVE_STACKS : 0);
	if (asp__threads_sum_nolock(&c) == 0) {
		asp__totals(&c, &tot);
		v->allocs = tot.allocs;
		v->frees = tot.frees;
		v->bytes_allocated = tot.bytes_allocated;
	}
	v->in_use_bytes = v->in_use_blocks = v->peak_bytes = -1;
	v->nsites = v->sites_in_use = 0;
	if (tracked) {
		/* The published figures and what each thread has not published. */
		int64_t bytes, blocks;
		asp__in_use_read(&bytes, &blocks);
		int64_t peak = asp_atomic_load_relaxed(&asp__figures.peak);
		v->in_use_bytes = bytes > 0 ? bytes : 0;
		v->in_use_blocks = blocks > 0 ? blocks : 0;
		v->peak_bytes = peak > v->in_use_bytes ? peak : v->in_use_bytes;
		sites(v);
	}
	asp_atomic_store_release(&v->seq, seq + 2);
}

void asp__liveview_tick(void)
{
	uint64_t now = raw_now_ns();
	if (now - asp_atomic_load_relaxed(&g_last_ns) < LV_EVERY_NS - LV_EVERY_NS / 50)
		return;
	int s = LV_NONE;
	if (__atomic_compare_exchange_n(&g_state, &s, LV_MAKING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		struct asp_live_view *v = make_view();
		asp_atomic_store_release(&g_view, v);
		s = LV_MAKING;
		if (!__atomic_compare_exchange_n(&g_state, &s, v != NULL ? LV_OPEN : LV_ENDED, 0,
		                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE) && v != NULL) {
			/* The exit report gave up waiting, and ended it. */
			asp__raw_syscall(SYS_unlink, (long)g_path, 0, 0, 0, 0, 0);
			return;
		}
		s = v != NULL ? LV_OPEN : LV_ENDED;
	}
	if (s != LV_OPEN ||
	    !__atomic_compare_exchange_n(&g_state, &s, LV_WRITING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	update(g_view, now);
	asp_atomic_store_relaxed(&g_last_ns, now);
	asp_atomic_store_release(&g_state, LV_OPEN);
}

void asp__liveview_gone(int exec)
{
	int s = LV_OPEN;
	if (!__atomic_compare_exchange_n(&g_state, &s, LV_ENDED, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	/* After an exec, a traced program removed this file at its start
	 * (and makes its own, another file, a second later); an untraced one
	 * left it, and it goes. */
	struct stat st;
	memset(&st, 0, sizeof st);
	if (exec && (asp__raw_syscall(SYS_stat, (long)g_path, (long)&st, 0, 0, 0, 0) != 0 ||
	             (uint64_t)st.st_ino != g_ino))
		return;
	asp__raw_syscall(SYS_unlink, (long)g_path, 0, 0, 0, 0, 0);
}

void asp__liveview_end(void)
{
	/* The ticker is a moment from done, unless it was killed: a second
	 * at most, then the view is ended as it is. */
	int s;
	for (int waits = 0;; waits++) {
		s = asp_atomic_load_acquire(&g_state);
		if ((s == LV_MAKING || s == LV_WRITING) && waits < 1000) {
			struct timespec ms = { 0, 1000000 };
			nanosleep(&ms, NULL);
			continue;
		}
		if (__atomic_compare_exchange_n(&g_state, &s, LV_ENDED, 0, __ATOMIC_ACQ_REL,
		                                __ATOMIC_ACQUIRE))
			break;
	}
	if (s == LV_MAKING) {
		/* Killed while it made the file: whether it is there is unknown. */
		int saved = errno;
		unlink(g_path);
		errno = saved;
		return;
	}
	if (s != LV_OPEN && s != LV_WRITING)
		return;
	struct asp_live_view *v = g_view;
	uint32_t seq = v->seq;
	asp_atomic_store_relaxed(&v->seq, seq + 1);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	v->flags |= ASP_LIVE_ENDED;
	asp_atomic_store_release(&v->seq, seq + 2);
	int saved = errno;
	unlink(g_path);
	errno = saved;
}

void asp__liveview_atfork_child(void)
{
	/* The parent's ticker is not here: whatever it was doing stops. */
	struct asp_live_view *v = g_view;
	g_view = NULL;
	if (v != NULL) {
		int saved = errno;
		munmap(v, ASP_LIVE_BYTES);
		errno = saved;
	}
	g_state = LV_NONE;
	if (asp__liveview_wanted()) {
		u64_str(g_path + strlen(ASP_LIVE_DIR "/" ASP_LIVE_PREFIX), (uint64_t)getpid());
		g_start_ns = g_last_ns = asp_now_ns(CLOCK_MONOTONIC);
	}
}
