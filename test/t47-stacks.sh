#!/bin/sh
# t47-stacks.sh - every stack in the dump, and the stacks cut at the depth
# limit marked as such. stack_many allocates from 100,000 distinct stacks
# (its figures known from its source): stack_stats and thread_stacks hold
# every one, and they add up to the heap's totals; the dump's size and the
# time it took are printed as comments. Then truncated_stacks, with
# libunwind and with frame pointers: each program stack is measured with
# 64 frames (D frames, none cut), then kept at D frames (none cut: the
# walk ended there) and at D - 1 (every one cut), taken once or again and
# again from one call site (the thread's last stack, the stack cache); the
# return address into the shim's trampoline under main is kept in the
# stack but is none of its ALLOCSPY_BACKTRACE frames.
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
# The time without a dump, for comparison (a comment, the full tier only).
if in_tier many0; then
	echo "#   (without a dump: $(cd "$TMP" && { /usr/bin/time -f %e env ALLOCSPY_QUIET=1 ALLOCSPY_BACKTRACE=16 \
		ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$PROGS/stack_many" >/dev/null; } 2>&1) s)"
fi

# --- stacks cut at the depth limit ----------------------------------------------------------------

# REAL: the frames of a stack that are not the shim's (main's return into
# its trampoline is kept, not counted), as a python expression over d and
# a stack's frames x.
REAL='(lambda x: len([f for f in x if not any(m["start"] <= f < m["end"] for m in d["modules"] if m["path"].endswith("/liballocspy.so"))]))'
for unwind in libunwind fp; do
	# The depth of the program's stacks, and that none is cut at 64.
	run full ALLOCSPY_BACKTRACE=64 ALLOCSPY_UNWIND=$unwind -- 100 1
	depth=$(json_get "$TMP/full.json" '" ".join(sorted({"%d:%s" % ('"$REAL"'(d["stacks"][s["stack"]]), s["stack"] in d["truncated_stacks"]) for s in d["stack_stats"] if s["bytes"] < 4096}))')
	case $depth in
	*" "*|*True*|"")
		not_ok "$unwind: the program's 100 stacks have one depth, none cut at 64 frames" "$depth"
		continue ;;
	esac
	D=${depth%%:*}
	ok "$unwind: the program's 100 stacks have one depth ($D frames), none cut at 64 frames"
	for r in 1 5; do
		run cut$r ALLOCSPY_BACKTRACE=$((D - 1)) ALLOCSPY_UNWIND=$unwind -- 100 $r
		run end$r ALLOCSPY_BACKTRACE=$D ALLOCSPY_UNWIND=$unwind -- 100 $r
		check "$unwind, $r allocation(s) a stack: at $D frames none is cut, at $((D - 1)) all 100 are" \
			"100 stacks of $D frames, 0 cut|100 stacks of $((D - 1)) frames, 100 cut" \
			"$(for n in end$r cut$r; do json_get "$TMP/$n.json" '"%d stacks of %s frames, %d cut" % (len([s for s in d["stack_stats"] if s["bytes"] < 4096]), "/".join(sorted({str('"$REAL"'(d["stacks"][s["stack"]])) for s in d["stack_stats"] if s["bytes"] < 4096})), len([s for s in d["stack_stats"] if s["bytes"] < 4096 and s["stack"] in d["truncated_stacks"]]))'; done | paste -sd'|')"
		check "$unwind, $r allocation(s) a stack: each stack's allocs are its own ($r), the totals the heap's" \
			"$r $((100 * r + 1))|$r $((100 * r + 1))" \
			"$(for n in end$r cut$r; do json_get "$TMP/$n.json" '"%s %d" % ("/".join(sorted({str(s["allocs"]) for s in d["stack_stats"] if s["bytes"] < 4096})), sum(s["allocs"] for s in d["stack_stats"]))'; done | paste -sd'|')"
	done
done

# truncated_stacks holds numbers of stacks, each once, in order; the
# caller alone (the default) is one frame of a longer stack: every stack
# of the default dump is cut.
run callers -- 100 1
check "the default (the caller alone): every stack of the dump is cut" "yes" \
	"$(json_get "$TMP/callers.json" '"yes" if d["truncated_stacks"] == list(range(len(d["stacks"]))) and len(d["stacks"]) > 0 else d["truncated_stacks"]')"
check "truncated_stacks: numbers into stacks, ascending, each once" "yes yes" \
	"$(for n in cut1 end1; do json_get "$TMP/$n.json" '"yes" if all(0 <= i < len(d["stacks"]) for i in d["truncated_stacks"]) and d["truncated_stacks"] == sorted(set(d["truncated_stacks"])) else "no"'; done | paste -sd' ')"

# allocspy-report reads truncated_stacks, and refuses a bad one with one
# line and status 2.
python3 - "$TMP/cut1.json" "$TMP" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
n = len(d["stacks"])
for name, v in (("range", [n]), ("type", ["x"]), ("negative", [-1])):
    e = dict(d, truncated_stacks=v)
    json.dump(e, open("%s/bad-%s.json" % (sys.argv[2], name), "w"))
PY
n=$(json_get "$TMP/cut1.json" 'len(d["stacks"])')
for bad in "range|truncated_stacks[0]: $n is not an index into stacks ($n stacks)" \
	"type|truncated_stacks[0]: expected an integer, found a string" \
	"negative|truncated_stacks[0]: -1 is negative"; do
	what=${bad%%|*}
	check "allocspy-report: a truncated_stacks entry out of $what: status 2, one line" \
		"2|allocspy-report: error: $TMP/bad-$what.json: ${bad#*|}" \
		"$("$REPORT" "$TMP/bad-$what.json" >/dev/null 2>"$TMP/bad.err"; echo $?)|$(cat "$TMP/bad.err")"
done
