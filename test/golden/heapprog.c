/* heapprog - a program whose heap rises to a peak, falls and rises again,
 * for the timeline and export tests (t55, t56), run under the shim.
 * Every site makes a distinct number of blocks and bytes:
 *   load_table   200 blocks of 512 bytes (malloc), freed after the worker
 *   parse_line   300 strdup'd lines of 13 or 25 bytes, each freed at once
 *                (temporary allocations)
 *   build_index  50 blocks of 4,096 bytes (calloc), freed after the worker
 *   worker       a second thread: 100 blocks of 256 bytes, 80 freed
 *   grow_cache   1,000 bytes grown by realloc to 16,000 in 15 steps
 *   make_leak    100 bytes, lost
 * The peak, 333,072 bytes, is reached in the worker: the table, the
 * index, the worker's blocks and the 272 bytes of its thread's DTV that
 * ld.so callocs in pthread_create. Leaves: the cache (16,000 bytes,
 * reachable), 20 worker blocks (reachable) and the lost 100 bytes.
 * Exit status 0. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static char *table[200];
static char *idx[50];
static void *kept[20];
static void *cache;
static void *lost;

static void load_table(void)
{
	for (int i = 0; i < 200; i++) {
		table[i] = malloc(512);
		memset(table[i], i, 512);
	}
}

static size_t parse_line(int i)
{
	char *copy = strdup(i % 2 ? "a line of the input file" : "another line");
	size_t n = strlen(copy);

	free(copy);
	return n;
}

static void build_index(void)
{
	for (int i = 0; i < 50; i++)
		idx[i] = calloc(1, 4096);
}

static void *worker(void *arg)
{
	void *b[100];

	for (int i = 0; i < 100; i++)
		b[i] = malloc(256);
	for (int i = 0; i < 80; i++)
		free(b[i]);
	memcpy(kept, b + 80, sizeof kept);
	return arg;
}

static void grow_cache(void)
{
	cache = malloc(1000);
	for (int n = 2000; n <= 16000; n += 1000)
		cache = realloc(cache, (size_t)n);
}

static void make_leak(void)
{
	lost = malloc(100);
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
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	for (int i = 0; i < 200; i++)
		free(table[i]);
	for (int i = 0; i < 50; i++)
		free(idx[i]);
	grow_cache();
	make_leak();
	return total == 5400 ? 0 : 2;
}
