/* report.c - what the shim leaves: valgrind's HEAP SUMMARY and LEAK SUMMARY
 * on the shim's private stderr (or ALLOCSPY_LOG_FILE), and the JSON dump, at
 * exit, on a fatal signal, and every ALLOCSPY_INTERVAL_MS.
 *
 * The figures are read with the whole table held (live.c), so counts and
 * blocks agree. The dump is built with a jansson of the shim's own (linked
 * in, its memory from the arena): the report never takes memory from the
 * program's heap, so it can run in a signal handler that interrupted the
 * program's allocator. Once the exit report begins the shim stops counting
 * (asp__state 2). */
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
#include <time.h>
#include <unistd.h>

#include "account.h"
#include "arena.h"
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
#include "symbols.h"
#include "text.h"

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
		asp_atomic_store_release(&asp__frozen, asp_gettid());
		asp_atomic_store_release(&asp__fast, 0);
		asp_atomic_store_release(&asp__state, 2);
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

static void line(struct asp_text *t, const char *s)
{
	asp__text_room(t, 4096);
	asp__text_prefix(t, (long)getpid());
	asp__text_str(t, s);
}

static void bytes_in_blocks(struct asp_text *t, const char *label, uint64_t bytes, uint64_t blocks)
{
	line(t, label);
	asp__text_commas(t, bytes);
	asp__text_str(t, " bytes in ");
	asp__text_commas(t, blocks);
	asp__text_str(t, " blocks\n");
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
 * them; returns whether main was reached (the stack is shown down to
 * main, as valgrind does). The shim's own frames are left out. */
static int frame_lines(struct asp_text *t, uintptr_t pc)
{
	asp_dwline_t l[16];
	if (asp__symbols_is_shim(pc))
		return 0;
	size_t n = asp__symbolize_lines(pc - 1, l, ASP_ARRAY_SIZE(l));
	for (size_t k = 0; k < n; k++) {
		asp__text_room(t, 4096 + (l[k].fn ? strlen(l[k].fn) : 0) +
			       (l[k].module ? strlen(l[k].module) : 0));
		put_frame(t, "   by", pc, &l[k], NULL);
		if (!l[k].inlined && l[k].fn != NULL && strcmp(l[k].fn, "main") == 0)
			return 1;
	}
	return 0;
}

static const char *const kind_phrases[ASP_LEAK_KINDS] = {
	"definitely lost", "indirectly lost", "possibly lost", "still reachable"
};

/* ALLOCSPY_LEAK_CHECK=full: the definite and possible loss records, as
 * memcheck prints them; the program's frames come from its symbol tables
 * (allocspy-report adds file:line from the dump). */
static void loss_records_text(struct asp_text *t, const struct asp_leak_result *l)
{
	for (size_t i = 0; i < l->nrecords; i++) {
		const struct asp_loss_record *r = &l->records[i];
		if (r->suppressed || (r->kind != ASP_LEAK_DEFINITE && r->kind != ASP_LEAK_POSSIBLE))
			continue;
		line(t, "");
		if (r->indirect_bytes > 0) {
			asp__text_commas(t, r->bytes + r->indirect_bytes);
			asp__text_str(t, " (");
			asp__text_commas(t, r->bytes);
			asp__text_str(t, " direct, ");
			asp__text_commas(t, r->indirect_bytes);
			asp__text_str(t, " indirect)");
		} else {
			asp__text_commas(t, r->bytes);
		}
		asp__text_str(t, " bytes in ");
		asp__text_commas(t, r->blocks);
		asp__text_str(t, " blocks are ");
		asp__text_str(t, kind_phrases[r->kind]);
		asp__text_str(t, " in loss record ");
		asp__text_commas(t, i + 1);
		asp__text_str(t, " of ");
		asp__text_commas(t, l->nrecords);
		asp__text_str(t, "\n");
		/* The interposer stands for valgrind's replacement: "at malloc",
		 * then "by strdup" for the functions that called it. */
		const char *names[3];
		int nn = asp__alloc_frames(r->fn, names);
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

/* memcheck's "of which reachable via heuristic" lines. */
static void heuristic_lines(struct asp_text *t, const struct asp_leak_result *l)
{
	static const char *const names[4] = {
		"stdstring          : ", "length64           : ",
		"newarray           : ", "multipleinheritance: ",
	};
	int any = 0;
	for (int h = 0; h < 4; h++)
		any |= l->heur_blocks[h] > 0;
	if (!any)
		return;
	line(t, "                      of which reachable via heuristic:\n");
	for (int h = 0; h < 4; h++) {
		if (l->heur_blocks[h] == 0)
			continue;
		line(t, "                        ");
		asp__text_str(t, names[h]);
		asp__text_commas(t, l->heur_bytes[h]);
		asp__text_str(t, " bytes in ");
		asp__text_commas(t, l->heur_blocks[h]);
		asp__text_str(t, " blocks\n");
	}
}

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
	if (f->reason == REASON_SIGNAL && f->signo > 0) {
		char name[32];
		signal_name(f->signo, name);
		line(t, "Process terminating with default action of signal ");
		asp__text_u64(t, (uint64_t)f->signo);
		asp__text_str(t, " (");
		asp__text_str(t, name);
		asp__text_str(t, ")\n");
		line(t, "\n");
	}
	line(t, "HEAP SUMMARY:\n");
	if (f->tracked) {
		bytes_in_blocks(t, "    in use at exit: ", f->in_use_bytes, f->in_use_blocks);
	} else {
		line(t, "    in use at exit: ? bytes in ");
		asp__text_commas(t, f->in_use_blocks);
		asp__text_str(t, " blocks\n");
	}
	line(t, "  total heap usage: ");
	asp__text_commas(t, f->tot.allocs);
	asp__text_str(t, " allocs, ");
	asp__text_commas(t, f->tot.frees);
	asp__text_str(t, " frees, ");
	asp__text_commas(t, f->tot.bytes_allocated);
	asp__text_str(t, " bytes allocated\n");

	if (f->tracked && asp__opt.leak_check != ASP_LEAK_NO) {
		line(t, "\n");
		if (f->in_use_blocks == 0) {
			line(t, "All heap blocks were freed -- no leaks are possible\n");
		} else if (f->leaks_ran) {
			const struct asp_leak_result *l = &f->leaks;
			if (asp__opt.leak_check == ASP_LEAK_FULL)
				loss_records_text(t, l);
			line(t, "LEAK SUMMARY:\n");
			bytes_in_blocks(t, "   definitely lost: ", l->bytes[ASP_LEAK_DEFINITE], l->blocks[ASP_LEAK_DEFINITE]);
			bytes_in_blocks(t, "   indirectly lost: ", l->bytes[ASP_LEAK_INDIRECT], l->blocks[ASP_LEAK_INDIRECT]);
			bytes_in_blocks(t, "     possibly lost: ", l->bytes[ASP_LEAK_POSSIBLE], l->blocks[ASP_LEAK_POSSIBLE]);
			bytes_in_blocks(t, "   still reachable: ", l->bytes[ASP_LEAK_REACHABLE], l->blocks[ASP_LEAK_REACHABLE]);
			heuristic_lines(t, l);
			bytes_in_blocks(t, "        suppressed: ", l->suppressed_bytes, l->suppressed_blocks);
		}
	}

	const struct asp_counts *c = &f->c;
	if (c->ref_ops[0] | c->ref_ops[1] | c->ref_ops[2] | c->ref_ops[3]) {
		line(t, "\n");
		line(t, "REF SUMMARY:\n");
		line(t, "    ref operations: ");
		asp__text_commas(t, asp_ref_acquires(c));
		asp__text_str(t, " acquires, ");
		asp__text_commas(t, asp_ref_releases(c));
		asp__text_str(t, " releases\n");
		line(t, "           objects: ");
		asp__text_commas(t, asp_ref_created(c));
		asp__text_str(t, " created, ");
		asp__text_commas(t, asp_ref_destroyed(c));
		asp__text_str(t, " destroyed\n");
		if (asp__opt.ref_cross) {
			line(t, "      cross-thread: ");
			asp__text_commas(t, c->ref_cross);
			asp__text_str(t, " operations\n");
		}
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

static const char *const kind_names[ASP_LEAK_KINDS] = {
	"definite", "indirect", "possible", "reachable"
};
static const char *const kind_keys[ASP_LEAK_KINDS] = {
	"definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable"
};

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
	return json_pack("{s:s,s:i,s:s,s:s,s:s,s:i,s:s,s:i,s:o}", "mode", modes[asp__opt.mode],
	                 "backtrace", asp__opt.backtrace, "unwind", unwinds[asp__opt.unwind],
	                 "leak_check", checks[asp__opt.leak_check], "output", asp__opt.output,
	                 "snapshots", asp__opt.snapshots, "freeres", freeres[asp__opt.freeres & 3],
	                 "interval_ms", asp__opt.interval_ms, "sample", jint(asp__sample_mean));
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
	json_object_set_new(root, "threads", a);
	if (all > n)
		json_object_set_new(root, "threads_omitted", jint(all - n));
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

/* The frames of a loss record's site as a JSON array. */
static json_t *site_frames(uintptr_t site)
{
	json_t *a = json_array();
	const uintptr_t *frames;
	uintptr_t one;
	size_t n = asp__site_frames(site, &frames, &one);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, jint(frames[i]));
	return a;
}

/* The dump's "stacks": each distinct site once, numbered in the order
 * first used, found again through a hash of the site. */
struct stack_index {
	uintptr_t *site;	/* open addressing; 0: empty */
	uint32_t *number;
	size_t mask;
	json_t *stacks;
};

static int stack_index_init(struct stack_index *x, size_t most)
{
	size_t slots = 64;
	while (slots < most * 2)
		slots *= 2;
	x->site = asp__scratch_alloc(slots * sizeof *x->site);
	x->number = asp__scratch_alloc(slots * sizeof *x->number);
	x->mask = slots - 1;
	x->stacks = json_array();
	return x->site && x->number ? 0 : -ENOMEM;
}

static void stack_index_done(struct stack_index *x, json_t *root)
{
	if (x->site)
		asp__scratch_free(x->site, (x->mask + 1) * sizeof *x->site);
	if (x->number)
		asp__scratch_free(x->number, (x->mask + 1) * sizeof *x->number);
	json_object_set_new(root, "stacks", x->stacks);
}

/* The number of site's stack in "stacks", adding it the first time. */
static size_t stack_number(struct stack_index *x, uintptr_t site)
{
	if (x->site == NULL)
		return 0;
	size_t j = (size_t)((site * 0x9E3779B97F4A7C15ull) >> 32) & x->mask;
	for (; x->site[j] != 0 || (site == 0 && x->number[j] != 0); j = (j + 1) & x->mask)
		if (x->site[j] == site)
			return x->number[j] - 1;
	x->site[j] = site;
	x->number[j] = (uint32_t)json_array_size(x->stacks) + 1;
	json_array_append_new(x->stacks, site_frames(site));
	return x->number[j] - 1;
}

/* Backtrace mode: what each stack allocated, summed over the threads,
 * what of it is in use at exit, temporary, and held at the peak; the
 * STACK_STATS_MAX largest by bytes. */
#define STACK_STATS_MAX 200
#define THREAD_STACKS_MAX 2000

struct site_total {
	uintptr_t site;
	uint64_t allocs, bytes, in_use_blocks, in_use_bytes, temporary, peak_bytes, peak_blocks;
	/* ALLOCSPY_SAMPLE: allocs counts the samples; these the estimates */
	double est_allocs, est_bytes, est_in_use_blocks, est_in_use_bytes, est_temporary;
};

struct site_table {
	struct site_total *v;
	size_t mask, n;
	json_t *per_thread;	/* thread_stacks, while threads are walked */
	struct stack_index *x;
};

static struct site_total *site_slot(struct site_table *t, uintptr_t site)
{
	size_t j = (size_t)((site * 0x9E3779B97F4A7C15ull) >> 32) & t->mask;
	while (t->v[j].site != 0 && t->v[j].site != site)
		j = (j + 1) & t->mask;
	if (t->v[j].site == 0 && t->n < t->mask) {
		t->v[j].site = site;
		t->n++;
	}
	return t->v[j].site == site ? &t->v[j] : NULL;
}

static void count_site(void *arg, pid_t tid, const struct asp_site_stat *s)
{
	(void)tid;
	(void)s;
	(*(size_t *)arg)++;
}

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
	if (t->per_thread == NULL || json_array_size(t->per_thread) >= THREAD_STACKS_MAX ||
	    s->allocs == 0)
		return;
	if (asp__sample_mean != 0)
		json_array_append_new(t->per_thread, json_pack("{s:i,s:o,s:o,s:o,s:o}", "tid", (int)tid,
		                      "stack", jint(stack_number(t->x, s->site)),
		                      "samples", jint(s->allocs),
		                      "est_allocs", jint(asp__sample_round(s->est_allocs)),
		                      "est_bytes", jint(asp__sample_round(s->est_bytes))));
	else
		json_array_append_new(t->per_thread, json_pack("{s:i,s:o,s:o,s:o}", "tid", (int)tid,
		                      "stack", jint(stack_number(t->x, s->site)),
		                      "allocs", jint(s->allocs), "bytes", jint(s->bytes)));
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

/* One stack_stats entry of a sampled run: the estimates, named est_*. */
static json_t *sampled_stat_json(const struct site_total *s, size_t stack, int tracked)
{
	json_t *o = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "stack", jint(stack),
	                      "samples", jint(s->allocs),
	                      "est_allocs", jint(asp__sample_round(s->est_allocs)),
	                      "est_bytes", jint(asp__sample_round(s->est_bytes)),
	                      "est_in_use_blocks", jint(asp__sample_round(s->est_in_use_blocks)),
	                      "est_in_use_bytes", jint(asp__sample_round(s->est_in_use_bytes)),
	                      "est_temporary", jint(asp__sample_round(s->est_temporary)));
	if (tracked) {
		json_object_set_new(o, "est_peak_bytes", jint(s->peak_bytes));
		json_object_set_new(o, "est_peak_blocks", jint(s->peak_blocks));
	}
	return o;
}

static void stack_stats_json(json_t *root, const struct figures *f, struct stack_index *x,
                             const struct asp_snapshot_list *sl)
{
	/* Room for every site the threads know, twice over: a process with
	 * few stacks (a short child) must not fault in 100 MiB to list them. */
	size_t sites = 0;
	asp__threads_sites(count_site, &sites);
	if (sl->peak != NULL)
		sites += sl->peak->ndetail;
	size_t slots = 64;
	while (slots < (1u << 20) && slots < 2 * sites + 64)
		slots *= 2;
	struct site_table t = { NULL, slots - 1, 0, json_array(), x };
	t.v = asp__scratch_alloc((t.mask + 1) * sizeof *t.v);
	if (t.v == NULL)
		return;
	asp__threads_sites(add_site, &t);
	json_object_set_new(root, "thread_stacks", t.per_thread);
	int sampled = asp__sample_mean != 0;
	for (size_t i = 0; i < f->nentries; i++) {
		uintptr_t site = f->entries[i].site;
		if (sampled) {
			if (asp__site_sampled(site))
				add_in_use(&t, site, f->entries[i].size);
			continue;
		}
		struct site_total *s = site ? site_slot(&t, site) : NULL;
		if (s != NULL) {
			s->in_use_blocks++;
			s->in_use_bytes += f->entries[i].size;
		}
	}
	if (sampled && !f->tracked)
		asp__sample_blocks(add_sampled_block, &t);
	const struct asp_snapshot *peak = sl->peak;
	for (uint32_t i = 0; peak != NULL && i < peak->ndetail; i++) {
		struct site_total *s = site_slot(&t, peak->detail[i].site);
		if (s != NULL) {
			s->peak_bytes = peak->detail[i].bytes;
			s->peak_blocks = peak->detail[i].blocks;
		}
	}
	/* Gather the used slots at the front, largest first. */
	size_t used = 0;
	for (size_t j = 0; j <= t.mask; j++)
		if (t.v[j].site != 0)
			t.v[used++] = t.v[j];
	asp__sort(t.v, used, sizeof *t.v, sampled ? by_est_bytes : by_bytes);
	json_t *a = json_array();
	for (size_t i = 0; i < used && i < STACK_STATS_MAX; i++) {
		const struct site_total *s = &t.v[i];
		if (sampled) {
			json_array_append_new(a, sampled_stat_json(s, stack_number(x, s->site), f->tracked));
			continue;
		}
		json_array_append_new(a, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "stack",
		                      jint(stack_number(x, s->site)), "allocs", jint(s->allocs),
		                      "bytes", jint(s->bytes), "in_use_blocks", jint(s->in_use_blocks),
		                      "in_use_bytes", jint(s->in_use_bytes), "temporary", jint(s->temporary),
		                      "peak_bytes", jint(s->peak_bytes), "peak_blocks", jint(s->peak_blocks)));
	}
	json_object_set_new(root, "stack_stats", a);
	if (used > STACK_STATS_MAX)
		json_object_set_new(root, "stack_stats_omitted", jint(used - STACK_STATS_MAX));
	asp__scratch_free(t.v, (t.mask + 1) * sizeof *t.v);
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
	json_object_set_new(root, "snapshots", a);
	json_object_set_new(root, "snapshot_info", json_pack("{s:i,s:s}", "max", asp__opt.snapshots,
	                    "detail", asp__opt.backtrace > 1 ? "stacks" : "callers"));
}

static void leaks_json(json_t *root, const struct figures *f, struct stack_index *x)
{
	const struct asp_leak_result *l = &f->leaks;
	json_t *leaks = json_object();
	for (int k = 0; k < ASP_LEAK_KINDS; k++)
		json_object_set_new(leaks, kind_keys[k], bytes_blocks(l->bytes[k], l->blocks[k]));
	json_object_set_new(leaks, "suppressed", bytes_blocks(l->suppressed_bytes, l->suppressed_blocks));
	json_object_set_new(root, "leaks", leaks);

	json_t *records = json_array();
	for (size_t i = 0; i < l->nrecords; i++) {
		const struct asp_loss_record *r = &l->records[i];
		size_t id = stack_number(x, r->site);
		json_t *rec = json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:b}", "kind", kind_names[r->kind],
		                        "bytes", jint(r->bytes), "blocks", jint(r->blocks),
		                        "indirect_bytes", jint(r->indirect_bytes),
		                        "indirect_blocks", jint(r->indirect_blocks), "stack", jint(id),
		                        "suppressed", r->suppressed);
		if (r->suppression)
			json_object_set_new(rec, "suppression", json_string(r->suppression));
		/* ALLOCSPY_SAMPLE: whether the stack is the blocks' own, or
		 * only their caller's frame. */
		if (asp__sample_mean != 0)
			json_object_set_new(rec, "sampled", json_boolean(asp__site_sampled(r->site)));
		const char *names[3];
		int nn = asp__alloc_frames(r->fn, names);
		json_t *alloc = json_array();
		for (int k = 0; k < nn; k++)
			json_array_append_new(alloc, json_string(names[k]));
		json_object_set_new(rec, "alloc_fn", json_string(names[0]));
		json_object_set_new(rec, "alloc_pc", jint((uintptr_t)asp__fn_address(r->fn)));
		json_object_set_new(rec, "alloc_stack", alloc);
		json_array_append_new(records, rec);
	}
	json_object_set_new(root, "loss_records", records);
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

static json_t *dump_json(const struct figures *f)
{
	json_t *root = json_pack("{s:s,s:i}", "format", "allocspy-dump", "version", 1);
	json_object_set_new(root, "dump", dump_info_json(f));
	json_object_set_new(root, "program", program_json());
	json_object_set_new(root, "time", time_json());
	json_object_set_new(root, "options", options_json());
	json_object_set_new(root, "heap", heap_json(f));
	json_object_set_new(root, "functions", functions_json(f));
	json_object_set_new(root, "histogram", histogram_json(f));
	threads_json(root);
	json_object_set_new(root, "refs", refs_json(f));
	if (asp__sample_mean != 0)
		json_object_set_new(root, "sample", json_pack("{s:o,s:o}", "mean_bytes",
		                    jint(asp__sample_mean), "seed", jint(asp__sample_seed)));
	struct stack_index x;
	if (f->leaks_ran || f->tracked || asp__sample_mean != 0) {
		stack_index_init(&x, (f->leaks_ran ? f->leaks.nrecords : 0) + STACK_STATS_MAX +
		                 THREAD_STACKS_MAX + (size_t)asp__opt.snapshots * 8);
		if (f->leaks_ran)
			leaks_json(root, f, &x);
		struct asp_snapshot_list sl = { 0 };
		if (f->tracked)
			asp__snapshots(&sl, f->t_ns, f->tot.bytes_allocated, f->tot.bytes_freed,
			               f->entries, f->nentries);
		if ((asp__opt.backtrace > 1 && f->tracked) || asp__sample_mean != 0)
			stack_stats_json(root, f, &x, &sl);
		if (f->tracked)
			snapshots_json(root, &sl, &x);
		asp__snapshots_free(&sl);
		stack_index_done(&x, root);
	}
	json_t *rss = f->reason == REASON_EXIT ? asp__rss_json() : NULL;
	if (rss != NULL)
		json_object_set_new(root, "rss", rss);
	json_object_set_new(root, "modules", modules_json());
	return root;
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

/* Writes the dump to a temporary file, then gives it its name: the first
 * time with link(2), which never replaces a file (a taken name gets a
 * "-N" suffix), later with rename(2) over this process's own dump. A
 * reader never sees half a dump, and with signals blocked from the
 * temporary file's creation to its removal, a signal cannot leave it
 * behind. Returns 0 or an errno. */
static int write_dump(const struct figures *f)
{
	if (asp__opt.output[0] == '\0')
		return 0;
	char path[ASP_PATH_MAX], tmp[ASP_PATH_MAX + 32], name[ASP_PATH_MAX + 16];
	asp__expand_pid(asp__opt.output, path, sizeof path);
	variant(path, (unsigned)getpid(), tmp, sizeof tmp);
	size_t tl = strlen(tmp);
	memcpy(tmp + tl, ".tmp", 5);

	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	json_t *root = dump_json(f);
	char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	json_decref(root);
	int fd = open_report(tmp, O_EXCL);
	int err = fd < 0 ? errno : text == NULL ? ENOMEM : 0;
	if (fd >= 0) {
		int w = err != 0 ? 0 : asp__write_all(fd, text, strlen(text));
		if (w == 0 && err == 0)
			w = asp__write_all(fd, "\n", 1);
		if (w != 0 && err == 0)
			err = -w;
		if (close(fd) != 0 && err == 0)
			err = errno;
	}
	if (err == 0 && g_dump_name[0] != '\0') {
		if (rename(tmp, g_dump_name) != 0)
			err = errno;
	} else if (err == 0) {
		memcpy(name, path, strlen(path) + 1);
		for (unsigned n = 1; link(tmp, name) != 0; n++) {
			if (errno != EEXIST || n > 1000) {
				err = errno;
				break;
			}
			variant(path, n, name, sizeof name);
		}
		if (err == 0)
			memcpy(g_dump_name, name, strlen(name) + 1);
	}
	if (fd >= 0)
		unlink(tmp);
	if (text != NULL)
		asp__heap_free_quiet(text);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	static int warned;
	if (err != 0 && !warned++) {
		char why[160] = ": ";
		const char *msg = strerror(err);
		size_t len = strlen(msg) < sizeof why - 3 ? strlen(msg) : sizeof why - 3;
		memcpy(why + 2, msg, len);
		why[2 + len] = '\0';
		asp__warn("cannot write the dump ", path, why);
	}
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
		if (asp_atomic_load_acquire(&asp__state) == 1)
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

void asp__finish(void)
{
	pid_t me = asp_gettid(), none = 0;
	if (!__atomic_compare_exchange_n(&g_finishing, &none, me, 0, __ATOMIC_ACQ_REL,
	                                 __ATOMIC_ACQUIRE))
		return;
	if (asp_atomic_load_acquire(&asp__state) == 0)
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
		asp_atomic_store_release(&asp__fast, 0);
		asp_atomic_store_release(&asp__state, 2);
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
	asp_atomic_store_release(&asp__frozen, 0);
	write_dump(f);
	write_text(f);

	if (f->leaks_ran && asp__opt.error_exitcode >= 0) {
		int kinds = 0;
		for (int k = 0; k < ASP_LEAK_KINDS; k++)
			if (f->leaks.blocks[k] > 0)
				kinds |= 1 << k;
		if (kinds & asp__opt.error_kinds)
			g_exit_status = asp__opt.error_exitcode;
	}
	figures_free(f);
	errno = saved;
}

/* fork's child: it is its own process, with a dump of its own; a report or
 * a periodic dump that another thread was making is not its. */
void asp__report_atfork_child(void)
{
	g_dump_name[0] = '\0';
	g_dumping = 0;
	if (g_finishing != 0) {
		g_finishing = 0;
		asp__frozen = 0;
		asp__fast = asp__fast_mode();
		asp__state = 1;
	}
}
