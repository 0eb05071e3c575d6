// cxx_threads - std::thread workers filling their own containers and
// handing results back under a mutex, thread_local objects with
// destructors (which make libc register a per-thread destructor record),
// std::async, and a second round of threads. Exits 0.
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

static std::mutex mu;
static std::map<int, std::vector<std::string>> results;

struct Tracker {
	std::vector<int> data;
	Tracker() : data(64, 1) {}
};

static thread_local Tracker tracker;
static thread_local std::string tl_name;

static void work(int id)
{
	tl_name = "worker thread number " + std::to_string(id);
	tracker.data.push_back(id);
	std::vector<std::string> mine;
	for (int i = 0; i < 300; i++)
		mine.push_back(std::to_string(id) + ":" + std::to_string(i) + std::string(static_cast<size_t>(i % 40), 'z'));
	std::lock_guard<std::mutex> g(mu);
	results[id] = std::move(mine);
}

int main()
{
	std::vector<std::thread> ts;
	for (int i = 0; i < 6; i++)
		ts.emplace_back(work, i);
	for (auto &t : ts)
		t.join();
	ts.clear();

	auto fut = std::async(std::launch::async, [] {
		std::vector<int> v(1000);
		long s = 0;
		for (int i = 0; i < 1000; i++)
			s += v[static_cast<size_t>(i)] = i;
		return s;
	});
	long s = fut.get();

	for (int i = 6; i < 10; i++)
		ts.emplace_back(work, i);
	for (auto &t : ts)
		t.join();

	size_t n = 0;
	for (auto &kv : results)
		n += kv.second.size();
	std::printf("results=%zu strings=%zu async=%ld\n", results.size(), n, s);
	return 0;
}
