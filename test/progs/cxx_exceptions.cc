// cxx_exceptions - exceptions thrown and caught: std::runtime_error (its
// message string is allocated), a custom exception type holding a vector,
// rethrow, nested exceptions, std::bad_alloc from a std::vector too large
// for max_size, and std::out_of_range from at(). The exception objects
// themselves come from __cxa_allocate_exception (malloc). Exits 3.
#include <cstdio>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct Payload : std::exception {
	std::vector<int> data;
	explicit Payload(size_t n) : data(n, 7) {}
	const char *what() const noexcept override { return "payload"; }
};

static int depth(int n)
{
	if (n == 0)
		throw Payload(static_cast<size_t>(n + 100));
	std::string local(static_cast<size_t>(n) * 10, 'd');
	return depth(n - 1) + static_cast<int>(local.size());
}

int main()
{
	int caught = 0;
	for (int i = 0; i < 50; i++) {
		try {
			throw std::runtime_error("error number " + std::to_string(i) + " with a message long enough to need the heap");
		} catch (const std::exception &e) {
			caught += e.what()[0] == 'e';
		}
	}
	for (int i = 0; i < 20; i++) {
		try {
			depth(i);
		} catch (Payload &p) {
			caught += p.data.size() == 100;
		}
	}
	try {
		try {
			throw std::logic_error("inner");
		} catch (...) {
			std::throw_with_nested(std::runtime_error("outer"));
		}
	} catch (std::exception &e) {
		try {
			std::rethrow_if_nested(e);
		} catch (std::logic_error &inner) {
			caught += 100;
		}
	}
	try {
		std::vector<int> v;
		v.reserve(v.max_size() + 1);
	} catch (std::length_error &) {
		caught += 1000;
	}
	try {
		std::map<int, int> m;
		m.at(3);
	} catch (std::out_of_range &) {
		caught += 10000;
	}
	try {
		try {
			throw 42;
		} catch (int) {
			throw;
		}
	} catch (int x) {
		caught += x;
	}
	std::exception_ptr ep;
	try {
		throw std::runtime_error("stored");
	} catch (...) {
		ep = std::current_exception();
	}
	try {
		std::rethrow_exception(ep);
	} catch (std::runtime_error &e) {
		caught += 100000;
	}
	std::printf("caught=%d\n", caught);
	return 3;
}
