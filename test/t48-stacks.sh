#!/bin/sh
# t48-stacks.sh - every stack in the dump. stack_many allocates from
# 100,000 distinct stacks (its figures known from its source): stack_stats
# and thread_stacks hold every one, and they add up to the heap's totals;
# the dump's size and the time it took are printed as comments.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIB" ] || [ ! -x "$PROGS/stack_many" ]; then
	not_ok "the shim and stack_many are built" "run make && make test-progs"
	exit 0
fi

# run NAME ENV... -- ARGS: stack_many ARGS under the shim, its dump $TMP/NAME.json.
run() {
	n=$1; shift
	e=
	while [ "$1" != -- ]; do e="$e $1"; shift; done
	shift
	rm -f "$TMP/$n.json"
	(cd "$TMP" && timeout -k 5 120 env ALLOCSPY_QUIET=1 $e ALLOCSPY_OUTPUT="$TMP/$n.json" \
		LD_PRELOAD="$LIB" "$PROGS/stack_many" "$@" >"$TMP/$n.out" 2>"$TMP/$n.err")
	echo $? >"$TMP/$n.rc"
}

# --- 100,000 stacks, every one kept ------------------------------------------------------------

t0=$(date +%s.%N)
run many ALLOCSPY_BACKTRACE=16 --
t1=$(date +%s.%N)
D=$TMP/many.json
check "100,000 stacks: exit status 0, the program's output, a dump" \
	"0|33334 blocks, 633346 bytes kept|yes" \
	"$(cat "$TMP/many.rc")|$(cat "$TMP/many.out")|$([ -f "$D" ] && echo yes)"
check "100,000 stacks: the heap's totals (16 + p % 7 bytes for p < 100,000, stdout's 4,096-byte buffer)" \
	"100001 66667 1904091 633346 33334 66667" \
	"$(json_get "$D" '" ".join(str(d["heap"][k]) for k in ("allocs", "frees", "bytes_allocated", "in_use_bytes", "in_use_blocks", "temporary"))')"
check "100,000 stacks: stack_stats lists 100,001 distinct stacks, none left out" \
	"100001 100001 100001 False" \
	"$(json_get "$D" '"%d %d %d %s" % (len(d["stack_stats"]), len({s["stack"] for s in d["stack_stats"]}), len({tuple(d["stacks"][s["stack"]]) for s in d["stack_stats"]}), "stack_stats_omitted" in d)')"
check "100,000 stacks: stack_stats add up to the heap's totals (allocs, bytes, in use, temporary)" \
	"100001 1904091 633346 33334 66667" \
	"$(json_get "$D" '" ".join(str(sum(s[k] for s in d["stack_stats"])) for k in ("allocs", "bytes", "in_use_bytes", "in_use_blocks", "temporary"))')"
check "100,000 stacks: thread_stacks add up to the heap's totals, one line a stack" \
	"100001 1904091 100001" \
	"$(json_get "$D" '"%d %d %d" % (sum(s["allocs"] for s in d["thread_stacks"]), sum(s["bytes"] for s in d["thread_stacks"]), len(d["thread_stacks"]))')"
check "100,000 stacks: largest first, each stack_stats line 16 + p % 7 bytes of one path (or the buffer)" \
	"4096 22 16 ok" \
	"$(json_get "$D" '"%d %d %d %s" % (d["stack_stats"][0]["bytes"], d["stack_stats"][1]["bytes"], d["stack_stats"][-1]["bytes"], "ok" if all(a["bytes"] >= b["bytes"] for a, b in zip(d["stack_stats"], d["stack_stats"][1:])) else "not sorted")')"
check "100,000 stacks: allocspy-report reads the dump" "0" \
	"$("$REPORT" "$D" >/dev/null 2>"$TMP/many.report.err"; echo $?)"
size=$(wc -c <"$D")
secs=$(echo "$t0 $t1" | awk '{ printf "%.2f", $2 - $1 }')
check "100,000 stacks: the run and its dump take less than 20 s (no step grows with the square of the stacks)" \
	yes "$(echo "$secs" | awk '{ print ($1 < 20) ? "yes" : "no: " $1 " s" }')"
echo "# the dump of 100,000 stacks: $size bytes; the run, dump included, $secs s"
run many0 ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none --
echo "#   (without a dump: $(cd "$TMP" && { /usr/bin/time -f %e env ALLOCSPY_QUIET=1 ALLOCSPY_BACKTRACE=16 \
	ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$PROGS/stack_many" >/dev/null; } 2>&1) s)"
