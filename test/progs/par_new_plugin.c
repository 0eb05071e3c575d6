/* par_new_plugin - a C program (no libstdc++, no libgcc_s at start) that
 * dlopens C++ code (test/progs/lib/new_plugin.cc, beside it in lib/)
 * whose operator new fails and throws std::bad_alloc, 4 times, caught
 * there. The program then leaks 3 blocks of 4,321 bytes, which must be
 * counted: the thread's state is back after each throw. RTLD_GLOBAL puts
 * libstdc++ where the shim finds the real operators. */
#include <stdlib.h>

#include "plugin_common.h"

static void *g_lost;

int main(void)
{
	void *h = plugin_open(RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL)
		return 1;
	int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
	printf("bad_alloc caught %d times\n", run ? run() : -1);
	for (int i = 0; i < 3; i++) {
		g_lost = malloc(4321);
		g_lost = NULL;
	}
	return 0;
}
