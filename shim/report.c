/* report.c - what the shim leaves: valgrind's HEAP SUMMARY and LEAK SUMMARY
 * on the shim's private stderr (or ALLOCSPY_LOG_FILE), and the JSON dump, at
 * exit, on a fatal signal, and every ALLOCSPY_INTERVAL_MS.
 *
 * The figures are read with the whole table held (live.c), so counts and
 * blocks agree. The dump is built with a jansson of the shim's own (linked
 * in, its memory from the arena): the report never takes memory from the
 * program's heap, so it can run in a signal handler that interrupted the
 * program's allocator. Once the exit report begins the shim stops counting
 * (process.c: asp__counting_stop). */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <link.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sched.h>
#include <ucontext.h>
#include <sys/wait.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "arena.h"
#include "dumpfmt.h"
#include "errors.h"
#include "guard.h"
#include "leak.h"
#include "live.h"
#include "liveview.h"
#include "loader.h"
#include "next.h"
#include "options.h"
#include "process.h"
#include "report.h"
#include "rss.h"
#include "sample.h"
#include "snapshot.h"
#include "sort.h"
#include "stack.h"
#include "suppress.h"
#include "symbols.h"
#include "text.h"
#include "vgtext.h"

static uint64_t g_start_mono_ns;
static double g_start_unix;
static int g_exit_status = -1;

static uint64_t g_last_dump_ns;

void asp__report_start(void)
{
	g_start_mono_ns = asp_now_ns(CLOCK_MONOTONIC);
	g_last_dump_ns = g_start_mono_ns;
	g_start_unix = (double)asp_now_ns(CLOCK_REALTIME) / 1e9;
	/* Only write_dump uses jansson, with every signal blocked. */
	json_set_alloc_funcs(asp__heap_alloc_quiet, asp__heap_free_quiet);
	/* Seeded now, once: jansson seeds itself at its first object from
	 * /dev/urandom, and a fork meanwhile would leave the child waiting
	 * for a seed forever. The dump keeps its keys' order anyway. */
	json_object_seed(0x616c6c6f);
}

int asp__report_exit_status(void)
{
	return g_exit_status;
}

void asp__exit_now(int status)
{
	if (asp__next.exit_ == NULL)
		asp__init();
	if (asp__next.exit_ != NULL)
		asp__next.exit_(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

/* The figures of the report ---------------------------------------------- */

enum reason { REASON_EXIT, REASON_INTERVAL, REASON_SIGNAL };

struct figures {
	enum reason reason;
	int signo;
	uint64_t t_ns;
	struct asp_counts c;
	struct asp_totals tot;
	uint64_t in_use_bytes, in_use_blocks;
	int tracked;
	int64_t peak;
	struct asp_live_entry *entries;	/* the table, when it is needed */
	size_t nentries, capentries;
	int leaks_ran;
	struct asp_leak_result leaks;
};

/* The counts and the table, read with every shard held. At the exit
 * report, counting stops there, and frees wait until the heap has been
 * read (asp__frozen, cleared by the caller). */
static void gather(struct figures *f, enum reason reason, int need_entries)
{
	memset(f, 0, sizeof *f);
	f->reason = reason;
	f->signo = reason == REASON_SIGNAL ? asp__fatal_signal() : 0;
	f->tracked = asp__opt.mode == ASP_MODE_TRACK;
	struct asp_thread *self = asp__thread_self();
	uint64_t skipped;
	asp__gather_begin(self);
	uint64_t taken = asp__live_lock_all((uintptr_t)self, &skipped);
	f->t_ns = asp_now_ns(CLOCK_MONOTONIC);
	if (reason != REASON_INTERVAL) {
		asp__counting_stop(1);
	}
	asp__threads_sum(&f->c);
	asp__totals(&f->c, &f->tot);
	if (f->tracked && !need_entries) {
		asp__live_totals(&f->in_use_blocks, &f->in_use_bytes, (uintptr_t)self);
	} else if (f->tracked) {
		/* One walk of the table, into room for the blocks the counts
		 * give (exact now: every thread is out of its change), and a
		 * second into more when the table held more (blocks freed
		 * behind the shim's back, a thread stopped in its change). */
		size_t want = asp__in_use_blocks() + 64;
		for (int tries = 0; tries < 2; tries++) {
			f->capentries = want;
			f->entries = asp__scratch_alloc(f->capentries * sizeof *f->entries);
			if (f->entries == NULL)
				break;
			size_t n = asp__live_snapshot(f->entries, f->capentries, (uintptr_t)self);
			if (n <= f->capentries) {
				f->nentries = n;
				for (size_t i = 0; i < n; i++)
					f->in_use_bytes += f->entries[i].size;
				f->in_use_blocks = n;
				break;
			}
			asp__scratch_free(f->entries, f->capentries * sizeof *f->entries);
			f->entries = NULL;
			want = n + n / 8 + 64;
		}
		if (f->entries == NULL)
			asp__live_totals(&f->in_use_blocks, &f->in_use_bytes, (uintptr_t)self);
	} else {
		f->in_use_blocks = f->tot.allocs - f->tot.frees;
	}
	asp__live_unlock_all(taken);
	asp__gather_end();
	/* The peak is never below what is in use now. */
	f->peak = asp_atomic_load_relaxed(&asp__figures.peak);
	if (f->tracked && (int64_t)f->in_use_bytes > f->peak)
		f->peak = (int64_t)f->in_use_bytes;
}

static void figures_free(struct figures *f)
{
	if (f->entries != NULL)
		asp__scratch_free(f->entries, f->capentries * sizeof *f->entries);
	f->entries = NULL;
}

static void leak_check(struct figures *f)
{
	if (f->tracked && asp__opt.leak_check != ASP_LEAK_NO && f->in_use_blocks > 0 &&
	    f->entries != NULL)
		f->leaks_ran = asp__leak_check(f->entries, f->nentries, &f->leaks) == 0;
}

/* The text ------------------------------------------------------------------ */

/* The pid of the "==PID==" prefix: this process's, or the one a copy of
 * it writes lines for (fatal_stack). */
static pid_t g_text_pid;

static void line(struct asp_text *t, const char *s)
{
	asp__text_room(t, 4096);
	asp__text_prefix(t, (long)(g_text_pid ? g_text_pid : getpid()));
	asp__text_str(t, s);
}

/* A line of valgrind's summary text (common/vgtext.h), arg the text. */
static void put_line(void *arg, const char *s)
{
	line(arg, s);
}

/* "   by 0x...: name (file.c:12)", or "(in /path)" without line info. */
static void put_frame(struct asp_text *t, const char *word, uintptr_t pc, const asp_dwline_t *l,
		      const char *name)
{
	line(t, word);
	asp__text_str(t, " 0x");
	asp__text_hex(t, pc);
	asp__text_str(t, ": ");
	asp__text_str(t, name ? name : l->fn ? l->fn : "???");
	if (l->file) {
		asp__text_str(t, " (");
		asp__text_str(t, l->file);
		asp__text_str(t, ":");
		asp__text_u64(t, l->line);
		asp__text_str(t, ")");
	} else if (l->module) {
		asp__text_str(t, " (in ");
		asp__text_str(t, l->module);
		asp__text_str(t, ")");
	}
	asp__text_str(t, "\n");
}

/* The lines of a return address, one per inlined call, as valgrind shows
 * them; returns whether main (or the function below it, in a program
 * without main's symbol) was reached: the stack is shown down to there, as
 * valgrind does. The shim's own frames are left out. */
static int frame_lines_as(struct asp_text *t, uintptr_t pc, const char *first_word,
                          uintptr_t shown);

static int frame_lines(struct asp_text *t, uintptr_t pc)
{
	return frame_lines_as(t, pc, "   by", pc);
}

/* The same, the first line with first_word ("   at" for a fault's
 * instruction, which has no interposer above it), showing the address
 * shown (the instruction's, where pc is one past it). */
static int frame_lines_as(struct asp_text *t, uintptr_t pc, const char *first_word,
                          uintptr_t shown)
{
	asp_dwline_t l[16];
	if (asp__symbols_is_shim(pc))
		return 0;
	size_t n = asp__symbolize_lines(pc - 1, l, ASP_ARRAY_SIZE(l));
	for (size_t k = 0; k < n; k++) {
		asp__text_room(t, 4096 + (l[k].fn ? strlen(l[k].fn) : 0) +
			       (l[k].module ? strlen(l[k].module) : 0));
		put_frame(t, k == 0 ? first_word : "   by", shown, &l[k], NULL);
		if (!l[k].inlined && asp_dwsym_ends_stack(l[k].fn))
			return 1;
	}
	return 0;
}

/* ALLOCSPY_LEAK_CHECK=full: the definite and possible loss records, as
 * memcheck prints them; the program's frames come from its symbol tables
 * (allocspy-report adds file:line from the dump). */
static void loss_records_text(struct asp_text *t, const struct asp_leak_result *l)
{
	for (size_t i = 0; i < l->nrecords; i++) {
		const struct asp_loss_record *r = &l->records[i];
		if (r->suppressed || (r->kind != ASP_LEAK_DEFINITE && r->kind != ASP_LEAK_POSSIBLE))
			continue;
		asp_vg_loss_record(put_line, t, r->bytes, r->indirect_bytes, r->blocks, r->kind, i + 1,
		                   l->nrecords);
		/* The interposer stands for valgrind's replacement: "at malloc",
		 * then "by strdup" for the functions that called it. */
		const char *names[3];
		int nn = asp__fn_frames(r->fn, names);
		uintptr_t at = (uintptr_t)asp__fn_address(r->fn);
		asp_dwline_t shim = { .module = asp__symbols_object(at) };
		for (int k = 0; k < nn; k++)
			put_frame(t, k == 0 ? "   at" : "   by", at, &shim, asp__symbols_demangle(names[k]));
		const uintptr_t *pcs;
		uintptr_t one;
		size_t n = asp__site_frames(r->site, &pcs, &one);
		for (size_t k = 0; k < n && !frame_lines(t, pcs[k]); k++)
			;
		if (asp__sample_mean != 0 && !asp__site_sampled(r->site))
			line(t, "   (not sampled by ALLOCSPY_SAMPLE: the caller only)\n");
		line(t, "\n");
	}
}

/* The frames of a call to fn from site: the interposer stands for
 * valgrind's replacement ("at free"), then the program's frames. One frame
 * only when site is a caller taken where stacks are otherwise taken
 * (one_frame: a free's, errors.h). */
static void call_frames(struct asp_text *t, unsigned fn, uintptr_t site, int one_frame)
{
	const char *names[3];
	int nn = asp__fn_frames(fn, names);
	uintptr_t at = (uintptr_t)asp__fn_address(fn);
	asp_dwline_t shim = { .module = asp__symbols_object(at) };
	for (int k = 0; k < nn; k++)
		put_frame(t, k == 0 ? "   at" : "   by", at, &shim, asp__symbols_demangle(names[k]));
	const uintptr_t *pcs;
	uintptr_t one = site;
	size_t n = one_frame ? (pcs = &one, site != 0) : asp__site_frames(site, &pcs, &one);
	for (size_t k = 0; k < n && !frame_lines(t, pcs[k]); k++)
		;
}

/* The free function valgrind would show for a block of fn's family. */
static unsigned freer_of(unsigned fn)
{
	return asp_fn_family(fn) == ASP_FAMILY_NEW ? ASP_FN_DELETE
	     : asp_fn_family(fn) == ASP_FAMILY_NEW_ARR ? ASP_FN_DELETE_ARR : ASP_FN_FREE;
}

/* " Address 0x... is N bytes inside a block of size S alloc'd", or
 * before or after it: valgrind's words for where the address is (after
 * for one at its end, as for a block of size 0). */
static void address_line(struct asp_text *t, const struct asp_heap_error *e, const char *what)
{
	int64_t off = (int64_t)(e->addr - e->block);
	int before = off < 0, after = !before && (uint64_t)off >= e->size;
	line(t, " Address 0x");
	asp__text_hex_lower(t, e->addr);
	asp__text_str(t, " is ");
	asp__text_commas(t, before ? (uint64_t)-off : after ? (uint64_t)off - e->size : (uint64_t)off);
	asp__text_str(t, before ? " bytes before a block of size " : after ? " bytes after a block of size "
	                                                             : " bytes inside a block of size ");
	asp__text_commas(t, e->size);
	asp__text_str(t, what);
}

/* What an address that is no block is: a global's, or nothing known. */
static void elsewhere_line(struct asp_text *t, uintptr_t addr)
{
	uintptr_t start = 0;
	const char *name = asp__symbols_data(addr, &start);
	line(t, " Address 0x");
	asp__text_hex_lower(t, addr);
	if (name != NULL) {
		asp__text_room(t, strlen(name) + 64);
		asp__text_str(t, " is ");
		asp__text_commas(t, addr - start);
		asp__text_str(t, " bytes inside data symbol \"");
		asp__text_str(t, name);
		asp__text_str(t, "\"\n");
	} else {
		asp__text_str(t, " is not stack'd, malloc'd or (recently) free'd\n");
	}
}

/* Track mode: valgrind's heap errors (errors.h), each context once, in the
 * order they were first seen, as valgrind prints them when they happen. */
static void errors_text(struct asp_text *t)
{
	size_t n;
	uint64_t total;
	const struct asp_heap_error *v = asp__errors(&n, &total);
	for (size_t i = 0; v != NULL && i < n; i++) {
		const struct asp_heap_error *e = &v[i];
		if (e->suppressed)
			continue;
		asp__text_room(t, 4096);
		if (e->kind == ASP_ERR_FISHY) {
			line(t, "Argument '");
			asp__text_str(t, e->arg);
			asp__text_str(t, "' of function ");
			asp__text_str(t, asp__fn_names[e->fn]);
			asp__text_str(t, " has a fishy (possibly negative) value: -");
			asp__text_u64(t, (uint64_t)-(int64_t)e->value);
			asp__text_str(t, "\n");
			call_frames(t, e->fn, e->site, 0);
			line(t, "\n");
			continue;
		}
		if (e->kind == ASP_ERR_INVALID_READ || e->kind == ASP_ERR_INVALID_WRITE) {
			line(t, e->kind == ASP_ERR_INVALID_READ ? "Invalid read" : "Invalid write");
			if (e->access != 0) {
				asp__text_str(t, " of size ");
				asp__text_u64(t, e->access);
			}
			asp__text_str(t, "\n");
			/* the access's stack: the instruction first */
			for (unsigned k = 0; k < e->npcs; k++)
				if (frame_lines_as(t, e->pcs[k], k == 0 ? "   at" : "   by",
				                   k == 0 ? e->pcs[k] - 1 : e->pcs[k]))
					break;
		} else if (e->kind == ASP_ERR_OVERWRITTEN) {
			line(t, e->where == ASP_AT_BEFORE ? "Bytes before a block were written (found at its free)\n"
			                                  : "Bytes after a block were written (found at its free)\n");
			call_frames(t, e->fn, e->site, 0);
		} else {
			line(t, e->kind == ASP_ERR_MISMATCHED_FREE ? "Mismatched free() / delete / delete []\n"
			                                            : "Invalid free() / delete / delete[] / realloc()\n");
			call_frames(t, e->fn, e->site, 0);
		}
		switch (e->where) {
		case ASP_AT_AFTER:
		case ASP_AT_BEFORE:
		case ASP_AT_BLOCK:
			address_line(t, e, " alloc'd\n");
			call_frames(t, e->block_fn, e->alloc_site, 0);
			break;
		case ASP_AT_FREED:
			address_line(t, e, " free'd\n");
			call_frames(t, freer_of(e->block_fn), e->free_site, 1);
			line(t, " Block was alloc'd at\n");
			call_frames(t, e->block_fn, e->alloc_site, 0);
			break;
		case ASP_AT_STACK:
			line(t, " Address 0x");
			asp__text_hex_lower(t, e->addr);
			asp__text_str(t, " is on thread ");
			asp__text_u64(t, e->thread);
			asp__text_str(t, "'s stack\n");
			break;
		default:
			elsewhere_line(t, e->addr);
			break;
		}
		line(t, "\n");
	}
}

/* valgrind's ERROR SUMMARY: the heap errors, and with a full leak check
 * each loss record of the kinds ALLOCSPY_ERRORS_FOR_LEAK_KINDS names. */
static void error_summary(const struct figures *f, uint64_t *errors, uint64_t *contexts,
                          uint64_t *suppressed, uint64_t *suppressed_contexts)
{
	asp__errors_summary(errors, contexts, suppressed, suppressed_contexts);
	if (!f->leaks_ran || asp__opt.leak_check != ASP_LEAK_FULL)
		return;
	for (size_t i = 0; i < f->leaks.nrecords; i++) {
		const struct asp_loss_record *r = &f->leaks.records[i];
		if (!(asp__opt.error_kinds & (1 << r->kind)))
			continue;
		if (r->suppressed) {
			(*suppressed)++;
			(*suppressed_contexts)++;
		} else {
			(*errors)++;
			(*contexts)++;
		}
	}
}

/* memcheck's "of which reachable via heuristic" lines. */
/* "SEGV" -> "SIGSEGV". */
static void signal_name(int sig, char out[32])
{
	const char *abbrev = sigabbrev_np(sig);
	struct asp_text t = { out, 0, 31, -1 };
	if (abbrev != NULL) {
		asp__text_str(&t, "SIG");
		asp__text_str(&t, abbrev);
	} else {
		asp__text_str(&t, "SIG");
		asp__text_u64(&t, (uint64_t)sig);
	}
	out[t.len] = '\0';
}

/* A fatal signal's lines (asp__report_fatal), ahead of the summaries. */
static char g_fatal_text[16 * 1024];
static size_t g_fatal_len;

/* What valgrind says of a fault the kernel raised (si_code > 0), after the
 * signal's line; NULL for the others. *addr: with the address. */
static const char *fault_event(int sig, int code, int *addr)
{
	*addr = 1;
	switch (sig) {
	case SIGSEGV:
		if (code == SEGV_MAPERR)
			return "Access not within mapped region";
		if (code == SEGV_ACCERR)
			return "Bad permissions for mapped region";
		if (code == SI_KERNEL) {
			*addr = 0;	/* a general protection fault: no address */
			return "General Protection Fault";
		}
		return NULL;
	case SIGILL: {
		static const char *const ill[] = { NULL, "Illegal opcode", "Illegal operand",
			"Illegal addressing mode", "Illegal trap", "Privileged opcode",
			"Privileged register", "Coprocessor error", "Internal stack error" };
		return code > 0 && code < (int)ASP_ARRAY_SIZE(ill) ? ill[code] : NULL;
	}
	case SIGFPE: {
		static const char *const fpe[] = { NULL, "Integer divide by zero", "Integer overflow",
			"FP divide by zero", "FP overflow", "FP underflow", "FP inexact",
			"FP invalid operation", "FP subscript out of range" };
		return code > 0 && code < (int)ASP_ARRAY_SIZE(fpe) ? fpe[code] : NULL;
	}
	case SIGBUS: {
		static const char *const bus[] = { NULL, "Invalid address alignment",
			"Non-existent physical address", "Hardware error" };
		return code > 0 && code < (int)ASP_ARRAY_SIZE(bus) ? bus[code] : NULL;
	}
	}
	return NULL;
}

/* Whether the signal's default action dumps core, and the core file size
 * limit lets it: valgrind then adds ": dumping core". */
static int dumps_core(int sig)
{
	static const int core[] = { SIGQUIT, SIGILL, SIGTRAP, SIGABRT, SIGBUS, SIGFPE, SIGSEGV,
	                            SIGXCPU, SIGXFSZ, SIGSYS };
	int yes = 0;
	for (size_t i = 0; i < ASP_ARRAY_SIZE(core); i++)
		yes |= core[i] == sig;
	struct rlimit rl;
	return yes && getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_cur != 0;
}

/* The stack of the thread a fatal signal interrupted, as valgrind prints
 * it: as deep as its default (12), or as the shim's stacks when they are
 * deeper, down to main (or "(below main)"); the interrupted instruction named at its own
 * address, the others at the call before their return address. */
static void fatal_stack_lines(struct asp_text *t, void *uc)
{
	uintptr_t pcs[ASP_MAX_BACKTRACE];
	int depth = asp__opt.backtrace > 12 ? asp__opt.backtrace : 12;
	int n = asp__stack_signal_frames(uc, pcs, depth);
	int shown = 0;
	for (int k = 0; k < n; k++) {
		asp_dwline_t l[16];
		if (asp__symbols_is_shim(pcs[k]))
			continue;
		size_t nl = asp__symbolize_lines(k == 0 ? pcs[k] : pcs[k] - 1, l, ASP_ARRAY_SIZE(l));
		int end = 0;
		for (size_t j = 0; j < nl && t->len + 1024 < t->cap; j++) {
			put_frame(t, shown++ == 0 ? "   at" : "   by", pcs[k], &l[j], NULL);
			end |= !l[j].inlined && asp_dwsym_ends_stack(l[j].fn);
		}
		if (end)
			break;
	}
}

/* The object that holds pc, for a frame that cannot be named. */
struct object_of {
	uintptr_t pc;
	char path[ASP_PATH_MAX];
};

static int object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_of *o = arg;
	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type != PT_LOAD || o->pc < lo || o->pc - lo >= ph->p_memsz)
			continue;
		const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : asp__opt.exe;
		size_t len = strlen(path) < sizeof o->path - 1 ? strlen(path) : sizeof o->path - 1;
		memcpy(o->path, path, len);
		o->path[len] = '\0';
		return 1;
	}
	return 0;
}

/* The allocator of the copy of the process that names a fatal signal's
 * stack (fatal_stack): the shim's own heap, never the program's, whose
 * state the signal may have cut in half (a lock held, a list being
 * changed). A block carries its size and a mark; a block of the program's
 * heap freed there is left alone, and one resized is copied. */
#define CHILD_MARK 0x616c6c6f63737079ull

struct child_block {
	uint64_t mark;
	size_t size;
	void *base;		/* what the shim's heap gave */
	uint64_t pad;
};

static void *child_aligned(size_t align, size_t size)
{
	if (align < 16)
		align = 16;
	if (size > SIZE_MAX / 2 || align > SIZE_MAX / 4 || (align & (align - 1)) != 0)
		return NULL;
	char *base = asp__heap_alloc(size + align + sizeof(struct child_block));
	if (base == NULL)
		return NULL;
	uintptr_t p = ((uintptr_t)base + sizeof(struct child_block) + align - 1) & ~(uintptr_t)(align - 1);
	struct child_block *b = (struct child_block *)p - 1;
	*b = (struct child_block){ CHILD_MARK, size, base, 0 };
	return (void *)p;
}

static struct child_block *child_of(void *p)
{
	if (p == NULL)
		return NULL;
	struct child_block *b = (struct child_block *)p - 1;
	return b->mark == CHILD_MARK ? b : NULL;
}

static void *child_malloc(size_t size) { return child_aligned(16, size); }
static void *child_memalign(size_t align, size_t size) { return child_aligned(align, size); }
static void *child_valloc(size_t size) { return child_aligned(ASP_PAGE, size); }
static void *child_pvalloc(size_t size)
{
	return child_aligned(ASP_PAGE, ASP_PAGE_UP(size));
}

static void *child_calloc(size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes))
		return NULL;
	void *p = child_aligned(16, bytes);
	if (p != NULL)
		memset(p, 0, bytes);
	return p;
}

static void child_free(void *p)
{
	struct child_block *b = child_of(p);
	if (b != NULL) {
		b->mark = 0;
		asp__heap_free(b->base);
	}
}

static size_t child_usable(void *p)
{
	struct child_block *b = child_of(p);
	return b != NULL ? b->size : 0;
}

static void *child_realloc(void *p, size_t size)
{
	if (p == NULL)
		return child_malloc(size);
	struct child_block *b = child_of(p);
	/* A block of the program's heap: as much as it can hold, read from
	 * its header (the copy dies if that is broken). */
	size_t have = b != NULL ? b->size : asp__next.malloc_usable_size(p);
	void *q = child_malloc(size);
	if (q != NULL) {
		memcpy(q, p, have < size ? have : size);
		child_free(p);
	}
	return q;
}

static void *child_reallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	return __builtin_mul_overflow(n, size, &bytes) ? NULL : child_realloc(p, bytes);
}

static int child_posix_memalign(void **out, size_t align, size_t size)
{
	void *p = child_aligned(align, size);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

static void child_heap(void)
{
	asp__next.malloc = child_malloc;
	asp__next.calloc = child_calloc;
	asp__next.realloc = child_realloc;
	asp__next.reallocarray = child_reallocarray;
	asp__next.free = child_free;
	asp__next.posix_memalign = child_posix_memalign;
	asp__next.aligned_alloc = child_memalign;
	asp__next.memalign = child_memalign;
	asp__next.valloc = child_valloc;
	asp__next.pvalloc = child_pvalloc;
	asp__next.malloc_usable_size = child_usable;
}

/* The stack lines of a fatal signal's report. Unwinding and naming frames
 * load libraries and allocate, which the interrupted thread may not allow
 * (it may hold the allocator's lock, or the loader's): a copy of the
 * process (_Fork: no fork handlers, the other threads left behind), whose
 * allocations go to the shim's own heap (child_heap), does it and sends
 * the lines through a pipe, and is killed when they do not come within
 * 5 s. Then, or when there is no copy, the interrupted instruction alone,
 * with its object. */
static void fatal_stack(struct asp_text *t, void *uc)
{
	static char child_text[12 * 1024];
	int fds[2];
	size_t got = 0;
	if (uc != NULL && pipe2(fds, O_CLOEXEC) == 0) {
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		pid_t me = getpid(), c = _Fork();
		if (c == 0) {
			g_text_pid = me;
			/* The copy: nothing counted, the shim's own heap. */
			asp__counting_stop(0);
			child_heap();
			close(fds[0]);
			struct asp_text ct = { child_text, 0, sizeof child_text, -1 };
			fatal_stack_lines(&ct, uc);
			asp__write_all(fds[1], ct.buf, ct.len);
			syscall(SYS_exit_group, 0);
		}
		close(fds[1]);
		uint64_t until = asp_now_ns(CLOCK_MONOTONIC) + 5000000000u;
		while (c > 0 && t->len + got < t->cap) {
			uint64_t now = asp_now_ns(CLOCK_MONOTONIC);
			struct pollfd pfd = { fds[0], POLLIN, 0 };
			if (now >= until || poll(&pfd, 1, (int)((until - now) / 1000000) + 1) == 0)
				break;
			ssize_t r = read(fds[0], t->buf + t->len + got, t->cap - t->len - got);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		close(fds[0]);
		if (c > 0) {
			kill(c, SIGKILL);
			while (waitpid(c, NULL, 0) < 0 && errno == EINTR)
				;
		}
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	if (got > 0) {
		t->len += got;
		return;
	}
	if (uc == NULL)
		return;
	const ucontext_t *u = uc;
	struct object_of o = { asp_uc_pc(u), "" };
	asp__loader_list(object_cb, &o);
	asp_dwline_t l = { .module = o.path[0] ? o.path : NULL };
	put_frame(t, "   at", o.pc, &l, NULL);
}

void asp__report_fatal(int sig, const siginfo_t *si, void *uc)
{
	struct asp_text t = { g_fatal_text, 0, sizeof g_fatal_text, -1 };
	char name[32];
	signal_name(sig, name);
	line(&t, "\n");
	line(&t, "Process terminating with default action of signal ");
	asp__text_u64(&t, (uint64_t)sig);
	asp__text_str(&t, " (");
	asp__text_str(&t, name);
	asp__text_str(&t, dumps_core(sig) ? "): dumping core\n" : ")\n");
	int with_addr;
	const char *event = si != NULL && si->si_code > 0 ? fault_event(sig, si->si_code, &with_addr) : NULL;
	if (event != NULL) {
		line(&t, " ");
		asp__text_str(&t, event);
		if (with_addr) {
			asp__text_str(&t, " at address 0x");
			asp__text_hex(&t, (uintptr_t)si->si_addr);
		}
		asp__text_str(&t, "\n");
	}
	fatal_stack(&t, uc);
	g_fatal_len = t.len;
}

/* The name this process's dump got, once one was written (periodic dumps
 * then replace it, and so does the final one). */
static char g_dump_name[ASP_PATH_MAX + 16];

/* When the dump's name was taken and it went to "NAME-N.json", the exit
 * text says where. */
static void dump_name_text(struct asp_text *t)
{
	char path[ASP_PATH_MAX];
	if (asp__opt.output[0] == '\0' || g_dump_name[0] == '\0')
		return;
	asp__expand_pid(asp__opt.output, path, sizeof path);
	if (strcmp(path, g_dump_name) == 0)
		return;
	line(t, "\n");
	asp__text_room(t, 2 * sizeof path + 64);
	asp__text_prefix(t, (long)getpid());
	asp__text_str(t, path);
	asp__text_str(t, " exists: the dump was written to ");
	asp__text_str(t, g_dump_name);
	asp__text_str(t, "\n");
}

static void summary_text(struct asp_text *t, const struct figures *f)
{
	/* The heap errors first, as valgrind prints each when it happens:
	 * before the fatal signal's block, when a fault was one of them. */
	if (f->tracked)
		errors_text(t);
	if (f->reason == REASON_SIGNAL && f->signo > 0) {
		for (size_t i = 0; i < g_fatal_len; i += 1024) {
			size_t n = g_fatal_len - i < 1024 ? g_fatal_len - i : 1024;
			asp__text_room(t, n);
			memcpy(t->buf + t->len, g_fatal_text + i, n);
			t->len += n;
		}
		line(t, "\n");
	}
	struct asp_vg_heap h = {
		.when = "exit", .bytes_known = f->tracked,
		.in_use_bytes = f->in_use_bytes, .in_use_blocks = f->in_use_blocks,
		.allocs = f->tot.allocs, .frees = f->tot.frees, .bytes_allocated = f->tot.bytes_allocated,
	};
	asp_vg_heap_summary(put_line, t, &h);

	if (f->tracked && asp__opt.leak_check != ASP_LEAK_NO) {
		line(t, "\n");
		if (f->in_use_blocks == 0) {
			line(t, ASP_VG_ALL_FREED);
		} else if (f->leaks_ran) {
			const struct asp_leak_result *l = &f->leaks;
			if (asp__opt.leak_check == ASP_LEAK_FULL)
				loss_records_text(t, l);
			struct asp_vg_leaks v;
			memset(&v, 0, sizeof v);
			for (int k = 0; k < ASP_LEAK_RECORD_KINDS; k++) {
				v.bytes[k] = l->bytes[k];
				v.blocks[k] = l->blocks[k];
			}
			v.bytes[ASP_LEAK_SUPPRESSED] = l->suppressed_bytes;
			v.blocks[ASP_LEAK_SUPPRESSED] = l->suppressed_blocks;
			_Static_assert(sizeof v.heur_bytes == sizeof l->heur_bytes, "memcheck's heuristics");
			memcpy(v.heur_bytes, l->heur_bytes, sizeof v.heur_bytes);
			memcpy(v.heur_blocks, l->heur_blocks, sizeof v.heur_blocks);
			asp_vg_leak_summary(put_line, t, &v);
		}
	}
	if (f->tracked) {
		uint64_t errors, contexts, suppressed, scontexts;
		error_summary(f, &errors, &contexts, &suppressed, &scontexts);
		line(t, "\n");
		asp_vg_error_summary(put_line, t, errors, contexts, suppressed, scontexts);
	}

	const struct asp_counts *c = &f->c;
	if (c->ref_ops[0] | c->ref_ops[1] | c->ref_ops[2] | c->ref_ops[3]) {
		struct asp_vg_refs r = {
			.acquires = asp_ref_acquires(c), .releases = asp_ref_releases(c),
			.created = asp_ref_created(c), .destroyed = asp_ref_destroyed(c),
			.has_cross = asp__opt.ref_cross, .cross = c->ref_cross,
		};
		line(t, "\n");
		asp_vg_ref_summary(put_line, t, &r);
	}
	dump_name_text(t);
}

/* Opens a report file: never through a symlink, never group- or
 * world-writable, close-on-exec. */
static int open_report(const char *path, int flags)
{
	return open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | flags, 0644);
}

static void write_text(const struct figures *f)
{
	static char buf[64 * 1024];
	if (asp__opt.quiet)
		return;
	int fd = asp__err_fd, own = 0;
	if (asp__opt.log_file[0] != '\0') {
		char path[ASP_PATH_MAX];
		asp__expand_pid(asp__opt.log_file, path, sizeof path);
		fd = open_report(path, O_APPEND);
		if (fd < 0) {
			asp__warn("cannot open ALLOCSPY_LOG_FILE ", path, ": writing to stderr");
			fd = asp__err_fd;
		} else {
			own = 1;
		}
	}
	/* The program may have closed our duplicate: then fd 2 it is. */
	if (fd == asp__err_fd && fd != 2 && fcntl(fd, F_GETFD) < 0)
		fd = 2;
	struct asp_text t = { buf, 0, sizeof buf, fd };
	summary_text(&t, f);
	asp__write_all(fd, t.buf, t.len);
	if (own)
		close(fd);
}

/* The dump ------------------------------------------------------------------ */

/* JSON integers are signed 64-bit: a larger count (valgrind's failed
 * realloc of SIZE_MAX / 2 bytes, say) is written as the largest one. */
static json_t *jint(uint64_t v)
{
	return json_integer(v > INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *bytes_blocks(uint64_t bytes, uint64_t blocks)
{
	return json_pack("{s:o,s:o}", "bytes", jint(bytes), "blocks", jint(blocks));
}

static json_t *program_json(void)
{
	json_t *argv = json_array();
	char *const *v = asp__argv();
	for (int i = 0; i < asp__argc() && v && v[i]; i++)
		json_array_append_new(argv, json_string(v[i]));
	return json_pack("{s:I,s:I,s:s,s:o}", "pid", (json_int_t)getpid(),
	                 "ppid", (json_int_t)getppid(), "exe", asp__opt.exe, "argv", argv);
}

/* Seconds since the shim started, of a CLOCK_MONOTONIC time. */
static double since_start(uint64_t ns)
{
	return ns > g_start_mono_ns ? (double)(ns - g_start_mono_ns) / 1e9 : 0.0;
}

static json_t *time_json(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double wall = since_start(asp_now_ns(CLOCK_MONOTONIC));
	return json_pack("{s:f,s:f,s:f,s:f}", "wall_s", wall,
	                 "user_s", (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6,
	                 "sys_s", (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6,
	                 "start_unix", g_start_unix);
}

static json_t *options_json(void)
{
	static const char *const modes[] = { "track", "count" };
	static const char *const unwinds[] = { "libunwind", "fp" };
	static const char *const checks[] = { "summary", "full", "no" };
	static const char *const freeres[] = { "no", "libc", "cxx", "yes" };
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:i,s:s,s:i,s:o,s:o}", "mode", modes[asp__opt.mode],
	                 "backtrace", asp__opt.backtrace, "unwind", unwinds[asp__opt.unwind],
	                 "leak_check", checks[asp__opt.leak_check], "output", asp__opt.output,
	                 "snapshots", asp__opt.snapshots, "freeres", freeres[asp__opt.freeres & 3],
	                 "interval_ms", asp__opt.interval_ms, "sample", jint(asp__sample_mean),
	                 "guard", jint(asp__guard_mean));
}

static json_t *dump_info_json(const struct figures *f)
{
	static const char *const reasons[] = { "exit", "interval", "signal" };
	json_t *d = json_pack("{s:s,s:f}", "reason", reasons[f->reason], "t_s", since_start(f->t_ns));
	if (f->reason == REASON_EXIT)
		json_object_set_new(d, "freeres", json_boolean(asp__freeres_ran()));
	if (f->reason == REASON_SIGNAL && f->signo > 0) {
		char name[32];
		signal_name(f->signo, name);
		json_object_set_new(d, "signal", json_pack("{s:i,s:s}", "number", f->signo, "name", name));
	}
	return d;
}

static json_t *heap_json(const struct figures *f)
{
	uint64_t temporary = 0;
	for (int i = 0; i < ASP_FN_ALLOC_END; i++)
		temporary += f->c.fn[i].temporary;
	json_t *h = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "allocs", jint(f->tot.allocs),
	                      "frees", jint(f->tot.frees), "bytes_allocated", jint(f->tot.bytes_allocated),
	                      "in_use_blocks", jint(f->in_use_blocks), "failed", jint(f->tot.failed),
	                      "untracked_frees", jint(f->c.untracked_frees));
	json_object_set_new(h, "in_use_bytes", f->tracked ? jint(f->in_use_bytes) : json_null());
	json_object_set_new(h, "peak_bytes", f->tracked ? jint((uint64_t)f->peak) : json_null());
	if (f->tracked) {
		json_object_set_new(h, "peak_bytes_bound", jint(asp__peak_bound()));
		uint64_t at = asp_atomic_load_relaxed(&asp__figures.peak_ns);
		json_object_set_new(h, "peak_t_s", json_real(since_start(at ? at : f->t_ns)));
	}
	json_object_set_new(h, "temporary", jint(temporary));
	return h;
}

static json_t *functions_json(const struct figures *f)
{
	json_t *o = json_object();
	for (int i = 0; i < ASP_FN_COUNT; i++) {
		const struct asp_fn_stat *s = &f->c.fn[i];
		if (s->calls == 0 && s->null == 0 && s->failed == 0 && i != ASP_FN_FREE)
			continue;
		json_t *e;
		if (i < ASP_FN_ALLOC_END)
			e = json_pack("{s:o,s:o,s:o,s:o}", "calls", jint(s->calls), "bytes", jint(s->bytes),
			              "failed", jint(s->failed), "temporary", jint(s->temporary));
		else if (i == ASP_FN_USABLE_SIZE)
			e = json_pack("{s:o}", "calls", jint(s->calls));
		else
			e = json_pack("{s:o,s:o}", "calls", jint(s->calls), "null", jint(s->null));
		json_object_set_new(o, asp__fn_names[i], e);
	}
	return o;
}

static json_t *histogram_json(const struct figures *f)
{
	json_t *a = json_array();
	for (int b = 0; b < ASP_HIST_BUCKETS; b++) {
		if (f->c.hist[b] == 0)
			continue;
		uint64_t le = b == 0 ? 0 : b == 65 ? UINT64_MAX : (uint64_t)1 << (b - 1);
		json_t *jle = b == 65 ? json_real(18446744073709551615.0) : jint(le);
		json_array_append_new(a, json_pack("{s:o,s:o}", "le", jle, "count", jint(f->c.hist[b])));
	}
	return a;
}

static void threads_json(json_t *root)
{
	size_t max = ASP_MAX_THREAD_SUMMARIES;
	struct asp_thread_summary *s = asp__scratch_alloc(max * sizeof *s);
	json_t *a = json_array();
	size_t all = 0, n = 0;
	if (s != NULL) {
		all = asp__threads_summaries(s, max);
		n = all < max ? all : max;
	}
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(a, json_pack("{s:i,s:s,s:o,s:o,s:o,s:o,s:o,s:b}",
		        "tid", (int)s[i].tid, "name", s[i].name, "allocs", jint(s[i].allocs),
		        "frees", jint(s[i].frees), "bytes_allocated", jint(s[i].bytes_allocated),
		        "ref_acquires", jint(s[i].ref_acquires), "ref_releases", jint(s[i].ref_releases),
		        "exited", s[i].exited));
	}
	json_object_set_new(root, ASP_KEY_THREADS, a);
	if (all > n)
		json_object_set_new(root, ASP_KEY_THREADS_OMITTED, jint(all - n));
	if (s != NULL)
		asp__scratch_free(s, max * sizeof *s);
}

static json_t *refs_json(const struct figures *f)
{
	return json_pack("{s:o,s:o,s:o,s:o,s:o}", "acquires", jint(asp_ref_acquires(&f->c)),
	                 "releases", jint(asp_ref_releases(&f->c)),
	                 "objects_created", jint(asp_ref_created(&f->c)),
	                 "objects_destroyed", jint(asp_ref_destroyed(&f->c)),
	                 "cross_thread", asp__opt.ref_cross ? jint(f->c.ref_cross) : json_null());
}

/* A stack of one frame, a caller's, where sites are stack ids (a free's
 * caller, errors.h): its key in a stack index. */
#define CALLER_ONLY ((uintptr_t)1 << 62)
/* A fault's stack (errors.h: an error's pcs), by the error's address. */
#define ERROR_PCS ((uintptr_t)1 << 61)

/* The frames of a stack index's key: a site's, or one of the above. */
static size_t key_frames(uintptr_t key, const uintptr_t **frames, uintptr_t *one)
{
	if (key & CALLER_ONLY) {
		*one = key & ~CALLER_ONLY;
		*frames = one;
		return 1;
	}
	if (key & ERROR_PCS) {
		const struct asp_heap_error *e = (const struct asp_heap_error *)(key & ~ERROR_PCS);
		*frames = e->pcs;
		return e->npcs;
	}
	return asp__site_frames(key, frames, one);
}

/* The dump is written as it is made (struct out): the small part of it
 * with the shim's jansson, then the arrays that grow with the program's
 * stacks (thread_stacks, stack_stats, stacks) line by line, one element a
 * line, so that a dump of a million stacks costs its text and a few
 * tables, never a tree of a million objects. */
struct out {
	int fd, err;
	size_t len;
	char buf[64 * 1024];
};

static void out_flush(struct out *o)
{
	if (o->len > 0 && o->err == 0) {
		int w = asp__write_all(o->fd, o->buf, o->len);
		if (w != 0)
			o->err = -w;
	}
	o->len = 0;
}

static void out_mem(struct out *o, const char *s, size_t n)
{
	while (n > 0) {
		if (o->len == sizeof o->buf)
			out_flush(o);
		size_t k = sizeof o->buf - o->len < n ? sizeof o->buf - o->len : n;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

static void out_str(struct out *o, const char *s)
{
	out_mem(o, s, strlen(s));
}

/* A JSON integer: saturated at the largest one, as jint does. */
static void out_int(struct out *o, uint64_t v)
{
	char d[24];
	int n = 0;
	if (v > INT64_MAX)
		v = INT64_MAX;
	do d[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
	if (sizeof o->buf - o->len < sizeof d)
		out_flush(o);
	while (n > 0)
		o->buf[o->len++] = d[--n];
}

/* ", KEY: V" or "KEY: V" after "{" */
static void out_key(struct out *o, const char *key, uint64_t v, int first)
{
	out_str(o, first ? "\"" : ", \"");
	out_str(o, key);
	out_str(o, "\": ");
	out_int(o, v);
}

/* The dump's "stacks": each distinct site once, numbered in the order
 * first used, found again through a hash of the site. The index doubles
 * when it is half full, and so does the list of sites by number: a dump
 * holds every stack, however many. */
struct stack_index {
	uintptr_t *site;	/* open addressing */
	uint32_t *number;	/* 0: an empty slot */
	size_t mask, used;
	uintptr_t *order;	/* the sites by number */
	size_t cap;
};

static size_t stack_slot(const struct stack_index *x, uintptr_t site)
{
	return (size_t)(asp_hash(site) >> 32) & x->mask;
}

static int stack_index_alloc(struct stack_index *x, size_t slots)
{
	x->site = asp__scratch_alloc(slots * sizeof *x->site);
	x->number = asp__scratch_alloc(slots * sizeof *x->number);
	x->mask = slots - 1;
	if (x->site != NULL && x->number != NULL)
		return 0;
	if (x->site)
		asp__scratch_free(x->site, slots * sizeof *x->site);
	if (x->number)
		asp__scratch_free(x->number, slots * sizeof *x->number);
	x->site = NULL;
	x->number = NULL;
	return -ENOMEM;
}

static void stack_index_init(struct stack_index *x, size_t most)
{
	size_t slots = 64;
	while (slots < most * 2)
		slots *= 2;
	x->used = 0;
	x->cap = slots / 2;
	x->order = asp__scratch_alloc(x->cap * sizeof *x->order);
	if (stack_index_alloc(x, slots) != 0 || x->order == NULL) {
		if (x->order)
			asp__scratch_free(x->order, x->cap * sizeof *x->order);
		x->order = NULL;
	}
}

static void stack_index_release(struct stack_index *x)
{
	if (x->site)
		asp__scratch_free(x->site, (x->mask + 1) * sizeof *x->site);
	if (x->number)
		asp__scratch_free(x->number, (x->mask + 1) * sizeof *x->number);
	if (x->order)
		asp__scratch_free(x->order, x->cap * sizeof *x->order);
	x->site = NULL;
	x->number = NULL;
	x->order = NULL;
}

/* Twice the slots, the same numbers. */
static int stack_index_grow(struct stack_index *x)
{
	struct stack_index old = *x;
	uintptr_t *order = asp__scratch_alloc(2 * old.cap * sizeof *order);
	if (order == NULL || stack_index_alloc(x, (old.mask + 1) * 2) != 0) {
		if (order)
			asp__scratch_free(order, 2 * old.cap * sizeof *order);
		*x = old;
		return -ENOMEM;
	}
	for (size_t i = 0; i <= old.mask; i++) {
		if (old.number[i] == 0)
			continue;
		size_t j = stack_slot(x, old.site[i]);
		while (x->number[j] != 0)
			j = (j + 1) & x->mask;
		x->site[j] = old.site[i];
		x->number[j] = old.number[i];
	}
	memcpy(order, old.order, old.used * sizeof *order);
	x->order = order;
	x->cap = 2 * old.cap;
	stack_index_release(&old);
	return 0;
}

/* The number of site's stack in "stacks", adding it the first time (an
 * index that cannot grow gives 0: the first stack). */
static size_t stack_number(struct stack_index *x, uintptr_t site)
{
	if (x->site == NULL)
		return 0;
	size_t j = stack_slot(x, site);
	for (; x->number[j] != 0; j = (j + 1) & x->mask)
		if (x->site[j] == site)
			return x->number[j] - 1;
	if (2 * (x->used + 1) > x->mask + 1) {
		if (stack_index_grow(x) != 0)
			return 0;
		j = stack_slot(x, site);
		while (x->number[j] != 0)
			j = (j + 1) & x->mask;
	}
	x->site[j] = site;
	x->order[x->used++] = site;
	x->number[j] = (uint32_t)x->used;
	return x->used - 1;
}

/* Whether site's stack was cut at the depth limit: the walk stopped at
 * ALLOCSPY_BACKTRACE frames with more below them. A caller alone (the
 * default, or a block ALLOCSPY_SAMPLE did not sample) is one frame of a
 * longer stack. */
static int site_cut(uintptr_t site)
{
	if (site & (CALLER_ONLY | ERROR_PCS))
		return site & CALLER_ONLY || ((const struct asp_heap_error *)(site & ~ERROR_PCS))->npcs ==
		                             (unsigned)(asp__opt.backtrace > 1 ? asp__opt.backtrace : 1);
	if (asp__sample_mean != 0 && asp__site_sampled(site))
		return asp__stack_cut(asp__site_plain(site));
	if (asp__opt.backtrace > 1 && asp__sample_mean == 0)
		return asp__stack_cut(site);
	return site != 0;
}

/* "stacks": each one's frames, innermost first; "truncated_stacks": the
 * numbers of those cut at the depth limit. */
static void stacks_out(struct out *o, const struct stack_index *x)
{
	size_t cut = 0;
	out_str(o, ",\n \"" ASP_KEY_STACKS "\": [");
	for (size_t i = 0; i < x->used; i++) {
		const uintptr_t *frames;
		uintptr_t one;
		size_t n = key_frames(x->order[i], &frames, &one);
		out_str(o, i == 0 ? "\n  [" : ",\n  [");
		for (size_t k = 0; k < n; k++) {
			if (k > 0)
				out_str(o, ", ");
			out_int(o, frames[k]);
		}
		out_str(o, "]");
		cut += n > 0 && site_cut(x->order[i]);
	}
	out_str(o, x->used > 0 ? "\n ]" : "]");
	out_str(o, ",\n \"" ASP_KEY_TRUNCATED_STACKS "\": [");
	for (size_t i = 0, k = 0; i < x->used && cut > 0; i++) {
		const uintptr_t *frames;
		uintptr_t one;
		if (asp__site_frames(x->order[i], &frames, &one) == 0 || !site_cut(x->order[i]))
			continue;
		out_str(o, k++ % 16 == 0 ? (k == 1 ? "\n  " : ",\n  ") : ", ");
		out_int(o, i);
	}
	out_str(o, cut > 0 ? "\n ]" : "]");
}

/* Backtrace mode: what each stack allocated, summed over the threads,
 * what of it is in use at exit, temporary, and held at the peak: every
 * stack, largest first by bytes, so that they add up to the heap's
 * totals; and what each thread allocated from each. */
struct site_total {
	uintptr_t site;
	uint64_t allocs, bytes, in_use_blocks, in_use_bytes, temporary, peak_bytes, peak_blocks;
	/* ALLOCSPY_SAMPLE: allocs counts the samples; these the estimates */
	double est_allocs, est_bytes, est_in_use_blocks, est_in_use_bytes, est_temporary;
};

/* One thread's figures for one stack. */
struct thread_site {
	pid_t tid;
	uintptr_t site;
	uint64_t allocs, bytes;
	double est_allocs, est_bytes;
};

struct site_table {
	struct site_total *v;
	size_t mask, n;
	struct thread_site *per_thread;	/* thread_stacks */
	size_t nper, capper;
};

static size_t site_home(const struct site_table *t, uintptr_t site)
{
	return (size_t)(asp_hash(site) >> 32) & t->mask;
}

/* Twice the slots, the same totals: a site first seen among the blocks in
 * use or at the peak (a thread that made it has gone and its record was
 * reused) still gets its line. */
static int site_table_grow(struct site_table *t)
{
	size_t slots = (t->mask + 1) * 2;
	struct site_total *v = asp__scratch_alloc(slots * sizeof *v);
	if (v == NULL)
		return -ENOMEM;
	struct site_total *old = t->v;
	size_t old_slots = t->mask + 1;
	t->v = v;
	t->mask = slots - 1;
	for (size_t i = 0; i < old_slots; i++) {
		if (old[i].site == 0)
			continue;
		size_t j = site_home(t, old[i].site);
		while (v[j].site != 0)
			j = (j + 1) & t->mask;
		v[j] = old[i];
	}
	asp__scratch_free(old, old_slots * sizeof *old);
	return 0;
}

static struct site_total *site_slot(struct site_table *t, uintptr_t site)
{
	size_t j = site_home(t, site);
	while (t->v[j].site != 0 && t->v[j].site != site)
		j = (j + 1) & t->mask;
	if (t->v[j].site == site)
		return &t->v[j];
	if (4 * (t->n + 1) > 3 * (t->mask + 1)) {
		if (site_table_grow(t) != 0)
			return NULL;
		j = site_home(t, site);
		while (t->v[j].site != 0)
			j = (j + 1) & t->mask;
	}
	t->v[j].site = site;
	t->n++;
	return &t->v[j];
}

static void count_site(void *arg, pid_t tid, const struct asp_site_stat *s)
{
	(void)tid;
	(void)s;
	(*(size_t *)arg)++;
}

/* Called with the registry of thread records held (thread.c): it makes no
 * system call but to map memory. */
static void add_site(void *arg, pid_t tid, const struct asp_site_stat *s)
{
	struct site_table *t = arg;
	struct site_total *to = site_slot(t, s->site);
	if (to != NULL) {
		to->allocs += s->allocs;
		to->bytes += s->bytes;
		to->temporary += s->temporary;
		to->est_allocs += s->est_allocs;
		to->est_bytes += s->est_bytes;
		to->est_temporary += s->est_temporary;
	}
	if (s->allocs == 0)
		return;
	if (t->nper == t->capper) {
		/* The threads made more stacks since they were counted. */
		size_t cap = 2 * t->capper + 64;
		struct thread_site *v = asp__scratch_alloc(cap * sizeof *v);
		if (v == NULL)
			return;
		if (t->per_thread != NULL) {
			memcpy(v, t->per_thread, t->nper * sizeof *v);
			asp__scratch_free(t->per_thread, t->capper * sizeof *v);
		}
		t->per_thread = v;
		t->capper = cap;
	}
	t->per_thread[t->nper++] = (struct thread_site){ tid, s->site, s->allocs, s->bytes,
	                                                 s->est_allocs, s->est_bytes };
}

static int by_bytes(const void *a, const void *b)
{
	uint64_t x = ((const struct site_total *)a)->bytes, y = ((const struct site_total *)b)->bytes;
	return x < y ? 1 : x > y ? -1 : 0;
}

static int by_est_bytes(const void *a, const void *b)
{
	double x = ((const struct site_total *)a)->est_bytes;
	double y = ((const struct site_total *)b)->est_bytes;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* A live block that ALLOCSPY_SAMPLE sampled, in its stack's estimate. */
static void add_in_use(struct site_table *t, uintptr_t site, uint64_t size)
{
	struct site_total *s = site_slot(t, site);
	if (s != NULL) {
		double w = asp__sample_weight(size);
		s->est_in_use_blocks += w;
		s->est_in_use_bytes += w * (double)size;
	}
}

static void add_sampled_block(void *arg, const struct asp_sample_block *b)
{
	add_in_use(arg, b->site, b->size);
}

/* The per-stack totals, largest first, and what each thread allocated
 * from each stack: into t, t->v[0..t->n) sorted. Returns 0 or -ENOMEM. */
static int site_totals(struct site_table *t, const struct figures *f,
                       const struct asp_snapshot_list *sl)
{
	/* Room for every site the threads know, twice over: a process with
	 * few stacks (a short child) must not fault in 100 MiB to list them,
	 * and one with millions gets them all. */
	size_t sites = 0;
	asp__threads_sites(count_site, &sites);
	size_t slots = 64;
	while (slots < 2 * sites + 64)
		slots *= 2;
	memset(t, 0, sizeof *t);
	t->mask = slots - 1;
	t->v = asp__scratch_alloc(slots * sizeof *t->v);
	t->capper = sites + sites / 8 + 64;
	t->per_thread = asp__scratch_alloc(t->capper * sizeof *t->per_thread);
	if (t->v == NULL || t->per_thread == NULL)
		return -ENOMEM;
	asp__threads_sites(add_site, t);
	int sampled = asp__sample_mean != 0;
	for (size_t i = 0; i < f->nentries; i++) {
		uintptr_t site = f->entries[i].site;
		if (sampled) {
			if (asp__site_sampled(site))
				add_in_use(t, site, f->entries[i].size);
			continue;
		}
		struct site_total *s = site ? site_slot(t, site) : NULL;
		if (s != NULL) {
			s->in_use_blocks++;
			s->in_use_bytes += f->entries[i].size;
		}
	}
	if (sampled && !f->tracked)
		asp__sample_blocks(add_sampled_block, t);
	const struct asp_snapshot *peak = sl->peak;
	for (uint32_t i = 0; peak != NULL && i < peak->ndetail; i++) {
		struct site_total *s = site_slot(t, peak->detail[i].site);
		if (s != NULL) {
			s->peak_bytes = peak->detail[i].bytes;
			s->peak_blocks = peak->detail[i].blocks;
		}
	}
	/* Gather the used slots at the front, largest first. */
	size_t used = 0;
	for (size_t j = 0; j <= t->mask; j++)
		if (t->v[j].site != 0)
			t->v[used++] = t->v[j];
	t->n = used;
	asp__sort(t->v, used, sizeof *t->v, sampled ? by_est_bytes : by_bytes);
	return 0;
}

static void site_totals_free(struct site_table *t)
{
	if (t->v != NULL)
		asp__scratch_free(t->v, (t->mask + 1) * sizeof *t->v);
	if (t->per_thread != NULL)
		asp__scratch_free(t->per_thread, t->capper * sizeof *t->per_thread);
}

/* "thread_stacks" and "stack_stats"; with ALLOCSPY_SAMPLE, the estimates,
 * named est_*. */
static void site_totals_out(struct out *o, const struct site_table *t, struct stack_index *x,
                            int tracked)
{
	int sampled = asp__sample_mean != 0;
	out_str(o, ",\n \"" ASP_KEY_THREAD_STACKS "\": [");
	for (size_t i = 0; i < t->nper; i++) {
		const struct thread_site *p = &t->per_thread[i];
		out_str(o, i == 0 ? "\n  {" : ",\n  {");
		out_key(o, "tid", (uint64_t)p->tid, 1);
		out_key(o, "stack", stack_number(x, p->site), 0);
		if (sampled) {
			out_key(o, "samples", p->allocs, 0);
			out_key(o, "est_allocs", asp__sample_round(p->est_allocs), 0);
			out_key(o, "est_bytes", asp__sample_round(p->est_bytes), 0);
		} else {
			out_key(o, "allocs", p->allocs, 0);
			out_key(o, "bytes", p->bytes, 0);
		}
		out_str(o, "}");
	}
	out_str(o, t->nper > 0 ? "\n ]" : "]");
	out_str(o, ",\n \"" ASP_KEY_STACK_STATS "\": [");
	for (size_t i = 0; i < t->n; i++) {
		const struct site_total *s = &t->v[i];
		out_str(o, i == 0 ? "\n  {" : ",\n  {");
		out_key(o, "stack", stack_number(x, s->site), 1);
		if (sampled) {
			out_key(o, "samples", s->allocs, 0);
			out_key(o, "est_allocs", asp__sample_round(s->est_allocs), 0);
			out_key(o, "est_bytes", asp__sample_round(s->est_bytes), 0);
			out_key(o, "est_in_use_blocks", asp__sample_round(s->est_in_use_blocks), 0);
			out_key(o, "est_in_use_bytes", asp__sample_round(s->est_in_use_bytes), 0);
			out_key(o, "est_temporary", asp__sample_round(s->est_temporary), 0);
			if (tracked) {
				out_key(o, "est_peak_bytes", s->peak_bytes, 0);
				out_key(o, "est_peak_blocks", s->peak_blocks, 0);
			}
		} else {
			out_key(o, "allocs", s->allocs, 0);
			out_key(o, "bytes", s->bytes, 0);
			out_key(o, "in_use_blocks", s->in_use_blocks, 0);
			out_key(o, "in_use_bytes", s->in_use_bytes, 0);
			out_key(o, "temporary", s->temporary, 0);
			out_key(o, "peak_bytes", s->peak_bytes, 0);
			out_key(o, "peak_blocks", s->peak_blocks, 0);
		}
		out_str(o, "}");
	}
	out_str(o, t->n > 0 ? "\n ]" : "]");
}

/* The heap over time (track mode). */
static void snapshots_json(json_t *root, const struct asp_snapshot_list *sl,
                           struct stack_index *x)
{
	const struct asp_snapshot *v = sl->v;
	size_t n = sl->n;
	if (n == 0)
		return;
	json_t *a = json_array();
	for (size_t i = 0; i < n; i++) {
		json_t *s = json_pack("{s:f,s:o,s:o,s:o,s:o}", "t_s", since_start(v[i].t_ns),
		                      "bytes_allocated", jint(v[i].allocated), "bytes_freed",
		                      jint(v[i].freed), "in_use_bytes",
		                      jint(v[i].in_use > 0 ? (uint64_t)v[i].in_use : 0),
		                      "in_use_blocks", jint(v[i].blocks > 0 ? (uint64_t)v[i].blocks : 0));
		if (v[i].peak)
			json_object_set_new(s, "peak", json_true());
		if (v[i].detail != NULL) {
			json_t *d = json_array();
			const char *bytes = asp__sample_mean != 0 ? "est_bytes" : "bytes";
			const char *blocks = asp__sample_mean != 0 ? "est_blocks" : "blocks";
			for (uint32_t k = 0; k < v[i].ndetail; k++)
				json_array_append_new(d, json_pack("{s:o,s:o,s:o}", "stack",
				                      jint(stack_number(x, v[i].detail[k].site)),
				                      bytes, jint(v[i].detail[k].bytes),
				                      blocks, jint(v[i].detail[k].blocks)));
			json_object_set_new(s, "detail", d);
		}
		json_array_append_new(a, s);
	}
	json_object_set_new(root, ASP_KEY_SNAPSHOTS, a);
	json_object_set_new(root, ASP_KEY_SNAPSHOT_INFO, json_pack("{s:i,s:s}", "max", asp__opt.snapshots,
	                    "detail", asp__opt.backtrace > 1 ? "stacks" : "callers"));
}

static void leaks_json(json_t *root, const struct figures *f)
{
	const struct asp_leak_result *l = &f->leaks;
	json_t *leaks = json_object();
	for (int k = 0; k < ASP_LEAK_RECORD_KINDS; k++)
		json_object_set_new(leaks, asp_leak_key[k], bytes_blocks(l->bytes[k], l->blocks[k]));
	json_object_set_new(leaks, asp_leak_key[ASP_LEAK_SUPPRESSED], bytes_blocks(l->suppressed_bytes, l->suppressed_blocks));
	json_object_set_new(root, ASP_KEY_LEAKS, leaks);
}

/* ", KEY: "S"", S as a JSON string (jansson escapes it); nothing when S
 * is not UTF-8. */
static void out_string_key(struct out *o, const char *key, const char *s)
{
	json_t *j = json_string(s);
	char *text = j != NULL ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	if (text == NULL)
		return;
	out_str(o, ", \"");
	out_str(o, key);
	out_str(o, "\": ");
	out_str(o, text);
	asp__heap_free_quiet(text);
}

/* "loss_records", one a line: there is one per stack and leak kind. */
static void loss_records_out(struct out *o, const struct figures *f, struct stack_index *x)
{
	const struct asp_leak_result *l = &f->leaks;
	out_str(o, ",\n \"" ASP_KEY_LOSS_RECORDS "\": [");
	for (size_t i = 0; i < l->nrecords; i++) {
		const struct asp_loss_record *r = &l->records[i];
		out_str(o, i == 0 ? "\n  {\"kind\": \"" : ",\n  {\"kind\": \"");
		out_str(o, asp_leak_kind_name[r->kind]);
		out_str(o, "\"");
		out_key(o, "bytes", r->bytes, 0);
		out_key(o, "blocks", r->blocks, 0);
		out_key(o, "indirect_bytes", r->indirect_bytes, 0);
		out_key(o, "indirect_blocks", r->indirect_blocks, 0);
		out_key(o, "stack", stack_number(x, r->site), 0);
		out_str(o, r->suppressed ? ", \"suppressed\": true" : ", \"suppressed\": false");
		if (r->suppression)
			out_string_key(o, "suppression", r->suppression);
		/* ALLOCSPY_SAMPLE: whether the stack is the blocks' own, or
		 * only their caller's frame. */
		if (asp__sample_mean != 0)
			out_str(o, asp__site_sampled(r->site) ? ", \"sampled\": true"
			                                      : ", \"sampled\": false");
		const char *names[3];
		int nn = asp__fn_frames(r->fn, names);
		out_str(o, ", \"alloc_fn\": \"");
		out_str(o, names[0]);
		out_str(o, "\"");
		out_key(o, "alloc_pc", (uintptr_t)asp__fn_address(r->fn), 0);
		out_str(o, ", \"alloc_stack\": [");
		for (int k = 0; k < nn; k++) {
			out_str(o, k == 0 ? "\"" : ", \"");
			out_str(o, names[k]);
			out_str(o, "\"");
		}
		out_str(o, "]}");
	}
	out_str(o, l->nrecords > 0 ? "\n ]" : "]");
}

/* The GNU build-id of a loaded object, as hex, from its PT_NOTE segments. */
static void build_id(const struct dl_phdr_info *info, char *out, size_t size)
{
	out[0] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof *nh;
			const unsigned char *desc = (const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
				static const char hex[] = "0123456789abcdef";
				size_t n = 0;
				for (unsigned j = 0; j < nh->n_descsz && n + 2 < size; j++) {
					out[n++] = hex[desc[j] >> 4];
					out[n++] = hex[desc[j] & 15];
				}
				out[n] = '\0';
				return;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

/* The modules as one listing saw them. The listing's callback copies what
 * the dump needs and nothing more: it allocates nothing and takes no lock,
 * since a fork waits for it with no deadline while it holds the loader's
 * list (thread.h, asp__loader_enter); the JSON is built after. */
struct module {
	size_t path;		/* offset in the pool */
	uintptr_t base, lo, hi;
	char build_id[128];
};

struct modules {
	struct asp_thread *t;
	struct module *m;
	size_t n, max;
	char *pool;
	size_t used, cap;
	int full;		/* more than fits: listed again, with room */
};

static int module_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct modules *ms = arg;
	(void)size;
	const char *path = info->dlpi_name;
	if (path == NULL || path[0] == '\0')
		path = ms->n == 0 ? asp__opt.exe : NULL;
	if (path == NULL || path[0] != '/')
		return 0;	/* the vDSO and unnamed objects */
	size_t len = strlen(path) + 1;
	if (ms->n == ms->max || len > ms->cap - ms->used) {
		ms->full = 1;
		return 1;
	}
	struct module *m = &ms->m[ms->n++];
	memcpy(ms->pool + ms->used, path, len);
	m->path = ms->used;
	ms->used += len;
	m->base = info->dlpi_addr;
	m->lo = UINTPTR_MAX;
	m->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
		m->lo = s < m->lo ? s : m->lo;
		m->hi = e > m->hi ? e : m->hi;
	}
	build_id(info, m->build_id, sizeof m->build_id);
	return 0;
}

/* The "modules" array: every object the loader has, as dl_iterate_phdr
 * lists them. */
static json_t *modules_json(void)
{
	json_t *a = json_array();
	struct modules ms = { .t = asp__thread_self() };
	for (size_t max = 256;; max *= 4) {
		size_t bytes = max * sizeof(struct module) + max * 256;
		void *mem = asp__scratch_alloc(bytes);
		if (mem == NULL)
			return a;
		ms.m = mem;
		ms.max = max;
		ms.pool = (char *)mem + max * sizeof(struct module);
		ms.cap = max * 256;
		ms.n = ms.used = 0;
		ms.full = 0;
		asp__loader_enter(ms.t);
		asp__loader_list(module_cb, &ms);
		asp__loader_leave(ms.t);
		if (!ms.full || max >= (1u << 16)) {
			for (size_t i = 0; i < ms.n; i++) {
				const struct module *m = &ms.m[i];
				json_array_append_new(a, json_pack("{s:s,s:o,s:o,s:o,s:s}",
				                      "path", ms.pool + m->path, "base", jint(m->base),
				                      "start", jint(m->lo), "end", jint(m->hi),
				                      "build_id", m->build_id));
			}
			asp__scratch_free(mem, bytes);
			return a;
		}
		asp__scratch_free(mem, bytes);
	}
}

static const char *const error_kinds[ASP_ERR_KINDS] = {
	[ASP_ERR_INVALID_FREE] = "invalid_free",
	[ASP_ERR_MISMATCHED_FREE] = "mismatched_free",
	[ASP_ERR_FISHY] = "fishy_value",
	[ASP_ERR_INVALID_READ] = "invalid_read",
	[ASP_ERR_INVALID_WRITE] = "invalid_write",
	[ASP_ERR_OVERWRITTEN] = "overwritten",
};

/* The frames valgrind shows for a call of fn, above the program's (its
 * replacement, then what called it), and the shim's interposer's address:
 * into o as PREFIX_pc and PREFIX_frames. */
static void fn_frames_json(json_t *o, const char *prefix, unsigned fn)
{
	const char *names[3];
	int nn = asp__fn_frames(fn, names);
	json_t *a = json_array();
	for (int k = 0; k < nn; k++)
		json_array_append_new(a, json_string(names[k]));
	char key[32];
	snprintf(key, sizeof key, "%s_pc", prefix);
	json_object_set_new(o, key, jint((uintptr_t)asp__fn_address(fn)));
	snprintf(key, sizeof key, "%s_frames", prefix);
	json_object_set_new(o, key, a);
}

static unsigned freer_of(unsigned fn);

/* Track mode: the heap errors valgrind's ERROR SUMMARY counts (errors.h),
 * the suppressed ones left out, and the summary. */
static void errors_json(json_t *root, const struct figures *f, struct stack_index *x)
{
	size_t n;
	uint64_t total;
	const struct asp_heap_error *v = asp__errors(&n, &total);
	json_t *a = json_array();
	for (size_t i = 0; v != NULL && i < n; i++) {
		const struct asp_heap_error *e = &v[i];
		if (e->suppressed)
			continue;
		int access = e->kind == ASP_ERR_INVALID_READ || e->kind == ASP_ERR_INVALID_WRITE;
		json_t *o = json_pack("{s:s,s:o}", "kind", error_kinds[e->kind], "count", jint(e->count));
		if (access) {
			json_object_set_new(o, "size", jint(e->access));
			json_object_set_new(o, "stack", jint(stack_number(x, (uintptr_t)e | ERROR_PCS)));
		} else {
			json_object_set_new(o, "function", json_string(asp__fn_names[e->fn]));
			json_object_set_new(o, "stack", jint(stack_number(x, e->site)));
			fn_frames_json(o, "call", e->fn);
		}
		if (e->kind == ASP_ERR_FISHY) {
			json_object_set_new(o, "argument", json_string(e->arg));
			json_object_set_new(o, "value", json_integer((json_int_t)e->value));
			json_array_append_new(a, o);
			continue;
		}
		json_object_set_new(o, "address", jint(e->addr));
		static const char *const where[] = {
			[ASP_AT_NONE] = "unknown", [ASP_AT_BLOCK] = "block", [ASP_AT_FREED] = "freed",
			[ASP_AT_STACK] = "stack", [ASP_AT_ELSEWHERE] = "unknown", [ASP_AT_AFTER] = "after",
			[ASP_AT_BEFORE] = "before",
		};
		const char *w = where[e->where];
		uintptr_t start = 0;
		const char *sym = e->where == ASP_AT_ELSEWHERE ? asp__symbols_data(e->addr, &start) : NULL;
		if (sym != NULL) {
			w = "global";
			json_object_set_new(o, "symbol", json_string(sym));
			json_object_set_new(o, "offset", jint(e->addr - start));
		}
		json_object_set_new(o, "where", json_string(w));
		if (e->where == ASP_AT_STACK)
			json_object_set_new(o, "thread", jint(e->thread));
		if (e->where == ASP_AT_BLOCK || e->where == ASP_AT_FREED || e->where == ASP_AT_AFTER ||
		    e->where == ASP_AT_BEFORE) {
			json_t *b = json_pack("{s:o,s:o,s:o,s:s,s:o}", "address", jint(e->block),
			                      "offset", json_integer((json_int_t)(e->addr - e->block)),
			                      "size", jint(e->size),
			                      "function", asp__fn_names[e->block_fn],
			                      "alloc_stack", jint(stack_number(x, e->alloc_site)));
			fn_frames_json(b, "alloc", e->block_fn);
			if (e->where == ASP_AT_FREED) {
				json_object_set_new(b, "free_stack", jint(stack_number(x, e->free_site |
				                    (asp__opt.backtrace > 1 || asp__sample_mean != 0 ?
				                     CALLER_ONLY : 0))));
				fn_frames_json(b, "free", freer_of(e->block_fn));
			}
			json_object_set_new(o, "block", b);
		}
		json_array_append_new(a, o);
	}
	json_object_set_new(root, ASP_KEY_ERRORS, a);
	uint64_t errors, contexts, suppressed, scontexts;
	error_summary(f, &errors, &contexts, &suppressed, &scontexts);
	json_object_set_new(root, ASP_KEY_ERROR_SUMMARY, json_pack("{s:o,s:o,s:o,s:o}", "errors", jint(errors),
	                    "contexts", jint(contexts), "suppressed", jint(suppressed),
	                    "suppressed_contexts", jint(scontexts)));
}

/* Writes the dump to fd: the parts of a fixed size with jansson, then
 * the arrays that grow with the stacks, streamed. Returns 0 or an errno. */
static int dump_out(int fd, const struct figures *f)
{
	struct out *o = asp__scratch_alloc(sizeof *o);
	if (o == NULL)
		return ENOMEM;
	o->fd = fd;
	json_t *root = json_pack("{s:s,s:i}", ASP_KEY_FORMAT, ASP_DUMP_FORMAT, ASP_KEY_VERSION,
	                         ASP_DUMP_VERSION);
	json_object_set_new(root, ASP_KEY_DUMP, dump_info_json(f));
	json_object_set_new(root, ASP_KEY_PROGRAM, program_json());
	json_object_set_new(root, ASP_KEY_TIME, time_json());
	json_object_set_new(root, ASP_KEY_OPTIONS, options_json());
	json_object_set_new(root, ASP_KEY_HEAP, heap_json(f));
	json_object_set_new(root, ASP_KEY_FUNCTIONS, functions_json(f));
	json_object_set_new(root, ASP_KEY_HISTOGRAM, histogram_json(f));
	threads_json(root);
	json_object_set_new(root, ASP_KEY_REFS, refs_json(f));
	if (asp__sample_mean != 0)
		json_object_set_new(root, ASP_KEY_SAMPLE, json_pack("{s:o,s:o}", "mean_bytes",
		                    jint(asp__sample_mean), "seed", jint(asp__sample_seed)));
	struct stack_index x = { 0 };
	struct asp_snapshot_list sl = { 0 };
	struct site_table t = { 0 };
	int stacks = f->leaks_ran || f->tracked || asp__sample_mean != 0;
	int totals = (asp__opt.backtrace > 1 && f->tracked) || asp__sample_mean != 0;
	if (stacks) {
		stack_index_init(&x, (f->leaks_ran ? f->leaks.nrecords : 0) +
		                 (size_t)asp__opt.snapshots * 8);
		if (f->leaks_ran)
			leaks_json(root, f);
		if (f->tracked)
			errors_json(root, f, &x);
		if (asp__guard_mean != 0) {
			uint64_t guarded, live;
			asp__guard_figures(&guarded, &live);
			json_object_set_new(root, ASP_KEY_GUARD, json_pack("{s:o,s:o,s:o,s:o}", "mean",
			                    jint(asp__guard_mean), "slots", jint(ASP_GUARD_SLOTS),
			                    "guarded", jint(guarded), "live", jint(live)));
		}
		if (f->tracked) {
			asp__snapshots(&sl, f->t_ns, f->tot.bytes_allocated, f->tot.bytes_freed,
			               f->entries, f->nentries);
			snapshots_json(root, &sl, &x);
		}
	}
	json_t *rss = f->reason == REASON_EXIT ? asp__rss_json() : NULL;
	if (rss != NULL)
		json_object_set_new(root, ASP_KEY_RSS, rss);
	json_object_set_new(root, ASP_KEY_MODULES, modules_json());
	char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	size_t len = text != NULL ? strlen(text) : 0;
	/* The object's closing brace ("\n}") comes after the streamed arrays. */
	if (len >= 2 && text[len - 1] == '}') {
		out_mem(o, text, len - 2);
		if (stacks && f->leaks_ran)
			loss_records_out(o, f, &x);
		if (stacks && totals && site_totals(&t, f, &sl) == 0)
			site_totals_out(o, &t, &x, f->tracked);
		if (stacks)
			stacks_out(o, &x);
		out_str(o, "\n}\n");
		out_flush(o);
	} else {
		o->err = ENOMEM;
	}
	if (text != NULL)
		asp__heap_free_quiet(text);
	site_totals_free(&t);
	asp__snapshots_free(&sl);
	stack_index_release(&x);
	int err = o->err;
	asp__scratch_free(o, sizeof *o);
	return err;
}

/* path with "-N" before its ".json" (or at its end). */
static void variant(const char *path, unsigned n, char *out, size_t size)
{
	size_t len = strlen(path);
	size_t stem = len >= 5 && strcmp(path + len - 5, ".json") == 0 ? len - 5 : len;
	struct asp_text t = { out, 0, size - 1, -1 };
	memcpy(out, path, stem < size - 1 ? stem : size - 1);
	t.len = stem < size - 1 ? stem : size - 1;
	asp__text_str(&t, "-");
	asp__text_u64(&t, n);
	asp__text_str(&t, path + stem);
	out[t.len] = '\0';
}

/* Gives the unnamed file fd the name path (link(2): never over a file),
 * through /proc/self/fd, else by AT_EMPTY_PATH (which needs a
 * capability). 0 or -1 with errno. */
static int link_fd(int fd, const char *path)
{
	char proc[40];
	struct asp_text t = { proc, 0, sizeof proc - 1, -1 };
	asp__text_str(&t, "/proc/self/fd/");
	asp__text_u64(&t, (uint64_t)fd);
	proc[t.len] = '\0';
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno != ENOENT)
		return -1;
	return linkat(fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
}

/* The first dump that cannot be written says why, once. */
static void dump_warn(const char *path, int err)
{
	static int warned;
	if (warned++)
		return;
	char why[160] = ": ";
	const char *msg = strerror(err);
	size_t len = strlen(msg) < sizeof why - 3 ? strlen(msg) : sizeof why - 3;
	memcpy(why + 2, msg, len);
	why[2 + len] = '\0';
	asp__warn("cannot write the dump ", path, why);
}

/* A path that names a character device or a pipe (/dev/null, /dev/stdout,
 * a FIFO a reader waits on) has no name to take and nothing in it to keep:
 * the dump is written into it as it is. Through a symbolic link only under
 * /dev and /proc (/dev/stdout, /proc/self/fd/N): a link planted elsewhere
 * cannot turn a dump into a write to a device. Such a link may lead to a
 * regular file (standard output redirected to one): the dump is appended
 * to it, after what the program wrote. Opened without waiting (a FIFO
 * with no reader is an error, ENXIO, not a program that never ends).
 * Returns 1 when path is such a file and *err the write's errno (or 0);
 * 0 when it is not. */
static int write_dump_stream(const char *path, const struct figures *f, int *err)
{
	struct stat st;
	int linked = 0;
	if (lstat(path, &st) != 0)
		return 0;
	if (S_ISLNK(st.st_mode)) {
		if ((strncmp(path, "/dev/", 5) != 0 && strncmp(path, "/proc/", 6) != 0) ||
		    stat(path, &st) != 0)
			return 0;
		linked = 1;
	}
	int append = linked && S_ISREG(st.st_mode);
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !append)
		return 0;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (append ? O_APPEND : 0));
	*err = fd < 0 ? errno : 0;
	if (fd >= 0) {
		int fl = fcntl(fd, F_GETFL);
		if (fl >= 0)
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		*err = dump_out(fd, f);
		if (close(fd) != 0 && *err == 0)
			*err = errno;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 1;
}

/* Writes the dump, then gives it its name. The file is made without a
 * name (O_TMPFILE, in the dump's directory) and linked in only once it is
 * whole: a reader never sees half a dump, and a process killed while it
 * writes (SIGKILL, which nothing blocks) leaves no file behind. The first
 * dump takes the name with link(2), which never replaces a file (a taken
 * name gets a "-N" suffix); a later one (ALLOCSPY_INTERVAL_MS, then at
 * exit) replaces this process's own dump: the old one is unlinked and the
 * new one linked in its place, two system calls with every signal
 * blocked (a SIGKILL between them leaves no dump, never a stray file). A
 * file system without O_TMPFILE gets a named temporary file, renamed over
 * the dump. Returns 0 or an errno. */
static int write_dump(const struct figures *f)
{
	if (asp__opt.output[0] == '\0')
		return 0;
	char path[ASP_PATH_MAX], tmp[ASP_PATH_MAX + 32], name[ASP_PATH_MAX + 16];
	asp__expand_pid(asp__opt.output, path, sizeof path);
	int err;
	if (write_dump_stream(path, f, &err)) {
		if (err != 0)
			dump_warn(path, err);
		return err;
	}
	/* The directory, for O_TMPFILE. */
	memcpy(tmp, path, strlen(path) + 1);
	char *slash = strrchr(tmp, '/');
	if (slash == tmp)
		slash[1] = '\0';
	else if (slash != NULL)
		*slash = '\0';

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int named = 0;
	int fd = open(tmp, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		variant(path, (unsigned)getpid(), tmp, sizeof tmp);
		size_t tl = strlen(tmp);
		memcpy(tmp + tl, ".tmp", 5);
		fd = open_report(tmp, O_EXCL);
		named = fd >= 0;
	}
	err = fd < 0 ? errno : dump_out(fd, f);
	if (err == 0 && g_dump_name[0] != '\0') {
		if (named) {
			if (rename(tmp, g_dump_name) != 0)
				err = errno;
		} else if ((unlink(g_dump_name) != 0 && errno != ENOENT) ||
		           link_fd(fd, g_dump_name) != 0) {
			/* Gone and taken meanwhile: a name as the first time. */
			if (errno == EEXIST)
				g_dump_name[0] = '\0';
			else
				err = errno;
		}
	}
	if (err == 0 && g_dump_name[0] == '\0') {
		memcpy(name, path, strlen(path) + 1);
		for (unsigned n = 1; (named ? link(tmp, name) : link_fd(fd, name)) != 0; n++) {
			if (errno != EEXIST || n > 1000) {
				err = errno;
				break;
			}
			variant(path, n, name, sizeof name);
		}
		if (err == 0)
			memcpy(g_dump_name, name, strlen(name) + 1);
	}
	if (named)
		unlink(tmp);
	if (fd >= 0 && close(fd) != 0 && err == 0)
		err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err != 0)
		dump_warn(path, err);
	return err;
}

/* Periodic dumps (ALLOCSPY_INTERVAL_MS) ------------------------------------ */

/* The tid of the thread writing a periodic dump, or 0. */
static pid_t g_dumping;

void asp__periodic(struct asp_thread *t)
{
	t->epoch = asp_atomic_load_relaxed(&asp__epoch);
	if (asp__opt.interval_ms <= 0 || t->depth != 0 || t->chg != 0)
		return;
	uint64_t now = asp_now_ns(CLOCK_MONOTONIC);
	uint64_t last = asp_atomic_load_relaxed(&g_last_dump_ns);
	/* Signed: a slow dump puts last ahead of its own end (below). */
	if ((int64_t)(now - last) < (int64_t)asp__opt.interval_ms * 1000000)
		return;
	pid_t me = asp_gettid(), none = 0;
	if (!__atomic_compare_exchange_n(&g_dumping, &none, me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	asp_atomic_store_relaxed(&g_last_dump_ns, now);
	int saved = errno;
	t->depth++;
	/* The next dump is due an interval after this one's figures were
	 * taken (its t_s), which may be well after now when gathering waits
	 * for other threads: two dumps' own times are never closer than the
	 * interval. */
	uint64_t taken = now;
	struct figures *f = asp__scratch_alloc(sizeof *f);
	if (f != NULL) {
		gather(f, REASON_INTERVAL, asp__opt.backtrace > 1);
		taken = f->t_ns;
		if (asp_atomic_load_acquire(&asp__state) > 0)
			write_dump(f);
		figures_free(f);
		asp__scratch_free(f, sizeof *f);
	}
	/* A dump that took D ns puts the next one at least D after its end:
	 * with a short interval and a large heap, the program still gets
	 * half of the time. */
	uint64_t took = asp_now_ns(CLOCK_MONOTONIC) - now, every = (uint64_t)asp__opt.interval_ms * 1000000u;
	asp_atomic_store_relaxed(&g_last_dump_ns, 2 * took > every ? taken + 2 * took - every : taken);
	t->depth--;
	errno = saved;
	__atomic_store_n(&g_dumping, 0, __ATOMIC_RELEASE);
}

/* The exit report ------------------------------------------------------------ */

/* The tid of the thread making the exit report, or 0. */
static pid_t g_finishing;

static int g_finished;		/* the report is written */

pid_t asp__report_begun(void)
{
	return asp_atomic_load_acquire(&g_finishing);
}

int asp__report_done(void)
{
	return asp_atomic_load_acquire(&g_finished);
}

void asp__finish(void)
{
	pid_t me = asp_gettid(), none = 0;
	if (!__atomic_compare_exchange_n(&g_finishing, &none, me, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return;
	/* A signal that comes now (a pool's SIGTERM to a worker that is
	 * ending) waits until the dump and the text are both written: a
	 * process leaves both or neither. */
	sigset_t all, blocked;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &blocked);
	if (asp_atomic_load_acquire(&asp__state) == ASP_STATE_START)
		asp__init();
	int saved = errno;
	/* A periodic dump under way in another thread finishes first. */
	for (;;) {
		pid_t d = asp_atomic_load_acquire(&g_dumping);
		if (d == 0 || d == me)
			break;
		sched_yield();
	}
	struct figures *f = asp__scratch_alloc(sizeof *f);
	if (f == NULL) {
		asp__counting_stop(0);
		pthread_sigmask(SIG_SETMASK, &blocked, NULL);
		return;
	}
	int sig = asp__fatal_signal();
	asp__liveview_end();
	gather(f, sig ? REASON_SIGNAL : REASON_EXIT, 1);
	/* For the dump alone; before the leak scan reads the blocks: a read
	 * of a page never written would map one. */
	if (!sig && f->tracked && asp__opt.output[0] != '\0')
		asp__rss_measure(f->entries, f->nentries);
	leak_check(f);
	size_t nerrors;
	uint64_t all_errors;
	struct asp_heap_error *errors = asp__errors(&nerrors, &all_errors);
	asp__suppress_errors(errors, nerrors);
	asp_atomic_store_release(&asp__frozen, 0);
	write_dump(f);
	write_text(f);

	/* The process the user started, unless every traced one is asked for
	 * (a forked child has another pid; a program exec'd in its place
	 * asks its parent again). */
	if (f->leaks_ran && asp__opt.error_exitcode >= 0 &&
	    (asp__opt.error_children || getpid() == asp__opt.started)) {
		int kinds = 0;
		for (int k = 0; k < ASP_LEAK_RECORD_KINDS; k++)
			if (f->leaks.blocks[k] > 0)
				kinds |= 1 << k;
		if (kinds & asp__opt.error_kinds)
			g_exit_status = asp__opt.error_exitcode;
	}
	/* valgrind's --error-exitcode counts the heap errors too */
	uint64_t heap_errors, contexts, suppressed, scontexts;
	asp__errors_summary(&heap_errors, &contexts, &suppressed, &scontexts);
	if (f->tracked && heap_errors > 0 && asp__opt.error_exitcode >= 0)
		g_exit_status = asp__opt.error_exitcode;
	figures_free(f);
	asp_atomic_store_release(&g_finished, 1);
	pthread_sigmask(SIG_SETMASK, &blocked, NULL);
	errno = saved;
}

/* fork's child: it is its own process, with a dump of its own; a report or
 * a periodic dump that another thread was making is not its. */
void asp__report_atfork_child(void)
{
	g_dump_name[0] = '\0';
	g_dumping = 0;
	g_finished = 0;
	if (g_finishing != 0) {
		g_finishing = 0;
		asp__counting_restart();
	}
}
