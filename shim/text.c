/* text.c - number and string formatting into fixed buffers. */
#include <string.h>

#include "glue.h"

#include "text.h"
#include "vgtext.h"

void asp__text_str(struct asp_text *t, const char *s)
{
	size_t n = strlen(s);
	if (n > t->cap - t->len)
		n = t->cap - t->len;
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

void asp__text_u64(struct asp_text *t, uint64_t v)
{
	char d[24];
	int n = 0;
	do d[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
	while (n > 0 && t->len < t->cap)
		t->buf[t->len++] = d[--n];
}

void asp__text_commas(struct asp_text *t, uint64_t v)
{
	char d[ASP_COMMAS_MAX];
	asp_commas(d, v);
	asp__text_str(t, d);
}

static void hex(struct asp_text *t, uint64_t v, const char *digits)
{
	char d[16];
	int n = 0;
	do d[n++] = digits[v & 15]; while ((v >>= 4) > 0);
	while (n > 0 && t->len < t->cap)
		t->buf[t->len++] = d[--n];
}

void asp__text_hex(struct asp_text *t, uint64_t v)
{
	hex(t, v, "0123456789ABCDEF");
}

void asp__text_hex_lower(struct asp_text *t, uint64_t v)
{
	hex(t, v, "0123456789abcdef");
}

void asp__text_prefix(struct asp_text *t, long pid)
{
	asp__text_str(t, "==");
	asp__text_u64(t, (uint64_t)pid);
	asp__text_str(t, "== ");
}

void asp__text_room(struct asp_text *t, size_t need)
{
	if (t->fd < 0 || t->cap - t->len >= need)
		return;
	asp__write_all(t->fd, t->buf, t->len);
	t->len = 0;
}
