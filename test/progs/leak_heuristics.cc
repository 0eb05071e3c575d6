/* leak_heuristics - blocks reached only through interior pointers that
 * memcheck's four heuristics (all on by default) explain, each kept by a
 * global, and a block whose interior pointer none explains:
 *   stdstring            a block laid out as a string's representation
 *                        (length, capacity, count, then capacity + 1
 *                        bytes), held by a pointer to its characters;
 *   length64             a block whose first word is its size less 8,
 *                        held by a pointer just after that word;
 *   newarray             new[] of 5 objects with a destructor, held by the
 *                        pointer new[] returned (after the count);
 *   multipleinheritance  3 objects of a class with two polymorphic bases,
 *                        held by pointers to their second base;
 *   and a block of 64 bytes held by a pointer 8 bytes in: possibly lost
 *   (its first word is not its size less 8, nor a divisor of 56).
 * Exits 0. */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

struct A {
	virtual ~A() {}
	virtual int a() { return 1; }
	long x = 1;
};
struct B {
	virtual ~B() {}
	virtual int b() { return 2; }
	long y = 2;
};
struct C : A, B {
	int b() override { return 3; }
};
struct D {
	~D() { n = 0; }
	long n = 7;
};

static char *chars;
static uint64_t *after_length;
static D *array;
static B *second[3];
static char *plain;

static __attribute__((noinline)) void build(void)
{
	uint64_t *rep = static_cast<uint64_t *>(malloc(24 + 40 + 1));
	rep[0] = 11;			/* length */
	rep[1] = 40;			/* capacity */
	rep[2] = 0;			/* reference count */
	memcpy(rep + 3, "hello world", 12);
	chars = reinterpret_cast<char *>(rep + 3);

	uint64_t *l = static_cast<uint64_t *>(malloc(8 + 96));
	l[0] = 96;
	after_length = l + 1;

	array = new D[5];

	for (int i = 0; i < 3; i++)
		second[i] = new C;

	uint64_t *p = static_cast<uint64_t *>(malloc(64));
	p[0] = 5;
	plain = reinterpret_cast<char *>(p + 1);
}

static __attribute__((noinline)) void scrub_stack(void)
{
	volatile char buf[65536];
	memset(const_cast<char *>(buf), 0, sizeof buf);
	__asm__ volatile("" ::"r"(buf) : "memory");
}

int main()
{
	build();
	scrub_stack();
	printf("%s %d %ld\n", chars, second[0]->b(), array[2].n);
	return 0;
}
