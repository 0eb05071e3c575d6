/* fmt - numbers with thousands separators, seconds, ratios and printable
 * text for the reports of allocspy-report. */
#include "fmt.h"

#include <stdlib.h>
#include <string.h>

#include "vgtext.h"

_Static_assert(ASP_NUM_MAX >= ASP_COMMAS_MAX, "room for a count");

const char *asp_fmt_count(char buf[ASP_NUM_MAX], uint64_t v)
{
	asp_commas(buf, v);
	return buf;
}

const char *asp_fmt_seconds(char buf[ASP_NUM_MAX], double s)
{
	snprintf(buf, ASP_NUM_MAX, "%.3f", s);
	return buf;
}

/* The binary units of bytes. */
static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
#define UNITS (int)(sizeof units / sizeof *units)

const char *asp_fmt_unit(uint64_t max, double *div)
{
	int u = 0;

	*div = 1;
	while (u < UNITS - 1 && (double)max / *div >= 1024) {
		*div *= 1024;
		u++;
	}
	return units[u];
}

const char *asp_fmt_scaled(char buf[ASP_NUM_MAX], uint64_t v, double div)
{
	if (div == 1)
		snprintf(buf, ASP_NUM_MAX, "%llu", (unsigned long long)v);
	else
		snprintf(buf, ASP_NUM_MAX, "%.1f", (double)v / div);
	return buf;
}

const char *asp_fmt_bytes(char buf[ASP_NUM_MAX], double v)
{
	int u = 0;

	while (u < UNITS - 1 && v >= 1024) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, ASP_NUM_MAX, "%.0f B", v);
	else
		snprintf(buf, ASP_NUM_MAX, "%.*f %s", v < 10 ? 2 : v < 100 ? 1 : 0, v,
			 units[u]);
	return buf;
}

const char *asp_fmt_ratio(char buf[ASP_NUM_MAX], double a, double b)
{
	double r = a ? b / a : 0;

	if (a == 0) {
		snprintf(buf, ASP_NUM_MAX, "-");
	} else if (r >= 1e15) {	/* beyond what a count column can hold */
		snprintf(buf, ASP_NUM_MAX, "x%.3g", r);
	} else if (r >= 100) {
		char n[ASP_COMMAS_MAX];

		asp_commas(n, (uint64_t)(r + 0.5));
		snprintf(buf, ASP_NUM_MAX, "x%s", n);
	} else if (r >= 0.005 || r == 0) {
		snprintf(buf, ASP_NUM_MAX, "x%.2f", r);
	} else {
		snprintf(buf, ASP_NUM_MAX, "x<0.01");
	}
	return buf;
}

size_t asp_text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

static int printable(unsigned char c)
{
	return c >= 0x20 && c != 0x7f;
}

void asp_put_text(FILE *f, const char *s)
{
	for (; *s; s++)
		putc(printable((unsigned char)*s) ? *s : '?', f);
}

static void put_spaces(FILE *f, size_t n)
{
	while (n--)
		putc(' ', f);
}

void asp_put_left(FILE *f, const char *s, size_t width)
{
	size_t w = asp_text_width(s);

	asp_put_text(f, s);
	if (w < width)
		put_spaces(f, width - w);
}

void asp_put_right(FILE *f, const char *s, size_t width)
{
	size_t w = asp_text_width(s);

	if (w < width)
		put_spaces(f, width - w);
	asp_put_text(f, s);
}

char *asp_fmt_label(char *buf, size_t n, const char *s, size_t max)
{
	size_t len = 0, cols = 0, i;

	for (; s[len] && len + 4 < n; len++)
		buf[len] = printable((unsigned char)s[len]) ? s[len] : '?';
	buf[len] = '\0';
	if (!s[len] && asp_text_width(buf) <= max)
		return buf;
	/* Keep max - 3 columns, cut at the start of a character, then "...". */
	for (i = 0; buf[i]; i++) {
		if (((unsigned char)buf[i] & 0xc0) != 0x80) {
			if (cols + 3 >= max)
				break;
			cols++;
		}
	}
	memcpy(buf + i, "...", 4);
	return buf;
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n, i;
	unsigned min;
	unsigned c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4; min = 0x10000;
	} else {
		return 0;
	}
	unsigned cp = c & (0xff >> (n + 1));
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

json_t *asp_json_text(const char *s)
{
	size_t len, i = 0;
	char *copy;
	json_t *j;

	if (!s)
		return json_null();
	len = strlen(s);
	copy = malloc(len + 1);
	if (!copy)
		return json_null();
	while (i < len) {
		size_t n = utf8_len((const unsigned char *)s + i);

		if (n == 0) {
			copy[i++] = '?';
		} else {
			memcpy(copy + i, s + i, n);
			i += n;
		}
	}
	copy[len] = '\0';
	j = json_string(copy);
	free(copy);
	return j ? j : json_null();
}

void asp_json_print(FILE *f, json_t *v)
{
	json_dumpf(v, f, JSON_INDENT(2) | JSON_REAL_PRECISION(9));
	putc('\n', f);
}

void asp_put_xml(FILE *f, const char *s)
{
	json_t *j = asp_json_text(s ? s : "");
	const char *t = json_is_string(j) ? json_string_value(j) : "?";

	for (; *t; t++) {
		unsigned char c = (unsigned char)*t;

		if (c == '&')
			fputs("&amp;", f);
		else if (c == '<')
			fputs("&lt;", f);
		else if (c == '>')
			fputs("&gt;", f);
		else if (c == '"')
			fputs("&quot;", f);
		else if (c == '\'')
			fputs("&#39;", f);
		else
			putc(c < 0x20 || c == 0x7f ? '?' : c, f);
	}
	json_decref(j);
}

/* The optimal string alignment distance of a[0..na) and b[0..nb): one for
 * each character put in, left out or changed, and for two side by side
 * swapped ("hmtl"). Words longer than 64 bytes are as far as their length. */
static size_t distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t d[66][66];

	if (na > 64 || nb > 64)
		return na > nb ? na : nb;
	for (size_t i = 0; i <= na; i++)
		d[i][0] = i;
	for (size_t j = 0; j <= nb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= na; i++) {
		for (size_t j = 1; j <= nb; j++) {
			size_t v = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);

			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[na][nb];
}

const char *asp_closest(const char *word, size_t len, const char *const *words, size_t n)
{
	const char *best = NULL;
	size_t best_d = SIZE_MAX;

	for (size_t i = 0; i < n; i++) {
		size_t wl = strlen(words[i]);
		size_t d = distance(word, len, words[i], wl);
		/* Two edits for a word of 5 or more letters, one below that, and
		 * never half of the word: "x" is no misspelling of "-o". */
		size_t most = wl >= 5 ? 2 : 1;

		if (d <= most && 2 * d < wl && d < best_d) {
			best = words[i];
			best_d = d;
		}
	}
	return best;
}
