/* allocspy - run a program with liballocspy.so preloaded, or, as
 * `allocspy top PID`, watch one that runs so (top.c).
 *
 * Turns its options into ALLOCSPY_* environment variables, puts the
 * absolute path of the shim in front of LD_PRELOAD and execs the program,
 * so the exit status seen by the caller is the program's own. Before the
 * exec it refuses what LD_PRELOAD cannot trace: a statically linked
 * program (an ELF file with no PT_INTERP program header), a script whose
 * #! interpreter is one, and a set-user-ID or set-group-ID program.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "top.h"

#ifndef ASP_VERSION
#define ASP_VERSION "unknown"
#endif

/* Exit statuses of allocspy itself, as env(1) and timeout(1) use them.
 * Once the program runs, the status is the program's. */
enum asp_exit {
	ASP_EXIT_OK = 0,
	ASP_EXIT_ERROR = 125,		/* a usage error, or the shim is missing */
	ASP_EXIT_CANNOT_RUN = 126,	/* found, but cannot be run or traced */
	ASP_EXIT_NOT_FOUND = 127	/* the program does not exist */
};

#define LIB_NAME "liballocspy.so"

static void usage(FILE *f)
{
	fputs("usage: allocspy [options] [--] program [argument ...]\n"
	      "       allocspy top [-n N] PID\n"
	      "\n"
	      "Runs program with " LIB_NAME " preloaded. At exit the program prints a\n"
	      "heap summary (as valgrind does) and writes a JSON dump for allocspy-report.\n"
	      "Options spelled as valgrind's do what valgrind's do.\n"
	      "\n"
	      "options:\n"
	      "  --leak-check=summary|full|no\n"
	      "                          the leak check at exit (default summary)\n"
	      "  --num-callers=N         frames recorded per allocation, 0 to 64;\n"
	      "                          1 (the default) is the caller only\n"
	      "  --backtrace=N           the same as --num-callers\n"
	      "  --suppressions=FILE     a valgrind or LSan suppression file (repeatable)\n"
	      "  --trace-children=yes|no trace the programs it runs (default yes)\n"
	      "  --trace-children-skip=PATTERNS\n"
	      "                          comma-separated patterns (* and ?) of programs\n"
	      "                          not to trace, matched against the path run or\n"
	      "                          the executable (a pattern without / against\n"
	      "                          their base name); their own children still are\n"
	      "  --error-exitcode=N      exit with N when leaks of the kinds below remain\n"
	      "                          (the program started, not its children)\n"
	      "  --error-exitcode-children=yes|no\n"
	      "                          the same status for the children it runs too\n"
	      "                          (default no)\n"
	      "  --errors-for-leak-kinds=KINDS\n"
	      "                          definite,indirect,possible,reachable, all or none\n"
	      "                          (default definite,possible)\n"
	      "  --log-file=TEMPLATE     write the exit summary there, not to stderr\n"
	      "  --run-libc-freeres=yes|no\n"
	      "  --run-cxx-freeres=yes|no\n"
	      "                          free glibc's and libstdc++'s own memory at exit,\n"
	      "                          as valgrind does (both yes by default)\n"
	      "  --mode=track|count      track: in-use bytes and a leak check (default);\n"
	      "                          count: counters only, the lowest overhead\n"
	      "  --output=TEMPLATE       the dump path (default allocspy.%e.%p.json;\n"
	      "                          %p the pid, %e the program name); none: no dump\n"
	      "  --unwind=libunwind|fp   the unwinder for N > 1 (default libunwind)\n"
	      "  --snapshots=N           snapshots of the heap over time, 0 to 100000\n"
	      "                          (default 100)\n"
	      "  --sample=BYTES          with N > 1, a stack for one allocation per BYTES\n"
	      "                          on average (default 0: every allocation)\n"
	      "  --sample-seed=N         the sampling's seed (default random)\n"
	      "  --guard=N               a guarded page for one allocation in N on average,\n"
	      "                          to catch overflows and uses after free (default 0)\n"
	      "  --interval-ms=N         also a dump every N ms during the run (default 0)\n"
	      "  --dump-on-signal=yes|no the report on a fatal signal (default yes)\n"
	      "  --ref-cross=yes|no      count cross-thread reference operations\n"
	      "  --quiet                 print no summary; the dump is still written\n"
	      "  --help, -h              print this help and exit\n"
	      "  --version               print the version and exit\n"
	      "\n"
	      "allocspy top PID shows the heap of PID, a program running under allocspy,\n"
	      "live (allocspy top --help); to trace a program named top: allocspy -- top.\n"
	      "\n"
	      "Exit status: the program's; 125 an allocspy error, 126 the program cannot\n"
	      "be run or traced (statically linked), 127 the program was not found.\n"
	      "See allocspy(1) and liballocspy(7).\n", f);
}

static void error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void error(const char *fmt, ...)
{
	va_list ap;

	fputs("allocspy: error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Flushes stdout for --help and --version and reports a failed write. */
static int finish_stdout(void)
{
	if (fflush(stdout) != 0 || ferror(stdout) || fclose(stdout) != 0) {
		error("standard output: %s", strerror(errno));
		return ASP_EXIT_ERROR;
	}
	return ASP_EXIT_OK;
}

/* ---- options -------------------------------------------------------------- */

/* An option without a value, or with one, checked as: any text that is
 * not empty, a word out of choices, an integer in [lo, hi]. */
enum opt_arg { OPT_NONE, OPT_TEXT, OPT_CHOICE, OPT_INT };

struct opt {
	const char *name;	/* without the leading "--" */
	enum opt_arg arg;
	const char *var;	/* the environment variable it sets, or NULL */
	const char *const *choices;	/* OPT_CHOICE: the allowed values */
	unsigned long long lo, hi;	/* OPT_INT */
};

static const char *const mode_choices[] = { "track", "count", NULL };
static const char *const unwind_choices[] = { "libunwind", "fp", NULL };
static const char *const leak_choices[] = { "summary", "full", "no", NULL };
static const char *const yes_no[] = { "yes", "no", NULL };

/* The largest --backtrace: the shim's ASP_MAX_BACKTRACE (t71 checks it). */
#define BACKTRACE_MAX 64

static const struct opt opts[] = {
	/* valgrind's names */
	{ "leak-check", OPT_CHOICE, "ALLOCSPY_LEAK_CHECK", leak_choices, 0, 0 },
	{ "num-callers", OPT_INT, "ALLOCSPY_BACKTRACE", NULL, 0, BACKTRACE_MAX },
	/* Each adds a file to ALLOCSPY_SUPPRESSIONS, once the options are read. */
	{ "suppressions", OPT_TEXT, NULL, NULL, 0, 0 },
	{ "trace-children", OPT_CHOICE, "ALLOCSPY_FOLLOW_CHILDREN", yes_no, 0, 0 },
	{ "trace-children-skip", OPT_TEXT, "ALLOCSPY_TRACE_CHILDREN_SKIP", NULL, 0, 0 },
	{ "error-exitcode", OPT_INT, "ALLOCSPY_ERROR_EXITCODE", NULL, 0, 255 },
	{ "errors-for-leak-kinds", OPT_TEXT, "ALLOCSPY_ERRORS_FOR_LEAK_KINDS", NULL, 0, 0 },
	{ "log-file", OPT_TEXT, "ALLOCSPY_LOG_FILE", NULL, 0, 0 },
	/* Both set ALLOCSPY_FREERES once the options are read. */
	{ "run-libc-freeres", OPT_CHOICE, NULL, yes_no, 0, 0 },
	{ "run-cxx-freeres", OPT_CHOICE, NULL, yes_no, 0, 0 },
	/* allocspy's own */
	{ "backtrace", OPT_INT, "ALLOCSPY_BACKTRACE", NULL, 0, BACKTRACE_MAX },
	{ "error-exitcode-children", OPT_CHOICE, "ALLOCSPY_ERROR_EXITCODE_CHILDREN", yes_no, 0, 0 },
	{ "mode", OPT_CHOICE, "ALLOCSPY_MODE", mode_choices, 0, 0 },
	{ "output", OPT_TEXT, "ALLOCSPY_OUTPUT", NULL, 0, 0 },
	{ "unwind", OPT_CHOICE, "ALLOCSPY_UNWIND", unwind_choices, 0, 0 },
	{ "snapshots", OPT_INT, "ALLOCSPY_SNAPSHOTS", NULL, 0, 100000 },
	{ "sample", OPT_INT, "ALLOCSPY_SAMPLE", NULL, 0, 1ull << 40 },
	{ "sample-seed", OPT_INT, "ALLOCSPY_SAMPLE_SEED", NULL, 0, INT64_MAX },
	{ "guard", OPT_INT, "ALLOCSPY_GUARD", NULL, 0, 1ull << 40 },
	{ "interval-ms", OPT_INT, "ALLOCSPY_INTERVAL_MS", NULL, 0, 86400000 },
	{ "dump-on-signal", OPT_CHOICE, "ALLOCSPY_DUMP_ON_SIGNAL", yes_no, 0, 0 },
	{ "ref-cross", OPT_CHOICE, "ALLOCSPY_REF_CROSS", yes_no, 0, 0 },
	{ "quiet", OPT_NONE, "ALLOCSPY_QUIET", NULL, 0, 0 },
	{ "help", OPT_NONE, NULL, NULL, 0, 0 },
	{ "version", OPT_NONE, NULL, NULL, 0, 0 },
};

#define NOPTS (sizeof opts / sizeof opts[0])

/* Levenshtein distance of a[0..la) and b[0..lb), both short. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t row[64];

	if (la >= 63 || lb >= 63)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

/* The word of words[0..] closest to w[0..len), when it is close enough to
 * be a misspelling of it (a third of its letters, at least 2, at most 3),
 * or one it begins (a prefix); else NULL. */
static const char *closest(const char *w, size_t len, const char *const *words, size_t n,
			   size_t stride)
{
	const char *best = NULL;
	size_t bd = (size_t)-1;

	for (size_t i = 0; i < n; i++) {
		const char *c = *(const char *const *)((const char *)words + i * stride);
		size_t d = distance(w, len, c, strlen(c));

		if (len >= 2 && strlen(c) > len && strncmp(c, w, len) == 0)
			d = 1;	/* a prefix: what was meant, more than likely */
		if (d < bd) {
			bd = d;
			best = c;
		}
	}
	size_t most = len / 3 < 2 ? 2 : len / 3 > 3 ? 3 : len / 3;

	return bd <= most ? best : NULL;
}

static void unknown_option(const char *a, size_t n)
{
	const char *c = closest(a + 2, n - 2, &opts[0].name, NOPTS, sizeof opts[0]);

	if (c != NULL)
		error("unknown option '%.*s' (did you mean --%s?)", (int)n, a, c);
	else
		error("unknown option '%.*s' (try --help)", (int)n, a);
}

static int check_value(const struct opt *o, const char *v)
{
	if (o->arg == OPT_CHOICE) {
		size_t n = 0;

		for (const char *const *c = o->choices; *c; c++, n++)
			if (strcmp(v, *c) == 0)
				return 0;
		/* "'x' is not track or count", "... not summary, full or no" */
		fprintf(stderr, "allocspy: error: --%s: '%s' is not ", o->name, v);
		for (const char *const *c = o->choices; *c; c++)
			fprintf(stderr, "%s%s", *c, !c[1] ? "" : !c[2] ? " or " : ", ");
		const char *c = closest(v, strlen(v), o->choices, n, sizeof *o->choices);

		if (c != NULL)
			fprintf(stderr, " (did you mean %s?)", c);
		fputc('\n', stderr);
		return -EINVAL;
	}
	if (o->arg == OPT_INT) {
		unsigned long long x = 0;
		const char *p = v;
		int over = 0;

		for (; *p >= '0' && *p <= '9'; p++) {
			over |= x > (o->hi - (unsigned)(*p - '0')) / 10;
			x = x * 10 + (unsigned long long)(*p - '0');
		}
		if (*v == '\0' || *p != '\0' || over || x < o->lo || x > o->hi) {
			error("--%s: '%s' is not a number from %llu to %llu", o->name, v, o->lo, o->hi);
			return -EINVAL;
		}
		return 0;
	}
	if (*v == '\0') {
		error("--%s: the value is empty", o->name);
		return -EINVAL;
	}
	return 0;
}

/* Parses the options into the environment. Returns RUN with the index of
 * the program in *prog, or the status to exit with at once. */
#define RUN (-1)

/* ALLOCSPY_FREERES from --run-libc-freeres and --run-cxx-freeres (libc
 * first): yes, no, libc (glibc's only) or cxx (libstdc++'s only). */
static int freeres[2] = { -1, -1 };

static int set_freeres(void)
{
	static const char *const value[2][2] = { { "no", "cxx" }, { "libc", "yes" } };
	const char *old = getenv("ALLOCSPY_FREERES");
	int libc = freeres[0], cxx = freeres[1];

	if (libc < 0 && cxx < 0)
		return 0;
	/* An option left out keeps what ALLOCSPY_FREERES says, yes by default. */
	if (libc < 0)
		libc = !old || !strcmp(old, "yes") || !strcmp(old, "libc");
	if (cxx < 0)
		cxx = !old || !strcmp(old, "yes") || !strcmp(old, "cxx");
	if (setenv("ALLOCSPY_FREERES", value[libc][cxx], 1) != 0) {
		error("setenv ALLOCSPY_FREERES: %s", strerror(errno));
		return -errno;
	}
	return 0;
}

/* ALLOCSPY_SUPPRESSIONS from the --suppressions given, in their order,
 * each made absolute (the shim reads them at exit, maybe elsewhere). */
static char *supp_list;
static size_t supp_len;

static int add_suppressions(const char *file)
{
	char abs[PATH_MAX];
	char *more;
	size_t len;

	if (!realpath(file, abs)) {
		error("--suppressions: %s: %s", file, strerror(errno));
		return -EINVAL;
	}
	if (strchr(abs, ':')) {
		error("--suppressions: %s: ALLOCSPY_SUPPRESSIONS cannot hold a path with a colon", abs);
		return -EINVAL;
	}
	len = strlen(abs);
	more = realloc(supp_list, supp_len + len + 2);
	if (!more) {
		error("%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	supp_list = more;
	if (supp_len > 0)
		supp_list[supp_len++] = ':';
	memcpy(supp_list + supp_len, abs, len + 1);
	supp_len += len;
	return 0;
}

/* What the options set once all are read. */
static int set_collected(void)
{
	if (set_freeres() < 0)
		return -1;
	if (supp_list && setenv("ALLOCSPY_SUPPRESSIONS", supp_list, 1) != 0) {
		error("setenv ALLOCSPY_SUPPRESSIONS: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static int parse_options(int argc, char **argv, int *prog)
{
	int i = 1;

	while (i < argc) {
		const char *a = argv[i];
		const struct opt *o = NULL;
		const char *v = NULL;
		size_t n;

		if (strcmp(a, "--") == 0) {
			*prog = i + 1;
			return set_collected() < 0 ? ASP_EXIT_ERROR : RUN;
		}
		if (a[0] != '-' || a[1] == '\0')
			break;	/* the program */
		if (strcmp(a, "-h") == 0) {
			usage(stdout);
			return finish_stdout();
		}
		if (a[1] != '-') {
			error("unknown option '%s' (try --help)", a);
			return ASP_EXIT_ERROR;
		}
		n = strcspn(a + 2, "=");
		for (size_t k = 0; k < NOPTS; k++)
			if (strlen(opts[k].name) == n && strncmp(a + 2, opts[k].name, n) == 0)
				o = &opts[k];
		if (!o) {
			unknown_option(a, n + 2);
			return ASP_EXIT_ERROR;
		}
		if (a[2 + n] == '=')
			v = a + 3 + n;
		i++;

		if (o->arg == OPT_NONE && v) {
			error("--%s takes no value", o->name);
			return ASP_EXIT_ERROR;
		}
		if (o->arg != OPT_NONE && !v) {
			if (i >= argc) {
				error("--%s needs a value", o->name);
				return ASP_EXIT_ERROR;
			}
			v = argv[i++];
		}
		if (strcmp(o->name, "help") == 0) {
			usage(stdout);
			return finish_stdout();
		}
		if (strcmp(o->name, "version") == 0) {
			printf("allocspy %s\n", ASP_VERSION);
			return finish_stdout();
		}
		if (o->arg != OPT_NONE && check_value(o, v) < 0)
			return ASP_EXIT_ERROR;
		if (strcmp(o->name, "run-libc-freeres") == 0 || strcmp(o->name, "run-cxx-freeres") == 0) {
			freeres[o->name[4] == 'c'] = strcmp(v, "yes") == 0;
			continue;
		}
		if (strcmp(o->name, "suppressions") == 0) {
			if (add_suppressions(v) < 0)
				return ASP_EXIT_ERROR;
			continue;
		}
		if (setenv(o->var, v ? v : "1", 1) != 0) {
			error("setenv %s: %s", o->var, strerror(errno));
			return ASP_EXIT_ERROR;
		}
	}
	*prog = i;
	return set_collected() < 0 ? ASP_EXIT_ERROR : RUN;
}

/* ---- the library ------------------------------------------------------------ */

/* Whether the ELF file p[0..size) is a shared object of this machine's
 * class whose dynamic symbols define malloc: what ld.so can preload in
 * the shim's place. Returns 0, or -EINVAL with an error printed. */
static int check_elf_library(const char *path, const unsigned char *p, size_t size)
{
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)p;
	const Elf64_Shdr *sh;

	if (size < sizeof *eh || memcmp(p, ELFMAG, SELFMAG) != 0) {
		error("%s: not an ELF file, so not liballocspy.so (ALLOCSPY_LIB)", path);
		return -EINVAL;
	}
	if (p[EI_CLASS] != ELFCLASS64 || eh->e_type != ET_DYN) {
		error("%s: not a 64-bit shared object, so not liballocspy.so (ALLOCSPY_LIB)", path);
		return -EINVAL;
	}
	if (eh->e_shoff == 0 || eh->e_shentsize != sizeof *sh || eh->e_shoff > size ||
	    (size - eh->e_shoff) / sizeof *sh < eh->e_shnum)
		goto no_malloc;
	sh = (const Elf64_Shdr *)(p + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *str;
		const Elf64_Sym *sym;

		if (sh[i].sh_type != SHT_DYNSYM || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_entsize != sizeof *sym || sh[i].sh_offset > size ||
		    size - sh[i].sh_offset < sh[i].sh_size)
			continue;
		str = &sh[sh[i].sh_link];
		if (str->sh_offset > size || size - str->sh_offset < str->sh_size)
			continue;
		sym = (const Elf64_Sym *)(p + sh[i].sh_offset);
		for (size_t k = 0; k < sh[i].sh_size / sizeof *sym; k++)
			if (sym[k].st_shndx != SHN_UNDEF && sym[k].st_name < str->sh_size &&
			    str->sh_size - sym[k].st_name > 6 &&
			    memcmp(p + str->sh_offset + sym[k].st_name, "malloc", 7) == 0)
				return 0;
	}
no_malloc:
	error("%s: exports no malloc, so not liballocspy.so (ALLOCSPY_LIB)", path);
	return -EINVAL;
}

static int check_library(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *map;
	int r;

	if (fd < 0 || fstat(fd, &st) != 0) {
		error("%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	if (!S_ISREG(st.st_mode) || st.st_size == 0) {
		close(fd);
		error("%s: not a regular file, so not liballocspy.so (ALLOCSPY_LIB)", path);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		error("%s: %s", path, strerror(errno));
		return -EINVAL;
	}
	r = check_elf_library(path, map, (size_t)st.st_size);
	munmap(map, (size_t)st.st_size);
	return r;
}

/* Finds liballocspy.so: $ALLOCSPY_LIB, else ASP_LIBDIR when installed,
 * else beside this executable. Stores an absolute path in buf. */
static int find_library(char buf[PATH_MAX])
{
	const char *env = getenv("ALLOCSPY_LIB");
	char path[PATH_MAX];

	if (env && *env) {
		if (strlen(env) >= sizeof path) {
			error("ALLOCSPY_LIB: the path is too long");
			return -ENAMETOOLONG;
		}
		memcpy(path, env, strlen(env) + 1);
	} else {
#ifdef ASP_INSTALLED
		if (snprintf(path, sizeof path, "%s/%s", ASP_LIBDIR, LIB_NAME) >= (int)sizeof path) {
			error("%s: the path is too long", ASP_LIBDIR);
			return -ENAMETOOLONG;
		}
#else
		ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
		char *slash;

		if (n < 0) {
			int e = errno;

			error("/proc/self/exe: %s", strerror(e));
			return -e;
		}
		path[n] = '\0';
		slash = strrchr(path, '/');
		if (!slash || (size_t)(slash - path) + 1 + sizeof LIB_NAME > sizeof path) {
			error("%s: cannot find the directory of allocspy", path);
			return -ENAMETOOLONG;
		}
		memcpy(slash + 1, LIB_NAME, sizeof LIB_NAME);
#endif
	}
	/* realpath makes it absolute, so that it still works after the
	 * program changes directory and in the programs it runs. */
	if (!realpath(path, buf) || access(buf, R_OK) != 0) {
		error("%s: %s", path, strerror(errno));
		return -ENOENT;
	}
	if (check_library(buf) < 0)
		return -EINVAL;
	/* LD_PRELOAD splits its list at colons and spaces. */
	if (strpbrk(buf, ": \t\n")) {
		error("%s: LD_PRELOAD cannot hold a path with a colon or a space", buf);
		return -EINVAL;
	}
	return 0;
}

/* Puts lib in front of LD_PRELOAD, keeping what was there after it. */
static int set_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int r;

	if (old && *old) {
		val = malloc(strlen(lib) + 1 + strlen(old) + 1);
		if (!val) {
			error("%s", strerror(ENOMEM));
			return -ENOMEM;
		}
		sprintf(val, "%s:%s", lib, old);
		r = setenv("LD_PRELOAD", val, 1);
		free(val);
	} else {
		r = setenv("LD_PRELOAD", lib, 1);
	}
	if (r != 0) {
		r = errno;
		error("setenv LD_PRELOAD: %s", strerror(r));
		return -r;
	}
	return 0;
}

/* ---- the program -------------------------------------------------------------- */

/* A program named with a slash: a clear line, with a shell's status, for
 * one that is missing (127), a directory or not executable (126). */
static int check_file(const char *prog, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0) {
		int e = errno;

		error("%s: %s", prog, strerror(e));
		return e == ENOENT || e == ENOTDIR ? ASP_EXIT_NOT_FOUND : ASP_EXIT_CANNOT_RUN;
	}
	if (S_ISDIR(st.st_mode)) {
		error("%s: is a directory", prog);
		return ASP_EXIT_CANNOT_RUN;
	}
	if (access(path, X_OK) != 0) {
		error("%s: %s", prog, strerror(errno));
		return ASP_EXIT_CANNOT_RUN;
	}
	return 0;
}

/* Finds prog as execvp(3) would. Returns 0 with the path in buf, or the
 * exit status for a program that cannot be found or run. */
static int find_program(const char *prog, char *buf, size_t size)
{
	const char *path, *p;
	int seen_eacces = 0;

	if (strchr(prog, '/')) {
		if (strlen(prog) >= size) {
			error("%s: %s", prog, strerror(ENAMETOOLONG));
			return ASP_EXIT_CANNOT_RUN;
		}
		memcpy(buf, prog, strlen(prog) + 1);
		return check_file(prog, buf);
	}
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p++) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		struct stat st;

		/* An empty entry is the current directory. */
		if (dlen + 1 + strlen(prog) < size) {
			if (dlen == 0)
				memcpy(buf, prog, strlen(prog) + 1);
			else
				sprintf(buf, "%.*s/%s", (int)dlen, p, prog);
			if (stat(buf, &st) == 0 && S_ISREG(st.st_mode)) {
				if (access(buf, X_OK) == 0)
					return 0;
				seen_eacces = 1;
			}
		}
		p = end;
		if (*p == '\0')
			break;
	}
	if (seen_eacces) {
		error("%s: %s", prog, strerror(EACCES));
		return ASP_EXIT_CANNOT_RUN;
	}
	error("%s: command not found", prog);
	return ASP_EXIT_NOT_FOUND;
}

static uint64_t get_u(const unsigned char *p, size_t len, int msb)
{
	uint64_t v = 0;

	for (size_t i = 0; i < len; i++)
		v |= (uint64_t)p[msb ? len - 1 - i : i] << (8 * i);
	return v;
}

/* A field of an ELF structure, in the file's class and byte order. */
#define FIELD(buf, is64, type, member, msb)					\
	((is64) ? get_u((buf) + offsetof(Elf64_##type, member),			\
			sizeof(((Elf64_##type *)0)->member), (msb))		\
		: get_u((buf) + offsetof(Elf32_##type, member),			\
			sizeof(((Elf32_##type *)0)->member), (msb)))

enum link_kind { LINK_UNKNOWN, LINK_DYNAMIC, LINK_STATIC };

/* The kernel refuses a program header table larger than this. */
#define PHDRS_MAX 65536

/* Reads the ELF header and program headers of fd: an executable or a
 * shared object with a PT_INTERP header is dynamic, one without is static
 * (static-pie included). Anything else, or a file too short or malformed
 * to tell, is unknown and left to execve(2) to judge. */
static enum link_kind elf_link_kind(int fd)
{
	static unsigned char ph[PHDRS_MAX];
	unsigned char eh[sizeof(Elf64_Ehdr)];
	uint64_t phoff, phnum, phentsize, type;
	ssize_t n;
	int is64, msb;

	n = pread(fd, eh, sizeof eh, 0);
	if (n < (ssize_t)SELFMAG || memcmp(eh, ELFMAG, SELFMAG) != 0)
		return LINK_UNKNOWN;
	if (eh[EI_CLASS] != ELFCLASS32 && eh[EI_CLASS] != ELFCLASS64)
		return LINK_UNKNOWN;
	if (eh[EI_DATA] != ELFDATA2LSB && eh[EI_DATA] != ELFDATA2MSB)
		return LINK_UNKNOWN;
	is64 = eh[EI_CLASS] == ELFCLASS64;
	msb = eh[EI_DATA] == ELFDATA2MSB;
	if (n < (ssize_t)(is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return LINK_UNKNOWN;

	type = FIELD(eh, is64, Ehdr, e_type, msb);
	if (type != ET_EXEC && type != ET_DYN)
		return LINK_UNKNOWN;
	phoff = FIELD(eh, is64, Ehdr, e_phoff, msb);
	phnum = FIELD(eh, is64, Ehdr, e_phnum, msb);
	phentsize = FIELD(eh, is64, Ehdr, e_phentsize, msb);
	if (phentsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return LINK_UNKNOWN;
	if (phnum == PN_XNUM) {
		/* The real count is in section header 0's sh_info. */
		unsigned char sh[sizeof(Elf64_Shdr)];
		uint64_t shoff = FIELD(eh, is64, Ehdr, e_shoff, msb);
		size_t shsize = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);

		if (shoff == 0 || shoff > INT64_MAX ||
		    pread(fd, sh, shsize, (off_t)shoff) != (ssize_t)shsize)
			return LINK_UNKNOWN;
		phnum = FIELD(sh, is64, Shdr, sh_info, msb);
	}
	if (phnum == 0)
		return LINK_STATIC;
	if (phnum > PHDRS_MAX / phentsize || phoff > INT64_MAX ||
	    pread(fd, ph, phnum * phentsize, (off_t)phoff) != (ssize_t)(phnum * phentsize))
		return LINK_UNKNOWN;
	for (uint64_t i = 0; i < phnum; i++)
		/* p_type is the first word of both Elf32_Phdr and Elf64_Phdr. */
		if (get_u(ph + i * phentsize, 4, msb) == PT_INTERP)
			return LINK_DYNAMIC;
	return LINK_STATIC;
}

/* The interpreter named on a "#!" first line, in buf; 0 if there is one. */
static int script_interpreter(int fd, char *buf, size_t size)
{
	char line[256];	/* the kernel reads no more of a #! line */
	ssize_t n = pread(fd, line, sizeof line - 1, 0);
	char *p, *end;

	if (n < 2 || line[0] != '#' || line[1] != '!')
		return -ENOEXEC;
	line[n] = '\0';
	for (p = line + 2; *p == ' ' || *p == '\t'; p++)
		;
	end = p + strcspn(p, " \t\n");
	if (end == p || (size_t)(end - p) >= size)
		return -ENOEXEC;
	memcpy(buf, p, (size_t)(end - p));
	buf[end - p] = '\0';
	return 0;
}

static enum link_kind file_link_kind(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	enum link_kind k;

	if (fd < 0)
		return LINK_UNKNOWN;
	k = elf_link_kind(fd);
	close(fd);
	return k;
}

/* True when exec'ing path would change credentials: ld.so then runs in
 * secure mode and ignores an LD_PRELOAD path with a slash in it. */
static int changes_credentials(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	return ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
	       ((st.st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) &&
		st.st_gid != getegid());
}

/* Refuses a program that LD_PRELOAD cannot trace. Returns 0 or the exit
 * status. prog is the name as given, for the message. */
static int check_traceable(const char *prog, const char *path)
{
	char interp[256];
	int fd;

	if (access(path, X_OK) != 0)
		return 0;	/* execve gives the error */
	if (changes_credentials(path)) {
		error("%s: set-user-ID or set-group-ID; LD_PRELOAD cannot trace it", prog);
		return ASP_EXIT_CANNOT_RUN;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;	/* execute-only: leave it to execve */
	if (elf_link_kind(fd) == LINK_STATIC) {
		close(fd);
		error("%s: statically linked; LD_PRELOAD cannot trace it", prog);
		return ASP_EXIT_CANNOT_RUN;
	}
	if (script_interpreter(fd, interp, sizeof interp) == 0 &&
	    file_link_kind(interp) == LINK_STATIC) {
		close(fd);
		error("%s: its interpreter %s is statically linked; "
		      "LD_PRELOAD cannot trace it", prog, interp);
		return ASP_EXIT_CANNOT_RUN;
	}
	close(fd);
	return 0;
}

/* Runs path, falling back to /bin/sh for a file without a #! line as
 * execvp does. Returns only on failure, with the exit status. */
static int run(const char *prog, const char *path, char **argv)
{
	int e;

	execv(path, argv);
	e = errno;
	if (e == ENOEXEC) {
		int argc = 0;
		char **sh_argv;

		while (argv[argc])
			argc++;
		sh_argv = calloc((size_t)argc + 2, sizeof *sh_argv);
		if (sh_argv) {
			sh_argv[0] = (char *)"sh";
			sh_argv[1] = (char *)path;
			memcpy(sh_argv + 2, argv + 1, (size_t)argc * sizeof *argv);
			execv("/bin/sh", sh_argv);
			free(sh_argv);
		}
	}
	error("%s: %s", prog, strerror(e));
	return e == ENOENT ? ASP_EXIT_NOT_FOUND : ASP_EXIT_CANNOT_RUN;
}

int main(int argc, char **argv)
{
	char lib[PATH_MAX], path[PATH_MAX];
	const char *prog;
	int i = 0, r;

	if (argc > 1 && strcmp(argv[1], "top") == 0)
		return asp_top_main(argc - 1, argv + 1);
	r = parse_options(argc, argv, &i);
	if (r != RUN)
		return r;
	if (i >= argc) {
		error("no program to run (try --help)");
		return ASP_EXIT_ERROR;
	}
	prog = argv[i];
	if (find_library(lib) < 0 || set_preload(lib) < 0)
		return ASP_EXIT_ERROR;
	r = find_program(prog, path, sizeof path);
	if (r != 0)
		return r;
	r = check_traceable(prog, path);
	if (r != 0)
		return r;
	return run(prog, path, argv + i);
}
