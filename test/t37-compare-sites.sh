#!/bin/sh
# t37-compare-sites.sh - allocspy-report compare answers "what changed":
# the leak kinds side by side (equal to valgrind's LEAK SUMMARY of each
# build) and the allocation sites that changed most, matched by function
# and file:line across two builds whose addresses differ.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/prog.c" <<'SRC'
#include <stdlib.h>
#include <string.h>

static char *label(int i)
{
	char *s = malloc(32);
	s[0] = (char)i;
	return s;
}

static char *other(void)
{
	return strdup("unchanged, kept to the end");
}

static void work(int i)
{
	char *s = label(i);
#ifndef FIXED
	if (i % 2)
		return;
#endif
	free(s);
}

int main(void)
{
	static char *keep[2];
	for (int i = 0; i < 1000; i++)
		work(i);
	keep[0] = other();
#ifdef FIXED
	keep[1] = malloc(5);
#endif
	return 0;
}
SRC
cc -g -O0 -o "$TMP/leaky" "$TMP/prog.c" && cc -g -O0 -DFIXED -o "$TMP/fixed" "$TMP/prog.c" ||
	{ not_ok "the two builds compile"; exit 0; }
for p in leaky fixed; do
	(cd "$TMP" && env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$TMP/$p.json" LD_PRELOAD="$LIB" "./$p" 2>/dev/null)
	(cd "$TMP" && valgrind --log-file="$TMP/$p.vg" "./$p" >/dev/null 2>&1)
done
"$REPORT" compare "$TMP/leaky.json" "$TMP/fixed.json" >"$TMP/cmp.txt" 2>"$TMP/cmp.err"
check "compare: exit status 0, nothing on stderr" "0 " "$? $(cat "$TMP/cmp.err")"

# "definitely lost: 16,000 bytes in 500 blocks" -> "definitely lost (bytes) 16,000" ...
vg_rows() {
	sed -n 's/^==[0-9]*== *//p' "$1" | grep -E '^(definitely|indirectly|possibly) lost:|^still reachable:|^suppressed: [0-9]' |
		sed -E 's/^([a-z ]+): ([0-9,]+) bytes in ([0-9,]+) blocks$/\1 (bytes) \2\n\1 (blocks) \3/'
}
# compare's row: the name, the two dumps' values, the ratio.
cmp_rows() {
	grep -E '^(definitely|indirectly|possibly) lost|^still reachable|^suppressed' "$TMP/cmp.txt" |
		awk -v c="$1" '{ n = $1; for (i = 2; i <= NF - 3; i++) n = n " " $i; print n, $(NF - 3 + c) }'
}
check "the leak rows of the leaky build are valgrind's LEAK SUMMARY" "$(vg_rows "$TMP/leaky.vg")" "$(cmp_rows 1)"
check "the leak rows of the fixed build are valgrind's LEAK SUMMARY" "$(vg_rows "$TMP/fixed.vg")" "$(cmp_rows 2)"
check "definitely lost: the ratio says it went to zero" "definitely lost (bytes) 16,000 0 x0.00" \
	"$(grep '^definitely lost (bytes)' "$TMP/cmp.txt" | tr -s ' ')"

check "the sites section names the fixed site first, then the new one; the unchanged site is not listed" \
"Allocation sites that changed most (by function and file:line)
                           leaky   fixed  ratio
label (prog.c:6)
  calls                    1,000   1,000  x1.00
  bytes                   32,000  32,000  x1.00
  in use at exit (bytes)  16,000       0  x0.00
main (prog.c:33)
  calls                        0       1      -
  bytes                        0       5      -
  in use at exit (bytes)       0       5      -" "$(sed -n '/^Allocation sites/,$p' "$TMP/cmp.txt")"

"$REPORT" compare --json "$TMP/leaky.json" "$TMP/fixed.json" >"$TMP/cmp.json"
check "--json: sites with values and ratios, the fixed one first" \
	"label (prog.c:6) [16000, 0] [0.0] [1000, 1000]; main (prog.c:33)" \
	"$(json_get "$TMP/cmp.json" '"%s %s %s %s; %s" % (d["sites"][0]["site"], d["sites"][0]["values"]["in_use_bytes"], d["sites"][0]["ratios"]["in_use_bytes"], d["sites"][0]["values"]["calls"], d["sites"][1]["site"])')"
check "--json: the leak rows" "[16000, 0] [500, 0] [27, 32]" \
	"$(json_get "$TMP/cmp.json" '" ".join(str(r["values"]) for r in d["rows"] if r["name"] in ("definitely lost (bytes)", "definitely lost (blocks)", "still reachable (bytes)"))')"

# A dump without backtraces has no sites: the section is left out.
(cd "$TMP" && env ALLOCSPY_BACKTRACE=0 ALLOCSPY_OUTPUT="$TMP/bt0.json" LD_PRELOAD="$LIB" ./fixed 2>/dev/null)
"$REPORT" compare "$TMP/bt0.json" "$TMP/bt0.json" >"$TMP/cmp0.txt"
check "no stacks: no sites section" "" "$(grep 'Allocation sites' "$TMP/cmp0.txt")"
