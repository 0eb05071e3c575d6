/* stress - THREADS threads run OPS operations in all, each drawing from its
 * own seeded PRNG: malloc, calloc, realloc, strdup and free on blocks of its
 * own, and hand-offs through a shared lock-protected pool, so that blocks
 * are often freed by another thread than the one that allocated them. Now
 * and then a block is large enough for glibc to mmap it. At the end main
 * frees the pool and makes KEEP blocks of 24, 25, ... bytes, which stay.
 *
 *   stress [THREADS [OPS [SEED [KEEP]]]]     (8 1000000 1 100)
 *
 * The program counts what it did by valgrind's rules (realloc(p, n) is an
 * alloc and a free, realloc(NULL, n) an alloc) and prints
 * "allocs=A frees=F bytes=B live=KEEP". The counts do not depend on the
 * interleaving (which thread frees which block does). Exits 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LOCAL = 64, POOL = 1024 };

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pool[POOL];

struct worker {
	pthread_t t;
	uint64_t seed;
	long ops;
	unsigned long allocs, frees, bytes;
};

static uint64_t next(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static size_t pick_size(uint64_t *s)
{
	uint64_t r = next(s);
	if (r % 1000 == 0)
		return 130000 + (size_t)(r >> 20) % 100000;   /* past the mmap threshold */
	if (r % 50 == 0)
		return 1 + (size_t)(r >> 20) % 8192;
	return 1 + (size_t)(r >> 20) % 256;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	char *local[LOCAL] = { 0 };
	char text[300];

	memset(text, 's', sizeof text);
	for (long i = 0; i < w->ops; i++) {
		uint64_t r = next(&w->seed);
		int slot = (int)((r >> 8) % LOCAL);
		int op = (int)(r % 100);
		char **p = &local[slot];

		if (op < 65 && op >= 40 && op < 55) {
			/* realloc, from NULL when the slot is empty */
			size_t sz = pick_size(&w->seed);
			w->allocs++;
			w->frees += *p != NULL;
			w->bytes += sz;
			*p = realloc(*p, sz);
			(*p)[sz - 1] = 1;
			continue;
		}
		if (op < 65) {
			if (*p) {
				free(*p);
				w->frees++;
			}
			if (op < 30) {
				size_t sz = pick_size(&w->seed);
				*p = malloc(sz);
				(*p)[0] = 1;
				w->bytes += sz;
			} else if (op < 40) {
				size_t n = 1 + next(&w->seed) % 16, sz = 1 + next(&w->seed) % 64;
				*p = calloc(n, sz);
				w->bytes += n * sz;
			} else {
				size_t len = (size_t)(next(&w->seed) % 200);
				text[len] = '\0';
				*p = strdup(text);
				text[len] = 's';
				w->bytes += len + 1;
			}
			w->allocs++;
		} else if (op < 80) {
			if (*p) {
				free(*p);
				w->frees++;
				*p = NULL;
			}
		} else {
			/* swap the slot with a pool entry: a hand-off both ways */
			int k = (int)((r >> 24) % POOL);
			pthread_mutex_lock(&pool_lock);
			char *q = pool[k];
			pool[k] = *p;
			pthread_mutex_unlock(&pool_lock);
			*p = q;
			if (op >= 90 && *p) {
				free(*p);   /* often a block another thread allocated */
				w->frees++;
				*p = NULL;
			}
		}
	}
	for (int i = 0; i < LOCAL; i++) {
		if (local[i]) {
			free(local[i]);
			w->frees++;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 8;
	long ops = argc > 2 ? atol(argv[2]) : 1000000;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	int keep = argc > 4 ? atoi(argv[4]) : 100;
	static struct worker w[64];
	unsigned long allocs = 0, frees = 0, bytes = 0;

	if (threads < 1 || threads > 64 || keep < 0 || keep > POOL)
		return 2;
	for (int i = 0; i < threads; i++) {
		w[i].seed = (seed * 0x9e3779b97f4a7c15ull) ^ (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull;
		w[i].ops = ops / threads + (i < ops % threads);
		pthread_create(&w[i].t, NULL, run, &w[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].t, NULL);
		allocs += w[i].allocs;
		frees += w[i].frees;
		bytes += w[i].bytes;
	}
	/* Which blocks the pool holds depends on the interleaving: free them
	 * all, then make KEEP blocks of known sizes, which stay. */
	for (int k = 0; k < POOL; k++) {
		if (pool[k]) {
			free(pool[k]);
			pool[k] = NULL;
			frees++;
		}
	}
	int live;
	for (live = 0; live < keep; live++) {
		pool[live] = malloc(24 + (size_t)live);
		allocs++;
		bytes += 24 + (size_t)live;
	}
	printf("allocs=%lu frees=%lu bytes=%lu live=%d\n", allocs, frees, bytes, live);
	return 0;
}
