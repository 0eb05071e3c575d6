/* rel_loop - allocates and frees forever, keeping 100 blocks, until it is
 * killed. For periodic dumps. */
#include <stdio.h>
#include <stdlib.h>

static void *keep[100];

int main(void)
{
	printf("looping\n");
	fflush(stdout);
	for (unsigned long i = 0;; i++) {
		void **slot = &keep[i % 100];
		free(*slot);
		*slot = malloc(16 + i % 100);
	}
}
