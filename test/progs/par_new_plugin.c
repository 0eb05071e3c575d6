/* par_new_plugin - a C program (no libstdc++, no libgcc_s at start) that
 * dlopens C++ code (test/progs/lib/new_plugin.cc, beside it in lib/)
 * whose operator new fails and throws std::bad_alloc, 4 times, caught
 * there. The program then leaks 3 blocks of 4,321 bytes, which must be
 * counted: the thread's state is back after each throw. RTLD_GLOBAL puts
 * libstdc++ where the shim finds the real operators. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *g_lost;

int main(void)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	if (n <= 0)
		return 2;
	path[n] = '\0';
	strcpy(strrchr(path, '/'), "/lib/libnew_plugin.so");
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (h == NULL) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	int (*run)(void) = (int (*)(void))dlsym(h, "plugin_run");
	printf("bad_alloc caught %d times\n", run ? run() : -1);
	for (int i = 0; i < 3; i++) {
		g_lost = malloc(4321);
		g_lost = NULL;
	}
	return 0;
}
