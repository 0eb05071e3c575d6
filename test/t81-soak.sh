#!/bin/sh
# t81-soak.sh - a short round of the deadlock hunt (test/soak.sh, which
# `make soak` runs for an hour): every fork and thread torture case once
# with 16-frame stacks, the mode with the most locks (10 forks where a case
# forks 100 times), pinned to one CPU and on both, each
# under a deadline; every run must end with its own output and status and
# leave whole, consistent dumps.
# tier: full
. "$(dirname "$0")/lib.sh"

SOAK_FORKS=10 sh "$TOP/test/soak.sh" -t 60 -m bt16 >"$TMP/soak.out" 2>&1
st=$?
grep '^soak: [a-z_]*:' "$TMP/soak.out" | while read -r _ name runs _ hangs _ fails _; do
	check "soak: ${name%:}: $runs runs, no hang, no failure" "0 0" "$hangs $fails"
done
check "soak: the round ends with 0 hangs and 0 failures (status 0)" 0 "$st"
[ "$st" -eq 0 ] || sed -n '/^HANG\|^FAIL/,+30p' "$TMP/soak.out" | head -n 80 | sed 's/^/# /'
