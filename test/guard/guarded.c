/* guarded - the misuses ALLOCSPY_GUARD=1 catches, one per run, chosen by
 * the first argument; each prints what it is about to do, then does it:
 *   over N      write 1 byte N bytes past the end of a 128-byte block
 *               (N = 1 is the first byte past it)
 *   under N     write 1 byte N bytes before its start (the bytes before a
 *               guarded block: found at its free)
 *   read-after  read 8 bytes of a 128-byte block after its free
 *   write-after write 8 bytes into it after its free
 *   slack N     write N bytes past a 13-byte block (its slack: found at its
 *               free)
 *   double      free a 20-byte block twice
 *   handler     install a SIGSEGV handler, fault outside the pool (it must
 *               get it: exits 3 from it), having overflowed nothing
 *   clean       allocate and free blocks of 1 to 4,096 bytes, using all of
 *               each: no error, exit 0
 *   before-freed read 8 bytes just before a 128-byte block after its free
 *   wild        read a byte of a slot of the pool that no block has had
 *   unsized     compare-and-swap 8 bytes of a 128-byte block after its free
 *               (an instruction whose access size the shim does not read)
 *   several     write a byte before a 20-byte block and one in the slack of
 *               a 13-byte block (both found at their frees), then read 8
 *               bytes of a 128-byte block after its free
 *   calloc-reuse fill and free 1,100 blocks of 100 and 4,096 bytes (the
 *               pool's slots used and freed, some twice), then calloc as
 *               many: prints how many bytes of them are not zero (0)
 * Built by test/t32-guard.sh, not by make test-progs: natively (and under
 * valgrind) these runs corrupt the heap or read freed memory. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_segv(int sig)
{
	(void)sig;
	_exit(3);
}

/* Out of line: each misuse has a frame of its own. */
__attribute__((noinline)) static void poke(volatile char *p, long at)
{
	p[at] = 1;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "clean";
	long n = argc > 2 ? atol(argv[2]) : 1;
	printf("%s %ld\n", what, n);
	fflush(stdout);
	if (strcmp(what, "over") == 0) {
		char *p = malloc(128);
		poke(p, 128 + n - 1);
		free(p);
	} else if (strcmp(what, "under") == 0) {
		char *p = malloc(128);
		poke(p, -n);
		free(p);
	} else if (strcmp(what, "read-after") == 0) {
		long *p = malloc(128);
		p[1] = 5;
		free(p);
		volatile long v = ((volatile long *)p)[1];
		(void)v;
	} else if (strcmp(what, "write-after") == 0) {
		long *p = malloc(128);
		free(p);
		((volatile long *)p)[1] = 7;
	} else if (strcmp(what, "slack") == 0) {
		char *p = malloc(13);
		memset(p, 'x', 13 + (size_t)n);
		free(p);
	} else if (strcmp(what, "double") == 0) {
		char *p = malloc(20);
		free(p);
		free(p);
	} else if (strcmp(what, "handler") == 0) {
		signal(SIGSEGV, on_segv);
		char *p = malloc(64);
		p[0] = 1;
		*(volatile int *)(uintptr_t)16 = 1;
		free(p);
	} else if (strcmp(what, "before-freed") == 0) {
		long *p = malloc(128);
		free(p);
		volatile long v = ((volatile long *)p)[-1];
		(void)v;
	} else if (strcmp(what, "wild") == 0) {
		char *p = malloc(128);
		volatile char v = ((volatile char *)p)[8192 * 200];
		(void)v;
	} else if (strcmp(what, "unsized") == 0) {
		long *p = malloc(128), old = 0;
		free(p);
		__atomic_compare_exchange_n(p, &old, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else if (strcmp(what, "several") == 0) {
		char *q = malloc(20);
		poke(q, -2);
		free(q);
		char *r = malloc(13);
		poke(r, 14);
		free(r);
		long *p = malloc(128);
		free(p);
		volatile long v = ((volatile long *)p)[2];
		(void)v;
	} else if (strcmp(what, "calloc-reuse") == 0) {
		static char *b[1100];
		long nonzero = 0;
		for (size_t size = 100; size <= 4096; size += 3996) {
			for (int i = 0; i < 1100; i++) {
				b[i] = malloc(size);
				memset(b[i], 'x', size);
			}
			for (int i = 0; i < 1100; i++)
				free(b[i]);
			for (int i = 0; i < 1100; i++) {
				b[i] = calloc(1, size);
				for (size_t j = 0; j < size; j++)
					nonzero += b[i][j] != 0;
			}
			for (int i = 0; i < 1100; i++)
				free(b[i]);
		}
		printf("nonzero %ld\n", nonzero);
	} else {
		for (size_t size = 1; size <= 4096; size = size * 3 + 1) {
			char *p = malloc(size);
			memset(p, 'y', size);
			p = realloc(p, size + 5);
			memset(p, 'z', size + 5);
			free(p);
		}
	}
	puts("end");
	return 0;
}
