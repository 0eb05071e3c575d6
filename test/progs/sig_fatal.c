/* sig_fatal - a program ended by a signal's default action, for the report
 * valgrind makes then (t83). Every mode first loses a 100-byte block and
 * keeps a 5-byte one (definitely lost: 100 bytes in 1 block; still
 * reachable: 5 bytes in 1 block), then:
 *   term, int, abrt  raise(SIGTERM), raise(SIGINT), abort(): dies of it;
 *   segv             writes to address 16: dies of SIGSEGV, a fault the
 *                    kernel raised (SEGV_MAPERR at 0x10);
 *   view             prints the handlers sigaction and signal show for
 *                    SIGTERM, SIGINT, SIGSEGV and SIGPIPE (all "default"
 *                    natively), sets its own for SIGINT, then the default
 *                    again with signal(), then raises SIGINT: dies of it;
 *   ignore           ignores SIGTERM, raises it, and exits 0;
 *   handle           handles SIGTERM (the handler prints "handled") and
 *                    raises it; exits 3.
 * Output only on stdout, flushed before the signal. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *kept;

static const char *shown(int sig)
{
	struct sigaction sa;

	if (sigaction(sig, NULL, &sa) != 0)
		return "error";
	return sa.sa_handler == SIG_DFL ? "default" : sa.sa_handler == SIG_IGN ? "ignored" : "handler";
}

static void on_int(int sig)
{
	(void)sig;
}

static void on_term(int sig)
{
	(void)sig;
	printf("handled\n");
	fflush(stdout);
	_exit(3);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "term";
	char *lost = malloc(100);

	memset(lost, 1, 100);
	lost = NULL;
	kept = strdup("kept");
	if (strcmp(mode, "term") == 0)
		raise(SIGTERM);
	else if (strcmp(mode, "int") == 0)
		raise(SIGINT);
	else if (strcmp(mode, "abrt") == 0)
		abort();
	else if (strcmp(mode, "segv") == 0)
		*(volatile int *)16 = 1;
	else if (strcmp(mode, "view") == 0) {
		printf("TERM %s, INT %s, SEGV %s, PIPE %s\n", shown(SIGTERM), shown(SIGINT),
		       shown(SIGSEGV), shown(SIGPIPE));
		void (*was)(int) = signal(SIGINT, on_int);
		printf("signal(SIGINT, handler) gave %s; INT %s\n",
		       was == SIG_DFL ? "default" : "other", shown(SIGINT));
		was = signal(SIGINT, SIG_DFL);
		printf("signal(SIGINT, SIG_DFL) gave %s; INT %s\n",
		       was == on_int ? "the handler" : "other", shown(SIGINT));
		fflush(stdout);
		raise(SIGINT);
	} else if (strcmp(mode, "ignore") == 0) {
		signal(SIGTERM, SIG_IGN);
		raise(SIGTERM);
		printf("ignored\n");
		return 0;
	} else if (strcmp(mode, "handle") == 0) {
		signal(SIGTERM, on_term);
		raise(SIGTERM);
	}
	return 0;
}
