/* fmt - numbers with thousands separators, seconds, ratios and printable
 * text for the reports of allocspy-report. */
#ifndef ASP_FMT_H
#define ASP_FMT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

/* Room for any formatted number, with its separators and a sign. */
#define ASP_NUM_MAX 40

/* "4,379": v with a comma every three digits, as valgrind prints it. */
const char *asp_fmt_count(char buf[ASP_NUM_MAX], uint64_t v);

/* "0.123": seconds with three decimals. */
const char *asp_fmt_seconds(char buf[ASP_NUM_MAX], double s);

/* The unit figures up to max are shown in ("B", "KiB", ... "EiB"), its
 * size in bytes into *div. */
const char *asp_fmt_unit(uint64_t max, double *div);

/* "512", "1.5": v bytes in the unit of div (asp_fmt_unit). */
const char *asp_fmt_scaled(char buf[ASP_NUM_MAX], uint64_t v, double div);

/* "512 B", "1.50 MiB", "150 KiB": v bytes in its own unit, with three
 * digits at least. */
const char *asp_fmt_bytes(char buf[ASP_NUM_MAX], double v);

/* "x0.25": b against a with two decimals ("x<0.01" below that, none from
 * x100 up), or "-" when a is 0. */
const char *asp_fmt_ratio(char buf[ASP_NUM_MAX], double a, double b);

/* The number of terminal columns s takes (UTF-8 continuation bytes take none). */
size_t asp_text_width(const char *s);

/* Writes s with every control byte shown as '?', so that text from a dump
 * never breaks a line or a terminal. */
void asp_put_text(FILE *f, const char *s);

/* Writes s as XML or HTML text, fit for an attribute's value too: the
 * markup characters escaped, control bytes and bytes that are not UTF-8
 * shown as '?'. NULL writes nothing. */
void asp_put_xml(FILE *f, const char *s);

/* Writes s, then spaces up to width columns (left aligned), or spaces first
 * (right aligned). */
void asp_put_left(FILE *f, const char *s, size_t width);
void asp_put_right(FILE *f, const char *s, size_t width);

/* Copies s into buf (n >= 4 * max + 4 bytes) with control bytes as '?', cut
 * to at most max columns, the last three "...", when it is longer. */
char *asp_fmt_label(char *buf, size_t n, const char *s, size_t max);

/* A JSON string of s, with every byte that is not valid UTF-8 shown as '?'
 * (names read from ELF files need not be UTF-8); JSON null for NULL. */
json_t *asp_json_text(const char *s);

/* Of words[0..n), the one closest to word[0..len) when it is close enough
 * to be a misspelling of it (one or two letters put in, left out, changed
 * or swapped), or NULL. */
const char *asp_closest(const char *word, size_t len, const char *const *words, size_t n);

/* Writes v as indented JSON and a newline. */
void asp_json_print(FILE *f, json_t *v);

#endif
