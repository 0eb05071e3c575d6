// cxx_new - the operator new and delete family: scalar and array forms,
// sized delete (on by default in C++14 and later), nothrow new (also a
// failing 16 TiB nothrow new, which returns nullptr), over-aligned types
// (alignas(64) and alignas(4096)) through the aligned operators, and
// placement new (no allocation). Leaves 3 blocks; exits 5.
#include <cstdint>
#include <cstdio>
#include <new>

struct alignas(64) Line {
	char bytes[64];
	int id;
};

struct alignas(4096) Page {
	char data[100];
};

struct Obj {
	int a[10];
	virtual ~Obj() {}
};

struct Derived : Obj {
	double extra[3];
};

static void *keep[3];

int main()
{
	long sum = 0;
	int misaligned = 0;

	for (int i = 0; i < 100; i++) {
		int *p = new int(i);
		sum += *p;
		delete p;
		char *a = new char[(size_t)i + 1];
		a[i] = 1;
		sum += a[i];
		delete[] a;
	}
	Obj *o = new Derived;
	delete o;                       // virtual: sized delete of Derived
	Obj *arr = new Obj[7];          // array cookie: 7 * sizeof(Obj) + 8
	delete[] arr;

	for (int i = 0; i < 10; i++) {
		Line *l = new Line;
		misaligned += reinterpret_cast<uintptr_t>(l) % 64 != 0;
		l->id = i;
		delete l;
		Line *ls = new Line[(size_t)i + 1];
		misaligned += reinterpret_cast<uintptr_t>(ls) % 64 != 0;
		delete[] ls;
	}
	Page *pg = new Page;
	misaligned += reinterpret_cast<uintptr_t>(pg) % 4096 != 0;
	delete pg;

	int *nt = new (std::nothrow) int[100];
	delete[] nt;
	volatile size_t huge = (size_t)1 << 42;
	char *fail = new (std::nothrow) char[huge];
	Line *ntl = new (std::nothrow) Line;
	delete ntl;

	alignas(Obj) unsigned char storage[sizeof(Obj)];
	Obj *placed = new (storage) Obj;
	placed->~Obj();

	keep[0] = new long(42);
	keep[1] = new char[33];
	keep[2] = new Line;
	std::printf("sum=%ld misaligned=%d nothrow=%s\n", sum, misaligned, fail ? "non-null" : "null");
	return 5;
}
