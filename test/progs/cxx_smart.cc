// cxx_smart - smart pointers and type erasure: shared_ptr from new (a
// separate control block) and from make_shared (one block), weak_ptr
// outliving the object, unique_ptr with arrays and custom deleters,
// std::function holding a large capture, std::any. A heap-allocated
// shared_ptr in a global is never released. Exits 2.
#include <any>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

struct Node {
	std::string name;
	std::vector<std::shared_ptr<Node>> children;
	std::weak_ptr<Node> parent;
	explicit Node(std::string n) : name(std::move(n)) {}
};

static std::shared_ptr<Node> *kept;

int main()
{
	long sum = 0;
	for (int i = 0; i < 100; i++) {
		std::shared_ptr<int> a(new int(i));
		auto b = std::make_shared<long>(i);
		auto c = a;
		sum += *c + *b + a.use_count();
	}

	std::weak_ptr<Node> w;
	{
		auto root = std::make_shared<Node>("root node with a long enough name");
		for (int i = 0; i < 20; i++) {
			auto child = std::make_shared<Node>("child " + std::to_string(i));
			child->parent = root;
			root->children.push_back(child);
		}
		w = root->children[3];
	}
	bool expired = w.expired();

	std::unique_ptr<int[]> arr(new int[500]);
	arr[499] = 3;
	std::unique_ptr<char, void (*)(void *)> cbuf(static_cast<char *>(std::malloc(77)), std::free);
	cbuf.get()[0] = 'c';

	struct Big { char pad[200]; } big{};
	big.pad[0] = 4;
	std::function<int(int)> f = [big](int x) { return x + big.pad[0]; };
	sum += f(1);

	std::any any = std::string(100, 'y');
	any = std::vector<int>(50, 1);
	sum += static_cast<long>(std::any_cast<std::vector<int> &>(any).size());

	kept = new std::shared_ptr<Node>(std::make_shared<Node>("kept in a global, never released"));
	std::printf("sum=%ld expired=%d arr=%d c=%c\n", sum, expired, arr[499], cbuf.get()[0]);
	return 2;
}
