/* options.c - reading the ALLOCSPY_* environment at start-up. */
#include <errno.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "glue.h"
#include "envcheck.h"
#include "guard.h"
#include "leakkinds.h"
#include "options.h"
#include "sample.h"
#include "suppress.h"
#include "text.h"

struct asp_options asp__opt = {
	.follow_children = 1,
	.mode = ASP_MODE_TRACK,
	.backtrace = 1,
	.unwind = ASP_UNWIND_LIBUNWIND,
	.leak_check = ASP_LEAK_SUMMARY,
	.error_exitcode = -1,
	.error_kinds = ASP_KIND_DEFINITE | ASP_KIND_POSSIBLE,
	.snapshots = 100,
	.freeres = ASP_FREERES_LIBC | ASP_FREERES_CXX,
	.dump_on_signal = 1,
};

int asp__err_fd = 2;

int asp__write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

void asp__warn(const char *a, const char *b, const char *c)
{
	char line[1024];
	size_t n = 0;
	const char *parts[] = { "allocspy: warning: ", a, b, c, "\n" };
	for (size_t i = 0; i < ASP_ARRAY_SIZE(parts); i++) {
		size_t len = parts[i] ? strlen(parts[i]) : 0;
		/* A long path is cut short; the line still ends. */
		size_t room = sizeof line - n - (i + 1 < ASP_ARRAY_SIZE(parts));
		if (len > room)
			len = room;
		/* A byte count for write(2), not a C string: no terminator. */
		memcpy(line + n, parts[i], len); // NOLINT(bugprone-not-null-terminated-result)
		n += len;
	}
	int saved = errno;
	asp__write_all(asp__err_fd, line, n);
	errno = saved;
}

/* The warning for a bad value: "VAR=VALUE: not WHAT; the default, DEF, is
 * used". A long value is cut short, and bytes that are not printable ASCII
 * are shown as '?'. */
static void bad_value(const char *var, const char *v, const char *what, const char *def)
{
	char msg[400], value[65];
	size_t vlen = strlen(v) < 64 ? strlen(v) : 64;
	for (size_t i = 0; i < vlen; i++)	/* one line, whatever the value holds */
		value[i] = v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?';
	value[vlen] = '\0';
	struct asp_text t = { msg, 0, sizeof msg - 1, -1 };
	asp__text_str(&t, "=");
	asp__text_str(&t, value);
	if (strlen(v) > vlen)
		asp__text_str(&t, "...");
	asp__text_str(&t, ": not ");
	asp__text_str(&t, what);
	asp__text_str(&t, "; the default, ");
	asp__text_str(&t, def);
	asp__text_str(&t, ", is used");
	msg[t.len] = '\0';
	asp__warn(var, msg, "");
}

/* A word out of a fixed set, or -1 with a warning. */
static int pick(const char *var, const char *const *words, size_t n, const char *expected)
{
	const char *v = getenv(var);
	if (v == NULL || *v == '\0')
		return -1;
	for (size_t i = 0; i < n; i++)
		if (strcmp(v, words[i]) == 0)
			return (int)i;
	bad_value(var, v, expected, words[0]);
	return -1;
}

/* A decimal integer in [lo, hi], or def with a warning (defname names the
 * default when it is not a number of the range). */
static int integer(const char *var, int lo, int hi, int def, const char *defname)
{
	const char *v = getenv(var);
	if (v == NULL || *v == '\0')
		return def;
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || x < lo || x > hi) {
		char what[64] = "an integer from ", num[24];
		struct asp_text t = { what, strlen(what), sizeof what - 1, -1 };
		asp__text_u64(&t, (uint64_t)lo);
		asp__text_str(&t, " to ");
		asp__text_u64(&t, (uint64_t)hi);
		what[t.len] = '\0';
		if (defname == NULL) {
			struct asp_text d = { num, 0, sizeof num - 1, -1 };
			asp__text_u64(&d, (uint64_t)def);
			num[d.len] = '\0';
			defname = num;
		}
		bad_value(var, v, what, defname);
		return def;
	}
	return (int)x;
}

/* A decimal integer in [0, hi] into *out: 1; unset: 0; else -1 with the
 * usual warning (def names the default). */
static int u64(const char *var, uint64_t hi, const char *def, uint64_t *out)
{
	const char *v = getenv(var);
	if (v == NULL || *v == '\0')
		return 0;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, 10);
	if (*v < '0' || *v > '9' || errno != 0 || *end != '\0' || x > hi) {
		char what[64] = "an integer from 0 to ";
		struct asp_text t = { what, strlen(what), sizeof what - 1, -1 };
		asp__text_u64(&t, hi);
		what[t.len] = '\0';
		bad_value(var, v, what, def);
		return -1;
	}
	*out = x;
	return 1;
}

/* 1 or 0 (also yes/no), or def with a warning. */
static int boolean(const char *var, int def)
{
	const char *v = getenv(var);
	if (v == NULL || *v == '\0')
		return def;
	if (strcmp(v, "1") == 0 || strcmp(v, "yes") == 0)
		return 1;
	if (strcmp(v, "0") == 0 || strcmp(v, "no") == 0)
		return 0;
	bad_value(var, v, "1 or 0 (yes or no)", def ? "1" : "0");
	return def;
}

/* Whether the parent process has this library mapped: then this process
 * is one the parent started under the shim, not the one the user started
 * (ALLOCSPY_ERROR_EXITCODE applies to that one alone). The library's file
 * is looked for by device and inode in /proc/PPID/maps, read with a fixed
 * buffer: this runs at start-up, inside malloc. A parent whose maps cannot
 * be read counts as untraced. */
static int parent_traced(void)
{
	Dl_info me;
	struct stat st;
	if (!dladdr((void *)parent_traced, &me) || me.dli_fname == NULL || stat(me.dli_fname, &st) != 0)
		return 0;
	char path[64];
	struct asp_text t = { path, 0, sizeof path - 1, -1 };
	asp__text_str(&t, "/proc/");
	asp__text_u64(&t, (uint64_t)getppid());
	asp__text_str(&t, "/maps");
	path[t.len] = '\0';
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* "start-end perms offset MAJ:MIN inode path": fields 4 and 5 */
	char buf[4096], ln[256];
	size_t len = 0;
	int found = 0;
	ssize_t got;
	while (!found && (got = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < got && !found; i++) {
			if (buf[i] != '\n') {
				if (len < sizeof ln - 1)
					ln[len++] = buf[i];
				continue;
			}
			ln[len] = '\0';
			len = 0;
			unsigned long maj, min, ino;
			char *p = ln;
			for (int field = 0; field < 3 && p != NULL; field++) {
				p = strchr(p, ' ');
				p = p != NULL ? p + 1 : NULL;
			}
			if (p == NULL)
				continue;
			char *end;
			maj = strtoul(p, &end, 16);
			if (*end != ':')
				continue;
			min = strtoul(end + 1, &end, 16);
			if (*end != ' ')
				continue;
			ino = strtoul(end + 1, &end, 10);
			found = ino == (unsigned long)st.st_ino && maj == major(st.st_dev) &&
			        min == minor(st.st_dev);
		}
	}
	close(fd);
	return found;
}

/* valgrind's wildcards: * any run of characters, ? one. */
static int glob_match(const char *p, size_t plen, const char *s)
{
	const char *end = p + plen, *star = NULL, *after = NULL;
	while (*s) {
		if (p < end && *p == '*') {
			star = p++;
			after = s;
		} else if (p < end && (*p == '?' || *p == *s)) {
			p++;
			s++;
		} else if (star != NULL) {
			p = star + 1;
			s = ++after;
		} else {
			return 0;
		}
	}
	while (p < end && *p == '*')
		p++;
	return p == end;
}

/* ALLOCSPY_TRACE_CHILDREN_SKIP: comma-separated patterns, each matched
 * against the path the program was run by (execve's, AT_EXECFN: a script's
 * own), its argv[0] (a script's interpreter as its #! line names it, such
 * as /bin/sh) and its executable (/proc/self/exe: /usr/bin/dash); a
 * pattern without a slash against their base names. */
static int skipped(const char *patterns, const char *exe)
{
	char arg0[ASP_PATH_MAX];
	arg0[0] = '\0';
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t n = read(fd, arg0, sizeof arg0 - 1);
		arg0[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	const char *names[3] = { (const char *)getauxval(AT_EXECFN), arg0, exe };
	for (const char *p = patterns; *p;) {
		size_t len = strcspn(p, ",");
		int base = memchr(p, '/', len) == NULL;
		for (int i = 0; i < 3 && len > 0; i++) {
			const char *n = names[i];
			if (n == NULL || *n == '\0')
				continue;
			const char *slash = strrchr(n, '/');
			if (glob_match(p, len, base && slash != NULL ? slash + 1 : n))
				return 1;
		}
		p += len;
		p += *p == ',';
	}
	return 0;
}

/* Makes tmpl absolute against the working directory and expands %e. */
static void resolve_template(const char *tmpl, char *out, size_t size, const char *exe)
{
	size_t n = 0;
	out[0] = '\0';
	if (tmpl[0] != '/') {
		if (getcwd(out, size) == NULL)
			out[0] = '\0';
		n = strlen(out);
		if (n + 1 < size && (n == 0 || out[n - 1] != '/'))
			out[n++] = '/';
	}
	const char *base = strrchr(exe, '/');
	base = base ? base + 1 : exe;
	for (const char *p = tmpl; *p && n + 1 < size; p++) {
		if (p[0] == '%' && p[1] == 'e') {
			size_t len = strlen(base);
			if (n + len >= size)
				break;
			memcpy(out + n, base, len);
			n += len;
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

void asp__expand_pid(const char *tmpl, char *out, size_t size)
{
	size_t n = 0;
	for (const char *p = tmpl; *p && n + 1 < size; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			char digits[24];
			int k = 0;
			unsigned long pid = (unsigned long)getpid();
			do digits[k++] = (char)('0' + pid % 10); while ((pid /= 10) > 0);
			while (k > 0 && n + 1 < size)
				out[n++] = digits[--k];
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			out[n++] = '%';
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = '\0';
}

void asp__options_init(void)
{
	struct asp_options *o = &asp__opt;
	int fd = fcntl(2, F_DUPFD_CLOEXEC, 1000);
	if (fd >= 0)
		asp__err_fd = fd;

	ssize_t len = readlink("/proc/self/exe", o->exe, sizeof o->exe - 1);
	o->exe[len > 0 ? len : 0] = '\0';

	static const char *const modes[] = { "track", "count" };
	static const char *const unwinds[] = { "libunwind", "fp" };
	static const char *const checks[] = { "summary", "full", "no" };
	int x;
	if ((x = pick("ALLOCSPY_MODE", modes, 2, "track or count")) >= 0)
		o->mode = (enum asp_mode)x;
	if ((x = pick("ALLOCSPY_UNWIND", unwinds, 2, "libunwind or fp")) >= 0)
		o->unwind = (enum asp_unwind)x;
	if ((x = pick("ALLOCSPY_LEAK_CHECK", checks, 3, "summary, full or no")) >= 0)
		o->leak_check = (enum asp_leak_check)x;
	o->backtrace = integer("ALLOCSPY_BACKTRACE", 0, ASP_MAX_BACKTRACE, 1, NULL);
	o->error_exitcode = integer("ALLOCSPY_ERROR_EXITCODE", 0, 255, -1,
	                            "none (the program's own status)");
	o->error_children = boolean("ALLOCSPY_ERROR_EXITCODE_CHILDREN", 0);
	if (o->error_exitcode >= 0 && !o->error_children)
		o->started = parent_traced() ? 0 : getpid();

	o->quiet = boolean("ALLOCSPY_QUIET", 0);
	o->follow_children = boolean("ALLOCSPY_FOLLOW_CHILDREN", 1);
	o->dump_on_signal = boolean("ALLOCSPY_DUMP_ON_SIGNAL", 1);
	o->interval_ms = integer("ALLOCSPY_INTERVAL_MS", 0, 86400000, 0, "0 (no periodic dumps)");
	o->ref_cross = boolean("ALLOCSPY_REF_CROSS", 0);
	o->live = boolean("ALLOCSPY_LIVE", 1);
	o->snapshots = integer("ALLOCSPY_SNAPSHOTS", 0, 100000, 100, NULL);
	static const char *const freeres[] = { "yes", "no", "libc", "cxx" };
	static const int freeres_bits[] = { ASP_FREERES_LIBC | ASP_FREERES_CXX, 0,
		                            ASP_FREERES_LIBC, ASP_FREERES_CXX };
	int fr = pick("ALLOCSPY_FREERES", freeres, 4, "yes, no, libc or cxx");
	if (fr >= 0)
		o->freeres = freeres_bits[fr];
	const char *v;
	v = getenv("ALLOCSPY_ERRORS_FOR_LEAK_KINDS");
	if (v != NULL && *v != '\0') {
		int bad;
		int k = asp_leak_kinds_of(v, &bad);
		if (bad)
			bad_value("ALLOCSPY_ERRORS_FOR_LEAK_KINDS", v,
			          "all, none or a list of definite, indirect, possible, reachable",
			          "definite,possible");
		else
			o->error_kinds = k;
	}

	/* A set-user-ID program must not write where its caller says. */
	o->secure = getauxval(AT_SECURE) != 0;
	v = getenv("ALLOCSPY_OUTPUT");
	if (o->secure && v != NULL && strcmp(v, "none") != 0) {
		asp__warn("ALLOCSPY_OUTPUT and ALLOCSPY_LOG_FILE are ignored in a ",
		          "secure-execution (set-user-ID) process", "");
		v = NULL;
	}
	if (v == NULL || *v == '\0')
		v = "allocspy.%e.%p.json";
	if (strcmp(v, "none") != 0)
		resolve_template(v, o->output, sizeof o->output, o->exe);
	v = getenv("ALLOCSPY_LOG_FILE");
	if (v != NULL && *v != '\0' && !o->secure)
		resolve_template(v, o->log_file, sizeof o->log_file, o->exe);
	v = getenv("ALLOCSPY_SUPPRESSIONS");
	if (v != NULL && strlen(v) < sizeof o->suppressions)
		memcpy(o->suppressions, v, strlen(v) + 1);
	/* Stacks deep enough for the deepest suppression entry. */
	if (o->suppressions[0] != '\0') {
		int need = asp__suppress_max_frames();
		if (need > o->backtrace)
			o->backtrace = need < ASP_MAX_BACKTRACE ? need : ASP_MAX_BACKTRACE;
	}
	/* After the suppressions: they may deepen the stacks. */
	if (u64("ALLOCSPY_SAMPLE", ASP_SAMPLE_MAX, "0 (no sampling)", &o->sample) > 0 &&
	    o->sample != 0 && o->backtrace < 2) {
		asp__warn("ALLOCSPY_SAMPLE: stacks are sampled with ALLOCSPY_BACKTRACE of 2 or more; ",
		          "0 (no sampling) is used", "");
		o->sample = 0;
	}
	o->sample_seed_set = u64("ALLOCSPY_SAMPLE_SEED", INT64_MAX, "a random seed",
	                         &o->sample_seed) > 0;
	/* The live table's leaves, the guard's pages and the leak scan's
	 * windows are laid out for 4 KiB pages (platform.h). */
	if (o->mode == ASP_MODE_TRACK && sysconf(_SC_PAGESIZE) != ASP_PAGE) {
		asp__warn("ALLOCSPY_MODE: track mode needs 4 KiB pages; count is used", "", "");
		o->mode = ASP_MODE_COUNT;
	}
	if (u64("ALLOCSPY_GUARD", ASP_GUARD_MAX, "0 (no guarded blocks)", &o->guard) > 0 &&
	    o->guard != 0 && o->mode != ASP_MODE_TRACK) {
		asp__warn("ALLOCSPY_GUARD: blocks are guarded in track mode; ",
		          "0 (no guarded blocks) is used", "");
		o->guard = 0;
	}
	/* A program not to trace: counted as cheaply as can be, and nothing
	 * reported, nothing written, no handler, no exit code; the programs
	 * it runs are traced (unless they too are skipped). */
	v = getenv("ALLOCSPY_TRACE_CHILDREN_SKIP");
	if (v != NULL && *v != '\0' && skipped(v, o->exe)) {
		o->skipped = 1;
		o->mode = ASP_MODE_COUNT;
		o->backtrace = 0;
		o->leak_check = ASP_LEAK_NO;
		o->quiet = 1;
		o->output[0] = '\0';
		o->log_file[0] = '\0';
		o->suppressions[0] = '\0';
		o->error_exitcode = -1;
		o->dump_on_signal = 0;
		o->interval_ms = 0;
		o->snapshots = 0;
		o->sample = 0;
		o->freeres = 0;
	}
	asp__options_check_names();
}
