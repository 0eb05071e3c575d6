#!/bin/sh
# run.sh - the test runner: unit tests, then shell tests, as TAP.
# Every "ok" and "not ok" line is counted; the last line is "N passed, N failed".
# TESTS="t10 t20" limits the shell tests to names starting with those words.
# TIER=quick (make check) leaves out the files marked "# tier: full" in
# their first lines and runs fewer cases in the long ones; TIER=full (make
# check-full, and the default) runs everything.
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
TIER=${TIER:-full}
case $TIER in quick | full) ;; *) echo "run.sh: TIER=$TIER: quick or full" >&2; exit 2 ;; esac
export TIER
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# The tests need the library, the tools and the test programs built into
# $B (the library, the launcher and the programs into $SHIM_B when it is
# set): say what to run rather than fail test by test.
# (t50, t51 and t52 test the analyzer alone: make check-asan builds only that.)
SB=${SHIM_B:-$B}
need=allocspy-report
case " ${TESTS:-all} " in
*" t5"[012]*" "*) ;;
*) need="$need liballocspy.so allocspy test/progs/leak_definite test/unit/test_live" ;;
esac
for w in ${TESTS:-}; do
	case $w in t5[012]*) ;; *) need="$need liballocspy.so allocspy test/progs/leak_definite" ;; esac
done
missing=
for f in $need; do
	case $f in liballocspy.so | allocspy | test/progs/*) d=$SB ;; *) d=$B ;; esac
	case " $missing " in *" $d/$f "*) continue ;; esac
	[ -e "$d/$f" ] || missing="$missing $d/$f"
done
if [ -n "$missing" ]; then
	echo "not ok - the build in $B is complete"
	echo "#   missing:$missing"
	if [ "$B" = build ]; then
		echo "#   run first: make && make test-progs"
	else
		echo "#   run first: make B=$B && make B=$B test-progs"
	fi
	echo "0 passed, 1 failed"
	exit 1
fi

start=$(date +%s)
for t in "$B"/test/unit/test_*; do
	[ -x "$t" ] || continue
	"$t" 2>&1 | tee -a "$out"
done
for t in test/t*.sh; do
	[ -f "$t" ] || continue
	if [ -n "${TESTS:-}" ]; then
		hit=
		for w in $TESTS; do case ${t#test/} in "$w"*) hit=1 ;; esac; done
		[ -n "$hit" ] || continue
	fi
	if [ "$TIER" = quick ] && head -n 20 "$t" | grep -q '^# tier: full'; then
		echo "# $t: the full tier only (make check-full)"
		continue
	fi
	echo "# $t"
	t0=$(date +%s)
	B="$B" sh "$t" 2>&1 | tee -a "$out"
	echo "# $t: $(($(date +%s) - t0)) s"
done

pass=$(grep -c '^ok ' "$out")
fail=$(grep -c '^not ok ' "$out")
echo "# the $TIER tier in $(($(date +%s) - start)) s"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
