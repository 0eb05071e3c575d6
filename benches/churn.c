/* churn - a server-like heap: blocks that live, and some freed by another
 * thread.
 *
 * usage: churn [THREADS [LIVE [OPS [HANDOFF]]]]
 *        (defaults 2, 20000, 4000000, 64)
 *
 * Each of THREADS threads keeps LIVE blocks of 16 to 1,024 bytes (most of
 * them small, as a server's requests, strings and nodes are) in slots of
 * its own. OPS times it picks a slot at random, frees the block there and
 * allocates a new one in its place; one free in HANDOFF goes to the next
 * thread instead (through a queue under a mutex), which frees it at its
 * next turn: blocks freed by a thread other than the one that allocated
 * them, as a request's buffers are. At the end every block is freed.
 * Prints the number of handed-off blocks; exits 0.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define QCAP 4096

struct worker {
	pthread_t tid;
	unsigned id;
	void **slot;
	/* the blocks other threads hand to this one, under mu */
	pthread_mutex_t mu;
	void *queue[QCAP];
	unsigned nqueue;
	unsigned long handed;
};

static struct worker *workers;
static unsigned nthreads;
static long live, ops, handoff;

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Sizes from 16 to 1,024 bytes, small ones the most often. */
static size_t pick_size(uint64_t r)
{
	unsigned shift = (unsigned)(r & 3);	/* 16-63, 64-255, 256-1023 */
	size_t base = shift == 3 ? 256 : shift == 2 ? 64 : 16;
	return base + (size_t)((r >> 8) % (base * 3));
}

static void drain(struct worker *w)
{
	void *batch[QCAP];
	unsigned n;

	pthread_mutex_lock(&w->mu);
	n = w->nqueue;
	memcpy(batch, w->queue, n * sizeof *batch);
	w->nqueue = 0;
	pthread_mutex_unlock(&w->mu);
	for (unsigned i = 0; i < n; i++)
		free(bench_launder(batch[i]));
}

/* Gives p to worker to, or frees it here when its queue is full. */
static void hand(struct worker *to, void *p)
{
	int full;

	pthread_mutex_lock(&to->mu);
	full = to->nqueue == QCAP;
	if (!full)
		to->queue[to->nqueue++] = p;
	pthread_mutex_unlock(&to->mu);
	if (full)
		free(bench_launder(p));
}

static void *run(void *arg)
{
	struct worker *w = arg;
	struct worker *next = &workers[(w->id + 1) % nthreads];
	uint64_t s = 0x9E3779B97F4A7C15ull * (w->id + 1);

	for (long i = 0; i < live; i++) {
		uint64_t r = next_rand(&s);
		w->slot[i] = malloc(pick_size(r));
		memset(w->slot[i], (int)i, 8);
	}
	for (long i = 0; i < ops; i++) {
		uint64_t r = next_rand(&s);
		long k = (long)((r >> 20) % (uint64_t)live);
		void *old = w->slot[k];

		if (handoff > 0 && i % handoff == 0 && nthreads > 1) {
			hand(next, old);
			w->handed++;
		} else {
			free(bench_launder(old));
		}
		w->slot[k] = malloc(pick_size(r));
		memset(w->slot[k], (int)i, 8);
		if ((i & 1023) == 0)
			drain(w);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long handed = 0;

	nthreads = (unsigned)bench_arg(argc, argv, 1, 2);
	live = bench_arg(argc, argv, 2, 20000);
	ops = bench_arg(argc, argv, 3, 4000000);
	handoff = bench_arg(argc, argv, 4, 64);
	workers = calloc(nthreads, sizeof *workers);
	if (workers == NULL)
		return 1;
	for (unsigned i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].slot = calloc((size_t)live, sizeof(void *));
		if (workers[i].slot == NULL)
			return 1;
		pthread_mutex_init(&workers[i].mu, NULL);
	}
	for (unsigned i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].tid, NULL, run, &workers[i]) != 0)
			return 1;
	for (unsigned i = 0; i < nthreads; i++)
		pthread_join(workers[i].tid, NULL);
	for (unsigned i = 0; i < nthreads; i++) {
		drain(&workers[i]);
		for (long k = 0; k < live; k++)
			free(bench_launder(workers[i].slot[k]));
		free(workers[i].slot);
		handed += workers[i].handed;
	}
	free(workers);
	printf("%lu\n", handed);
	return 0;
}
