/* par_tsd - thread-specific data: 40 keys (keys past 31 make glibc calloc a
 * second-level array per thread), values that destructors free at thread
 * exit, and a destructor that sets its key again, which makes glibc run a
 * second round. main's own values are never destroyed: they stay allocated.
 * Exits 1. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEYS = 40, THREADS = 4 };

static pthread_key_t keys[KEYS];
static pthread_key_t again;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int destroyed;

static void dtor(void *v)
{
	free(v);
	pthread_mutex_lock(&lock);
	destroyed++;
	pthread_mutex_unlock(&lock);
}

static void dtor_again(void *v)
{
	int *n = v;
	if (*n > 0) {
		int *m = malloc(sizeof *m);
		*m = *n - 1;
		pthread_setspecific(again, m);
	}
	free(n);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	for (int k = 0; k < KEYS; k++)
		pthread_setspecific(keys[k], malloc(8 + (size_t)(k + id)));
	int *n = malloc(sizeof *n);
	*n = 2;
	pthread_setspecific(again, n);
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];

	for (int k = 0; k < KEYS; k++)
		pthread_key_create(&keys[k], dtor);
	pthread_key_create(&again, dtor_again);
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	pthread_setspecific(keys[0], strdup("main's value"));
	pthread_setspecific(keys[35], strdup("main's second-level value"));
	printf("destroyed=%d\n", destroyed);
	return 1;
}
