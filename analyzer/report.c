/* report - the command line of allocspy-report: it reads the options,
 * loads the dumps, runs one command and checks that stdout was written. */
#include "report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "compare.h"
#include "errors.h"
#include "export.h"
#include "fmt.h"
#include "gate.h"
#include "html.h"
#include "leaks.h"
#include "load.h"
#include "merge.h"
#include "msg.h"
#include "peak.h"
#include "rss.h"
#include "summary.h"
#include "timeline.h"

static const char usage_text[] =
"usage: allocspy-report [--json] [summary] DUMP\n"
"       allocspy-report [--json] leaks [--show-leak-kinds=KINDS]\n"
"                             [--gen-suppressions] DUMP\n"
"       allocspy-report [--json] errors [--gen-suppressions] DUMP\n"
"       allocspy-report [--json] compare [--label NAME]... [--fail-if=EXPR] DUMP1 DUMP2\n"
"                             [DUMP...]\n"
"       allocspy-report [--json] check BUDGET... DUMP\n"
"       allocspy-report [--json] rss DUMP\n"
"       allocspy-report timeline [--svg FILE] [--json] DUMP\n"
"       allocspy-report export --format=FORMAT [--weight=WEIGHT] [-o FILE] DUMP\n"
"       allocspy-report merge [-o FILE] DUMP...\n"
"       allocspy-report html [-o FILE] [--label NAME]... DUMP [DUMP2]\n"
"       allocspy-report help | -h | --help | --version\n"
"\n"
"Reads the JSON dumps that liballocspy.so writes at exit.\n"
"  [summary] DUMP     the exit text (HEAP, LEAK, ERROR and REF SUMMARY), then\n"
"                     tables of functions, threads, block sizes, stacks, peak\n"
"                     and time\n"
"  leaks DUMP         the loss records with symbolized stacks, as valgrind\n"
"                     prints them, then the LEAK SUMMARY\n"
"  errors DUMP        the heap errors (invalid and mismatched frees, fishy\n"
"                     sizes; ALLOCSPY_GUARD's invalid reads and writes and\n"
"                     bytes written around a block) with symbolized stacks,\n"
"                     as the program printed them at exit, then the ERROR\n"
"                     SUMMARY\n"
"  compare DUMP1 DUMP2 ...\n"
"                     the figures, leak kinds and heap errors side by side,\n"
"                     with ratios against DUMP1, then the allocation sites\n"
"                     that changed most\n"
"  check BUDGET... DUMP\n"
"                     exit 1 with one line per budget the dump exceeds (the\n"
"                     figure, the budget, the stack that holds most of it),\n"
"                     0 within every budget\n"
"  rss DUMP           the resident memory at exit, in rows that add up to it:\n"
"                     the heap in use, the allocator's slack and free memory,\n"
"                     large blocks, thread stacks, allocspy's own memory,\n"
"                     other anonymous memory, file mappings, unexplained\n"
"  timeline DUMP      the heap in use over time as a chart, then the stacks\n"
"                     that held the peak\n"
"  export DUMP        the dump in another tool's format, on stdout or in FILE\n"
"  merge DUMP...      the dumps of many processes added up into one dump, on\n"
"                     stdout or in FILE: counts and stacks add up, the heap\n"
"                     over time is the sum of each process's latest snapshot\n"
"  html DUMP [DUMP2]  one self-contained HTML page, on stdout or in FILE: the\n"
"                     heap over time, flame graphs, the heap errors, the leaks\n"
"                     and the tables; with DUMP2, what changed from DUMP to\n"
"                     DUMP2\n"
"\n"
"Options (before or after the command; a value may be the next word):\n"
"  --json             write JSON instead of text\n"
"  --show-leak-kinds=KINDS, --show-leak-kinds KINDS\n"
"                     the loss records to show: a list of definite, indirect,\n"
"                     possible, reachable, or all, or none\n"
"                     (default: definite,possible)\n"
"  --gen-suppressions leaks, errors: write a valgrind suppression under each\n"
"                     loss record or heap error\n"
"  --svg FILE         timeline: write the chart and the peak's stacks to FILE\n"
"                     as a standalone SVG image instead\n"
"  --format=FORMAT    export: pprof (gzipped profile.proto), gperftools (a\n"
"                     text heap profile), massif, callgrind, heaptrack,\n"
"                     folded (stacks, for flame graphs) or speedscope\n"
"  --weight=WEIGHT    export --format=folded: what each stack counts:\n"
"                     alloc_bytes (the default), allocs, inuse_bytes (at the\n"
"                     end), peak_bytes or temporary\n"
"  -o FILE            export, merge, html: write to FILE instead of stdout\n"
"                     (export: a FILE ending in .gz is written gzipped)\n"
"  --label NAME       compare, html: the name of the next dump, in the order\n"
"                     the dumps are given (default: its file name)\n"
"  --fail-if=EXPR     compare: exit 1 naming each rise of a figure from DUMP1\n"
"                     to a later dump beyond its threshold; EXPR is a comma-\n"
"                     separated list of METRIC>+N%, METRIC>+N (a count, or\n"
"                     bytes with K, M, G; seconds for the times), as in\n"
"                     peak>+5%,allocs>+10%,in_use>+0. Metrics: allocs, frees,\n"
"                     bytes, in_use, peak, leaked, errors, strdup_calls,\n"
"                     strdup_bytes, ref_ops, time, user_time, sys_time\n"
"  help, -h, --help   write this text\n"
"  --version          write the version\n"
"\n"
"Budgets of check (each may be given more than once; SIZE is bytes, or\n"
"with K, M or G for KiB, MiB, GiB; FUNCTION: sums the stacks through it):\n"
"  --max-peak=[FUNCTION:]SIZE     the bytes in use at the peak\n"
"  --max-in-use=[FUNCTION:]SIZE   the bytes in use when the dump was written\n"
"  --max-leaked=[FUNCTION:]SIZE   the bytes definitely and indirectly lost\n"
"  --max-allocs=[FUNCTION:]N      the blocks allocated\n"
"  --max-bytes=[FUNCTION:]SIZE    the bytes allocated\n"
"  --max-errors=N                 the heap errors (0 in a dump without them)\n"
"\n"
"A misspelled command, option, format or weight is named with the closest\n"
"valid one.\n"
"\n"
"Exit status: 0 done, 1 a budget exceeded (check), a regression (compare\n"
"--fail-if) or the report could not be written, 2 a usage error or a bad dump.\n";

enum command {
	CMD_SUMMARY, CMD_LEAKS, CMD_ERRORS, CMD_COMPARE, CMD_TIMELINE, CMD_EXPORT, CMD_MERGE, CMD_HTML,
	CMD_CHECK, CMD_RSS
};

/* The commands, and how many dumps each takes. */
static const struct command_info {
	const char *name;
	size_t min_dumps, max_dumps;
} commands[] = {
	[CMD_SUMMARY] = { "summary", 1, 1 },
	[CMD_LEAKS] = { "leaks", 1, 1 },
	[CMD_ERRORS] = { "errors", 1, 1 },
	[CMD_COMPARE] = { "compare", 2, SIZE_MAX },
	[CMD_TIMELINE] = { "timeline", 1, 1 },
	[CMD_EXPORT] = { "export", 1, 1 },
	[CMD_MERGE] = { "merge", 1, SIZE_MAX },
	[CMD_HTML] = { "html", 1, 2 },
	[CMD_CHECK] = { "check", 1, 1 },
	[CMD_RSS] = { "rss", 1, 1 },
};

struct opts {
	enum command cmd;
	const char *svg;	/* timeline --svg */
	const char *output;	/* export -o, html -o */
	bool format_given;
	enum asp_export_format format;
	bool weight_given;
	enum asp_export_weight weight;
	bool json;
	bool gen_suppressions;
	unsigned kinds;
	char **files;
	size_t nfiles;
	asp_budget_t *budgets;	/* check */
	size_t nbudgets;
	asp_fail_if_t fail_if;	/* compare */
	const char **labels;	/* --label, in order */
	size_t nlabels;
};

/* The options, as --help spells them, for the suggestions. */
static const char *const option_names[] = {
	"--json", "--show-leak-kinds", "--gen-suppressions", "--svg", "--format",
	"--weight", "-o", "--label", "--fail-if", "--max-peak", "--max-in-use", "--max-leaked",
	"--max-allocs", "--max-bytes", "--max-errors", "--help", "--version",
};

static int out_of_memory(void)
{
	asp_error(NULL, "out of memory");
	return ASP_EXIT_OUTPUT;
}

/* A usage error: one line, and where to look. */
static int usage_error(const char *fmt, const char *arg)
{
	asp_error(NULL, fmt, arg);
	fputs("Try 'allocspy-report --help'.\n", stderr);
	return ASP_EXIT_USAGE;
}

/* "WHAT 'word'; did you mean 'closest'?" when one of words is close to
 * word, with list after it ("(the formats: ...)") when given. */
static int suggest_error(const char *what, const char *word, size_t len,
			 const char *const *words, size_t n, const char *list)
{
	const char *near = asp_closest(word, len, words, n);
	char *all = NULL;
	size_t size = 0;
	FILE *m = list ? open_memstream(&all, &size) : NULL;

	if (m) {
		fprintf(m, " (%s: ", list);
		for (size_t i = 0; i < n; i++)
			fprintf(m, "%s%s", i ? ", " : "", words[i]);
		putc(')', m);
		if (fclose(m) != 0) {
			free(all);
			all = NULL;
		}
	}
	if (near)
		asp_error(NULL, "%s '%.*s'; did you mean '%s'?%s", what, (int)len, word,
			  near, all ? all : "");
	else
		asp_error(NULL, "%s '%.*s'%s", what, (int)len, word, all ? all : "");
	free(all);
	fputs("Try 'allocspy-report --help'.\n", stderr);
	return ASP_EXIT_USAGE;
}

static const char *const command_names[] = {
	"summary", "leaks", "errors", "compare", "check", "timeline", "export", "merge", "html", "help",
};

/* The command named by word, or -1. */
static int command(const char *word)
{
	for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
		if (strcmp(word, commands[i].name) == 0)
			return (int)i;
	return -1;
}

/* The value of option name (which takes one) at argv[*i]: after '=' or
 * the next word. NULL when a is another option. *missing is set when the
 * value is not there. */
static const char *value(const char *name, int argc, char **argv, int *i, bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (!a || strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != '\0')
		return NULL;
	if (*i + 1 == argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/* A budget option of check at argv[*i] into o->budgets: 1 taken, 0 not a
 * budget option, or the exit status of a usage error. */
static int budget(struct opts *o, int argc, char **argv, int *i, bool *missing)
{
	char err[ASP_ERR_MAX];

	for (const char *const *name = asp_check_options; *name; name++) {
		const char *v = value(*name, argc, argv, i, missing);
		int rc;

		if (!v)
			continue;
		rc = asp_budget_parse(&o->budgets[o->nbudgets], *name, v, err, sizeof err);
		if (rc == -ENOMEM)
			return out_of_memory();
		if (rc < 0)
			return usage_error("%s", err);
		o->nbudgets++;
		return 1;
	}
	return 0;
}

/* A --show-leak-kinds value with a word that is no kind: the closest kind
 * to that word, when one is close. */
static int bad_kinds(const char *kinds)
{
	const char *names[ASP_LEAK_SUPPRESSED + 2] = { "all", "none" };
	const char *p = kinds, *near = NULL;

	for (int k = 0; k < ASP_LEAK_SUPPRESSED; k++)
		names[k + 2] = asp_leak_kind_name[k];
	for (;;) {
		size_t len = strcspn(p, ",");
		unsigned one;
		char word[64];

		snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), p);
		if (asp_leaks_parse_kinds(word, &one) < 0) {
			near = asp_closest(p, len, names, sizeof names / sizeof *names);
			break;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	if (near)
		asp_error(NULL, "bad --show-leak-kinds value '%s'; did you mean '%s' for '%.*s'?",
			  kinds, near, (int)strcspn(p, ","), p);
	else
		asp_error(NULL, "bad --show-leak-kinds value '%s'", kinds);
	fputs("Try 'allocspy-report --help'.\n", stderr);
	return ASP_EXIT_USAGE;
}

/* Fills o from argv. Options may come before the command or after it
 * (--json leaks DUMP, leaks --json DUMP); an option's value may follow
 * it as the next word (--show-leak-kinds definite). Returns -1 to go on,
 * or the exit status (--help, --version, a usage error). */
static int parse(struct opts *o, int argc, char **argv)
{
	bool options = true, have_cmd = false, missing = false;
	const char *kinds = NULL, *format = NULL, *weight = NULL, *v;
	char err[ASP_ERR_MAX];
	int rc;

	o->kinds = ASP_KINDS_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!options || a[0] != '-' || a[1] == '\0') {
			if (!have_cmd && o->nfiles == 0 && strcmp(a, "help") == 0) {
				fputs(usage_text, stdout);
				return ASP_EXIT_OK;
			}
			if (!have_cmd && o->nfiles == 0 && command(a) >= 0) {
				o->cmd = (enum command)command(a);
				have_cmd = true;
			} else {
				o->files[o->nfiles++] = argv[i];
			}
		} else if (strcmp(a, "--") == 0) {
			options = false;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			fputs(usage_text, stdout);
			return ASP_EXIT_OK;
		} else if (strcmp(a, "--version") == 0) {
			puts("allocspy-report " ASP_VERSION);
			return ASP_EXIT_OK;
		} else if (strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (strcmp(a, "--gen-suppressions") == 0) {
			o->gen_suppressions = true;
		} else if ((v = value("--show-leak-kinds", argc, argv, &i, &missing))) {
			kinds = v;
		} else if ((v = value("--svg", argc, argv, &i, &missing))) {
			o->svg = v;
		} else if ((v = value("--format", argc, argv, &i, &missing))) {
			format = v;
		} else if ((v = value("--weight", argc, argv, &i, &missing))) {
			weight = v;
		} else if ((v = value("-o", argc, argv, &i, &missing))) {
			o->output = v;
		} else if ((v = value("--label", argc, argv, &i, &missing))) {
			o->labels[o->nlabels++] = v;
		} else if ((v = value("--fail-if", argc, argv, &i, &missing))) {
			rc = asp_fail_if_parse(&o->fail_if, v, err, sizeof err);
			if (rc == -ENOMEM)
				return out_of_memory();
			if (rc < 0)
				return usage_error("%s", err);
		} else if (!missing && (rc = budget(o, argc, argv, &i, &missing)) != 0) {
			if (rc != 1)
				return rc;
		} else if (missing) {
			return usage_error("%s needs a value", a);
		} else {
			return suggest_error("unknown option", a, strcspn(a, "="), option_names,
					     sizeof option_names / sizeof *option_names, NULL);
		}
	}
	/* "leak x.json", "exprot --format=pprof x.json": a first word that is
	 * no file but close to a command, or no file and followed by more. */
	if (!have_cmd && o->nfiles > 0 && access(o->files[0], F_OK) != 0 && errno == ENOENT &&
	    (o->nfiles > 1 || asp_closest(o->files[0], strlen(o->files[0]), command_names,
					  sizeof command_names / sizeof *command_names)))
		return suggest_error("unknown command", o->files[0], strlen(o->files[0]),
				     command_names, sizeof command_names / sizeof *command_names,
				     "the commands");
	if (kinds && asp_leaks_parse_kinds(kinds, &o->kinds) < 0)
		return bad_kinds(kinds);
	if (format && asp_export_parse_format(format, &o->format) < 0) {
		size_t n;
		const char *const *names = asp_export_format_names(&n);

		return suggest_error("bad --format value", format, strlen(format), names, n,
				     "the formats");
	}
	if (weight && asp_export_parse_weight(weight, &o->weight) < 0) {
		size_t n;
		const char *const *names = asp_export_weight_names(&n);

		return suggest_error("bad --weight value", weight, strlen(weight), names, n,
				     "the weights");
	}
	o->format_given = format != NULL;
	o->weight_given = weight != NULL;
	if (o->cmd != CMD_LEAKS && kinds)
		return usage_error("%s", "--show-leak-kinds is an option of the leaks command");
	if (o->cmd != CMD_LEAKS && o->cmd != CMD_ERRORS && o->gen_suppressions)
		return usage_error("%s", "--gen-suppressions is an option of the leaks and errors "
				   "commands");
	if (o->cmd != CMD_TIMELINE && o->svg)
		return usage_error("%s", "--svg is an option of the timeline command");
	if (o->cmd != CMD_EXPORT && (format || weight))
		return usage_error("%s is an option of the export command",
				   format ? "--format" : "--weight");
	if (o->cmd != CMD_EXPORT && o->cmd != CMD_MERGE && o->cmd != CMD_HTML && o->output)
		return usage_error("%s", "-o is an option of the export, merge and html commands");
	if (o->cmd != CMD_CHECK && o->nbudgets)
		return usage_error("%s is an option of the check command",
				   o->budgets[0].option);
	if (o->cmd == CMD_CHECK && !o->nbudgets)
		return usage_error("%s", "check needs a budget: --max-peak, --max-in-use, "
				   "--max-leaked, --max-allocs, --max-bytes or --max-errors");
	if (o->cmd != CMD_COMPARE && o->fail_if.n)
		return usage_error("%s", "--fail-if is an option of the compare command");
	if (o->cmd != CMD_COMPARE && o->cmd != CMD_HTML && o->nlabels)
		return usage_error("%s", "--label is an option of the compare and html commands");
	for (size_t i = 0; i < o->nlabels; i++)
		if (!*o->labels[i])
			return usage_error("%s", "--label needs a name");
	if (o->svg && (!*o->svg || o->json))
		return usage_error("%s", *o->svg ? "--svg and --json together" :
				   "--svg needs a file name");
	if (o->output && !*o->output)
		return usage_error("%s", "-o needs a file name");
	if (o->cmd == CMD_EXPORT && !o->format_given)
		return usage_error("%s", "export needs --format");
	if (o->weight_given && o->format != ASP_EXPORT_FOLDED)
		return usage_error("%s", "--weight is for --format=folded");
	if ((o->cmd == CMD_EXPORT || o->cmd == CMD_HTML) && o->json)
		return usage_error("%s writes no JSON of its own",
				   commands[o->cmd].name);
	if (o->cmd == CMD_MERGE && o->json)
		return usage_error("%s", "merge writes a dump, which is JSON already");
	if (o->nfiles < commands[o->cmd].min_dumps)
		return usage_error("%s", o->cmd == CMD_COMPARE ? "compare needs two dumps or more" :
				   "no dump given");
	if (o->nfiles > commands[o->cmd].max_dumps)
		return usage_error("%s", commands[o->cmd].max_dumps == 2 ?
				   "two dumps at most" : "one dump only");
	if (o->nlabels > o->nfiles)
		return usage_error("%s", "more --label names than dumps");
	return -1;
}

/* Writes j and frees it; NULL means memory ran out. */
static int put_json(json_t *j)
{
	if (!j)
		return out_of_memory();
	asp_json_print(stdout, j);
	json_decref(j);
	return ASP_EXIT_OK;
}

/* Writes with write(out, d) into the file path; exit status 1 and a
 * message when it cannot be written. */
static int to_file(const char *path, const asp_dump_t *d,
		   int (*write)(FILE *, const asp_dump_t *))
{
	FILE *f = fopen(path, "w");
	int rc, err;

	if (!f) {
		asp_error(path, "cannot write: %s", strerror(errno));
		return ASP_EXIT_OUTPUT;
	}
	rc = write(f, d);
	err = ferror(f) ? errno ? errno : EIO : 0;
	if (fclose(f) != 0 && !err)
		err = errno ? errno : EIO;
	if (rc < 0 && !err)
		return out_of_memory();
	if (err) {
		asp_error(path, "cannot write: %s", strerror(err));
		return ASP_EXIT_OUTPUT;
	}
	return ASP_EXIT_OK;
}

static int timeline(const struct opts *o, const asp_dump_t *d)
{
	if (d->nsnapshots == 0) {
		asp_error(d->file, "no snapshots in this dump (%s)",
			  d->count_mode ? "ALLOCSPY_MODE=count takes none" :
			  "it was written without them");
		return ASP_EXIT_USAGE;
	}
	if (o->json)
		return put_json(asp_timeline_json(d));
	if (o->svg)
		return to_file(o->svg, d, asp_timeline_svg);
	return asp_timeline_text(stdout, d) < 0 ? out_of_memory() : ASP_EXIT_OK;
}

/* A FILE that writes gzip to path, as heaptrack's own files are: export's
 * -o FILE.gz of a text format. */
static ssize_t gz_write(void *gz, const char *buf, size_t n)
{
	return n == 0 ? 0 : gzwrite(gz, buf, (unsigned)n) > 0 ? (ssize_t)n : -1;
}

static int gz_close(void *gz)
{
	return gzclose(gz) == Z_OK ? 0 : -1;
}

static FILE *gz_open(const char *path)
{
	gzFile gz = gzopen(path, "wb");
	FILE *f;

	if (!gz)
		return NULL;
	f = fopencookie(gz, "w", (cookie_io_functions_t){ NULL, gz_write, NULL, gz_close });
	if (!f)
		gzclose(gz);
	return f;
}

static bool gz_name(const char *path)
{
	size_t n = strlen(path);

	return n > 3 && strcmp(path + n - 3, ".gz") == 0;
}

static int export(const struct opts *o, const asp_dump_t *d)
{
	char err[ASP_ERR_MAX];
	FILE *f = stdout;
	int rc, werr = 0;

	if (!o->output && asp_export_binary(o->format) && isatty(STDOUT_FILENO)) {
		asp_error(NULL, "the %s format is binary: give -o FILE or redirect "
			  "standard output", "pprof");
		return ASP_EXIT_USAGE;
	}
	/* pprof's format is gzipped already */
	if (o->output && !(f = gz_name(o->output) && !asp_export_binary(o->format) ?
			   gz_open(o->output) : fopen(o->output, "w"))) {
		asp_error(o->output, "cannot write: %s", strerror(errno ? errno : ENOMEM));
		return ASP_EXIT_OUTPUT;
	}
	rc = asp_export(f, d, o->format, o->weight, err);
	if (f != stdout) {
		werr = ferror(f) ? errno ? errno : EIO : 0;
		if (fclose(f) != 0 && !werr)
			werr = errno ? errno : EIO;
	}
	if (rc == -EINVAL) {
		asp_error(d->file, "%s", err);
		return ASP_EXIT_USAGE;
	}
	if (rc < 0)
		return out_of_memory();
	if (werr) {
		asp_error(o->output, "cannot write: %s", strerror(werr));
		return ASP_EXIT_OUTPUT;
	}
	if (o->format == ASP_EXPORT_FOLDED && o->weight == ASP_WEIGHT_PEAK_BYTES &&
	    !asp_peak_snapshot_exact(d)) {
		char a[ASP_PEAK_TEXT_MAX], b[ASP_PEAK_TEXT_MAX];

		asp_note(d->file, "the stacks' peak_bytes are those of %s; the peak: %s",
			 asp_peak_detail_text(a, d), asp_peak_text(b, d));
	}
	if (d->sampled) {
		char n[ASP_NUM_MAX];

		asp_note(d->file, "the stack figures are estimates from sampled allocations "
			 "(ALLOCSPY_SAMPLE: one per %s bytes on average)",
			 asp_fmt_count(n, d->sample_bytes));
	}
	return ASP_EXIT_OK;
}

/* The merged dump, written as export writes. */
static int merge(const struct opts *o, const asp_dump_t *d)
{
	char err[ASP_ERR_MAX], *text;
	size_t bad = 0;
	FILE *f = stdout;
	int rc = asp_merge(d, o->nfiles, &text, &bad, err), werr = 0;

	if (rc == -EINVAL) {
		asp_error(d[bad].file, "%s", err);
		return ASP_EXIT_USAGE;
	}
	if (rc == -EPROTO) {
		asp_error(NULL, "the merged dump does not load: %s", err);
		return ASP_EXIT_OUTPUT;
	}
	if (rc < 0)
		return out_of_memory();
	if (o->output && !(f = fopen(o->output, "w"))) {
		asp_error(o->output, "cannot write: %s", strerror(errno));
		free(text);
		return ASP_EXIT_OUTPUT;
	}
	fputs(text, f);
	free(text);
	if (f != stdout) {
		werr = ferror(f) ? errno ? errno : EIO : 0;
		if (fclose(f) != 0 && !werr)
			werr = errno ? errno : EIO;
	}
	if (werr) {
		asp_error(o->output, "cannot write: %s", strerror(werr));
		return ASP_EXIT_OUTPUT;
	}
	return ASP_EXIT_OK;
}

static int html(const struct opts *o, const asp_dump_t *d)
{
	FILE *f = o->output ? fopen(o->output, "w") : stdout;
	int rc, werr = 0;

	if (!f) {
		asp_error(o->output, "cannot write: %s", strerror(errno));
		return ASP_EXIT_OUTPUT;
	}
	rc = asp_html_write(f, d, o->nfiles);
	if (f != stdout) {
		werr = ferror(f) ? errno ? errno : EIO : 0;
		if (fclose(f) != 0 && !werr)
			werr = errno ? errno : EIO;
	}
	if (rc < 0)
		return out_of_memory();
	if (werr) {
		asp_error(o->output, "cannot write: %s", strerror(werr));
		return ASP_EXIT_OUTPUT;
	}
	return ASP_EXIT_OK;
}

/* The heap errors; a dump without them is an error, as leaks says of a
 * dump without a leak check. */
static int errors(const struct opts *o, const asp_dump_t *d)
{
	const char *why = asp_errors_missing(d);

	if (why) {
		asp_error(d->file, "no heap errors in this dump (%s)", why);
		return ASP_EXIT_USAGE;
	}
	if (o->json)
		return put_json(asp_errors_json(d, o->gen_suppressions));
	return asp_errors_text(stdout, d, o->gen_suppressions) < 0 ? out_of_memory() :
	       ASP_EXIT_OK;
}

/* compare, then --fail-if's regressions: exit status 1 when there is one. */
static int compare(const struct opts *o, const asp_dump_t *d)
{
	char err[ASP_ERR_MAX];
	asp_regression_t *r = NULL;
	size_t nr = 0, bad = 0;
	int rc = ASP_EXIT_OK;

	if (o->fail_if.n) {
		int e = asp_fail_if_eval(&o->fail_if, d, o->nfiles, &r, &nr, &bad, err, sizeof err);

		if (e == -1) {
			asp_error(d[bad].file, "%s", err);
			return ASP_EXIT_USAGE;
		}
		if (e < 0)
			return out_of_memory();
	}
	if (o->json) {
		json_t *j = asp_compare_json(d, o->nfiles);

		if (j && o->fail_if.n && json_object_set_new(j, "fail_if",
				asp_fail_if_json(&o->fail_if, d, r, nr)) < 0) {
			json_decref(j);
			j = NULL;
		}
		rc = put_json(j);
	} else if (asp_compare_text(stdout, d, o->nfiles) < 0) {
		rc = out_of_memory();
	} else if (nr) {
		putc('\n', stdout);
		asp_fail_if_put(stdout, &o->fail_if, d, r, nr);
	}
	free(r);
	return rc == ASP_EXIT_OK && nr ? ASP_EXIT_OVER : rc;
}

/* The budgets: exit status 1 when one is exceeded. */
static int check(const struct opts *o, const asp_dump_t *d)
{
	char err[ASP_ERR_MAX];
	json_t *j = NULL;
	int n, rc;

	if (o->json)
		n = asp_check_json(&j, d, o->budgets, o->nbudgets, err, sizeof err);
	else
		n = asp_check_text(stdout, d, o->budgets, o->nbudgets, err, sizeof err);
	if (n == -1) {
		asp_error(d->file, "%s", err);
		return ASP_EXIT_USAGE;
	}
	if (n < 0)
		return out_of_memory();
	rc = o->json ? put_json(j) : ASP_EXIT_OK;
	return rc == ASP_EXIT_OK && n > 0 ? ASP_EXIT_OVER : rc;
}

static int run(const struct opts *o, asp_dump_t *d)
{
	char err[ASP_ERR_MAX];

	for (size_t i = 0; i < o->nfiles; i++) {
		if (asp_dump_load(&d[i], o->files[i], err) < 0) {
			asp_error(o->files[i], "%s", err);
			return ASP_EXIT_USAGE;
		}
		d[i].label = i < o->nlabels ? o->labels[i] : NULL;
	}
	switch (o->cmd) {
	case CMD_SUMMARY:
		if (o->json)
			return put_json(asp_summary_json(d));
		asp_summary_text(stdout, d);
		return ASP_EXIT_OK;
	case CMD_LEAKS:
		if (!asp_summary_has_leak_part(d)) {
			asp_error(d->file, "no leak check in this dump (%s)",
				  d->count_mode ? "ALLOCSPY_MODE=count runs none" :
				  d->leak_check && !strcmp(d->leak_check, "no") ?
				  "ALLOCSPY_LEAK_CHECK=no" : "it did not run");
			return ASP_EXIT_USAGE;
		}
		if (o->json)
			return put_json(asp_leaks_json(d, o->kinds,
						       o->gen_suppressions));
		asp_leaks_text(stdout, d, o->kinds, o->gen_suppressions);
		return ASP_EXIT_OK;
	case CMD_ERRORS:
		return errors(o, d);
	case CMD_COMPARE:
		return compare(o, d);
	case CMD_CHECK:
		return check(o, d);
	case CMD_RSS:
		if (!d->has_rss) {
			asp_error(d->file, "no resident memory in this dump (%s)",
				  d->count_mode ? "ALLOCSPY_MODE=count measures none" :
				  d->reason != ASP_REASON_EXIT ? "it is measured at exit only" :
				  "it was written without it");
			return ASP_EXIT_USAGE;
		}
		if (o->json)
			return put_json(asp_rss_json(d));
		asp_rss_text(stdout, d);
		return ASP_EXIT_OK;
	case CMD_TIMELINE:
		return timeline(o, d);
	case CMD_EXPORT:
		return export(o, d);
	case CMD_MERGE:
		return merge(o, d);
	case CMD_HTML:
		return html(o, d);
	}
	return ASP_EXIT_USAGE;
}

/* The one way out: a report that did not reach stdout is a failure. */
static int finish(int rc)
{
	int err = 0;

	if (fflush(stdout) != 0 || ferror(stdout))
		err = errno ? errno : EIO;
	if (fclose(stdout) != 0 && !err)
		err = errno ? errno : EIO;
	if (err) {
		asp_error(NULL, "cannot write the report: %s", strerror(err));
		if (rc == ASP_EXIT_OK)
			rc = ASP_EXIT_OUTPUT;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct opts o = {0};
	asp_dump_t *d = NULL;
	int rc;

	o.files = calloc((size_t)argc, sizeof *o.files);
	o.budgets = calloc((size_t)argc, sizeof *o.budgets);
	o.labels = calloc((size_t)argc, sizeof *o.labels);
	if (!o.files || !o.budgets || !o.labels) {
		free(o.files);
		free(o.budgets);
		free(o.labels);
		return out_of_memory();
	}
	rc = parse(&o, argc, argv);
	if (rc < 0) {
		d = calloc(o.nfiles ? o.nfiles : 1, sizeof *d);
		rc = d ? run(&o, d) : out_of_memory();
	}
	for (size_t i = 0; d && i < o.nfiles; i++)
		asp_dump_free(&d[i]);
	free(d);
	free(o.files);
	for (size_t i = 0; i < o.nbudgets; i++)
		asp_budget_free(&o.budgets[i]);
	free(o.budgets);
	asp_fail_if_free(&o.fail_if);
	free(o.labels);
	return finish(rc);
}
