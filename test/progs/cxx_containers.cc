// cxx_containers - the standard containers growing and shrinking:
// std::vector (push_back growth, reserve, shrink_to_fit), std::string
// (short-string optimisation and heap growth), std::map, std::unordered_map
// (rehashing), std::list, std::deque, std::set of strings. A global map made
// with new is never deleted. Exits 0.
#include <cstdio>
#include <deque>
#include <list>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

static std::map<int, std::string> *kept;

int main()
{
	std::vector<int> v;
	for (int i = 0; i < 10000; i++)
		v.push_back(i);
	std::vector<int> w;
	w.reserve(100);
	w.assign(v.begin(), v.begin() + 50);
	w.shrink_to_fit();

	std::string s = "short";
	for (int i = 0; i < 200; i++)
		s += static_cast<char>('a' + i % 26);
	std::string t = s.substr(10, 100);

	std::map<std::string, int> m;
	for (int i = 0; i < 500; i++)
		m["key number " + std::to_string(i)] = i;
	for (int i = 0; i < 500; i += 2)
		m.erase("key number " + std::to_string(i));

	std::unordered_map<int, std::vector<int>> um;
	for (int i = 0; i < 2000; i++)
		um[i * 7].push_back(i);
	um.rehash(5000);

	std::list<std::string> l;
	for (int i = 0; i < 100; i++)
		l.push_front(std::string(static_cast<size_t>(i), 'x'));
	l.sort();

	std::deque<long> d;
	for (int i = 0; i < 3000; i++) {
		d.push_back(i);
		if (i % 3 == 0)
			d.pop_front();
	}

	std::set<std::string> st(m.begin() == m.end() ? l.begin() : l.begin(), l.end());

	kept = new std::map<int, std::string>;
	for (int i = 0; i < 10; i++)
		(*kept)[i] = std::string(30, static_cast<char>('A' + i));

	std::printf("v=%zu w=%zu/%zu s=%zu t=%zu m=%zu um=%zu l=%zu d=%zu st=%zu\n", v.size(),
	    w.size(), w.capacity(), s.size(), t.size(), m.size(), um.size(), l.size(), d.size(),
	    st.size());
	return 0;
}
