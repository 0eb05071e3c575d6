// leak_cxx - C++ objects left at exit: containers reachable from globals
// (a heap-allocated vector of strings and a map), a leaked map and its
// nodes (one definite, the rest indirect), an object with a vtable leaked
// through a base pointer, a unique_ptr released and dropped, a shared_ptr
// cycle (two make_shared nodes owning each other), and a static vector
// (destroyed at exit: freed, not a leak). Exits 0.
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

struct Base {
	virtual ~Base() {}
	long id = 1;
};
struct Derived : Base {
	std::string name = std::string(40, 'd');
};
struct Cyc {
	std::shared_ptr<Cyc> other;
	char pad[48];
};

static std::vector<std::string> *names;
static std::map<int, std::string> *index_map;
static std::vector<int> destroyed_at_exit(100, 1);

static __attribute__((noinline)) void build()
{
	names = new std::vector<std::string>;
	for (int i = 0; i < 10; i++)
		names->push_back(std::string(20 + static_cast<size_t>(i), 'n'));
	index_map = new std::map<int, std::string>;
	for (int i = 0; i < 5; i++)
		(*index_map)[i] = std::string(30, 'm');

	auto *lost = new std::map<int, int>;
	for (int i = 0; i < 7; i++)
		(*lost)[i] = i;
	lost = nullptr;

	Base *b = new Derived;
	b->id = 2;
	b = nullptr;

	std::unique_ptr<char[]> u(new char[123]);
	u.release();

	auto x = std::make_shared<Cyc>();
	auto y = std::make_shared<Cyc>();
	x->other = y;
	y->other = x;
}

static __attribute__((noinline)) void scrub()
{
	volatile char buf[65536];
	std::memset(const_cast<char *>(buf), 0, sizeof buf);
}

int main()
{
	build();
	scrub();
	std::printf("objects left: %zu names, %zu in the map, %zu in the static vector\n",
	    names->size(), index_map->size(), destroyed_at_exit.size());
	return 0;
}
