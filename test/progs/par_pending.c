/* par_pending - threads that keep many blocks at once: 3 producers, each
 * 40 rounds of 400 blocks of sizes from a fixed seed, then frees of a
 * quarter at once, a quarter in the next round, a quarter by 3 consumer
 * threads (cross-thread frees, through a lock-protected ring) and a
 * quarter at the end of the round. Each producer then keeps 5 blocks in a
 * global (still reachable) and loses 5 (definitely lost); main keeps 8
 * and loses 4 at exit, while its last ones are still pending. Every block is
 * written whole and every freed pointer cleared, so that no stale word
 * reaches a block. The counts do not depend on the interleaving. Exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PRODUCERS = 3, CONSUMERS = 3, ROUNDS = 40, BURST = 400, RING = 256, KEEP = 5 };

static void *ring[RING];
static int head, tail, count, done;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static void *kept[PRODUCERS][KEEP];
static void *main_kept[8];

static void push(void *p)
{
	pthread_mutex_lock(&lock);
	while (count == RING)
		pthread_cond_wait(&not_full, &lock);
	ring[head] = p;
	head = (head + 1) % RING;
	count++;
	pthread_cond_signal(&not_empty);
	pthread_mutex_unlock(&lock);
}

static void *pop(void)
{
	void *p = NULL;
	pthread_mutex_lock(&lock);
	while (count == 0 && !done)
		pthread_cond_wait(&not_empty, &lock);
	if (count > 0) {
		p = ring[tail];
		ring[tail] = NULL;
		tail = (tail + 1) % RING;
		count--;
		pthread_cond_signal(&not_full);
	}
	pthread_mutex_unlock(&lock);
	return p;
}

static void *fresh(unsigned *seed)
{
	size_t size = 1 + (size_t)(rand_r(seed) % 600);
	void *p = malloc(size);
	if (p == NULL)
		abort();
	memset(p, 0x5a, size);
	return p;
}

static void *producer(void *arg)
{
	long id = (long)arg;
	unsigned seed = (unsigned)id + 1;
	static void *blocks[PRODUCERS][BURST], *later[PRODUCERS][BURST];
	void **b = blocks[id], **l = later[id];
	for (int r = 0; r < ROUNDS; r++) {
		for (int i = 0; i < BURST; i++)
			b[i] = fresh(&seed);
		for (int i = 0; i < BURST; i++) {
			if (l[i] != NULL) {
				free(l[i]);
				l[i] = NULL;
			}
			switch (i % 4) {
			case 0: free(b[i]); b[i] = NULL; break;
			case 1: push(b[i]); b[i] = NULL; break;
			case 2: l[i] = b[i]; b[i] = NULL; break;
			default: break;
			}
		}
		for (int i = 3; i < BURST; i += 4) {
			free(b[i]);
			b[i] = NULL;
		}
	}
	for (int i = 0; i < BURST; i++) {
		free(l[i]);
		l[i] = NULL;
	}
	for (int k = 0; k < KEEP; k++)
		kept[id][k] = fresh(&seed);
	for (int k = 0; k < KEEP; k++) {
		void *volatile lost = fresh(&seed);
		lost = NULL;
		(void)lost;
	}
	return NULL;
}

static void *consumer(void *arg)
{
	void *p;
	while ((p = pop()) != NULL)
		free(p);
	return arg;
}

int main(void)
{
	pthread_t p[PRODUCERS], c[CONSUMERS];
	for (long i = 0; i < PRODUCERS; i++)
		if (pthread_create(&p[i], NULL, producer, (void *)i))
			return 1;
	for (long i = 0; i < CONSUMERS; i++)
		if (pthread_create(&c[i], NULL, consumer, NULL))
			return 1;
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(p[i], NULL);
	pthread_mutex_lock(&lock);
	done = 1;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < CONSUMERS; i++)
		pthread_join(c[i], NULL);
	unsigned seed = 99;
	for (int k = 0; k < 8; k++)
		main_kept[k] = fresh(&seed);
	for (int k = 0; k < 4; k++) {
		void *volatile lost = fresh(&seed);
		lost = NULL;
		(void)lost;
	}
	printf("kept %d blocks\n", PRODUCERS * KEEP);
	return 0;
}
