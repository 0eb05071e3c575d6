#!/bin/sh
# t20-stress.sh - many threads under the shim. (a) stress: 8 threads and a
# million seeded random operations with cross-thread frees; the dump's
# totals must equal an empty run's plus what the program says it did, the
# exit text must agree with the dump, and the full run must equal valgrind's
# HEAP SUMMARY. (b) churn: 5000 short threads in batches of 50; exact totals
# against an empty run, per-thread records, the 4096-thread cap of the dump,
# and a 300-thread instance against valgrind. The quick tier (make check)
# runs seeds 1 and 2, and valgrind's parity on 3 threads and 60, not 8 and 300.
. "$(dirname "$0")/lib.sh"

for p in stress churn; do
	if [ ! -x "$PROGS/$p" ]; then
		not_ok "$p: built" "missing $PROGS/$p: run make test-progs"
		exit 0
	fi
done

# shim_dump NAME PROG ARGS...: PROG under the shim, dump in $TMP/NAME.json,
# stdout in $TMP/NAME.out, summary lines in $TMP/NAME.
# (Names here avoid "n", "name", "d" and "log", which lib.sh sets.)
shim_dump() {
	sd=$1; shift
	rm -f "$TMP/$sd.json"
	SHIM_ENV="ALLOCSPY_OUTPUT=$TMP/$sd.json" run_shim "$TMP/$sd" "$@"
}

# heap4 NAME: "allocs frees bytes_allocated in_use_blocks" of $TMP/NAME.json,
# or "no dump".
heap4() {
	[ -s "$TMP/$1.json" ] || { echo "no dump"; return; }
	json_get "$TMP/$1.json" \
		'"%d %d %d %d" % tuple(d["heap"][k] for k in ("allocs", "frees", "bytes_allocated", "in_use_blocks"))' 2>&1
}

# summary_of NAME: the two HEAP SUMMARY lines that $TMP/NAME.json implies.
summary_of() {
	[ -s "$TMP/$1.json" ] || { echo "no dump"; return; }
	json_get "$TMP/$1.json" \
		'"in use at exit: {:,} bytes in {:,} blocks\ntotal heap usage: {:,} allocs, {:,} frees, {:,} bytes allocated".format(*(d["heap"][k] for k in ("in_use_bytes", "in_use_blocks", "allocs", "frees", "bytes_allocated")))' 2>&1
}

# prog_counts NAME: the program's own "allocs= frees= bytes=" as numbers.
prog_counts() {
	sed -n 's/.*allocs=\([0-9]*\) frees=\([0-9]*\) bytes=\([0-9]*\).*/\1 \2 \3/p' "$TMP/$1.out"
}

# expect_sum BASE NAME LIVE: BASE's heap4 plus the program's own counts,
# with LIVE blocks more in use.
expect_sum() {
	set -- $(heap4 "$1") $(prog_counts "$2") "$3"
	if [ $# -ne 8 ]; then echo "cannot add: $*"; return; fi
	echo "$(($1 + $5)) $(($2 + $6)) $(($3 + $7)) $(($4 + $8))"
}

# --- (a) stress ------------------------------------------------------------
shim_dump stress0 "$PROGS/stress" 8 0 1 0
check "stress: empty run exits 0" 0 "$(cat "$TMP/stress0.rc")"
for seed in 1 2 3 4 5; do
	in_tier "seed$seed" seed1 seed2 || continue
	sn=stress$seed
	shim_dump $sn "$PROGS/stress" 8 1000000 $seed 100
	native=$("$PROGS/stress" 8 1000000 $seed 100; echo "status $?")
	check "stress seed $seed: stdout and status as without the shim" \
		"$native" "$(cat "$TMP/$sn.out"; echo "status $(cat "$TMP/$sn.rc")")"
	check "stress seed $seed: allocs, frees, bytes, blocks in use = empty run + the program's own" \
		"$(expect_sum stress0 $sn 100)" "$(heap4 $sn)"
	if [ -s "$TMP/$sn.json" ]; then
		check "stress seed $seed: allocs - frees == in_use_blocks" True \
			"$(json_get "$TMP/$sn.json" 'd["heap"]["allocs"] - d["heap"]["frees"] == d["heap"]["in_use_blocks"]' 2>&1)"
		check "stress seed $seed: per-thread allocs and frees add up to the totals" True \
			"$(json_get "$TMP/$sn.json" '"threads_omitted" not in d and len(d["threads"]) == 9 and sum(t["allocs"] for t in d["threads"]) == d["heap"]["allocs"] and sum(t["frees"] for t in d["threads"]) == d["heap"]["frees"]' 2>&1)"
	fi
	check "stress seed $seed: exit text agrees with the dump" "$(summary_of $sn)" "$(heap_lines "$TMP/$sn")"
done
in_tier stress8 && parity "stress 8 threads, 1,000,000 ops" "$PROGS/stress" 8 1000000 1 100
parity "stress 3 threads, 300,000 ops" "$PROGS/stress" 3 300000 9 7

# --- (b) thread churn --------------------------------------------------------
shim_dump churn0 "$PROGS/churn" 5000 50 0
shim_dump churn "$PROGS/churn" 5000 50 10
check "churn: stdout and status" "threads=5000 allocs=50000 frees=50000 bytes=5025000|0" \
	"$(cat "$TMP/churn.out")|$(cat "$TMP/churn.rc")"
check "churn: allocs, frees, bytes, blocks in use = empty run + 10 blocks per thread" \
	"$(expect_sum churn0 churn 0)" "$(heap4 churn)"
if [ -s "$TMP/churn.json" ]; then
	# 5001 threads allocated (main makes the thread descriptors' DTVs): the
	# dump lists the first 4096 and counts the rest.
	check "churn: 4096 threads listed, 905 omitted" "4096 905" \
		"$(json_get "$TMP/churn.json" '"%d %d" % (len(d["threads"]), d.get("threads_omitted", 0))' 2>&1)"
	check "churn: every listed worker made 10 allocs and 10 frees and has exited" "[]" \
		"$(json_get "$TMP/churn.json" '[t for t in d["threads"] if t["tid"] != d["program"]["pid"] and (t["allocs"], t["frees"], t["exited"]) != (10, 10, True)][:3]' 2>&1)"
fi
check "churn: exit text agrees with the dump" "$(summary_of churn)" "$(heap_lines "$TMP/churn")"

shim_dump churn300 "$PROGS/churn" 300 50 10
if [ -s "$TMP/churn300.json" ]; then
	check "churn 300: all 301 threads listed, their allocs and frees add up" "301 True True" \
		"$(json_get "$TMP/churn300.json" '"%d %s %s" % (len(d["threads"]) + d.get("threads_omitted", 0), sum(t["allocs"] for t in d["threads"]) == d["heap"]["allocs"], sum(t["frees"] for t in d["threads"]) == d["heap"]["frees"])' 2>&1)"
else
	not_ok "churn 300: dump written" "no dump at $TMP/churn300.json"
fi
# valgrind runs threads one at a time: 300 of them take it 6 s, 60 one.
if in_tier churn300; then
	parity "churn 300 threads" "$PROGS/churn" 300 50 10
else
	parity "churn 60 threads" "$PROGS/churn" 60 50 10
fi
