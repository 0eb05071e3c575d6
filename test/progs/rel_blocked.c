/* rel_blocked - a thread that blocks every signal waits on a condition
 * nobody signals (as xz's and many pools' workers do), holding a block
 * in a local variable; main exits with them waiting. Exits 0. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t ready;

static void *worker(void *arg)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	void *volatile local = malloc(300);
	(void)arg;
	pthread_mutex_lock(&lock);
	pthread_barrier_wait(&ready);
	for (;;)
		pthread_cond_wait(&never, &lock);
	return (void *)local;
}

int main(void)
{
	pthread_t t;
	pthread_barrier_init(&ready, NULL, 2);
	pthread_create(&t, NULL, worker, NULL);
	pthread_barrier_wait(&ready);
	printf("done\n");
	return 0;
}
