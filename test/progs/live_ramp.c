/* live_ramp - a heap that grows for SECONDS seconds (the argument, 5 by
 * default), for allocspy top (t48): every 10 ms grow_cache keeps a block
 * of 4,096 bytes, and every 100 ms keep_name one of 100 bytes. Nothing is
 * freed. No stdio. Exit status 0. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void *kept[100000];
static int nkept;

static void grow_cache(void)
{
	kept[nkept] = malloc(4096);
	memset(kept[nkept++], 1, 4096);
}

static void keep_name(void)
{
	kept[nkept] = malloc(100);
	memset(kept[nkept++], 2, 100);
}

int main(int argc, char **argv)
{
	const struct timespec tick = { 0, 10000000 };
	int seconds = argc > 1 ? atoi(argv[1]) : 5;

	for (int i = 0; i < seconds * 100 && nkept < 99990; i++) {
		grow_cache();
		if (i % 10 == 0)
			keep_name();
		nanosleep(&tick, NULL);
	}
	return 0;
}
