/* asp_figures - include/allocspy.h's heap figures as a unit test uses them:
 * known work between two calls of asp_heap_figures, and the difference
 * checked against the exact counts valgrind's rules give it.
 *
 *   asp_figures
 *
 * Prints one line per step: the differences in the calling thread's
 * figures and in the process's ("?" for a figure the mode does not keep,
 * -1 from the shim). Without liballocspy.so it prints that the figures are
 * unavailable. Exits 0 when every figure is the expected one (or when
 * they are unavailable and the structures were left alone), 1 otherwise,
 * with what differed on stderr. Nothing here allocates but the work
 * itself: stdout writes into a static buffer. */
#include <allocspy.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;
/* Each block is stored here, so that an optimizing compiler keeps every
 * allocation and free the source makes (GCC drops a malloc whose block
 * is only freed). */
static void *volatile sink;
static int counting;	/* count mode: no bytes in use, no peak */
static char out_buf[8192];

/* The difference b - a of each figure. */
struct diff {
	long long allocs, frees, bytes, blocks, in_use;
};

static struct diff diff(const asp_heap_figures_t *a, const asp_heap_figures_t *b)
{
	struct diff d = {
		(long long)(b->allocs - a->allocs), (long long)(b->frees - a->frees),
		(long long)(b->bytes - a->bytes),
		(long long)(b->in_use_blocks - a->in_use_blocks),
		(long long)(b->in_use_bytes - a->in_use_bytes),
	};
	return d;
}

static void put(const char *step, const char *who, struct diff d)
{
	printf("%s: %s %+lld allocs %+lld frees %+lld bytes, in use %+lld blocks ", step, who,
	       d.allocs, d.frees, d.bytes, d.blocks);
	if (counting)
		printf("? bytes\n");
	else
		printf("%+lld bytes\n", d.in_use);
}

/* The step's difference must be want (its in-use bytes only outside
 * count mode). */
static void expect(const char *step, const char *who, struct diff got, struct diff want)
{
	put(step, who, got);
	if (got.allocs != want.allocs || got.frees != want.frees || got.bytes != want.bytes ||
	    got.blocks != want.blocks || (!counting && got.in_use != want.in_use)) {
		fprintf(stderr, "asp_figures: %s (%s): expected %+lld allocs %+lld frees %+lld bytes, "
			"in use %+lld blocks %+lld bytes\n", step, who, want.allocs, want.frees,
			want.bytes, want.blocks, want.in_use);
		fails++;
	}
}

static void figures(asp_heap_figures_t *process, asp_heap_figures_t *thread)
{
	if (asp_heap_figures(process, thread) != 0) {
		fprintf(stderr, "asp_figures: the figures went away\n");
		exit(1);
	}
}

/* The other thread's part: it waits for main at each barrier, so that
 * main reads the figures before and after its work. */
static pthread_barrier_t barrier;
static void *handed[2];		/* blocks main allocated, freed by the worker */
static struct diff worker_saw;

static void *worker(void *arg)
{
	asp_heap_figures_t a, b;
	void *kept[5];

	(void)arg;
	pthread_barrier_wait(&barrier);
	figures(NULL, &a);
	for (int i = 0; i < 5; i++)
		sink = kept[i] = malloc(64);
	free(handed[0]);
	free(handed[1]);
	figures(NULL, &b);
	worker_saw = diff(&a, &b);
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);		/* main has read the figures */
	for (int i = 0; i < 5; i++)
		free(kept[i]);
	return NULL;
}

int main(void)
{
	asp_heap_figures_t p0, t0, p1, t1;
	unsigned char untouched[sizeof p0];

	setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);
	memset(&p0, 0x55, sizeof p0);
	memset(&t0, 0x55, sizeof t0);
	memset(untouched, 0x55, sizeof untouched);
	int rc = asp_heap_figures(&p0, &t0);
	if (rc != 0) {
		printf("asp_heap_figures: %d (unavailable: %s)\n", rc,
		       rc == ASP_FIGURES_UNAVAILABLE ? "yes" : "no");
		return rc == ASP_FIGURES_UNAVAILABLE && !memcmp(&p0, untouched, sizeof p0) &&
		       !memcmp(&t0, untouched, sizeof t0) ? 0 : 1;
	}
	counting = p0.in_use_bytes == -1;
	printf("mode: %s\n", counting ? "count (no bytes in use, no peak)" : "track");
	if (t0.peak_bytes != -1 || (counting && (p0.peak_bytes != -1 || t0.in_use_bytes != -1))) {
		fprintf(stderr, "asp_figures: a figure the mode does not keep is not -1\n");
		fails++;
	}

	/* The call itself allocates nothing (the first looked the shim up). */
	figures(&p1, &t1);
	expect("a call", "thread", diff(&t0, &t1), (struct diff){ 0, 0, 0, 0, 0 });
	expect("a call", "process", diff(&p0, &p1), (struct diff){ 0, 0, 0, 0, 0 });

	/* Three blocks: 100 + 2 x 100 + 11 bytes. */
	figures(&p0, &t0);
	char *a = malloc(100);
	char *b = calloc(2, 100);
	char *c = strdup("0123456789");
	sink = a;
	sink = b;
	sink = c;
	figures(&p1, &t1);
	expect("malloc, calloc, strdup", "thread", diff(&t0, &t1), (struct diff){ 3, 0, 311, 3, 311 });
	expect("malloc, calloc, strdup", "process", diff(&p0, &p1), (struct diff){ 3, 0, 311, 3, 311 });
	/* dhat-rs's kind of assertion: at most 3 blocks. */
	if (t1.allocs - t0.allocs > 3) {
		fprintf(stderr, "asp_figures: more than 3 blocks\n");
		fails++;
	}

	/* realloc of a block is an alloc and a free, valgrind's rule. */
	figures(&p0, &t0);
	sink = a = realloc(a, 1000);
	figures(&p1, &t1);
	expect("realloc 100 -> 1000", "thread", diff(&t0, &t1), (struct diff){ 1, 1, 1000, 0, 900 });

	figures(&p0, &t0);
	free(a);
	free(b);
	free(c);
	free(NULL);		/* not a free */
	figures(&p1, &t1);
	expect("free x3, free(NULL)", "thread", diff(&t0, &t1), (struct diff){ 0, 3, 0, -3, -1211 });
	expect("free x3, free(NULL)", "process", diff(&p0, &p1), (struct diff){ 0, 3, 0, -3, -1211 });

	/* The peak: a block larger than anything held so far raises it to
	 * exactly what is in use with it, and it stays there once freed. */
	asp_heap_figures_t p2;
	figures(&p0, NULL);
	void *big = malloc(1 << 20);
	sink = big;
	figures(&p1, NULL);
	free(big);
	figures(&p2, NULL);
	if (!counting) {
		long long base = p0.in_use_bytes, top = base + (1 << 20);
		int right = p1.in_use_bytes == top && p1.peak_bytes == top &&
			    p2.in_use_bytes == base && p2.peak_bytes == top;
		printf("malloc(1 MiB), free: the peak %s\n",
		       right ? "is what was in use with it, and stays" : "is wrong");
		if (!right) {
			fprintf(stderr, "asp_figures: in use %lld, %lld then %lld; peak %lld then "
				"%lld; expected the peak %lld\n", base,
				(long long)p1.in_use_bytes, (long long)p2.in_use_bytes,
				(long long)p1.peak_bytes, (long long)p2.peak_bytes, top);
			fails++;
		}
	}

	/* Another thread: its figures are its own, the process's have them
	 * too, and this thread's do not change meanwhile. It frees two
	 * blocks of 32 bytes that this thread allocated. */
	pthread_t th;
	sink = handed[0] = malloc(32);
	sink = handed[1] = malloc(32);
	pthread_barrier_init(&barrier, NULL, 2);
	if (pthread_create(&th, NULL, worker, NULL) != 0)
		return 1;
	figures(&p0, &t0);
	pthread_barrier_wait(&barrier);		/* the worker works */
	pthread_barrier_wait(&barrier);
	figures(&p1, &t1);
	pthread_barrier_wait(&barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&barrier);
	expect("worker: 5 x malloc(64), frees 2 of main's", "its thread", worker_saw,
	       (struct diff){ 5, 2, 320, 3, 256 });
	expect("worker: 5 x malloc(64), frees 2 of main's", "main thread", diff(&t0, &t1),
	       (struct diff){ 0, 0, 0, 0, 0 });
	expect("worker: 5 x malloc(64), frees 2 of main's", "process", diff(&p0, &p1),
	       (struct diff){ 5, 2, 320, 3, 256 });

	printf("%s\n", fails ? "FAILED" : "all as expected");
	return fails ? 1 : 0;
}
