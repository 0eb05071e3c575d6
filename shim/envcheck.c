/* envcheck.c - a warning for each ALLOCSPY_* variable in the environment
 * that allocspy does not know, naming the closest valid name
 * ("ALLOCSPY_BACKTRACES: not an allocspy variable; did you mean
 * ALLOCSPY_BACKTRACE?"). Fixed buffers only: no malloc, no stdio. */
#include <string.h>

#include "envcheck.h"
#include "glue.h"
#include "options.h"

extern char **environ;

/* Every variable that liballocspy.so or the allocspy launcher reads. */
static const char *const valid[] = {
	"ALLOCSPY_MODE", "ALLOCSPY_BACKTRACE", "ALLOCSPY_UNWIND", "ALLOCSPY_LEAK_CHECK",
	"ALLOCSPY_OUTPUT", "ALLOCSPY_LOG_FILE", "ALLOCSPY_QUIET", "ALLOCSPY_ERROR_EXITCODE",
	"ALLOCSPY_ERROR_EXITCODE_CHILDREN",
	"ALLOCSPY_ERRORS_FOR_LEAK_KINDS", "ALLOCSPY_SUPPRESSIONS", "ALLOCSPY_FREERES",
	"ALLOCSPY_FOLLOW_CHILDREN", "ALLOCSPY_INTERVAL_MS", "ALLOCSPY_DUMP_ON_SIGNAL",
	"ALLOCSPY_REF_CROSS", "ALLOCSPY_SNAPSHOTS", "ALLOCSPY_SAMPLE", "ALLOCSPY_SAMPLE_SEED", "ALLOCSPY_GUARD",
	"ALLOCSPY_LIB", "ALLOCSPY_DEFAULT_SUPPRESSIONS", "ALLOCSPY_TRACE_CHILDREN_SKIP", "ALLOCSPY_LIVE",
};

#define NAME_MAX_LEN 64

/* Levenshtein distance of a[0..la) and b, with one row of a fixed buffer;
 * names longer than NAME_MAX_LEN count as far from everything. */
static size_t distance(const char *a, size_t la, const char *b)
{
	size_t lb = strlen(b), row[NAME_MAX_LEN + 1];
	if (la > NAME_MAX_LEN || lb > NAME_MAX_LEN)
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

void asp__options_check_names(void)
{
	for (char **e = environ; e != NULL && *e != NULL; e++) {
		const char *v = *e;
		if (strncmp(v, "ALLOCSPY_", 9) != 0)
			continue;
		size_t len = strcspn(v, "=");
		int known = 0;
		for (size_t i = 0; i < ASP_ARRAY_SIZE(valid) && !known; i++)
			known = strncmp(v, valid[i], len) == 0 && valid[i][len] == '\0';
		if (known)
			continue;
		/* Only a name that is not one of them is measured against each. */
		size_t best = (size_t)-1;
		const char *close = NULL;
		for (size_t i = 0; i < ASP_ARRAY_SIZE(valid); i++) {
			size_t d = distance(v, len, valid[i]);
			if (d < best) {
				best = d;
				close = valid[i];
			}
		}
		char name[NAME_MAX_LEN + 1];
		size_t n = len < NAME_MAX_LEN ? len : NAME_MAX_LEN;
		memcpy(name, v, n);
		name[n] = '\0';
		/* Within 3 edits: a misspelling worth naming. */
		char hint[NAME_MAX_LEN + 32] = "";
		if (close != NULL && best <= 3) {
			size_t k = strlen(close);
			/* Bytes of a string built in place; the "?" below ends it. */
			memcpy(hint, "; did you mean ", 15); // NOLINT(bugprone-not-null-terminated-result)
			memcpy(hint + 15, close, k); // NOLINT(bugprone-not-null-terminated-result)
			memcpy(hint + 15 + k, "?", 2);
		}
		asp__warn(name, ": not an allocspy variable", hint);
	}
}
