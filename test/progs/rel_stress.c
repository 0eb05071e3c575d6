/* rel_stress - the situations that break preload tools, in one process:
 * 4 threads passing blocks to each other to free, a fork whose child
 * allocates and ends with _exit, posix_spawn and system() of other
 * programs, and 2000 short threads. Prints "done" and exits 0.
 * Usage: rel_stress [ROUNDS [OPS]]: ROUNDS rounds of 50 short threads
 * (40 by default) and OPS operations per passing thread (20000); t38 runs
 * a small instance under valgrind. */
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int ops = 20000;

#define QUEUE 64

static void *queue[QUEUE];
static int head, tail;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* Each thread allocates, and frees what another thread allocated. */
static void *passer(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	for (int i = 0; i < ops; i++) {
		void *mine = malloc(1 + rand_r(&seed) % 300);
		void *theirs = NULL;
		pthread_mutex_lock(&lock);
		if ((tail + 1) % QUEUE != head) {
			queue[tail] = mine;
			tail = (tail + 1) % QUEUE;
			mine = NULL;
		}
		if (head != tail && rand_r(&seed) % 2) {
			theirs = queue[head];
			head = (head + 1) % QUEUE;
		}
		pthread_mutex_unlock(&lock);
		free(mine);
		free(theirs);
	}
	return NULL;
}

static void *short_lived(void *arg)
{
	free(strdup(arg));
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 40;
	if (argc > 2)
		ops = atoi(argv[2]);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, passer, (void *)(uintptr_t)(i + 1));

	pid_t child = fork();
	if (child == 0) {
		char *p = malloc(1234);
		p[0] = 1;
		_exit(0);		/* the child's dump happens here too */
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	while (head != tail) {
		free(queue[head]);
		head = (head + 1) % QUEUE;
	}
	int st;
	waitpid(child, &st, 0);

	char *true_argv[] = { "true", NULL };
	pid_t sp;
	if (posix_spawn(&sp, "/bin/true", NULL, NULL, true_argv, environ) == 0)
		waitpid(sp, &st, 0);
	if (system("exit 0") != 0)
		return 1;

	for (int round = 0; round < rounds; round++) {
		pthread_t s[50];
		for (int i = 0; i < 50; i++)
			pthread_create(&s[i], NULL, short_lived, "a short-lived thread");
		for (int i = 0; i < 50; i++)
			pthread_join(s[i], NULL);
	}
	printf("done\n");
	return 0;
}
