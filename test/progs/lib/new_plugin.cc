// new_plugin - C++ code for a C program to dlopen (par_new_plugin): it
// asks operator new, plain and aligned, for more than there is, catches
// std::bad_alloc each time, and then allocates and frees as usual.
#include <cstddef>
#include <cstdint>
#include <new>

char *volatile g_sink;

extern "C" int plugin_run(void)
{
	int caught = 0;
	for (int i = 0; i < 3; i++) {
		try {
			g_sink = new char[(std::size_t)1 << 62];
			delete[] g_sink;
		} catch (const std::bad_alloc &) {
			caught++;
		}
	}
	try {
		g_sink = static_cast<char *>(::operator new((std::size_t)1 << 62, std::align_val_t(64)));
	} catch (const std::bad_alloc &) {
		caught++;
	}
	g_sink = new char[100];
	delete[] g_sink;
	return caught;
}

struct alignas(128) Wide {
	char c[200];
};

// 20 objects aligned to 128 bytes, all alive at once: how many are not.
extern "C" int plugin_aligned(void)
{
	Wide *keep[20];
	int misaligned = 0;
	for (int i = 0; i < 20; i++) {
		keep[i] = new Wide;
		misaligned += reinterpret_cast<std::uintptr_t>(keep[i]) % alignof(Wide) != 0;
	}
	for (int i = 0; i < 20; i++)
		delete keep[i];
	return misaligned;
}
