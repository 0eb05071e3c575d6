/* par_threads - producers and consumers: 3 producer threads allocate
 * blocks of known sizes and hand them through a lock-protected ring to 3
 * consumer threads, which free them (cross-thread frees). A second round of
 * 4 threads then reuses the cached thread stacks. Every thread is joined.
 * The counts do not depend on the interleaving. Leaves 3 blocks; exits 4. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PRODUCERS = 3, CONSUMERS = 3, PER_PRODUCER = 2000, RING = 64 };

static void *ring[RING];
static int head, tail, count;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static void *keep[3];
static unsigned long consumed[CONSUMERS];

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
	pthread_mutex_lock(&lock);
	while (count == 0)
		pthread_cond_wait(&not_empty, &lock);
	void *p = ring[tail];
	tail = (tail + 1) % RING;
	count--;
	pthread_cond_signal(&not_full);
	pthread_mutex_unlock(&lock);
	return p;
}

static void *producer(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < PER_PRODUCER; i++) {
		size_t sz = 8 + (size_t)((i * 31 + id * 7) % 500);
		char *p = (i % 4 == 0) ? calloc(1, sz) : malloc(sz);
		p[0] = 1;
		if (i % 10 == 0)
			p = realloc(p, sz * 2);
		push(p);
	}
	return NULL;
}

static void *consumer(void *arg)
{
	long id = (long)arg;
	for (;;) {
		char *p = pop();
		if (p == NULL)
			break;
		consumed[id] += (unsigned char)p[0];
		free(p);
	}
	return NULL;
}

static void *second(void *arg)
{
	long id = (long)arg;
	char *s = malloc(1000 + (size_t)id);
	for (int i = 0; i < 100; i++) {
		char *t = strdup("second round");
		free(t);
	}
	free(s);
	return (void *)id;
}

int main(void)
{
	pthread_t prod[PRODUCERS], cons[CONSUMERS], sec[4];
	unsigned long total = 0;
	long ret = 0;

	keep[0] = malloc(11);
	for (long i = 0; i < CONSUMERS; i++)
		pthread_create(&cons[i], NULL, consumer, (void *)i);
	for (long i = 0; i < PRODUCERS; i++)
		pthread_create(&prod[i], NULL, producer, (void *)i);
	for (int i = 0; i < PRODUCERS; i++)
		pthread_join(prod[i], NULL);
	for (int i = 0; i < CONSUMERS; i++)
		push(NULL);
	for (int i = 0; i < CONSUMERS; i++) {
		pthread_join(cons[i], NULL);
		total += consumed[i];
	}
	keep[1] = malloc(22);
	for (long i = 0; i < 4; i++)
		pthread_create(&sec[i], NULL, second, (void *)i);
	for (int i = 0; i < 4; i++) {
		void *r;
		pthread_join(sec[i], &r);
		ret += (long)r;
	}
	keep[2] = calloc(3, 11);
	printf("consumed=%lu ret=%ld\n", total, ret);
	return 4;
}
