/* report - the command line of allocspy-report: it reads the options,
 * loads the dumps, runs one command and checks that stdout was written. */
#ifndef ASP_REPORT_H
#define ASP_REPORT_H

/* The exit status, as the man page documents it. */
enum asp_exit {
	ASP_EXIT_OK = 0,	/* the report was written */
	ASP_EXIT_OUTPUT = 1,	/* it could not be: stdout failed, or memory */
	ASP_EXIT_OVER = 1,	/* check: a budget exceeded; compare --fail-if:
				 * a regression */
	ASP_EXIT_USAGE = 2,	/* a usage error, or a missing or bad dump */
};

#endif
