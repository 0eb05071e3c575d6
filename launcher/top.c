/* top - `allocspy top PID`: a live view of a program running under
 * liballocspy.so, refreshed as the program publishes it (about once a
 * second), until the program ends or the user presses q.
 *
 * The shim's ticker rewrites /dev/shm/allocspy.PID in place (the format
 * is common/livefmt.h): this maps it read-only and copies it under its
 * sequence lock; no signal, no ptrace. The sites' return addresses are
 * named with the symbolizer the shim and allocspy-report share
 * (common/dwsym.c), through a libdw.so.1 loaded only here, and the
 * program's objects as /proc/PID/maps lists them. */
#include "top.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "dwsym.h"
#include "livefmt.h"

/* Exit statuses: 0 the program ended, q or -n; these otherwise. */
#define TOP_NOT_TRACED 1	/* no such process, or no live view to read */
#define TOP_USAGE 125

/* How long to wait for the view of a program that runs under allocspy
 * but has not made it yet (it does so a second after it starts). */
#define TOP_WAIT_MS 3000

static void top_usage(FILE *f)
{
	fputs("usage: allocspy top [-n N] PID\n"
	      "\n"
	      "Shows the heap of PID, a program running under allocspy, as it runs: in use,\n"
	      "peak, allocations per second and the sites that hold most bytes, with their\n"
	      "change since the last refresh. It refreshes when the program publishes its\n"
	      "figures, about once a second, until the program ends or q is pressed.\n"
	      "\n"
	      "options:\n"
	      "  -n N, --iterations=N  stop after N refreshes\n"
	      "  --help                print this help and exit\n"
	      "\n"
	      "Exit status: 0 when the program ended, after q or N refreshes; 1 when PID is\n"
	      "not running or not traced by allocspy; 125 a usage error.\n"
	      "To trace a program named top: allocspy -- top.\n", f);
}

static void top_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void top_error(const char *fmt, ...)
{
	va_list ap;

	fputs("allocspy: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- the program's name and objects ------------------------------------------ */

/* /proc/PID/comm, or "?". */
static void proc_name(long pid, char *out, size_t size)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof path, "/proc/%ld/comm", pid);
	snprintf(out, size, "?");
	f = fopen(path, "r");
	if (!f)
		return;
	if (fgets(out, (int)size, f))
		out[strcspn(out, "\n")] = '\0';
	fclose(f);
}

/* Whether PID has liballocspy.so mapped: 1, 0, or -1 when its maps
 * cannot be read. */
static int proc_traced(long pid)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof path, "/proc/%ld/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof line, f))
		found = strstr(line, "/liballocspy.so") != NULL;
	fclose(f);
	return found;
}

static int proc_alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The load bias of the ELF file path mapped at start from file offset 0:
 * start less the page of its first loadable segment. */
static int elf_bias(const char *path, uint64_t start, uint64_t *bias)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int found = -1;

	if (fd < 0)
		return -1;
	if (pread(fd, &eh, sizeof eh, 0) == (ssize_t)sizeof eh && memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && eh.e_phentsize == sizeof ph) {
		for (unsigned i = 0; i < eh.e_phnum && found < 0; i++) {
			if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)) != (ssize_t)sizeof ph)
				break;
			if (ph.p_type == PT_LOAD && ph.p_offset == 0) {
				*bias = start - (ph.p_vaddr & ~(uint64_t)4095);
				found = 0;
			}
		}
	}
	close(fd);
	return found;
}

/* ---- names --------------------------------------------------------------------- */

struct names {
	long pid;
	asp_dw_api_t api;
	asp_dwsym_t *dw;
	int stale;		/* an address in no object: list them again */
};

/* libdw.so.1 and __cxa_demangle, when this machine has them. */
static void names_api(struct names *nm)
{
	void *h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	int missing = 0;

	memset(&nm->api, 0, sizeof nm->api);
	if (h) {
#define TOP_DW_DLSYM(f) \
		nm->api.f = (__typeof__(nm->api.f))dlsym(h, #f); \
		missing |= nm->api.f == NULL;
		ASP_DW_FUNCS(TOP_DW_DLSYM)
#undef TOP_DW_DLSYM
		if (missing)
			memset(&nm->api, 0, sizeof nm->api);
	}
	if (cxx)
		nm->api.demangle = (asp_demangle_fn *)dlsym(cxx, "__cxa_demangle");
}

/* The program's objects, from its maps: each file mapped from offset 0. */
static void names_load(struct names *nm)
{
	char path[64], line[PATH_MAX + 128];
	FILE *f;

	asp_dwsym_free(nm->dw);
	nm->dw = asp_dwsym_new(&nm->api);
	nm->stale = 0;
	snprintf(path, sizeof path, "/proc/%ld/maps", nm->pid);
	f = fopen(path, "r");
	if (!f || !nm->dw) {
		if (f)
			fclose(f);
		return;
	}
	while (fgets(line, sizeof line, f)) {
		unsigned long long lo, hi, off;
		int name = 0;
		uint64_t bias;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &name) < 3 ||
		    name == 0 || line[name] != '/' || off != 0)
			continue;
		if (elf_bias(line + name, lo, &bias) == 0)
			asp_dwsym_add(nm->dw, line + name, bias, 0, NULL);
	}
	fclose(f);
}

/* "fn (file.c:12)", "fn (in /lib/x.so)" or "0x1234", for return address pc. */
static void frame_name(struct names *nm, uint64_t pc, char *out, size_t size)
{
	asp_dwline_t l[8];
	int i = nm->dw ? asp_dwsym_find(nm->dw, pc) : -1;
	const char *why;

	snprintf(out, size, "0x%" PRIx64, pc);
	if (i < 0) {
		nm->stale = 1;
		return;
	}
	if (!asp_dwsym_tried(nm->dw, i))
		asp_dwsym_open(nm->dw, i, &why);
	asp_dwsym_lookup(nm->dw, pc - 1, l, 8);
	if (!l[0].fn)
		snprintf(out, size, "0x%" PRIx64 " (in %s)", pc, asp_dwsym_path(nm->dw, i));
	else if (l[0].file)
		snprintf(out, size, "%s (%s:%u)", l[0].fn, l[0].file, l[0].line);
	else
		snprintf(out, size, "%s (in %s)", l[0].fn, l[0].module ? l[0].module : "?");
}

/* A site as one line: its caller, and with stacks the caller's caller. */
static void site_name(struct names *nm, const struct asp_live_site *s, char *out, size_t size)
{
	char a[480], b[480];

	if (s->nframes == 0) {
		snprintf(out, size, "(no site: ALLOCSPY_BACKTRACE=0)");
		return;
	}
	frame_name(nm, s->frames[0], a, sizeof a);
	if (s->nframes < 2) {
		snprintf(out, size, "%s", a);
		return;
	}
	frame_name(nm, s->frames[1], b, sizeof b);
	snprintf(out, size, "%s < %s", a, b);
}

/* ---- the view ------------------------------------------------------------------ */

/* A consistent copy of the page: 0, or -1 when it is not a view this
 * reads (another version, another pid). */
static int view_copy(const volatile struct asp_live_view *page, struct asp_live_view *out, long pid)
{
	for (int tries = 0; tries < 1000; tries++) {
		uint32_t s1 = __atomic_load_n(&page->seq, __ATOMIC_ACQUIRE);

		if (s1 & 1) {
			struct timespec ts = { 0, 100000 };

			nanosleep(&ts, NULL);
			continue;
		}
		memcpy(out, (const void *)page, sizeof *out);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&page->seq, __ATOMIC_RELAXED) != s1)
			continue;
		if (memcmp(out->magic, ASP_LIVE_MAGIC, sizeof ASP_LIVE_MAGIC) != 0 ||
		    out->version != ASP_LIVE_VERSION || out->size != sizeof *out || out->pid != pid ||
		    out->nsites > ASP_LIVE_SITES)
			return -1;
		return 0;
	}
	return -1;
}

/* Maps /dev/shm/allocspy.PID: the page, or NULL with errno. */
static const struct asp_live_view *view_map(const char *path)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(struct asp_live_view)) {
		close(fd);
		errno = EAGAIN;		/* being made */
		return NULL;
	}
	p = mmap(NULL, ASP_LIVE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

/* ---- the screen ----------------------------------------------------------------- */

static struct termios g_saved;
static int g_raw, g_screen;
static volatile sig_atomic_t g_stop;

static void screen_restore(void)
{
	if (g_screen) {
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		g_screen = 0;
	}
	if (g_raw) {
		tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
		g_raw = 0;
	}
}

static void on_signal(int sig)
{
	g_stop = sig;
}

static void screen_start(void)
{
	struct termios t;
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &g_saved) == 0) {
		t = g_saved;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 0;
		t.c_cc[VTIME] = 0;
		g_raw = tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0;
	}
	if (isatty(STDOUT_FILENO)) {
		/* A whole screen in one write: no half-drawn frame. */
		static char buf[64 * 1024];
		setvbuf(stdout, buf, _IOFBF, sizeof buf);
		fputs("\033[?1049h\033[?25l", stdout);
		g_screen = 1;
	}
}

static void screen_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* "1,234,567" */
static const char *commas(char buf[32], uint64_t v)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof tmp, "%" PRIu64, v), o = 0;

	for (int i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

/* "+1,234", "-56" or "0". */
static const char *change(char buf[34], int64_t v)
{
	buf[0] = v > 0 ? '+' : '-';
	commas(buf + (v != 0), v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
	return buf;
}

/* One line of the screen, cut at the terminal's width. */
struct out {
	int cols, rows, line, tty;
};

static void put_line(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put_line(struct out *o, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (o->tty && o->line >= o->rows)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (o->tty && (int)strlen(buf) > o->cols)
		buf[o->cols] = '\0';
	fputs(buf, stdout);
	fputs(o->tty ? "\033[K\n" : "\n", stdout);
	o->line++;
}

static int same_site(const struct asp_live_site *a, const struct asp_live_site *b)
{
	return a->nframes == b->nframes &&
	       memcmp(a->frames, b->frames, a->nframes * sizeof a->frames[0]) == 0;
}

/* The screen for view v; prev (NULL for the first) is the view the last
 * refresh showed, for the rates and the change column. */
static void render(struct names *nm, const struct asp_live_view *v, const struct asp_live_view *prev,
		   const char *name, uint64_t now_ns, const char *status)
{
	struct out o = { 0, 0, 0, g_screen };
	char a[34], b[34], c[34], d[34], line[1024];
	double secs = v->t_ns > v->start_ns ? (double)(v->t_ns - v->start_ns) / 1e9 : 0.0;
	double age = now_ns > v->t_ns ? (double)(now_ns - v->t_ns) / 1e9 : 0.0;
	double dt = prev && v->t_ns > prev->t_ns ? (double)(v->t_ns - prev->t_ns) / 1e9 : 0.0;

	screen_size(&o.rows, &o.cols);
	if (o.tty)
		fputs("\033[H", stdout);
	put_line(&o, "allocspy top: pid %d (%s), running %.1f s, updated %.1f s ago%s", v->pid, name,
		 secs, age, o.tty ? "   q: quit" : "");
	if (v->flags & ASP_LIVE_TRACKED)
		put_line(&o, "in use     %s bytes in %s blocks    peak %s bytes",
			 commas(a, (uint64_t)v->in_use_bytes), commas(b, (uint64_t)v->in_use_blocks),
			 commas(c, (uint64_t)v->peak_bytes));
	else
		put_line(&o, "in use     ? (ALLOCSPY_MODE=count keeps no sizes)");
	if (prev && dt > 0 && v->allocs >= prev->allocs && v->frees >= prev->frees)
		put_line(&o, "allocs     %s, %s/s    frees %s, %s/s", commas(a, v->allocs),
			 commas(b, (uint64_t)((double)(v->allocs - prev->allocs) / dt + 0.5)),
			 commas(c, v->frees),
			 commas(d, (uint64_t)((double)(v->frees - prev->frees) / dt + 0.5)));
	else
		put_line(&o, "allocs     %s    frees %s", commas(a, v->allocs), commas(b, v->frees));
	put_line(&o, "allocated  %s bytes", commas(a, v->bytes_allocated));
	put_line(&o, "%s", status);
	if (!(v->flags & ASP_LIVE_TRACKED)) {
		put_line(&o, "(no sites in count mode)");
	} else {
		put_line(&o, "%15s %13s %10s  site (%u hold memory)", "in use", "change", "blocks",
			 v->sites_in_use);
		for (uint32_t i = 0; i < v->nsites; i++) {
			const struct asp_live_site *s = &v->sites[i];
			const char *ch = prev ? "new" : "";

			for (uint32_t k = 0; prev && k < prev->nsites; k++)
				if (same_site(&prev->sites[k], s))
					ch = change(b, s->bytes - prev->sites[k].bytes);
			site_name(nm, s, line, sizeof line);
			put_line(&o, "%15s %13s %10s  %s", commas(a, (uint64_t)s->bytes), ch,
				 commas(c, (uint64_t)s->blocks), line);
		}
	}
	if (o.tty)
		fputs("\033[J", stdout);
	else
		fputs("\n", stdout);
	fflush(stdout);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Waits ms milliseconds for a key: 1 for q, 0 for none, -1 when standard
 * input is closed (a pipe at its end: then only the time passes). */
static int quit_key(int ms)
{
	struct pollfd p = { STDIN_FILENO, POLLIN, 0 };
	char buf[64];
	ssize_t n;

	if (poll(&p, 1, ms) <= 0 || !(p.revents & (POLLIN | POLLHUP)))
		return 0;
	n = read(STDIN_FILENO, buf, sizeof buf);
	if (n <= 0)
		return g_raw ? 0 : -1;
	return memchr(buf, 'q', (size_t)n) || memchr(buf, 'Q', (size_t)n);
}

static int parse_pid(const char *s, long *pid)
{
	char *end;

	errno = 0;
	*pid = strtol(s, &end, 10);
	return *s >= '0' && *s <= '9' && *end == '\0' && errno == 0 && *pid > 0 && *pid <= INT_MAX ? 0 : -1;
}

int asp_top_main(int argc, char **argv)
{
	long pid = 0, iterations = -1;
	const char *pid_arg = NULL;
	char path[64], name[64];
	const struct asp_live_view *page = NULL;
	struct asp_live_view v;
	struct names nm = { 0 };
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--help") == 0) {
			top_usage(stdout);
			return fflush(stdout) == 0 ? 0 : TOP_USAGE;
		} else if (strcmp(a, "-n") == 0 || strncmp(a, "--iterations=", 13) == 0) {
			const char *val = a[1] == 'n' ? (i + 1 < argc ? argv[++i] : NULL) : a + 13;

			if (!val || parse_pid(val, &iterations) != 0) {
				top_error("top: %s needs a number of refreshes, 1 or more", a);
				return TOP_USAGE;
			}
		} else if (a[0] == '-' && a[1] != '\0') {
			top_error("top: unknown option '%s' (try allocspy top --help)", a);
			return TOP_USAGE;
		} else if (pid_arg) {
			top_error("top: one PID only");
			return TOP_USAGE;
		} else {
			pid_arg = a;
		}
	}
	if (!pid_arg) {
		top_error("top: no PID (try allocspy top --help; to trace a program named top: "
			  "allocspy -- top)");
		return TOP_USAGE;
	}
	if (parse_pid(pid_arg, &pid) != 0) {
		top_error("top: '%s' is not a process ID", pid_arg);
		return TOP_USAGE;
	}
	if (!proc_alive(pid)) {
		top_error("top: no process %ld", pid);
		return TOP_NOT_TRACED;
	}
	proc_name(pid, name, sizeof name);
	snprintf(path, sizeof path, "%s/%s%ld", ASP_LIVE_DIR, ASP_LIVE_PREFIX, pid);

	/* A traced program makes its view a second after it starts. */
	for (uint64_t t0 = mono_ns(); !(page = view_map(path));) {
		int e = errno;

		if (e == EACCES || e == EPERM) {
			top_error("top: %s: %s (pid %ld, %s, is another user's)", path, strerror(e), pid,
				  name);
			return TOP_NOT_TRACED;
		}
		if (proc_traced(pid) != 1 && e != EAGAIN) {
			top_error("top: pid %ld (%s) is not traced by allocspy: it has no live view "
				  "(%s)", pid, name, path);
			return TOP_NOT_TRACED;
		}
		if (mono_ns() - t0 > (uint64_t)TOP_WAIT_MS * 1000000u || !proc_alive(pid)) {
			top_error("top: pid %ld (%s) runs under allocspy but publishes no live view "
				  "(ALLOCSPY_LIVE=0?)", pid, name);
			return TOP_NOT_TRACED;
		}
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}
	/* A view left by this pid's previous program, which ran one that is
	 * not traced. */
	if (proc_traced(pid) == 0) {
		top_error("top: pid %ld (%s) is not traced by allocspy: it has no live view "
			  "(%s is its previous program's)", pid, name, path);
		munmap((void *)page, ASP_LIVE_BYTES);
		return TOP_NOT_TRACED;
	}
	for (int tries = 0; view_copy(page, &v, pid) != 0 || v.updates == 0; tries++) {
		if (tries == 30) {
			top_error("top: %s is not a live view of pid %ld from this version of allocspy",
				  path, pid);
			munmap((void *)page, ASP_LIVE_BYTES);
			return TOP_NOT_TRACED;
		}
		struct timespec ts = { 0, 100000000 };
		nanosleep(&ts, NULL);
	}

	nm.pid = pid;
	names_api(&nm);
	names_load(&nm);
	screen_start();
	struct asp_live_view cur, prev;
	int have_cur = 0, have_prev = 0, keys = 1;
	uint64_t shown_at = 0;
	for (long done = 0;;) {
		uint64_t now = mono_ns();
		int ended = view_copy(page, &v, pid) != 0 || (v.flags & ASP_LIVE_ENDED) ||
			    access(path, F_OK) != 0 || !proc_alive(pid);

		if (ended) {
			screen_restore();
			printf("allocspy top: pid %ld (%s) ended\n", pid, name);
			break;
		}
		if (!have_cur || v.updates != cur.updates) {
			if (have_cur) {
				prev = cur;
				have_prev = 1;
			}
			cur = v;
			have_cur = 1;
			render(&nm, &cur, have_prev ? &prev : NULL, name, now, "");
			if (nm.stale)
				names_load(&nm);	/* a library loaded since */
			shown_at = now;
			if (iterations > 0 && ++done >= iterations)
				break;
		} else if (now - shown_at >= 1500000000u) {
			/* No update for a while: stopped, or it ran another program. */
			if (proc_traced(pid) == 0) {
				screen_restore();
				printf("allocspy top: pid %ld (%s) ran a program that is not traced\n",
				       pid, name);
				break;
			}
			if (g_screen)
				render(&nm, &cur, have_prev ? &prev : NULL, name, now,
				       "(no update: the program may be stopped)");
			shown_at = now;
		}
		if (g_stop)
			break;
		int k = keys ? quit_key(100) : 0;
		if (k > 0)
			break;
		if (k < 0 || !keys) {
			struct timespec ts = { 0, 100000000 };

			keys = 0;
			nanosleep(&ts, NULL);
		}
	}
	screen_restore();
	munmap((void *)page, ASP_LIVE_BYTES);
	asp_dwsym_free(nm.dw);
	if (fflush(stdout) != 0)
		rc = TOP_NOT_TRACED;
	return rc;
}
