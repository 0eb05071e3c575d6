/* rss_frag - a fragmented heap, for allocspy-report rss (t48): 100,000
 * blocks of 1,024 bytes, each written, then every other one freed. The
 * 50,000 left hold 51,200,000 bytes, with 8 bytes of slack each (glibc's
 * 1,040-byte chunks); the 50,000 freed lie between them, so about 52 MB
 * stay inside the allocator, free. Transparent huge pages are turned off,
 * so that what is resident is what was written. Exit status 0. */
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define BLOCKS 100000
#define BLOCK_SIZE 1024

static char *blocks[BLOCKS];

int main(void)
{
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	for (int i = 0; i < BLOCKS; i++) {
		blocks[i] = malloc(BLOCK_SIZE);
		memset(blocks[i], i, BLOCK_SIZE);
	}
	for (int i = 0; i < BLOCKS; i += 2)
		free(blocks[i]);
	return 0;
}
