/* par_pthread_exit - threads that end by pthread_exit, and one cancelled:
 * glibc loads libgcc_s for the unwinding, allocating as it does (valgrind
 * counts that; a shim that had loaded libgcc_s itself would not). With
 * "main", main ends by pthread_exit too, while a thread it started still
 * allocates: the last thread to end calls exit, and the main thread is
 * then gone (a zombie), its /proc/self files empty. */
#include <fcntl.h>
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

/* Whether the main thread has ended (a zombie), from /proc; read without
 * stdio, which would allocate once for each look. */
static int main_ended(void)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)getpid());
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	const char *state = strstr(buf, "State:");
	return state != NULL && strchr(state, 'Z') != NULL && strchr(state, 'Z') < strchr(state, '\n');
}

static void *late(void *arg)
{
	for (int i = 0; i < 5000 && !main_ended(); i++)
		usleep(1000);
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
