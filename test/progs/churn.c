/* churn - THREADS short-lived threads, created and joined BATCH at a time;
 * each makes PER blocks (malloc, calloc and strdup in turn, sizes 1 to 200)
 * and frees them all before it returns.
 *
 *   churn [THREADS [BATCH [PER]]]     (5000 50 10)
 *
 * Prints the program's own counts: "threads=T allocs=A frees=A bytes=B".
 * Exits 0. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int per;
static const char text[] = "churning threads, each one allocating and freeing a few blocks of its own before it exits; "
	"the text is long enough for strdup to make blocks of up to two hundred bytes, which is the most this program asks for";

static size_t size_of(long id, int i)
{
	return 1 + (size_t)((id * 31 + i * 17) % 200);
}

static void *work(void *arg)
{
	long id = (long)arg;
	char *b[64];
	int n = per < 64 ? per : 64;

	for (int i = 0; i < per; i++) {
		size_t sz = size_of(id, i);
		char *p;
		if (i % 3 == 0)
			p = malloc(sz);
		else if (i % 3 == 1)
			p = calloc(1, sz);
		else
			p = strndup(text, sz - 1);
		p[0] = 'x';
		if (i < n)
			b[i] = p;
		else
			free(p);
	}
	for (int i = 0; i < n; i++)
		free(b[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	long threads = argc > 1 ? atol(argv[1]) : 5000;
	int batch = argc > 2 ? atoi(argv[2]) : 50;
	unsigned long bytes = 0;
	pthread_t t[256];

	per = argc > 3 ? atoi(argv[3]) : 10;
	if (batch < 1 || batch > 256 || per < 0)
		return 2;
	for (long done = 0; done < threads; done += batch) {
		int n = threads - done < batch ? (int)(threads - done) : batch;
		for (int i = 0; i < n; i++)
			pthread_create(&t[i], NULL, work, (void *)(done + i));
		for (int i = 0; i < n; i++)
			pthread_join(t[i], NULL);
	}
	for (long id = 0; id < threads; id++)
		for (int i = 0; i < per; i++)
			bytes += size_of(id, i);
	printf("threads=%ld allocs=%lu frees=%lu bytes=%lu\n", threads,
	    (unsigned long)threads * (unsigned long)per, (unsigned long)threads * (unsigned long)per, bytes);
	return 0;
}
