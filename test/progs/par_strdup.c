/* par_strdup - strdup, strndup (shorter and longer than the string) and
 * wcsdup, which libc implements on top of malloc: each must count once.
 * Leaves 3 blocks; exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

static char *keep[3];

int main(void)
{
	static const char *words[] = { "", "a", "allocation", "profiler",
		"a somewhat longer string that spans several malloc size classes" };
	size_t total = 0;

	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
			char *d = strdup(words[i]);
			char *n = strndup(words[i], (size_t)round);
			total += strlen(d) + strlen(n);
			free(d);
			free(n);
		}
	}
	wchar_t *w = wcsdup(L"wide characters");
	wchar_t *w2 = wcsdup(L"");
	total += wcslen(w) + wcslen(w2);
	free(w2);

	keep[0] = strdup("kept");
	keep[1] = strndup("kept too, but cut", 9);
	keep[2] = (char *)w;
	printf("total=%zu kept=%s|%s\n", total, keep[0], keep[1]);
	return 0;
}
