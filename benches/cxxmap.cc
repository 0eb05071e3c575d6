// cxxmap - a C++ program's heap: a std::map of strings to vectors that
// grows, changes and shrinks, every node, key and vector a block of its own.
//
// usage: cxxmap [KEYS [OPS]]   (defaults 100000, 1500000)
//
// Fills the map with KEYS keys ("key-" and a number, long enough to leave
// the string's inline buffer), each with a vector of 1 to 16 ints; then OPS
// times picks a key at random out of 2 x KEYS: erases it when it is there
// (every third time), else inserts it or appends to its vector. Prints the
// map's size and a checksum; exits 0.
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

static uint64_t next_rand(uint64_t &s)
{
	s ^= s << 13;
	s ^= s >> 7;
	s ^= s << 17;
	return s;
}

static std::string key_of(uint64_t k)
{
	char buf[48];
	std::snprintf(buf, sizeof buf, "key-%020llu", (unsigned long long)k);
	return buf;
}

int main(int argc, char **argv)
{
	long keys = argc > 1 ? std::atol(argv[1]) : 100000;
	long ops = argc > 2 ? std::atol(argv[2]) : 1500000;
	if (keys <= 0 || ops <= 0) {
		std::fprintf(stderr, "usage: cxxmap [KEYS [OPS]]\n");
		return 2;
	}
	std::map<std::string, std::vector<int>> m;
	uint64_t s = 88172645463325252ull;
	for (long i = 0; i < keys; i++) {
		uint64_t r = next_rand(s);
		m[key_of(r % (2 * (uint64_t)keys))].assign(1 + r % 16, (int)i);
	}
	for (long i = 0; i < ops; i++) {
		uint64_t r = next_rand(s);
		std::string k = key_of(r % (2 * (uint64_t)keys));
		auto it = m.find(k);
		if (it != m.end() && (r >> 40) % 3 == 0)
			m.erase(it);
		else if (it != m.end())
			it->second.push_back((int)i);
		else
			m.emplace(std::move(k), std::vector<int>(1 + (r >> 8) % 16, (int)i));
	}
	uint64_t sum = 0;
	for (const auto &kv : m)
		sum += kv.first.size() + kv.second.size();
	std::printf("%zu %llu\n", m.size(), (unsigned long long)sum);
	return 0;
}
