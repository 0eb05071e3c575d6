/* par_pthread_exit - threads that end by pthread_exit, and one cancelled:
 * glibc loads libgcc_s for the unwinding, allocating as it does (valgrind
 * counts that; a shim that had loaded libgcc_s itself would not). With
 * "main", main ends by pthread_exit too, while a thread it started still
 * allocates: the last thread to end calls exit, and the main thread is
 * then gone (a zombie), its /proc/self files empty. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *g_kept;

static void *ender(void *arg)
{
	free(malloc(10));
	pthread_exit(arg);
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *late(void *arg)
{
	usleep(20000);
	g_kept = malloc(300);		/* still reachable */
	free(malloc(20));
	void *lost = malloc(11);	/* definitely lost */
	lost = NULL;
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pthread_create(&t, NULL, ender, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, sleeper, NULL);
	pthread_cancel(t);
	pthread_join(t, NULL);
	printf("threads ended\n");
	if (argc > 1 && strcmp(argv[1], "main") == 0) {
		void *lost = malloc(5);	/* definitely lost: main's frame goes */
		(void)lost;
		pthread_create(&t, NULL, late, NULL);
		fflush(stdout);
		pthread_exit(NULL);
	}
	return 0;
}
