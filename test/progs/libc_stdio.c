/* libc_stdio - stdio that allocates: asprintf and vasprintf, fopen and
 * fclose, getline and getdelim on a file the program writes, open_memstream,
 * fmemopen, setvbuf with a malloc'd buffer. Leaves 2 blocks (plus stdout's
 * buffer); exits 0. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *keep[2];

static char *fmt(const char *f, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, f);
	if (vasprintf(&s, f, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

int main(void)
{
	const char *path = "libc_stdio.txt";
	size_t total = 0;

	FILE *f = fopen(path, "w");
	for (int i = 0; i < 200; i++)
		fprintf(f, "line %d: %.*s\n", i, i % 150, "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	fclose(f);

	f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int lines = 0;
	while ((n = getline(&line, &cap, f)) > 0) {
		total += (size_t)n;
		lines++;
	}
	free(line);
	rewind(f);
	line = NULL;
	cap = 0;
	int fields = 0;
	while (getdelim(&line, &cap, ':', f) > 0)
		fields++;
	keep[0] = line;
	fclose(f);

	for (int i = 0; i < 50; i++) {
		char *s = NULL;
		if (asprintf(&s, "%d-%s-%0*d", i, "asprintf", i, i) > 0)
			total += strlen(s);
		free(s);
		s = fmt("%s/%d/%.3f", "vasprintf", i * 1000, i / 7.0);
		total += strlen(s);
		free(s);
	}

	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	for (int i = 0; i < 1000; i++)
		fprintf(m, "%d,", i);
	fclose(m);
	total += len;
	free(buf);

	char fixed[64] = "10 20 30";
	FILE *fm = fmemopen(fixed, sizeof fixed, "r");
	int a, b, c;
	if (fscanf(fm, "%d %d %d", &a, &b, &c) == 3)
		total += (size_t)(a + b + c);
	fclose(fm);

	f = fopen(path, "r");
	char *vbuf = malloc(8192);
	setvbuf(f, vbuf, _IOFBF, 8192);
	char small[100];
	while (fgets(small, sizeof small, f))
		total++;
	fclose(f);
	free(vbuf);
	unlink(path);

	keep[1] = fmt("kept %d", 42);
	printf("lines=%d fields=%d total=%zu last=%s\n", lines, fields, total, keep[1]);
	return 0;
}
