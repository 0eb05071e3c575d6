/* msg - the one-line error and warning messages of allocspy-report. */
#include "msg.h"

#include <stdarg.h>
#include <stdio.h>

#include "fmt.h"

static void say(const char *what, const char *file, const char *fmt, va_list ap)
{
	char text[1024];

	vsnprintf(text, sizeof text, fmt, ap);
	fprintf(stderr, "allocspy-report: %s: ", what);
	if (file) {
		asp_put_text(stderr, file);
		fputs(": ", stderr);
	}
	asp_put_text(stderr, text);
	putc('\n', stderr);
}

void asp_error(const char *file, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("error", file, fmt, ap);
	va_end(ap);
}

void asp_note(const char *file, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("note", file, fmt, ap);
	va_end(ap);
}

void asp_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	say("warning", NULL, fmt, ap);
	va_end(ap);
}
