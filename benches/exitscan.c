/* exitscan - how long a process takes to end once main returns, with
 * BLOCKS blocks live: under the shim, the exit report and its leak scan.
 *
 * usage: exitscan SHAPE [BLOCKS [RUNS]]
 *        (defaults 5000000 blocks, 3 runs)
 *
 * SHAPE is how the blocks (16 to 72 bytes, allocated in turn) are held
 * when main returns:
 *   lost      by nothing: all definitely lost;
 *   array     by a global array, in the order they were allocated (the
 *             order of their addresses);
 *   shuffled  by the same array, shuffled (by a fixed seed): each pointer
 *             to a block far from the one before;
 *   chain     by one global pointer to the head of a list through all of
 *             them in the order they were allocated: every block reached
 *             only through the one before it, the next one beside it;
 *   tree      by one global pointer to the root of a binary tree through
 *             them in the shuffled order (each block's first two words
 *             its children): a random heap's shape, as a search tree's;
 *   list      the chain's list in the shuffled order: the next block far
 *             from the one before;
 *   lostchain a list through them backward (each block pointing at the
 *             one allocated before it), held by nothing: one definitely
 *             lost head, every other block indirectly lost behind it.
 * Each run is a child process, forked before it allocates anything; it
 * sends the time main is about to return through a pipe, and the parent
 * takes the time the child has ended (waitpid). Prints the median of the
 * RUNS runs in seconds, then each run's; exits 0, or 1 when a child fails,
 * 2 on a bad argument. Run it with the shim's output sent elsewhere
 * (stderr to /dev/null): the report is written, and timed, all the same.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

enum { LOST, ARRAY, SHUFFLED, CHAIN, TREE, LIST, LOSTCHAIN };

void **held;		/* global: a root of the leak scan */
void *head;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* The child: builds the heap, sends the time, returns from main. */
static int child(int shape, long n, int fd)
{
	held = malloc((size_t)n * sizeof *held);
	if (held == NULL)
		return 1;
	for (long i = 0; i < n; i++)
		held[i] = malloc(16 + (size_t)(i & 7) * 8);
	uint64_t x = 88172645463325252ULL;
	if (shape == SHUFFLED || shape == TREE || shape == LIST) {
		for (long i = n - 1; i > 0; i--) {
			long j = (long)(next(&x) % (uint64_t)(i + 1));
			void *t = held[i];
			held[i] = held[j];
			held[j] = t;
		}
	}
	if (shape == CHAIN || shape == LIST) {
		for (long i = 0; i < n; i++)
			*(void **)held[i] = i + 1 < n ? held[i + 1] : NULL;
		head = held[0];
	}
	if (shape == LOSTCHAIN)
		for (long i = 0; i < n; i++)
			*(void **)held[i] = i > 0 ? held[i - 1] : NULL;
	if (shape == TREE) {
		for (long i = 0; i < n; i++) {
			void **node = held[i];
			node[0] = 2 * i + 1 < n ? held[2 * i + 1] : NULL;
			node[1] = 2 * i + 2 < n ? held[2 * i + 2] : NULL;
		}
		head = held[0];
	}
	if (shape != ARRAY && shape != SHUFFLED)
		memset(held, 0, (size_t)n * sizeof *held);
	double t = now();
	if (write(fd, &t, sizeof t) != (ssize_t)sizeof t)
		return 1;
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const shapes[] = { "lost", "array", "shuffled", "chain", "tree", "list", "lostchain" };
	int shape = -1;
	for (int s = 0; argc > 1 && s < 7; s++)
		if (strcmp(argv[1], shapes[s]) == 0)
			shape = s;
	if (shape < 0) {
		fprintf(stderr, "usage: exitscan lost|array|shuffled|chain|tree|list|lostchain [BLOCKS [RUNS]]\n");
		return 2;
	}
	long n = bench_arg(argc, argv, 2, 5000000);
	long runs = bench_arg(argc, argv, 3, 3);
	double took[64];
	if (runs > 64)
		runs = 64;
	for (long r = 0; r < runs; r++) {
		int fds[2];
		if (pipe(fds) != 0) {
			perror("exitscan: pipe");
			return 1;
		}
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0) {
			perror("exitscan: fork");
			return 1;
		}
		if (pid == 0) {
			close(fds[0]);
			return child(shape, n, fds[1]);
		}
		close(fds[1]);
		double t0 = 0;
		ssize_t got = read(fds[0], &t0, sizeof t0);
		close(fds[0]);
		int st;
		if (waitpid(pid, &st, 0) != pid || got != (ssize_t)sizeof t0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			fprintf(stderr, "exitscan: run %ld failed\n", r + 1);
			return 1;
		}
		took[r] = now() - t0;
	}
	double sorted[64];
	memcpy(sorted, took, (size_t)runs * sizeof *took);
	qsort(sorted, (size_t)runs, sizeof *sorted, by_value);
	printf("%.2f", sorted[runs / 2]);
	for (long r = 0; r < runs; r++)
		printf(" %.2f", took[r]);
	printf("\n");
	return 0;
}
