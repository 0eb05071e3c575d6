/* par_local_plugin - a C program that dlopens C++ code
 * (test/progs/lib/new_plugin.cc, beside it in lib/) without RTLD_GLOBAL,
 * as plugin hosts do: libstdc++ is then only in the plugin's own scope.
 * The plugin makes 20 objects aligned to 128 bytes with operator new and
 * prints how many are not aligned (0), then frees them. */
#include <stdlib.h>

#include "plugin_common.h"

int main(void)
{
	void *h = plugin_open(RTLD_NOW);
	if (h == NULL)
		return 1;
	int (*aligned)(void) = (int (*)(void))dlsym(h, "plugin_aligned");
	printf("misaligned objects: %d\n", aligned ? aligned() : -1);
	return 0;
}
