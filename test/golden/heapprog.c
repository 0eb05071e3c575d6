/* heapprog - a program whose heap rises to a peak, falls and rises again,
 * for the timeline and export tests. It logs every allocation and free it
 * makes on stdout, written at the end from a static buffer (stdio would
 * allocate): "a ID SITE FUNCTION SIZE THREAD", "f ID THREAD", and "T"/"J" where a
 * thread is started and joined. snapshots.py replays the log into the
 * dump's snapshots. Every site makes a distinct number of blocks and bytes,
 * so that the log's sites can be matched with the dump's stacks.
 * Leaves: the cache (16,000 bytes, reachable), 20 worker blocks
 * (reachable) and one lost 100-byte block. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char logbuf[1 << 16];
static size_t loglen;
static int next_id;

/* Appends one line to the log. */
#define LOG(...) (loglen += (size_t)snprintf(logbuf + loglen, \
					      sizeof logbuf - loglen, __VA_ARGS__))

static int on_alloc(const char *site, const char *fn, size_t size, int thread)
{
	int id = next_id++;

	LOG("a %d %s %s %zu %d\n", id, site, fn, size, thread);
	return id;
}

static void on_free(int id, int thread)
{
	LOG("f %d %d\n", id, thread);
}

static char *table[200];
static int table_id[200];
static char *idx[50];
static int idx_id[50];
static void *kept[20];
static void *cache;
static void *lost;

static void load_table(void)
{
	for (int i = 0; i < 200; i++) {
		table[i] = malloc(512);
		memset(table[i], i, 512);
		table_id[i] = on_alloc("load_table", "malloc", 512, 0);
	}
}

static size_t parse_line(int i)
{
	char *copy = strdup(i % 2 ? "a line of the input file" : "another line");
	int id = on_alloc("parse_line", "strdup", strlen(copy) + 1, 0);
	size_t n = strlen(copy);

	free(copy);
	on_free(id, 0);
	return n;
}

static void build_index(void)
{
	for (int i = 0; i < 50; i++) {
		idx[i] = calloc(1, 4096);
		idx_id[i] = on_alloc("build_index", "calloc", 4096, 0);
	}
}

static void *worker(void *arg)
{
	void *b[100];
	int id[100];

	for (int i = 0; i < 100; i++) {
		b[i] = malloc(256);
		id[i] = on_alloc("worker", "malloc", 256, 1);
	}
	for (int i = 0; i < 80; i++) {
		free(b[i]);
		on_free(id[i], 1);
	}
	memcpy(kept, b + 80, sizeof kept);
	return arg;
}

static void grow_cache(void)
{
	int id;

	cache = malloc(1000);
	id = on_alloc("grow_cache", "malloc", 1000, 0);
	for (int n = 2000; n <= 16000; n += 1000) {
		cache = realloc(cache, (size_t)n);
		on_free(id, 0);
		id = on_alloc("grow_cache+", "realloc", (size_t)n, 0);
	}
}

static void make_leak(void)
{
	lost = malloc(100);
	on_alloc("make_leak", "malloc", 100, 0);
	lost = NULL;
}

int main(void)
{
	pthread_t t;
	size_t total = 0;

	load_table();
	for (int i = 0; i < 300; i++)
		total += parse_line(i);
	build_index();
	LOG("T\n");
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	LOG("J\n");
	for (int i = 0; i < 200; i++) {
		free(table[i]);
		on_free(table_id[i], 0);
	}
	for (int i = 0; i < 50; i++) {
		free(idx[i]);
		on_free(idx_id[i], 0);
	}
	grow_cache();
	make_leak();
	if (write(1, logbuf, loglen) != (ssize_t)loglen)
		return 1;
	return total == 5400 ? 0 : 2;
}
