// cxx_fork - std::thread workers filling and clearing containers while
// the main thread forks (argv[1] times, 100 by default); each child builds
// a string and a map, then _exit. Prints "done" and exits 0.
#include <atomic>
#include <map>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv)
{
	int forks = argc > 1 ? std::atoi(argv[1]) : 100;
	std::atomic<bool> stop{false};
	std::vector<std::thread> workers;
	for (int w = 0; w < 3; w++)
		workers.emplace_back([&stop, w] {
			std::map<int, std::string> m;
			for (int i = 0; !stop; i++) {
				m[i % 500] = std::string(static_cast<size_t>(i % 300 + w), 'x');
				if (i % 1000 == 0)
					m.clear();
			}
		});
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			std::map<int, std::string> m;
			m[1] = std::string(100, 'y');
			_exit(m.size() == 1 ? 0 : 1);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			std::printf("child failed\n");
			return 1;
		}
	}
	stop = true;
	for (auto &t : workers)
		t.join();
	std::printf("done\n");
	return 0;
}
