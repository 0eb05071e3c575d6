/* text.h - building text in a caller's buffer without stdio or malloc:
 * the exit summary is written from inside the allocator's process end. */
#ifndef ASP_TEXT_H
#define ASP_TEXT_H

#include <stddef.h>
#include <stdint.h>

struct asp_text {
	char *buf;
	size_t len, cap;
	int fd;		/* >= 0: asp__text_room writes the text out there */
};

/* Makes room for at least need more bytes, writing the text out to t->fd
 * when there is one. */
void asp__text_room(struct asp_text *t, size_t need);

void asp__text_str(struct asp_text *t, const char *s);
void asp__text_u64(struct asp_text *t, uint64_t v);
/* With thousands separators, as valgrind prints them: 4,379. */
void asp__text_commas(struct asp_text *t, uint64_t v);
/* Upper case, as valgrind writes code addresses; lower, data addresses. */
void asp__text_hex(struct asp_text *t, uint64_t v);
void asp__text_hex_lower(struct asp_text *t, uint64_t v);
/* "==PID== " */
void asp__text_prefix(struct asp_text *t, long pid);

#endif
