/* unit.h - a tiny TAP unit-test runner: TEST(name) bodies, each forked.
 * A test fails when an ASSERT_* fails (it prints both values) or when
 * the child dies. Prints "ok N - name" / "not ok N - name". */
#ifndef ASP_UNIT_H
#define ASP_UNIT_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef void (*unit_fn)(void);
struct unit_test { const char *name; unit_fn fn; };

#define TEST(name) static void test_##name(void)
#define UNIT(name) { #name, test_##name }

#define ASSERT_EQ(a, b) do { \
	uintmax_t a_ = (uintmax_t)(a), b_ = (uintmax_t)(b); \
	if (a_ != b_) { \
		fprintf(stderr, "#   %s:%d: %s == %s: %ju != %ju\n", \
		    __FILE__, __LINE__, #a, #b, a_, b_); \
		exit(1); \
	} \
} while (0)

#define ASSERT(c) do { \
	if (!(c)) { \
		fprintf(stderr, "#   %s:%d: %s\n", __FILE__, __LINE__, #c); \
		exit(1); \
	} \
} while (0)

static inline int unit_run(const struct unit_test *t, size_t n)
{
	int failed = 0;
	for (size_t i = 0; i < n; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			t[i].fn();
			exit(0);
		}
		int st = 0;
		waitpid(pid, &st, 0);
		int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
		printf("%sok %zu - %s\n", ok ? "" : "not ", i + 1, t[i].name);
		failed += !ok;
	}
	return failed != 0;
}

#define UNIT_MAIN(...) int main(void) { \
	static const struct unit_test t_[] = { __VA_ARGS__ }; \
	return unit_run(t_, sizeof t_ / sizeof t_[0]); \
}

#endif
