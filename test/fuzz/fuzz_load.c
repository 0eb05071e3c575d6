/* fuzz_load - a libFuzzer target: the dump loader on any input, then every
 * report of what it accepts (built by test/fuzz/run.sh). */
#include <stdint.h>
#include <stdio.h>

#include "compare.h"
#include "errors.h"
#include "fmt.h"
#include "leaks.h"
#include "load.h"
#include "summary.h"

/* Writes j where the reports go, and frees it. */
static void put(FILE *out, json_t *j)
{
	if (j)
		asp_json_print(out, j);
	json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *out;
	char err[ASP_ERR_MAX];
	asp_dump_t d, two[2];

	if (!out)
		out = fopen("/dev/null", "w");
	if (asp_dump_parse(&d, "fuzz.json", (const char *)data, size, err) < 0)
		return 0;
	/* Keep the symbolizer off the disk: a relative path is never opened. */
	for (size_t i = 0; i < d.nmodules; i++)
		d.modules[i].path = "fuzz.so";
	asp_summary_text(out, &d);
	put(out, asp_summary_json(&d));
	if (asp_summary_has_leak_part(&d)) {
		asp_leaks_text(out, &d, ASP_KIND_BIT(ASP_LEAK_DEFINITE) |
			       ASP_KIND_BIT(ASP_LEAK_INDIRECT) |
			       ASP_KIND_BIT(ASP_LEAK_POSSIBLE) |
			       ASP_KIND_BIT(ASP_LEAK_REACHABLE), true);
		put(out, asp_leaks_json(&d, ASP_KINDS_DEFAULT, true));
	}
	if (!asp_errors_missing(&d)) {
		asp_errors_text(out, &d, true);
		put(out, asp_errors_json(&d, true));
	}
	two[0] = d;
	two[1] = d;
	asp_compare_text(out, two, 2);
	put(out, asp_compare_json(two, 2));
	asp_dump_free(&d);
	return 0;
}
