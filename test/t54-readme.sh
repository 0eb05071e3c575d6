#!/bin/sh
# t54-readme.sh - the README's examples run as written, and their output is
# what the README shows (test/readme-check.py: pids, addresses, build-ids,
# times, directories and the drawing of the heap's chart masked), so that
# they cannot drift: the quick start, loss records, the pprof and folded
# exports, the timeline, merge and html, and the list of other commands
# (each exits 0). make demo's compare table: its rows and the figures
# that do not depend on timing, from the three seed builds at 8 threads.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS
export HOME="$TMP" GOCACHE="$TMP/go-cache" GOFLAGS=-mod=mod
CC=${CC:-cc}

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi

# The README's commands run in a directory of their own, where build/ holds
# the project's programs (and the test programs) and test/ is the project's.
W=$TMP/readme
mkdir -p "$W/build"
ln -s "$REPORT" "$W/build/allocspy-report"
ln -s "$LIB" "$W/build/liballocspy.so"
ln -s "$LAUNCH" "$W/build/allocspy"
mkdir -p "$W/build/test"
ln -s "$PROGS" "$W/build/test/progs"
ln -s "$TOP/test" "$W/test"
for v in $(env | sed -n 's/^\(ALLOCSPY_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
python3 "$TOP/test/readme-check.py" "$TOP/README.md" "$W"

# make demo's table (benches/demo.sh): the three builds of seed000 at 8
# threads, as the demo runs them.
# shellcheck disable=SC2046 # pkg-config's words are flags
for b in strdup refcount mutex; do
	$CC -O2 -g -fno-omit-frame-pointer -std=gnu11 -D_GNU_SOURCE -pthread -I"$TOP/include" \
		-DSEED000_$(echo $b | tr a-z A-Z) $(pkg-config --cflags glib-2.0) \
		-o "$TMP/seed000-$b" "$TOP/benches/seed000.c" $(pkg-config --libs glib-2.0) &&
		(cd "$TMP" && ALLOCSPY_OUTPUT="$TMP/$b-8.json" ALLOCSPY_QUIET=1 ALLOCSPY_REF_CROSS=1 \
			LD_PRELOAD="$LIB" "$TMP/seed000-$b" 8 100000) || echo "seed000-$b failed" >>"$TMP/demo.err"
done
(cd "$TMP" && "$REPORT" compare strdup-8.json refcount-8.json mutex-8.json) >"$TMP/demo.out" 2>>"$TMP/demo.err"
check "make demo's table: the three builds run and compare, nothing on stderr" "" "$(cat "$TMP/demo.err")"
# The README's table, from its demo block.
python3 - "$TOP/README.md" >"$TMP/demo.readme" <<'PY'
import sys
s = open(sys.argv[1]).read()
a = s.index("$ allocspy-report compare strdup-8.json refcount-8.json mutex-8.json\n")
print(s[a:].split("\n...\n")[0].split("\n", 1)[1])
PY
# rows FILE: the row names; fixed FILE: the rows whose figures do not
# depend on timing or on the threads' order.
rows() { sed -n '4,$p' "$1" | sed 's/  .*//'; }
fixed() { grep -E '^(strdup calls|strdup bytes|ref acquires|ref releases|calls: g_strdup|definitely lost|indirectly lost|possibly lost|suppressed|heap errors) ' "$1" | tr -s ' '; }
check "make demo's table: the README's note and columns" "$(sed -n 1,3p "$TMP/demo.out")" "$(sed -n 1,3p "$TMP/demo.readme")"
check "make demo's table: the README's rows, in order (the README leaves out the last ones)" \
	"$(rows "$TMP/demo.out" | head -n "$(rows "$TMP/demo.readme" | wc -l)")" "$(rows "$TMP/demo.readme")"
check "make demo's table: the README's figures that do not depend on timing" \
	"$(fixed "$TMP/demo.out")" "$(fixed "$TMP/demo.readme")"
