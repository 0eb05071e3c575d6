/* rel_crash - leaves blocks allocated, then dies of SIGSEGV. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static void *keep;

int main(void)
{
	keep = malloc(100);
	printf("crashing\n");
	fflush(stdout);
	raise(SIGSEGV);
	return 0;
}
