/* par_local_plugin - a C program that dlopens C++ code
 * (test/progs/lib/new_plugin.cc, beside it in lib/) without RTLD_GLOBAL,
 * as plugin hosts do: libstdc++ is then only in the plugin's own scope.
 * The plugin makes 20 objects aligned to 128 bytes with operator new and
 * prints how many are not aligned (0), then frees them. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	if (n <= 0)
		return 2;
	path[n] = '\0';
	strcpy(strrchr(path, '/'), "/lib/libnew_plugin.so");
	void *h = dlopen(path, RTLD_NOW);
	if (h == NULL) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	int (*aligned)(void) = (int (*)(void))dlsym(h, "plugin_aligned");
	printf("misaligned objects: %d\n", aligned ? aligned() : -1);
	return 0;
}
