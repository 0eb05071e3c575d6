/* report - the command line of allocspy-report: it reads the options,
 * loads the dumps, runs one command and checks that stdout was written. */
#include "report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compare.h"
#include "export.h"
#include "fmt.h"
#include "leaks.h"
#include "load.h"
#include "msg.h"
#include "summary.h"
#include "timeline.h"

static const char usage_text[] =
"usage: allocspy-report [--json] DUMP\n"
"       allocspy-report leaks [--show-leak-kinds=KINDS] [--gen-suppressions]\n"
"                             [--json] DUMP\n"
"       allocspy-report compare [--json] DUMP1 DUMP2 [DUMP...]\n"
"       allocspy-report timeline [--svg FILE] [--json] DUMP\n"
"       allocspy-report export --format=FORMAT [--weight=WEIGHT] [-o FILE] DUMP\n"
"       allocspy-report --help | --version\n"
"\n"
"Reads the JSON dumps that liballocspy.so writes at exit.\n"
"  DUMP               the exit text (HEAP, LEAK and REF SUMMARY), then tables\n"
"                     of functions, threads, block sizes, peak and time\n"
"  leaks DUMP         the loss records with symbolized stacks, as valgrind\n"
"                     prints them, then the LEAK SUMMARY\n"
"  compare DUMP1 DUMP2 ...\n"
"                     the figures side by side, with ratios against DUMP1\n"
"  timeline DUMP      the heap in use over time as a chart, then the stacks\n"
"                     that held the peak\n"
"  export DUMP        the dump in another tool's format, on stdout or in FILE\n"
"\n"
"Options:\n"
"  --json             write JSON instead of text\n"
"  --show-leak-kinds=KINDS\n"
"                     the loss records to show: a list of definite, indirect,\n"
"                     possible, reachable, or all, or none\n"
"                     (default: definite,possible)\n"
"  --gen-suppressions write a valgrind suppression under each loss record\n"
"  --svg FILE         timeline: write the chart and the peak's stacks to FILE\n"
"                     as a standalone SVG image instead\n"
"  --format=FORMAT    export: pprof (gzipped profile.proto), gperftools (a\n"
"                     text heap profile), massif, callgrind, heaptrack,\n"
"                     folded (stacks, for flame graphs) or speedscope\n"
"  --weight=WEIGHT    export --format=folded: what each stack counts:\n"
"                     alloc_bytes (the default), allocs, inuse_bytes (at the\n"
"                     end) or peak_bytes\n"
"  -o FILE            export: write to FILE instead of stdout\n"
"  --help             write this text\n"
"  --version          write the version\n"
"\n"
"Exit status: 0 done, 1 the report could not be written, 2 a usage error\n"
"or a bad dump.\n";

enum command { CMD_SUMMARY, CMD_LEAKS, CMD_COMPARE, CMD_TIMELINE, CMD_EXPORT };

/* The commands named by the first argument, and how many dumps each takes. */
static const struct command_info {
	const char *name;
	enum command cmd;
	size_t min_dumps, max_dumps;
} commands[] = {
	{ "leaks", CMD_LEAKS, 1, 1 },
	{ "compare", CMD_COMPARE, 2, SIZE_MAX },
	{ "timeline", CMD_TIMELINE, 1, 1 },
	{ "export", CMD_EXPORT, 1, 1 },
};

struct opts {
	enum command cmd;
	const char *svg;	/* timeline --svg */
	const char *output;	/* export -o */
	bool format_given;
	enum asp_export_format format;
	bool weight_given;
	enum asp_export_weight weight;
	bool json;
	bool gen_suppressions;
	bool kinds_given;
	unsigned kinds;
	char **files;
	size_t nfiles;
};

static int usage_error(const char *fmt, const char *arg)
{
	asp_error(NULL, fmt, arg);
	fputs(usage_text, stderr);
	return ASP_EXIT_USAGE;
}

/* Fills o from argv. Returns -1 to go on, or the exit status (--help,
 * --version, a usage error). */
static int parse(struct opts *o, int argc, char **argv)
{
	const struct command_info *ci = NULL;
	bool options = true;
	int i = 1;

	for (size_t k = 0; argc > 1 && k < sizeof commands / sizeof *commands; k++)
		if (strcmp(argv[1], commands[k].name) == 0)
			ci = &commands[k];
	if (ci) {
		o->cmd = ci->cmd;
		i = 2;
	}
	o->kinds = ASP_KINDS_DEFAULT;
	for (; i < argc; i++) {
		const char *a = argv[i];

		if (!options || a[0] != '-' || a[1] == '\0') {
			o->files[o->nfiles++] = argv[i];
		} else if (strcmp(a, "--") == 0) {
			options = false;
		} else if (strcmp(a, "--help") == 0) {
			fputs(usage_text, stdout);
			return ASP_EXIT_OK;
		} else if (strcmp(a, "--version") == 0) {
			puts("allocspy-report " ASP_VERSION);
			return ASP_EXIT_OK;
		} else if (strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (o->cmd == CMD_LEAKS &&
			   strcmp(a, "--gen-suppressions") == 0) {
			o->gen_suppressions = true;
		} else if (o->cmd == CMD_LEAKS &&
			   strncmp(a, "--show-leak-kinds=", 18) == 0) {
			if (asp_leaks_parse_kinds(a + 18, &o->kinds) < 0)
				return usage_error("bad --show-leak-kinds value '%s'",
						   a + 18);
		} else if (o->cmd == CMD_TIMELINE && strcmp(a, "--svg") == 0) {
			if (++i == argc)
				return usage_error("%s", "--svg needs a file name");
			o->svg = argv[i];
		} else if (o->cmd == CMD_TIMELINE && strncmp(a, "--svg=", 6) == 0) {
			o->svg = a + 6;
		} else if (o->cmd == CMD_EXPORT && strncmp(a, "--format=", 9) == 0) {
			if (asp_export_parse_format(a + 9, &o->format) < 0)
				return usage_error("bad --format value '%s'", a + 9);
			o->format_given = true;
		} else if (o->cmd == CMD_EXPORT && strncmp(a, "--weight=", 9) == 0) {
			if (asp_export_parse_weight(a + 9, &o->weight) < 0)
				return usage_error("bad --weight value '%s'", a + 9);
			o->weight_given = true;
		} else if (o->cmd == CMD_EXPORT && strcmp(a, "-o") == 0) {
			if (++i == argc || !*argv[i])
				return usage_error("%s", "-o needs a file name");
			o->output = argv[i];
		} else {
			return usage_error("unknown option '%s'", a);
		}
	}
	if (o->svg && (!*o->svg || o->json))
		return usage_error("%s", *o->svg ? "--svg and --json together" :
				   "--svg needs a file name");
	if (o->cmd == CMD_EXPORT && !o->format_given)
		return usage_error("%s", "export needs --format");
	if (o->weight_given && o->format != ASP_EXPORT_FOLDED)
		return usage_error("%s", "--weight is for --format=folded");
	if (o->cmd == CMD_EXPORT && o->json)
		return usage_error("%s", "export writes no JSON of its own");
	if (o->cmd == CMD_COMPARE && o->nfiles < 2)
		return usage_error("%s", "compare needs two dumps or more");
	if ((!ci || ci->max_dumps == 1) && o->nfiles != 1)
		return usage_error("%s", o->nfiles ? "one dump only" :
				   "no dump given");
	return -1;
}

static int out_of_memory(void)
{
	asp_error(NULL, "out of memory");
	return ASP_EXIT_OUTPUT;
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
	if (o->output && !(f = fopen(o->output, "w"))) {
		asp_error(o->output, "cannot write: %s", strerror(errno));
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
	return ASP_EXIT_OK;
}

static int run(const struct opts *o, asp_dump_t *d)
{
	char err[ASP_ERR_MAX];

	for (size_t i = 0; i < o->nfiles; i++) {
		if (asp_dump_load(&d[i], o->files[i], err) < 0) {
			asp_error(o->files[i], "%s", err);
			return ASP_EXIT_USAGE;
		}
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
	case CMD_COMPARE:
		if (o->json)
			return put_json(asp_compare_json(d, o->nfiles));
		if (asp_compare_text(stdout, d, o->nfiles) < 0)
			return out_of_memory();
		return ASP_EXIT_OK;
	case CMD_TIMELINE:
		return timeline(o, d);
	case CMD_EXPORT:
		return export(o, d);
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
	if (!o.files)
		return out_of_memory();
	rc = parse(&o, argc, argv);
	if (rc < 0) {
		d = calloc(o.nfiles ? o.nfiles : 1, sizeof *d);
		rc = d ? run(&o, d) : out_of_memory();
	}
	for (size_t i = 0; d && i < o.nfiles; i++)
		asp_dump_free(&d[i]);
	free(d);
	free(o.files);
	return finish(rc);
}
