/* sitemap.h - a small number for each allocation site.
 *
 * A block's site is a word: its caller's return address, or a stack id
 * (stack.h), tagged when sampled (sample.h). The table of live blocks
 * keeps 25 bits for it, so each distinct site gets an index, 1, 2, ...,
 * given once and never taken back; index 0 is site 0 (no site). A thread
 * keeps the indexes it used last in a small cache of its own, so that the
 * common case is one load and one comparison. */
#ifndef ASP_SITEMAP_H
#define ASP_SITEMAP_H

#include <stdint.h>

#include "glue.h"
#include "thread.h"

#define ASP_SITE_INDEX_BITS 25
#define ASP_SITE_INDEX_MAX ((1u << ASP_SITE_INDEX_BITS) - 1)

/* The site of each index (read without a lock: an index is written after
 * its site), and how many indexes there are (the largest plus one). */
extern ASP_HIDDEN uintptr_t *asp__site_vals;
extern ASP_HIDDEN uint32_t asp__site_count;

/* The index of site, made on first use: 0 for site 0, and when the sites
 * ran out (ASP_SITE_INDEX_MAX of them), memory did, or a signal handler
 * landed while its thread was making one (the caller then keeps the block
 * where the whole site fits: live.h's side table). */
uint32_t asp__site_index_slow(struct asp_thread *t, uintptr_t site);

static inline uint32_t asp__site_cache_slot(uintptr_t site)
{
	return (uint32_t)(asp_hash(site) >> (64 - ASP_SITE_CACHE_BITS));
}

static ASP_ALWAYS_INLINE uint32_t asp__site_index(struct asp_thread *t, uintptr_t site)
{
	const struct asp_site_cache *c = &t->site_cache[asp__site_cache_slot(site)];
	if (ASP_LIKELY(c->site == site && c->index != 0))
		return c->index;
	return asp__site_index_slow(t, site);
}

/* The site of index i (0 for 0 and for an index not given). */
static inline uintptr_t asp__site_of(uint32_t i)
{
	return i < asp_atomic_load_acquire(&asp__site_count) ? asp__site_vals[i] : 0;
}

/* fork's child: a lock another thread held is free again. */
void asp__sitemap_atfork_child(void);

#endif
