/* plugin_common.h - shared by the programs that dlopen the C++ code of
 * test/progs/lib/new_plugin.cc, built beside them in lib/. */
#ifndef PLUGIN_COMMON_H
#define PLUGIN_COMMON_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* dlopen of lib/libnew_plugin.so next to this program, with flags; NULL
 * (and the reason on stdout) when it fails. */
static void *plugin_open(int flags)
{
	char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof path - 32);
	if (n <= 0)
		return NULL;
	path[n] = '\0';
	strcpy(strrchr(path, '/'), "/lib/libnew_plugin.so");
	void *h = dlopen(path, flags);
	if (h == NULL)
		printf("dlopen: %s\n", dlerror());
	return h;
}

#endif
