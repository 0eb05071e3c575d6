/* par_realloc_fail - realloc of an existing block to 16 TiB fails and
 * returns NULL, leaving the block as it was. (valgrind 3.19 counts an
 * alloc and a free for the attempt, before it knows it failed.)
 * Exits 0 with the block still allocated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *keep;

int main(void)
{
	char *p = malloc(20);
	strcpy(p, "still here");
	volatile size_t huge = (size_t)1 << 44;
	char *q = realloc(p, huge);
	keep = p;
	printf("%s %s\n", q ? "non-null" : "null", p);
	return 0;
}
