/* libc_regex - regcomp (extended, basic, REG_ICASE, REG_NEWLINE,
 * REG_NOSUB), regexec with submatches, regerror on a bad pattern, regfree.
 * One compiled pattern is never freed. Exits 0. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static regex_t kept;

int main(void)
{
	static const struct { const char *re; int flags; } pats[] = {
		{ "^([a-z]+)=([0-9]+)$", REG_EXTENDED },
		{ "\\(ab*\\)c\\{1,3\\}", 0 },
		{ "hello|world", REG_EXTENDED | REG_ICASE },
		{ "^line [0-9]+$", REG_EXTENDED | REG_NEWLINE },
		{ "[[:alpha:]][[:digit:]]{2,}", REG_EXTENDED | REG_NOSUB },
	};
	static const char *inputs[] = { "abc=123", "xabbbccy", "Say HELLO", "one\nline 42\nthree", "q99", "none" };
	int matches = 0;

	for (int round = 0; round < 10; round++) {
		for (size_t i = 0; i < sizeof pats / sizeof pats[0]; i++) {
			regex_t re;
			if (regcomp(&re, pats[i].re, pats[i].flags) != 0)
				return 98;
			for (size_t j = 0; j < sizeof inputs / sizeof inputs[0]; j++) {
				regmatch_t m[3];
				if (regexec(&re, inputs[j], 3, m, 0) == 0) {
					matches++;
					if (round == 0 && !(pats[i].flags & REG_NOSUB))
						printf("/%s/ ~ %zu at %d..%d\n", pats[i].re, j, (int)m[0].rm_so, (int)m[0].rm_eo);
				}
			}
			regfree(&re);
		}
	}
	regex_t bad;
	int rc = regcomp(&bad, "a(b", REG_EXTENDED);
	char err[128];
	regerror(rc, &bad, err, sizeof err);
	printf("bad pattern: %s\n", err);
	regcomp(&kept, "k(e+)pt", REG_EXTENDED);
	printf("matches=%d\n", matches);
	return 0;
}
