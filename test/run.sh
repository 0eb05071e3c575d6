#!/bin/sh
# run.sh - the test runner: unit tests, then shell tests, as TAP.
# Every "ok" and "not ok" line is counted; the last line is "N passed, N failed".
# TESTS="t10 t20" limits the shell tests to names starting with those words.
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

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
	echo "# $t"
	B="$B" sh "$t" 2>&1 | tee -a "$out"
done

pass=$(grep -c '^ok ' "$out")
fail=$(grep -c '^not ok ' "$out")
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
