/* par_memalign - the aligned allocators: posix_memalign (including an
 * invalid alignment, which fails with EINVAL), aligned_alloc, memalign and
 * valloc, at alignments from 8 bytes to 64 KiB. Each block is checked for
 * its alignment. Leaves 3 blocks; exits 7. (valgrind 3.19 aborts the
 * program on pvalloc, so pvalloc is tested without valgrind, in
 * asp_pvalloc.) */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *keep[3];
static int misaligned;

static void chk(void *p, size_t align)
{
	if (p == NULL || (uintptr_t)p % align != 0)
		misaligned++;
}

int main(void)
{
	static const size_t aligns[] = { 8, 16, 32, 64, 128, 256, 4096, 65536 };
	static const size_t sizes[] = { 1, 24, 100, 4000, 70000 };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int n = 0;

	for (size_t i = 0; i < sizeof aligns / sizeof aligns[0]; i++) {
		for (size_t j = 0; j < sizeof sizes / sizeof sizes[0]; j++) {
			size_t a = aligns[i], s = sizes[j];
			void *p = NULL;
			int rc = posix_memalign(&p, a, s);
			if (rc == 0) {
				chk(p, a);
				memset(p, 1, s);
				free(p);
				n++;
			}
			p = memalign(a, s);
			chk(p, a);
			free(p);
			/* aligned_alloc wants a size that is a multiple of the alignment. */
			p = aligned_alloc(a, (s + a - 1) / a * a);
			chk(p, a);
			free(p);
			n += 2;
		}
	}

	void *bad = (void *)1;
	int rc1 = posix_memalign(&bad, 24, 100);      /* not a power of two */
	int rc2 = posix_memalign(&bad, 4, 100);       /* below sizeof(void *) */

	void *v = valloc(10);
	chk(v, page);
	void *w = valloc(3 * page + 1);
	chk(w, page);
	free(w);

	void *m = memalign(64, 48);
	chk(m, 64);
	void *pm = NULL;
	posix_memalign(&pm, 32, 0);

	keep[0] = v;
	keep[1] = m;
	keep[2] = pm;
	printf("aligned=%d misaligned=%d einval=%d,%d\n", n, misaligned,
	    rc1 == EINVAL, rc2 == EINVAL);
	return 7;
}
