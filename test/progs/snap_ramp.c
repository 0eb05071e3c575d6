/* snap_ramp - a heap that grows to 10 MiB in about a second and is then
 * freed, for the timeline tests (t58): setup keeps a 4,096-byte baseline,
 * grow allocates 10,240 blocks of 1,024 bytes, one every 50 microseconds,
 * shrink frees them all, and the baseline goes last. The peak is
 * 10,489,856 bytes in 10,241 blocks; nothing is left. No stdio: libc
 * allocates nothing of its own. Exit status 0. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BLOCKS 10240
#define BLOCK_SIZE 1024

static void *blocks[BLOCKS];
static void *baseline;

static void setup(void)
{
	baseline = malloc(4096);
	memset(baseline, 0, 4096);
}

static void grow(void)
{
	const struct timespec pause = { 0, 50000 };

	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(BLOCK_SIZE);
		memset(blocks[i], i, BLOCK_SIZE);
		nanosleep(&pause, NULL);
	}
}

static void shrink(void)
{
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
}

int main(void)
{
	setup();
	grow();
	shrink();
	free(baseline);
	return 0;
}
