/* leak_stale - the only pointers to some blocks are left in dead stack
 * frames: callees' locals below main's frame, never scrubbed. valgrind
 * scans only live stack (above the stack pointer, defined bytes), so these
 * blocks are "definitely lost"; a scanner that reads dead frames would call
 * them reachable. Ends by return or by exit from main. Exits 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static __attribute__((noinline)) void leave(size_t n)
{
	volatile char *p = malloc(n);
	volatile char *copies[8];
	for (int i = 0; i < 8; i++)
		copies[i] = p;
	p[0] = 1;
}

static __attribute__((noinline)) void deeper(int depth)
{
	volatile char *p = malloc(100 + (size_t)depth);
	char pad[256];
	memset(pad, depth, sizeof pad);
	if (depth > 0)
		deeper(depth - 1);
	p[0] = pad[0];
}

int main(int argc, char **argv)
{
	leave(123);
	leave(234);
	deeper(5);
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "exit") == 0)
		exit(0);
	return 0;
}
