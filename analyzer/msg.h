/* msg - the one-line error and warning messages of allocspy-report. */
#ifndef ASP_MSG_H
#define ASP_MSG_H

/* "allocspy-report: error: FILE: ..." on stderr, as one line: control bytes
 * in the text are shown as '?'. FILE may be NULL. */
void asp_error(const char *file, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* "allocspy-report: note: FILE: ..." on stderr, as one line: something
 * true of the output that the output itself cannot say. */
void asp_note(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "allocspy-report: warning: ..." on stderr, as one line. */
void asp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
