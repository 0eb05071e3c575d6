/* test_names.c - the name rules of the shim's start-up and exit:
 * misspelled ALLOCSPY_* variables (shim/envcheck.c) and valgrind's choice
 * among the names of one address (common/dwsym.c). */
#include "unit.h"

#include "../../shim/envcheck.c"
#include "../../common/dwsym.c"

/* asp__warn, as options.c writes it, into a buffer. */
static char warned[2048];

void asp__warn(const char *a, const char *b, const char *c)
{
	size_t n = strlen(warned);
	snprintf(warned + n, sizeof warned - n, "allocspy: warning: %s%s%s\n", a, b, c);
}

TEST(misspelled_variable_names_its_close_match)
{
	char *env[] = { "PATH=/bin", "ALLOCSPY_BACKTRACES=16", "ALLOCSPY_MODE=count",
			"ALLOCSPY_LEAKCHECK=full", "ALLOCSPY_WHATEVER_ELSE=1", NULL };
	environ = env;
	warned[0] = '\0';
	asp__options_check_names();
	ASSERT(strcmp(warned,
		"allocspy: warning: ALLOCSPY_BACKTRACES: not an allocspy variable; did you mean ALLOCSPY_BACKTRACE?\n"
		"allocspy: warning: ALLOCSPY_LEAKCHECK: not an allocspy variable; did you mean ALLOCSPY_LEAK_CHECK?\n"
		"allocspy: warning: ALLOCSPY_WHATEVER_ELSE: not an allocspy variable\n") == 0);
}

TEST(valid_names_give_no_warning)
{
	char *env[] = { "ALLOCSPY_LIB=/x", "ALLOCSPY_DEFAULT_SUPPRESSIONS=", "ALLOCSPY_SAMPLE_SEED=1",
			"ALLOCSPY_ERRORS_FOR_LEAK_KINDS=all", "ALLOCSPYX=1", NULL };
	environ = env;
	warned[0] = '\0';
	asp__options_check_names();
	ASSERT_EQ(strlen(warned), 0);
}

TEST(prefer_valgrind_rules)
{
	/* shorter without the version; then versioned; then alphabetical */
	ASSERT(asp_dwsym_prefer("pthread_create@@GLIBC_2.34", "__pthread_create_2_1"));
	ASSERT(!asp_dwsym_prefer("__pthread_create_2_1", "pthread_create@@GLIBC_2.34"));
	ASSERT(asp_dwsym_prefer("foo@GLIBC_2.4.2", "foobar"));
	ASSERT(asp_dwsym_prefer("memcpy@GLIBC_2.2.5", "memcpy"));
	ASSERT(asp_dwsym_prefer("_ZN3gui6WidgetIdEC1EPKc", "_ZN3gui6WidgetIdEC2EPKc"));
	ASSERT(asp_dwsym_prefer("_ZN3gui6WidgetIdED1Ev", "_ZN3gui6WidgetIdED2Ev"));
	ASSERT(asp_dwsym_prefer("PMPI_Send", "MPI_Send"));
	ASSERT(!asp_dwsym_prefer("MPI_Send", "PMPI_Send"));
	ASSERT(asp_dwsym_prefer("x", ""));
	ASSERT(!asp_dwsym_prefer("  ", "longer_name"));
}

TEST(choose_among_overlapping_symbols)
{
	asp_dwcand_t c[] = {
		{ 0x100, 0x40, "outer_long_name" },
		{ 0x100, 0x20, "_ZN1AC2Ev" },
		{ 0x100, 0x20, "_ZN1AC1Ev" },
		{ 0x200, 0x10, "calloc@GLIBC_2.2.5" },
		{ 0x200, 0x10, "__libc_calloc" },
	};
	uint64_t start = 0;
	asp_dwsym_sort(c, 5);
	/* the shorter range at one start, then the preferred name */
	ASSERT(strcmp(asp_dwsym_choose(c, 5, 0x110, &start), "_ZN1AC1Ev") == 0);
	ASSERT_EQ(start, 0x100);
	/* past the shorter range: the longer one */
	ASSERT(strcmp(asp_dwsym_choose(c, 5, 0x130, &start), "outer_long_name") == 0);
	ASSERT(strcmp(asp_dwsym_choose(c, 5, 0x205, &start), "calloc@GLIBC_2.2.5") == 0);
	ASSERT(asp_dwsym_choose(c, 5, 0x150, &start) == NULL);
	ASSERT(asp_dwsym_choose(c, 5, 0x50, &start) == NULL);
}

int main(void)
{
	static const struct unit_test tests[] = {
		UNIT(misspelled_variable_names_its_close_match),
		UNIT(valid_names_give_no_warning),
		UNIT(prefer_valgrind_rules),
		UNIT(choose_among_overlapping_symbols),
	};
	return unit_run(tests, sizeof tests / sizeof tests[0]);
}
