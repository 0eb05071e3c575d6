#!/bin/sh
# t39-budgets.sh - memory in CI: allocspy-report check with every budget,
# whole-program and per function, compare --fail-if on a regressed and an
# improved build, bad budgets and expressions, and allocspy.h's in-program
# figures (asp_heap_figures) with and without the shim, PIE and non-PIE.
. "$(dirname "$0")/lib.sh"

# A program of known figures, built three ways: the base, a build that
# holds and leaks more (more), and one that holds less and leaks nothing
# (less). parse_header allocates 10 blocks of 1,000 bytes at depth 0; main
# calls it at depth 0 and at depth 1, so one stack passes through it twice.
cat >"$TMP/budgets.c" <<'SRC'
#include <stdlib.h>
#include <string.h>

#ifndef TABLE
#define TABLE 50
#endif

static void *table[200];
static char *kept;
static void *lost;

static void parse_header(int depth)
{
	if (depth > 0) {
		parse_header(depth - 1);
		return;
	}
	for (int i = 0; i < 10; i++) {
		char *h = malloc(1000);
		h[0] = 1;
		free(h);
	}
}

static void build_table(void)
{
	for (int i = 0; i < TABLE; i++)
		table[i] = malloc(4096);
}

static void drop_table(void)
{
	for (int i = 0; i < TABLE; i++)
		free(table[i]);
}

static void keep_name(void)
{
	kept = strdup("a name kept to the end");
}

static void make_leak(void)
{
#ifdef LEAK
	lost = malloc(LEAK);
	lost = NULL;
#endif
}

int main(void)
{
	parse_header(0);
	parse_header(1);
	build_table();
	drop_table();
	keep_name();
	make_leak();
	return kept[0] == 'a' ? 0 : 1;
}
SRC
cc -O0 -g -o "$TMP/base" "$TMP/budgets.c" -DLEAK=300 &&
	cc -O0 -g -o "$TMP/more" "$TMP/budgets.c" -DTABLE=60 -DLEAK=400 &&
	cc -O0 -g -o "$TMP/less" "$TMP/budgets.c" -DTABLE=40 ||
	{ not_ok "the three builds compile"; exit 0; }
# run NAME PROG ENV...: PROG under the shim; its dump is $TMP/NAME.json.
run() {
	rn=$1 rp=$2; shift 2
	(cd "$TMP" && env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/$rn.json" "$@" LD_PRELOAD="$LIB" "$rp")
}
for p in base more less; do
	run "$p" "./$p" ALLOCSPY_BACKTRACE=16
done
run bt1 ./base
run count ./base ALLOCSPY_MODE=count
check "the dumps: the base's figures, as the program makes them" \
	"72 70 225123 323 204800 300 | 82 400 | 61 0" \
	"$(json_get "$TMP/base.json" '"%d %d %d %d %d %d" % tuple([d["heap"][k] for k in ("allocs", "frees", "bytes_allocated", "in_use_bytes", "peak_bytes")] + [d["leaks"]["definitely_lost"]["bytes"]])') | $(json_get "$TMP/more.json" '"%d %d" % (d["heap"]["allocs"], d["leaks"]["definitely_lost"]["bytes"])') | $(json_get "$TMP/less.json" '"%d %d" % (d["heap"]["allocs"], d["leaks"]["definitely_lost"]["bytes"])')"

# chk ARGS...: allocspy-report check; stdout, stderr and the status in
# $TMP/c.out, c.err, c.rc.
chk() {
	"$REPORT" check "$@" >"$TMP/c.out" 2>"$TMP/c.err"
	echo $? >"$TMP/c.rc"
}
# result: stdout, stderr, then "status N".
result() {
	cat "$TMP/c.out" "$TMP/c.err"
	echo "status $(cat "$TMP/c.rc")"
}

# --- check: each budget, whole program -----------------------------------------
chk --max-peak=200K --max-in-use=323 --max-leaked=300 --max-allocs=72 --max-bytes=225123 \
	--max-errors=0 "$TMP/base.json"
check "check: every budget met, at its figure exactly: no output, status 0" "status 0" "$(result)"

chk --max-peak=199K "$TMP/base.json"
check "check --max-peak: over, with the stack that held the peak" \
"--max-peak=199K: 204,800 bytes held at the peak, over the budget of 203,776; top stack: 204,800 bytes at build_table (budgets.c:28) < main (budgets.c:54)
status 1" "$(result)"
chk --max-in-use=322 "$TMP/base.json"
check "check --max-in-use: over, with the stack that holds most" \
"--max-in-use=322: 323 bytes in use, over the budget of 322; top stack: 300 bytes at make_leak (budgets.c:45) < main (budgets.c:57)
status 1" "$(result)"
chk --max-leaked=299 "$TMP/base.json"
check "check --max-leaked: definitely and indirectly lost, over" \
"--max-leaked=299: 300 bytes leaked, over the budget of 299; top stack: 300 bytes at make_leak (budgets.c:45) < main (budgets.c:57)
status 1" "$(result)"
chk --max-allocs=71 "$TMP/base.json"
check "check --max-allocs: over" \
"--max-allocs=71: 72 allocs, over the budget of 71; top stack: 50 allocs at build_table (budgets.c:28) < main (budgets.c:54)
status 1" "$(result)"
chk --max-bytes=219K "$TMP/base.json"
check "check --max-bytes: over" \
"--max-bytes=219K: 225,123 bytes allocated, over the budget of 224,256; top stack: 204,800 bytes at build_table (budgets.c:28) < main (budgets.c:54)
status 1" "$(result)"
chk --max-allocs=71 --max-peak=1M --max-leaked=0 "$TMP/base.json"
check "check: one line per budget exceeded, in the order given" \
"--max-allocs=71: 72 allocs, over the budget of 71; top stack: 50 allocs at build_table (budgets.c:28) < main (budgets.c:54)
--max-leaked=0: 300 bytes leaked, over the budget of 0; top stack: 300 bytes at make_leak (budgets.c:45) < main (budgets.c:57)
status 1" "$(result)"
chk --max-peak 1M --max-leaked 1K "$TMP/less.json"
check "check: a budget's value as the next word; a dump that leaks nothing is within --max-leaked" \
	"status 0" "$(result)"

# --max-errors: the errors of the dump's heap error contexts (liballocspy(7),
# "errors"); a malformed context is a bad dump.
python3 - "$TMP/base.json" "$TMP/errors.json" "$TMP/baderr.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["errors"] = [
    {"kind": "invalid_free", "count": 2, "function": "free", "stack": 0, "address": 4096,
     "where": "unknown"},
    {"kind": "mismatched_free", "count": 1, "function": "delete", "stack": 0, "address": 80000,
     "where": "block", "block": {"address": 80000, "offset": 0, "size": 8, "function": "malloc",
                                 "alloc_stack": 1}}]
d["error_summary"] = {"errors": 3, "contexts": 2, "suppressed": 0, "suppressed_contexts": 0}
json.dump(d, open(sys.argv[2], "w"))
d["errors"][0]["count"] = 0
json.dump(d, open(sys.argv[3], "w"))
PY
chk --max-errors=2 "$TMP/errors.json"
check "check --max-errors: the counts of the error contexts (2 + 1), over" \
"--max-errors=2: 3 errors, over the budget of 2
status 1" "$(result)"
chk --max-errors=3 "$TMP/errors.json"
check "check --max-errors: at the count, within" "status 0" "$(result)"
chk --max-errors=0 "$TMP/baderr.json"
check "check --max-errors: a malformed error context is a bad dump" \
"allocspy-report: error: $TMP/baderr.json: errors[0].count: 0 is out of range (at least 1)
status 2" "$(result)"

# The default backtrace, the caller alone: the peak's stack from the peak
# snapshot, those in use and leaked from the loss records; no per-stack
# totals, so no stack for the allocations.
chk --max-peak=100K --max-in-use=0 --max-allocs=10 "$TMP/bt1.json"
check "check, ALLOCSPY_BACKTRACE=1: the callers, from the peak snapshot and the loss records" \
"--max-peak=100K: 204,800 bytes held at the peak, over the budget of 102,400; top stack: 204,800 bytes at build_table (budgets.c:28)
--max-in-use=0: 323 bytes in use, over the budget of 0; top stack: 300 bytes at make_leak (budgets.c:45)
--max-allocs=10: 72 allocs, over the budget of 10
status 1" "$(result)"

# Count mode keeps no sizes of freed blocks and runs no leak check.
chk --max-allocs=72 --max-bytes=225123 "$TMP/count.json"
check "check, count mode: allocs and bytes are known" "status 0" "$(result)"
chk --max-allocs=1 --max-peak=1M "$TMP/count.json"
check "check, count mode: a peak budget cannot be answered (status 2, nothing on stdout)" \
"allocspy-report: error: $TMP/count.json: --max-peak=1M: the peak is unknown in count mode (ALLOCSPY_MODE=count keeps no sizes of freed blocks)
status 2" "$(result)"
chk --max-leaked=0 "$TMP/count.json"
check "check, count mode: no leak check" \
"allocspy-report: error: $TMP/count.json: --max-leaked=0: the bytes leaked are unknown: no leak check in this dump (ALLOCSPY_MODE=count runs none)
status 2" "$(result)"

# --- check: budgets per function -----------------------------------------------
chk --max-bytes=parse_header:20000 --max-allocs=parse_header:20 "$TMP/base.json"
check "check per function: parse_header's two stacks, 20,000 bytes in 20 blocks, each stack once" \
	"status 0" "$(result)"
chk --max-bytes=parse_header:19999 "$TMP/base.json"
check "check per function: over by one byte; the stack through it twice counts once" \
"--max-bytes=parse_header:19999: 20,000 bytes allocated from stacks through parse_header, over the budget of 19,999; top stack: 10,000 bytes at parse_header (budgets.c:19) < parse_header (budgets.c:15) < main (budgets.c:53)
status 1" "$(result)"
chk --max-allocs=parse_header:19 --max-peak=build_table:199K --max-in-use=make_leak:299 \
	--max-leaked=make_leak:299 --max-bytes=main:219K "$TMP/base.json"
check "check per function: allocs, peak, in use, leaked, and main (every stack)" \
"--max-allocs=parse_header:19: 20 allocs from stacks through parse_header, over the budget of 19; top stack: 10 allocs at parse_header (budgets.c:19) < parse_header (budgets.c:15) < main (budgets.c:53)
--max-peak=build_table:199K: 204,800 bytes held at the peak from stacks through build_table, over the budget of 203,776; top stack: 204,800 bytes at build_table (budgets.c:28) < main (budgets.c:54)
--max-in-use=make_leak:299: 300 bytes in use from stacks through make_leak, over the budget of 299; top stack: 300 bytes at make_leak (budgets.c:45) < main (budgets.c:57)
--max-leaked=make_leak:299: 300 bytes leaked from stacks through make_leak, over the budget of 299; top stack: 300 bytes at make_leak (budgets.c:45) < main (budgets.c:57)
--max-bytes=main:219K: 225,123 bytes allocated from stacks through main, over the budget of 224,256; top stack: 204,800 bytes at build_table (budgets.c:28) < main (budgets.c:54)
status 1" "$(result)"
chk --max-in-use=build_table:0 --max-leaked=keep_name:0 "$TMP/base.json"
check "check per function: nothing of build_table in use, nothing of keep_name lost" "status 0" "$(result)"
chk --max-bytes=parse_headr:0 "$TMP/base.json"
check "check per function: a function no stack passes through is 0, with a note" \
"allocspy-report: note: $TMP/base.json: --max-bytes=parse_headr:0: no stack of the dump passes through parse_headr, so its figure is 0
status 0" "$(result)"
chk --max-bytes=parse_header:1 "$TMP/bt1.json"
check "check per function: no per-stack totals without stacks (status 2)" \
"allocspy-report: error: $TMP/bt1.json: --max-bytes=parse_header:1: the dump has no per-stack totals (they come with ALLOCSPY_BACKTRACE of 2 or more)
status 2" "$(result)"
chk --max-leaked=make_leak:300 --max-in-use=keep_name:23 "$TMP/bt1.json"
check "check per function, caller-only stacks: the loss records still answer" "status 0" "$(result)"

# C++: a function named without its parameters (the last colon ends the
# name), with them, or by its symbol.
cat >"$TMP/names.cc" <<'SRC'
namespace ns {
struct Parser {
	static void parse(int n)
	{
		for (int i = 0; i < n; i++)
			delete[] new char[100];
	}
	void parse(const char *s) const
	{
		for (int i = 0; s[i]; i++)
			delete new int(i);
	}
};
}

int main()
{
	ns::Parser p;
	ns::Parser::parse(7);
	p.parse("abc");
	return 0;
}
SRC
if g++ -O0 -g -o "$TMP/names" "$TMP/names.cc"; then
	run names ./names ALLOCSPY_BACKTRACE=16
	chk --max-bytes=ns::Parser::parse:711 --max-bytes='ns::Parser::parse(int):699' \
		--max-bytes='ns::Parser::parse(char const*) const:11' --max-bytes=_ZN2ns6Parser5parseEi:700 \
		"$TMP/names.json"
	check "check per function, C++: both overloads by name, one by its signature, one by its symbol" \
"--max-bytes=ns::Parser::parse:711: 712 bytes allocated from stacks through ns::Parser::parse, over the budget of 711; top stack: 700 bytes at ns::Parser::parse(int) (names.cc:6) < main (names.cc:19)
--max-bytes=ns::Parser::parse(int):699: 700 bytes allocated from stacks through ns::Parser::parse(int), over the budget of 699; top stack: 700 bytes at ns::Parser::parse(int) (names.cc:6) < main (names.cc:19)
--max-bytes=ns::Parser::parse(char const*) const:11: 12 bytes allocated from stacks through ns::Parser::parse(char const*) const, over the budget of 11; top stack: 12 bytes at ns::Parser::parse(char const*) const (names.cc:11) < main (names.cc:20)
status 1" "$(result)"
else
	not_ok "names.cc compiles"
fi

# --- check: --json ----------------------------------------------------------------
"$REPORT" --json check --max-peak=1M --max-bytes=parse_header:19999 "$TMP/base.json" >"$TMP/c.json"
echo $? >"$TMP/c.rc"
check "check --json: every budget with its figure; status 1" \
"1 1 [('--max-peak=1M', 'peak', None, 1048576, 204800, False), ('--max-bytes=parse_header:19999', 'bytes', 'parse_header', 19999, 20000, True)] 10000 ['parse_header', 'parse_header', 'main'] 19 status 1" \
	"$(json_get "$TMP/c.json" '"%s %s %s %s %s %s" % (d["exceeded"], len([b for b in d["budgets"] if b["exceeded"]]), [(b["option"], b["metric"], b["function"], b["budget"], b["value"], b["exceeded"]) for b in d["budgets"]], d["budgets"][1]["top_stack"]["value"], [f["function"] for f in d["budgets"][1]["top_stack"]["frames"]], d["budgets"][1]["top_stack"]["frames"][0]["line"])') status $(cat "$TMP/c.rc")"

# --- check: usage and sizes -----------------------------------------------------------
for s in "1 1" "1K 1024" "1KiB 1024" "2M 2097152" "2MiB 2097152" "3G 3221225472" "3GiB 3221225472"; do
	set -- $s
	"$REPORT" --json check --max-bytes="$1" "$TMP/base.json" >"$TMP/c.json" 2>/dev/null
	check "check: --max-bytes=$1 is $2 bytes" "$2" "$(json_get "$TMP/c.json" 'd["budgets"][0]["budget"]')"
done
# bad MESSAGE ARGS...: a usage error: status 2, the message and the hint.
bad() {
	bm=$1; shift
	"$REPORT" "$@" >"$TMP/b.out" 2>"$TMP/b.err"
	rc=$?
	check "usage: $(printf '%s' "$*" | sed "s|$TMP/||g")" "allocspy-report: error: $bm
Try 'allocspy-report --help'.
status 2" "$(cat "$TMP/b.out" "$TMP/b.err"; echo "status $rc")"
}
B=$TMP/base.json
bad "check needs a budget: --max-peak, --max-in-use, --max-leaked, --max-allocs, --max-bytes or --max-errors" check "$B"
bad "--max-peak=1.5M: bad size '1.5M': bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), at most 2^63 - 1" check --max-peak=1.5M "$B"
bad "--max-peak=1T: bad size '1T': bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), at most 2^63 - 1" check --max-peak=1T "$B"
bad "--max-peak=-1: bad size '-1': bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), at most 2^63 - 1" check --max-peak=-1 "$B"
bad "--max-peak=9999999999G: bad size '9999999999G': bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), at most 2^63 - 1" check --max-peak=9999999999G "$B"
bad "--max-in-use=: bad size '': bytes, or with K, M or G for KiB, MiB or GiB (64K, 1M), at most 2^63 - 1" check --max-in-use= "$B"
bad "--max-allocs=1K: bad count '1K': a whole number, at most 2^63 - 1" check --max-allocs=1K "$B"
bad "--max-errors=f:1: --max-errors takes no function, only a count" check --max-errors=f:1 "$B"
bad "--max-bytes=:1M: no function before the ':'" check --max-bytes=:1M "$B"
bad "--max-peak needs a value" check "$B" --max-peak
bad "--max-peak=1M is an option of the check command" summary --max-peak=1M "$B"
bad "one dump only" check --max-peak=1M "$B" "$B"
bad "--fail-if is an option of the compare command" check --max-peak=1M '--fail-if=peak>+1%' "$B"
"$REPORT" check --max-peak=1M "$TMP/missing.json" >/dev/null 2>"$TMP/b.err"
check "check: a missing dump, status 2" "2 1" "$? $(wc -l <"$TMP/b.err")"

# --- compare --fail-if ------------------------------------------------------------------
# cmpf EXPR DUMPS...: the regression lines (after the table) and the status.
cmpf() {
	ce=$1; shift
	"$REPORT" compare --fail-if="$ce" "$@" >"$TMP/f.out" 2>"$TMP/f.err"
	cr=$?
	grep '^regression' "$TMP/f.out"
	cat "$TMP/f.err"
	echo "status $cr"
}
EXPR='peak>+5%,allocs>+10%,in_use>+0,leaked>+0,bytes>+1M'
check "compare --fail-if: the regressed build, one line each, status 1" \
"regression: $TMP/more.json: peak 204,800 -> 245,760 bytes (+40,960, +20.0%), over peak>+5%
regression: $TMP/more.json: allocs 72 -> 82 (+10, +13.9%), over allocs>+10%
regression: $TMP/more.json: in_use 323 -> 423 bytes (+100, +31.0%), over in_use>+0
regression: $TMP/more.json: leaked 300 -> 400 bytes (+100, +33.3%), over leaked>+0
status 1" "$(cmpf "$EXPR" "$TMP/base.json" "$TMP/more.json")"
"$REPORT" compare "$TMP/base.json" "$TMP/more.json" >"$TMP/plain.out"
check "compare --fail-if: the table as without it, then an empty line and the regressions" \
	"$(cat "$TMP/plain.out")|" \
	"$(head -n "$(wc -l <"$TMP/plain.out")" "$TMP/f.out")|$(sed -n "$(($(wc -l <"$TMP/plain.out") + 1))p" "$TMP/f.out")"
check "compare --fail-if: the improved build, no regression, status 0" "status 0" \
	"$(cmpf "$EXPR" "$TMP/base.json" "$TMP/less.json")"
check "compare --fail-if: each later dump against the first (less, then more)" \
"regression: $TMP/more.json: peak 204,800 -> 245,760 bytes (+40,960, +20.0%), over peak>+5%
regression: $TMP/more.json: in_use 323 -> 423 bytes (+100, +31.0%), over in_use > +0
status 1" "$(cmpf 'peak>+5%, in_use > +0' "$TMP/base.json" "$TMP/less.json" "$TMP/more.json")"
check "compare --fail-if: from the improved build, both later builds rose" \
"regression: $TMP/base.json: leaked 0 -> 300 bytes (+300, from 0), over leaked>+0%
regression: $TMP/more.json: leaked 0 -> 400 bytes (+400, from 0), over leaked>+0%
status 1" "$(cmpf 'leaked>+0%' "$TMP/less.json" "$TMP/base.json" "$TMP/more.json")"
# A rise equal to the threshold is not beyond it.
check "compare --fail-if: a rise of exactly the threshold passes" "status 0" \
	"$(cmpf 'allocs>+10,peak>+20%,bytes>+41060,frees>+10,strdup_calls>+0,strdup_bytes>+0,ref_ops>+0,errors>+0' "$TMP/base.json" "$TMP/more.json")"
check "compare --fail-if: one more and it fails" \
"regression: $TMP/more.json: allocs 72 -> 82 (+10, +13.9%), over allocs>+9
regression: $TMP/more.json: peak 204,800 -> 245,760 bytes (+40,960, +20.0%), over peak>+19.9%
regression: $TMP/more.json: bytes 225,123 -> 266,183 bytes (+41,060, +18.2%), over bytes>+40K
status 1" "$(cmpf 'allocs>+9,peak>+19.9%,bytes>+40K' "$TMP/base.json" "$TMP/more.json")"
check "compare --fail-if: times in seconds, a threshold no run reaches" "status 0" \
	"$(cmpf 'time>+1000,user_time>+1000,sys_time>+1000' "$TMP/base.json" "$TMP/more.json")"
check "compare --fail-if: a figure a dump does not know (count mode's peak) is an error" \
"allocspy-report: error: $TMP/count.json: --fail-if peak>+5%: the peak is unknown in count mode (ALLOCSPY_MODE=count keeps no sizes of freed blocks)
status 2" "$(cmpf 'peak>+5%' "$TMP/base.json" "$TMP/count.json")"
"$REPORT" --json compare --fail-if='allocs>+10%,peak>+50%' "$TMP/base.json" "$TMP/more.json" >"$TMP/f.json"
echo $? >"$TMP/f.rc"
check "compare --fail-if --json: the terms and the regression, status 1" \
	"['allocs>+10%', 'peak>+50%'] [('allocs', 1, 72, 82)] 13.9 status 1" \
	"$(json_get "$TMP/f.json" '"%s %s %.1f" % ([t["term"] for t in d["fail_if"]["terms"]], [(r["metric"], r["dump"], r["first"], r["value"]) for r in d["fail_if"]["regressions"]], d["fail_if"]["regressions"][0]["percent"])') status $(cat "$TMP/f.rc")"

METRICS="metrics: allocs, frees, bytes, in_use, peak, leaked, errors, strdup_calls, strdup_bytes, ref_ops, time, user_time, sys_time"
for e in "peek>+5%|'peek>+5%': unknown metric 'peek'" \
	"peak>5%|'peak>5%': the threshold needs a '+' (a rise over the first dump): peak>+5%" \
	"peak>-5%|'peak>-5%': only a rise fails: a threshold is +N or +N%" \
	"peak|'peak': expected METRIC>+THRESHOLD, as in peak>+5%" \
	"peak>+5x|'peak>+5x': bad threshold '+5x': a percentage (+5%) or bytes (+1000, +64K, +1M, +1G)" \
	"allocs>+1K|'allocs>+1K': bad threshold '+1K': a percentage (+5%) or a count (+1000)" \
	"time>+1M|'time>+1M': bad threshold '+1M': a percentage (+5%) or seconds (+0.5)" \
	"peak>+%|'peak>+%': bad threshold '+%': a percentage (+5%) or bytes (+1000, +64K, +1M, +1G)" \
	"peak>+5%,,allocs>+1|'peak>+5%,,allocs>+1': an empty term (terms are separated by commas)"; do
	bad "--fail-if: ${e#*|}; $METRICS" compare "--fail-if=${e%%|*}" "$B" "$B"
done

# --- allocspy.h: asp_heap_figures ---------------------------------------------------------
FIG_TRACK="mode: track
a call: thread +0 allocs +0 frees +0 bytes, in use +0 blocks +0 bytes
a call: process +0 allocs +0 frees +0 bytes, in use +0 blocks +0 bytes
malloc, calloc, strdup: thread +3 allocs +0 frees +311 bytes, in use +3 blocks +311 bytes
malloc, calloc, strdup: process +3 allocs +0 frees +311 bytes, in use +3 blocks +311 bytes
realloc 100 -> 1000: thread +1 allocs +1 frees +1000 bytes, in use +0 blocks +900 bytes
free x3, free(NULL): thread +0 allocs +3 frees +0 bytes, in use -3 blocks -1211 bytes
free x3, free(NULL): process +0 allocs +3 frees +0 bytes, in use -3 blocks -1211 bytes
malloc(1 MiB), free: the peak is what was in use with it, and stays
worker: 5 x malloc(64), frees 2 of main's: its thread +5 allocs +2 frees +320 bytes, in use +3 blocks +256 bytes
worker: 5 x malloc(64), frees 2 of main's: main thread +0 allocs +0 frees +0 bytes, in use +0 blocks +0 bytes
worker: 5 x malloc(64), frees 2 of main's: process +5 allocs +2 frees +320 bytes, in use +3 blocks +256 bytes
all as expected
status 0"
FIG_COUNT=$(printf '%s\n' "$FIG_TRACK" | sed -e 's/^mode: track$/mode: count (no bytes in use, no peak)/' \
	-e 's/ [-+][0-9]* bytes$/ ? bytes/' -e '/^malloc(1 MiB)/d')
# fig NAME PROG ENV...: PROG's stdout and stderr, then its status.
fig() {
	fn=$1 fp=$2; shift 2
	env "$@" "$fp" >"$TMP/$fn.out" 2>"$TMP/$fn.err"
	echo "status $?" >>"$TMP/$fn.out"
	cat "$TMP/$fn.out" "$TMP/$fn.err"
}
check "asp_figures without the shim: unavailable, -1, the structures untouched (status 0)" \
	"asp_heap_figures: -1 (unavailable: yes)
status 0" "$(fig none "$PROGS/asp_figures")"
check "asp_figures under the shim, track mode: every difference exact" "$FIG_TRACK" \
	"$(fig track "$PROGS/asp_figures" ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB")"
check "asp_figures under the shim, count mode: the counts exact, no bytes in use, no peak" "$FIG_COUNT" \
	"$(fig count "$PROGS/asp_figures" ALLOCSPY_MODE=count ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB")"
check "asp_figures under the shim with 16-frame stacks: the same" "$FIG_TRACK" \
	"$(fig bt16 "$PROGS/asp_figures" ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB")"
# Built here without any link flag, PIE and not, and optimized.
for how in "-no-pie -O0" "-pie -fPIE -O2"; do
	# shellcheck disable=SC2086
	if cc $how -D_GNU_SOURCE -pthread -I"$TOP/include" -o "$TMP/figs" "$TOP/test/progs/asp_figures.c" \
		2>"$TMP/cc.err"; then
		check "asp_figures built $how, no link flag: unavailable without the shim" \
			"asp_heap_figures: -1 (unavailable: yes)
status 0" "$(fig none2 "$TMP/figs")"
		check "asp_figures built $how: exact under the shim" "$FIG_TRACK" \
			"$(fig track2 "$TMP/figs" ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB")"
	else
		not_ok "asp_figures builds $how" "$(cat "$TMP/cc.err")"
	fi
done
check "asp_figures built -no-pie is not position-independent" "EXEC" \
	"$(cc -no-pie -D_GNU_SOURCE -pthread -I"$TOP/include" -o "$TMP/figs" "$TOP/test/progs/asp_figures.c" &&
		readelf -h "$TMP/figs" | sed -n 's/^ *Type: *\([A-Z]*\).*/\1/p')"

# From any thread, while others allocate and exit, and from a signal
# handler: 8 threads of 20,000 malloc and free pairs, 50 times over, while
# another thread reads the figures without a pause. No read shows more
# frees than allocations or fewer than 0 blocks in use, each worker's own
# figures are its 20,000 pairs exactly, and the process's grow by them.
cat >"$TMP/busy.c" <<'SRC'
#include <allocspy.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int stop;
static volatile int in_handler;
static int exact, odd;
static long reads;
static void *volatile sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *churn(void *arg)
{
	asp_heap_figures_t a, b;

	(void)arg;
	asp_heap_figures(NULL, &a);
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(16 + i % 100);
		sink = p;
		free(p);
	}
	asp_heap_figures(NULL, &b);
	pthread_mutex_lock(&mu);
	exact += b.allocs - a.allocs == 20000 && b.frees - a.frees == 20000 &&
		 b.in_use_bytes == a.in_use_bytes;
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *reader(void *arg)
{
	asp_heap_figures_t p, t;

	(void)arg;
	while (!stop) {
		asp_heap_figures(&p, &t);
		odd += p.frees > p.allocs || p.in_use_blocks < 0 || p.peak_bytes < p.in_use_bytes;
		reads++;
	}
	return NULL;
}

static void on_signal(int sig)
{
	asp_heap_figures_t p;

	(void)sig;
	in_handler += asp_heap_figures(&p, NULL) == 0 && p.allocs > 0;
}

int main(void)
{
	asp_heap_figures_t p0, p1;
	pthread_t r, t[8];

	if (asp_heap_figures(&p0, NULL) != 0)
		return 2;
	signal(SIGUSR1, on_signal);
	pthread_create(&r, NULL, reader, NULL);
	for (int round = 0; round < 50; round++) {
		for (int i = 0; i < 8; i++)
			pthread_create(&t[i], NULL, churn, NULL);
		raise(SIGUSR1);
		for (int i = 0; i < 8; i++)
			pthread_join(t[i], NULL);
	}
	stop = 1;
	pthread_join(r, NULL);
	asp_heap_figures(&p1, NULL);
	printf("workers exact: %d of 400; inconsistent reads: %d (%s); in the handler: %d of 50; "
	       "the process: %s\n", exact, odd, reads > 0 ? "read" : "never read", in_handler,
	       p1.allocs - p0.allocs >= 8000000 && p1.frees - p0.frees >= 8000000 &&
	       p1.allocs - p0.allocs - (p1.frees - p0.frees) < 100 ? "8,000,000 pairs more" : "wrong");
	return 0;
}
SRC
if cc -O2 -pthread -I"$TOP/include" -o "$TMP/busy" "$TMP/busy.c" 2>"$TMP/cc.err"; then
	for mode in track count; do
		check "asp_heap_figures from a busy reader thread and a signal handler, $mode mode" \
			"workers exact: 400 of 400; inconsistent reads: 0 (read); in the handler: 50 of 50; the process: 8,000,000 pairs more
status 0" "$(env ALLOCSPY_MODE=$mode ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/busy"; echo "status $?")"
	done
else
	not_ok "busy.c compiles" "$(cat "$TMP/cc.err")"
fi

# The shim must be the program's allocator: loaded with dlopen (even
# RTLD_GLOBAL), or preloaded after another allocator, it sees none of the
# program's calls, and the figures are unavailable.
cat >"$TMP/dlo.c" <<'SRC'
#include <allocspy.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void *volatile sink;

int main(int argc, char **argv)
{
	asp_heap_figures_t a, b;
	int rc, rc2;

	if (argc > 1 && !dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL))
		return 2;
	rc = asp_heap_figures(&a, NULL);
	sink = malloc(100);
	free(sink);
	rc2 = asp_heap_figures(&b, NULL);
	printf("%d %d +%llu\n", rc, rc2, rc ? 0ULL : (unsigned long long)(b.allocs - a.allocs));
	return 0;
}
SRC
if cc -O0 -I"$TOP/include" -o "$TMP/dlo" "$TMP/dlo.c" 2>"$TMP/cc.err"; then
	check "asp_heap_figures: a shim loaded by dlopen(RTLD_GLOBAL) answers -1" "-1 -1 +0" \
		"$(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none "$TMP/dlo" "$LIB")"
	check "asp_heap_figures: the same program with the shim preloaded: one block" "0 0 +1" \
		"$(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/dlo" "$LIB")"
	JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
	if [ -f "$JE" ]; then
		check "asp_heap_figures: the shim preloaded after jemalloc answers -1, before it one block" \
			"-1 -1 +0 | 0 0 +1" \
			"$(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$JE:$LIB" "$TMP/dlo") | $(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB:$JE" "$TMP/dlo")"
	else
		ok "asp_heap_figures: the shim preloaded after jemalloc answers -1 # SKIP no $JE"
	fi
else
	not_ok "dlo.c compiles" "$(cat "$TMP/cc.err")"
fi

# The header in strict C11 and in C++, no link flag: one block and its
# bytes, or -1 without the shim.
cat >"$TMP/strict.c" <<'SRC'
#include <allocspy.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	asp_heap_figures_t a, b;
	void *p;

	if (asp_heap_figures(&a, NULL) != 0) {
		printf("%d\n", asp_heap_figures(NULL, &b));
		return 0;
	}
	p = malloc(40);
	asp_heap_figures(&b, NULL);
	free(p);
	printf("%llu %llu\n", (unsigned long long)(b.allocs - a.allocs),
	       (unsigned long long)(b.bytes - a.bytes));
	return 0;
}
SRC
cp "$TMP/strict.c" "$TMP/strict.cc"
sed -i 's/void \*p;/int *p;/; s/p = malloc(40);/p = new int[10];/; s/free(p);/delete[] p;/' "$TMP/strict.cc"
if cc -std=c11 -pedantic -Wall -Wextra -Werror -I"$TOP/include" -o "$TMP/strict" "$TMP/strict.c" 2>"$TMP/cc.err" &&
	g++ -std=c++11 -pedantic -Wall -Wextra -Werror -I"$TOP/include" -o "$TMP/strictxx" "$TMP/strict.cc" 2>>"$TMP/cc.err"; then
	check "allocspy.h in C11 -pedantic and C++11: -1 without the shim" "-1 -1" \
		"$("$TMP/strict") $("$TMP/strictxx")"
	check "allocspy.h in C11 -pedantic and C++11: malloc(40) and new int[10] under the shim" "1 40 | 1 40" \
		"$(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/strict") | $(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/strictxx")"
else
	not_ok "allocspy.h compiles in C11 -pedantic and C++11 with -Werror" "$(cat "$TMP/cc.err")"
fi

# allocspy.h(3)'s example of the figures (its second example) builds and
# passes under the shim, and says unavailable without it.
awk '/^\.Sh EXAMPLES/ { e = 1 } e && /^\.Bd -literal/ { n++; if (n == 3) { f = 1; next } } f && /^\.Ed/ { exit } f' \
	"$TOP/man/allocspy.h.3" | sed 's/\\e/\\/g' >"$TMP/example.c"
if cc -std=c11 -Wall -Wextra -Werror -I"$TOP/include" -o "$TMP/example" "$TMP/example.c" 2>"$TMP/cc.err"; then
	check "allocspy.h(3): the figures example passes under the shim" "status 0" \
		"$(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/example"; echo "status $?")"
	check "allocspy.h(3): the figures example without the shim" "figures unavailable: not under allocspy
status 0" "$("$TMP/example"; echo "status $?")"
else
	not_ok "allocspy.h(3): the figures example compiles" "$(cat "$TMP/cc.err")"
fi
