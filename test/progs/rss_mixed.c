/* rss_mixed - resident memory of every kind, for allocspy-report rss
 * (t48): two large blocks in mappings of their own, 8 MiB from malloc with
 * its first 4 MiB written and 4 MiB from calloc never written, so that
 * 8,388,608 bytes in use are not resident; a thread that allocated, still
 * waiting at exit (its stack is the second one found); a 2 MiB mapping of
 * the program's own, written. Transparent huge pages are turned off, so
 * that what is resident is what was written. Exit status 0. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

static char *big, *zeroed, *note;
static int ready[2];

static void *waiter(void *arg)
{
	char c = 0;

	(void)arg;
	note = malloc(100);
	memset(note, 1, 100);
	if (write(ready[1], &c, 1) != 1)
		return NULL;
	pause();
	return NULL;
}

int main(void)
{
	pthread_t t;
	char c;

	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	if (pipe(ready) != 0 || pthread_create(&t, NULL, waiter, NULL) != 0 ||
	    read(ready[0], &c, 1) != 1)
		return 1;
	big = malloc(8 << 20);
	memset(big, 2, 4 << 20);
	zeroed = calloc(1, 4 << 20);
	char *own = mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (own == MAP_FAILED)
		return 1;
	memset(own, 3, 2 << 20);
	return 0;
}
