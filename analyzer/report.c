/* report - the command line of allocspy-report: it reads the options,
 * loads the dumps, runs one command and checks that stdout was written. */
#include "report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"
#include "fmt.h"
#include "leaks.h"
#include "load.h"
#include "msg.h"
#include "summary.h"

static const char usage_text[] =
"usage: allocspy-report [--json] [summary] DUMP\n"
"       allocspy-report [--json] leaks [--show-leak-kinds=KINDS]\n"
"                             [--gen-suppressions] DUMP\n"
"       allocspy-report [--json] compare DUMP1 DUMP2 [DUMP...]\n"
"       allocspy-report --help | --version\n"
"\n"
"Reads the JSON dumps that liballocspy.so writes at exit.\n"
"  [summary] DUMP     the exit text (HEAP, LEAK and REF SUMMARY), then tables\n"
"                     of functions, threads, block sizes, stacks, peak and time\n"
"  leaks DUMP         the loss records with symbolized stacks, as valgrind\n"
"                     prints them, then the LEAK SUMMARY\n"
"  compare DUMP1 DUMP2 ...\n"
"                     the figures and leak kinds side by side, with ratios\n"
"                     against DUMP1, then the allocation sites that changed most\n"
"\n"
"Options:\n"
"  --json             write JSON instead of text\n"
"  --show-leak-kinds=KINDS, --show-leak-kinds KINDS\n"
"                     the loss records to show: a list of definite, indirect,\n"
"                     possible, reachable, or all, or none\n"
"                     (default: definite,possible)\n"
"  --gen-suppressions write a valgrind suppression under each loss record\n"
"  --help             write this text\n"
"  --version          write the version\n"
"\n"
"Exit status: 0 done, 1 the report could not be written, 2 a usage error\n"
"or a bad dump.\n";

enum command { CMD_SUMMARY, CMD_LEAKS, CMD_COMPARE };

struct opts {
	enum command cmd;
	bool json;
	bool gen_suppressions;
	bool kinds_given;
	unsigned kinds;
	char **files;
	size_t nfiles;
};

/* A usage error: one line, and where to look. */
static int usage_error(const char *fmt, const char *arg)
{
	asp_error(NULL, fmt, arg);
	fputs("Try 'allocspy-report --help'.\n", stderr);
	return ASP_EXIT_USAGE;
}

/* The command named by word, or -1. */
static int command(const char *word)
{
	static const char *const names[] = {
		[CMD_SUMMARY] = "summary", [CMD_LEAKS] = "leaks", [CMD_COMPARE] = "compare",
	};

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (strcmp(word, names[i]) == 0)
			return (int)i;
	return -1;
}

/* Fills o from argv. Options may come before the command or after it
 * (--json leaks DUMP, leaks --json DUMP); an option's value may follow
 * it as the next word (--show-leak-kinds definite). Returns -1 to go on,
 * or the exit status (--help, --version, a usage error). */
static int parse(struct opts *o, int argc, char **argv)
{
	bool options = true, have_cmd = false;
	const char *kinds = NULL;

	o->kinds = ASP_KINDS_DEFAULT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!options || a[0] != '-' || a[1] == '\0') {
			if (!have_cmd && o->nfiles == 0 && command(a) >= 0) {
				o->cmd = (enum command)command(a);
				have_cmd = true;
			} else {
				o->files[o->nfiles++] = argv[i];
			}
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
		} else if (strcmp(a, "--gen-suppressions") == 0) {
			o->gen_suppressions = true;
		} else if (strncmp(a, "--show-leak-kinds=", 18) == 0) {
			kinds = a + 18;
		} else if (strcmp(a, "--show-leak-kinds") == 0) {
			if (i + 1 == argc)
				return usage_error("%s", "--show-leak-kinds needs a value");
			kinds = argv[++i];
		} else {
			return usage_error("unknown option '%s'", a);
		}
	}
	if (kinds && asp_leaks_parse_kinds(kinds, &o->kinds) < 0)
		return usage_error("bad --show-leak-kinds value '%s'", kinds);
	if (o->cmd != CMD_LEAKS && (kinds || o->gen_suppressions))
		return usage_error("%s is an option of the leaks command",
				   kinds ? "--show-leak-kinds" : "--gen-suppressions");
	if (o->cmd == CMD_COMPARE && o->nfiles < 2)
		return usage_error("%s", "compare needs two dumps or more");
	if (o->cmd != CMD_COMPARE && o->nfiles != 1)
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
		d = calloc(o.nfiles, sizeof *d);
		rc = d ? run(&o, d) : out_of_memory();
	}
	for (size_t i = 0; d && i < o.nfiles; i++)
		asp_dump_free(&d[i]);
	free(d);
	free(o.files);
	return finish(rc);
}
