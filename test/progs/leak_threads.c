/* leak_threads - roots in other threads at exit. Two threads are still
 * alive when main ends (blocked reading a pipe nobody writes): one holds a
 * block in a local variable on its stack, the other in its __thread
 * variable; both blocks are "still reachable". Two threads were joined
 * before the end: one had its block only in a local (its frame is dead:
 * "definitely lost"), the other in its __thread variable, which stays in
 * glibc's cached thread descriptor ("still reachable" for valgrind). The
 * DTVs of the cached descriptors are "possibly lost" (glibc keeps a
 * pointer to their second word). Exits 0. */
#include <pthread.h>
#include <unistd.h>
#include "leak_common.h"

static int fds[2];
static pthread_barrier_t ready;
static __thread void *tls;

static void *alive_stack(void *arg)
{
	volatile void *local = malloc(1111);
	char c;
	pthread_barrier_wait(&ready);
	if (read(fds[0], &c, 1) == 1)
		printf("%p\n", (void *)local);
	return NULL;
}

static void *alive_tls(void *arg)
{
	char c;
	tls = malloc(2222);
	pthread_barrier_wait(&ready);
	if (read(fds[0], &c, 1) == 1)
		printf("%p\n", tls);
	return NULL;
}

static void *dead_stack(void *arg)
{
	volatile void *local = malloc(3333);
	(void)local;
	return NULL;
}

static void *dead_tls(void *arg)
{
	tls = malloc(4444);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (pipe(fds) != 0)
		return 1;
	pthread_barrier_init(&ready, NULL, 3);
	pthread_create(&t, NULL, alive_stack, NULL);
	pthread_create(&t, NULL, alive_tls, NULL);
	pthread_barrier_wait(&ready);
	/* Created after the others, so that no new thread reuses their
	 * cached stacks (which would overwrite the dead TLS). */
	pthread_create(&t, NULL, dead_stack, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, dead_tls, NULL);
	pthread_join(t, NULL);
	scrub_stack();
	printf("threads waiting\n");
	LEAK_END(argc, argv, 0);
}
