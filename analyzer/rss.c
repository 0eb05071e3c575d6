/* rss - the rss command: the resident memory at exit, split into rows that
 * add up to it. The shim gives every resident page to one owner and each
 * live block's resident bytes to the program (rss.c in the shim); here the
 * figures become rows, and what they leave of the kernel's total is the
 * last one. */
#include "rss.h"

#include <inttypes.h>
#include <string.h>

#include "fmt.h"

static int64_t clamp(__int128 v)
{
	return v > INT64_MAX ? INT64_MAX : v < -INT64_MAX ? -INT64_MAX : (int64_t)v;
}

size_t asp_rss_rows(const asp_dump_t *d, asp_rss_row_t out[ASP_RSS_ROWS])
{
	const asp_rss_t *r = &d->rss;
	const asp_rss_row_t rows[] = {
		{ "heap_in_use", "heap in use (the blocks' requested bytes)", (int64_t)r->heap_in_use },
		{ "slack", "slack in live blocks (usable size less asked)", (int64_t)r->slack },
		{ "not_resident", "in use but not resident (never written)", -(int64_t)r->not_resident },
		{ "allocator_free", "free inside the allocator's heaps", (int64_t)r->allocator_free },
		{ "large_blocks", "large blocks' mappings, beyond their size", (int64_t)r->large_blocks },
		{ "thread_stacks", "thread stacks", (int64_t)r->thread_stacks },
		{ "allocspy", "allocspy's own memory", (int64_t)r->allocspy },
		{ "other_anonymous", "other anonymous memory", (int64_t)r->other_anonymous },
		{ "file_mappings", "file mappings", (int64_t)r->file },
	};
	__int128 sum = 0;
	size_t n = 0;

	for (size_t i = 0; i < sizeof rows / sizeof *rows; i++) {
		out[n++] = rows[i];
		sum += rows[i].bytes;
	}
	out[n++] = (asp_rss_row_t){ "unexplained", "unexplained",
				    clamp((__int128)r->rss_bytes - sum) };
	return n;
}

/* "-1,234" or "1,234". */
static const char *signed_count(char buf[ASP_NUM_MAX], int64_t v)
{
	char n[ASP_NUM_MAX];
	size_t len = strlen(asp_fmt_count(n, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v));

	buf[0] = '-';
	memcpy(buf + (v < 0), n, len + 1);	/* 26 bytes at most, and the sign */
	return buf;
}

void asp_rss_text(FILE *out, const asp_dump_t *d)
{
	const asp_rss_t *r = &d->rss;
	asp_rss_row_t rows[ASP_RSS_ROWS];
	size_t n = asp_rss_rows(d, rows);
	char a[ASP_NUM_MAX], b[ASP_NUM_MAX];

	fprintf(out, "Resident memory at exit (");
	asp_put_text(out, asp_dump_exe_name(d));
	fprintf(out, ", pid %lld): %s bytes\n\n", (long long)d->pid, asp_fmt_count(a, r->rss_bytes));
	fprintf(out, "  %-46s %15s %7s\n", "", "bytes", "share");
	for (size_t i = 0; i < n; i++) {
		double share = r->rss_bytes ? 100.0 * (double)rows[i].bytes / (double)r->rss_bytes : 0.0;

		fprintf(out, "  %-46s %15s %6.1f%%\n", rows[i].label,
			signed_count(a, rows[i].bytes), share);
	}
	fprintf(out, "\nPeak resident memory (the kernel's high-water mark): %s bytes\n",
		asp_fmt_count(a, r->peak_rss_bytes));
	if (d->has_peak)
		fprintf(out, "Peak of the heap in use: %s bytes\n", asp_fmt_count(b, d->peak_bytes));
	fprintf(out, "The allocator: ");
	asp_put_text(out, r->allocator);
	fprintf(out, "; %" PRIu64 " heap%s, %" PRIu64 " large block%s in mappings of their own, "
		"%" PRIu64 " thread stack%s\n", r->arena_heaps, r->arena_heaps == 1 ? "" : "s",
		r->nlarge_blocks, r->nlarge_blocks == 1 ? "" : "s", r->nthread_stacks,
		r->nthread_stacks == 1 ? "" : "s");
}

json_t *asp_rss_json(const asp_dump_t *d)
{
	const asp_rss_t *r = &d->rss;
	asp_rss_row_t rows[ASP_RSS_ROWS];
	size_t n = asp_rss_rows(d, rows);
	json_t *a = json_array();
	json_t *o = json_pack("{s:I,s:I,s:o*,s:o*,s:o*}", "rss_bytes", (json_int_t)r->rss_bytes,
			      "peak_rss_bytes", (json_int_t)r->peak_rss_bytes,
			      "peak_heap_bytes", d->has_peak ? json_integer((json_int_t)d->peak_bytes) :
			      json_null(), "allocator", asp_json_text(r->allocator), "rows", a);

	for (size_t i = 0; o && i < n; i++) {
		if (json_array_append_new(a, json_pack("{s:s,s:I}", "name", rows[i].name,
						       "bytes", (json_int_t)rows[i].bytes)) < 0) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}
