/* rel_signal - a signal handler that allocates and frees, hit by a fast
 * interval timer while the program itself allocates and frees: nothing
 * deadlocks and nothing is miscounted. glibc's malloc is not
 * async-signal-safe, so the handler allocates only when the program is not
 * inside a malloc or free call of its own (the shim's case of a handler
 * inside its own table is the unit test test_live's). Exits 0. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

static volatile sig_atomic_t handled, busy;
static void *volatile sink;
static void *volatile handler_sink;

static void on_alarm(int sig)
{
	(void)sig;
	if (busy)
		return;
	handler_sink = malloc(32);
	free(handler_sink);
	handled = 1;
}

int main(void)
{
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 50 }, { 0, 50 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < 2000000; i++) {
		busy = 1;
		void *p = malloc((size_t)(i % 256));
		busy = 0;
		sink = p;
		busy = 1;
		free(p);
		busy = 0;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	printf("handled=%d\n", (int)handled);
	return 0;
}
