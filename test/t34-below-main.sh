#!/bin/sh
# t34-below-main.sh - suppressions cross over on stripped programs. Their
# stacks never reach main: valgrind names the C library's function that
# calls it "(below main)" and ends the stack there, and so does allocspy,
# in loss records and in suppressions. diff3, as, column and iconv (Debian
# ships them stripped), each with every leak kind shown, their children
# untraced (valgrind's default): the shim's LEAK
# SUMMARY is valgrind's, the entries of valgrind's --gen-suppressions=all
# and of `allocspy-report leaks --gen-suppressions` are the same, line for
# line, and each tool's entries suppress every block under the other tool,
# with no warning (column's block of realloc(NULL, n) is malloc's, as
# valgrind names it). Then the warning about an entry deeper than a stack:
# given only when the stack was cut at ALLOCSPY_BACKTRACE frames, naming
# that cut; an entry longer than a whole stack just does not match it.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS

if [ ! -f "$LIB" ] || [ ! -x "$REPORT" ]; then
	not_ok "the shim and allocspy-report are built" "run make && make test-progs"
	exit 0
fi
if ! command -v valgrind >/dev/null 2>&1; then
	not_ok "valgrind is installed"
	exit 0
fi

cd "$TMP" || exit 1
printf 'a\nb\nc\n' >f1
printf 'a\nB\nc\n' >f2
printf 'a\nb\nC\n' >f3
printf '.text\n.globl f\nf:\n\tret\n' >x.s
printf 'one two\nthree four\n' >cols.txt
printf 'caf\351\n' >latin1.txt

# supp LOG: the suppression entries in a valgrind log or a report.
supp() {
	sed -n '/^{$/,/^}$/p' "$1"
}

# summary LOG: the LEAK SUMMARY, prefix stripped.
summary() {
	leak_lines "$1"
}

VG="valgrind --leak-check=full --show-leak-kinds=all"
k=0
for cmd in "diff3 f1 f2 f3" "as -o x.o x.s" "column -t cols.txt" "iconv -f latin1 -t utf-8 latin1.txt"; do
	k=$((k + 1))
	p=${cmd%% *}
	# shellcheck disable=SC2086 # the command's words
	$VG --gen-suppressions=all --log-file="$TMP/vg$k" $cmd >/dev/null 2>&1
	supp "$TMP/vg$k" >"$TMP/vg$k.supp"
	# shellcheck disable=SC2086
	ALLOCSPY_LEAK_CHECK=full ALLOCSPY_BACKTRACE=12 ALLOCSPY_OUTPUT="$TMP/asp$k.json" \
		ALLOCSPY_FOLLOW_CHILDREN=0 LD_PRELOAD="$LIB" \
		$cmd >/dev/null 2>"$TMP/asp$k"
	"$REPORT" leaks --gen-suppressions --show-leak-kinds all "$TMP/asp$k.json" >"$TMP/asp$k.leaks" 2>&1
	supp "$TMP/asp$k.leaks" >"$TMP/asp$k.supp"
	check "$p: the shim's LEAK SUMMARY is valgrind's" "$(summary "$TMP/vg$k")" "$(summary "$TMP/asp$k")"
	check "$p: its stacks end at (below main), as valgrind's do" \
		"$(grep -c '(below main)' "$TMP/vg$k") $(grep -c 'by 0x[0-9A-F]*: ??? ' "$TMP/vg$k")" \
		"$(grep -c '(below main)' "$TMP/asp$k.leaks") $(grep -c 'by 0x[0-9A-F]*: ??? ' "$TMP/asp$k.leaks")"
	# The entries, one by one; the lines that differ.
	diffs=$(python3 - "$TMP/vg$k.supp" "$TMP/asp$k.supp" <<'PY'
import sys
def entries(f):
    return open(f).read().split("}\n")
a, b = entries(sys.argv[1]), entries(sys.argv[2])
out = ["%d entries against %d" % (len(a) - 1, len(b) - 1)]
for x, y in zip(a, b):
    if x != y:
        xl, yl = x.split("\n"), y.split("\n")
        out.append(" / ".join("%s -> %s" % (p.strip(), q.strip()) for p, q in zip(xl, yl) if p != q) +
                   " (then %s)" % xl[[i for i, (p, q) in enumerate(zip(xl, yl)) if p != q][0] + 1].strip())
print("; ".join(out))
PY
)
	n_entries=$(grep -c '^{' "$TMP/vg$k.supp")
	# (column's block of realloc(NULL, n) is malloc's, as valgrind names it)
	check "$p: allocspy-report's suppressions are valgrind's, line for line ($n_entries entries)" \
		"$n_entries entries against $n_entries" "$diffs"
	# Each tool's entries under the other: every block suppressed.
	all=$(sed -n 's/^==[0-9]*== *in use at exit: \(.*\)$/\1/p' "$TMP/vg$k")
	# shellcheck disable=SC2086
	$VG --suppressions="$TMP/asp$k.supp" --log-file="$TMP/vgx$k" $cmd >/dev/null 2>&1
	# shellcheck disable=SC2086
	ALLOCSPY_SUPPRESSIONS="$TMP/vg$k.supp" ALLOCSPY_OUTPUT=none ALLOCSPY_FOLLOW_CHILDREN=0 LD_PRELOAD="$LIB" \
		$cmd >/dev/null 2>"$TMP/aspx$k"
	want="definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 0 bytes in 0 blocks
suppressed: $all"
	what="all $all"
	check "$p: valgrind's entries suppress $what under the shim" "$want" "$(summary "$TMP/aspx$k")"
	check "$p: allocspy's entries suppress $what under valgrind" "$want" "$(summary "$TMP/vgx$k")"
	check "$p: no warning about the entries" "" "$(grep -a 'allocspy: warning' "$TMP/aspx$k")"
done

# The warning about depth names the real cause. An entry longer than
# column's whole stacks (10 frames of its own) matches nothing, silently;
# one whose frames run past "..." (which asks for none) finds the stack cut
# at the caller alone, the default, and says so.
{
	printf '{\n   longer\n   Memcheck:Leak\n   fun:calloc\n'
	for i in 1 2 3 4 5 6 7 8 9 10; do printf '   obj:/usr/bin/column\n'; done
	printf '}\n'
} >long.supp
printf '{\n   past\n   Memcheck:Leak\n   fun:calloc\n   ...\n   fun:nosuch\n}\n' >past.supp
ALLOCSPY_SUPPRESSIONS="$TMP/long.supp" ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" column -t cols.txt >/dev/null 2>"$TMP/long.err"
check "an entry longer than the whole stack: no match, no warning" \
	"$(summary "$TMP/vg3" | tail -n 1)|" \
	"$(summary "$TMP/long.err" | tail -n 1)|$(grep -a 'allocspy: warning' "$TMP/long.err")"
ALLOCSPY_SUPPRESSIONS="$TMP/past.supp" ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" column -t cols.txt >/dev/null 2>"$TMP/past.err"
check "an entry past a stack cut at the depth limit: the warning names the cut" \
	'allocspy: warning: ALLOCSPY_SUPPRESSIONS: entry "past" goes deeper than a stack cut at the 1 frames ALLOCSPY_BACKTRACE keeps (set ALLOCSPY_BACKTRACE=2 or more)' \
	"$(grep -a 'allocspy: warning' "$TMP/past.err")"
