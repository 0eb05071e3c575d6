#!/bin/sh
# t53-views.sh - every view and export of allocspy-report tells the same
# truth about one dump: frames without a symbol (a stripped program with
# three allocating functions, named one way in valgrind-style text and one
# compact way everywhere else, one pprof function each, with the build-id
# on its mapping).
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS
export HOME="$TMP" GOCACHE="$TMP/go-cache" GOFLAGS=-mod=mod
CC=${CC:-cc}

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi

# --- frames without a symbol ------------------------------------------------------

cat >"$TMP/three.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
void *keep[3];
__attribute__((noinline)) void *alpha(void) { void *p = malloc(1000); memset(p, 1, 1000); return p; }
__attribute__((noinline)) void *beta(void) { void *p = malloc(2000); memset(p, 2, 2000); return p; }
__attribute__((noinline)) void *gamma_(void) { void *p = malloc(3000); memset(p, 3, 3000); return p; }
int main(void) { keep[0] = alpha(); keep[1] = beta(); keep[2] = gamma_(); return 0; }
EOF
if $CC -O1 -o "$TMP/three" "$TMP/three.c" 2>"$TMP/cc.err" && strip "$TMP/three" &&
	(cd "$TMP" && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/three.json" \
		LD_PRELOAD="$LIB" ./three) 2>>"$TMP/cc.err"; then
	ok "a stripped program with three allocating functions runs under the shim"
else
	not_ok "a stripped program with three allocating functions runs under the shim" "$(cat "$TMP/cc.err")"
fi
D=$TMP/three.json
BUILD_ID=$(readelf -n "$TMP/three" | sed -n 's/.*Build ID: //p')
# The compact name of each allocating function's return address, from the
# dump: the module's base name and the offset from its load bias.
NAMES=$(json_get "$D" '" ".join("three+0x%x" % (d["stacks"][s["stack"]][0] - [m for m in d["modules"] if m["path"].endswith("/three")][0]["base"]) for s in sorted(d["stack_stats"], key=lambda s: -s["bytes"]) if s["bytes"] in (1000, 2000, 3000))')
N3=${NAMES%% *} N1=${NAMES##* } N2=${NAMES#* } N2=${N2%% *}
check "the dump: the three stacks, the program's build-id" "3 $BUILD_ID" \
	"$(echo $NAMES | wc -w) $(json_get "$D" '[m for m in d["modules"] if m["path"].endswith("/three")][0]["build_id"]')"

"$REPORT" export --format=pprof -o "$TMP/three.pb.gz" "$D" 2>"$TMP/err"
check "pprof: exit status 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
timeout 120 go tool pprof -top -unit=B -sample_index=alloc_space "$TMP/three.pb.gz" >"$TMP/top" 2>&1
check "go tool pprof -top: one function per allocating function, each its own bytes" \
	"3000B $N3|2000B $N2|1000B $N1" \
	"$(awk '$1 ~ /B$/ && $1 != "0" && $1 == $4 { printf "%s%s %s", n++ ? "|" : "", $1, $6 }' "$TMP/top")"
check "go tool pprof -top: the program's build-id" "Build ID: $BUILD_ID" "$(grep '^Build ID:' "$TMP/top")"
timeout 120 go tool pprof -raw "$TMP/three.pb.gz" >"$TMP/raw" 2>&1
check "go tool pprof -raw: the program's mapping has its build-id and no functions of its own" \
	"$TMP/three $BUILD_ID" "$(sed -n "s|^[0-9]*: 0x[0-9a-f/x]* \($TMP/three [0-9a-f]*\) *$|\1|p" "$TMP/raw")"
check "go tool pprof -raw: the C library's mapping has its build-id and its functions, files and lines" \
	"[FN][FL][LN][IN]" "$(grep -o '/libc\.so\.6 [0-9a-f]\{40\} .*' "$TMP/raw" | cut -d' ' -f3)"

# One compact name for each address everywhere a frame is a name alone;
# valgrind's "??? (in FILE)" where frames are written valgrind's way.
"$REPORT" "$D" >"$TMP/summary" 2>&1
"$REPORT" timeline "$D" >"$TMP/timeline" 2>&1
"$REPORT" export --format=folded "$D" >"$TMP/folded" 2>&1
"$REPORT" export --format=speedscope -o "$TMP/ss.json" "$D" 2>&1
"$REPORT" export --format=callgrind -o "$TMP/cg" "$D" 2>&1
"$REPORT" export --format=massif -o "$TMP/massif" "$D" 2>&1
"$REPORT" leaks --show-leak-kinds=all "$D" >"$TMP/leaks" 2>&1
"$REPORT" --json leaks --show-leak-kinds=all "$D" >"$TMP/leaks.json" 2>&1
"$REPORT" html -o "$TMP/three.html" "$D" 2>&1
for n in $NAMES; do
	check "$n: in the summary's stacks, the timeline, folded, speedscope, callgrind, the page's flame graphs" \
		"yes yes yes yes yes yes" \
		"$(grep -q "^ .*  $n" "$TMP/summary" && echo yes) $(grep -q "  $n$" "$TMP/timeline" && echo yes) $(grep -q ";$n [0-9]*$" "$TMP/folded" && echo yes) $(grep -q "\"name\":\"$n\"" "$TMP/ss.json" && echo yes) $(grep -q "^fn=$n$" "$TMP/cg" && echo yes) $(grep -q "\"$n\"" "$TMP/three.html" && echo yes)"
done
ADDR3=$(json_get "$D" '"0x%X" % [d["stacks"][s["stack"]][0] for s in d["stack_stats"] if s["bytes"] == 3000][0]')
addr3=$(json_get "$D" '"0x%x" % [d["stacks"][s["stack"]][0] for s in d["stack_stats"] if s["bytes"] == 3000][0]')
check "leaks: valgrind's ??? (in FILE), never the compact name" \
	"==PID==    by $ADDR3: ??? (in $TMP/three)|0" \
	"$(grep "by $ADDR3:" "$TMP/leaks" | sed 's/^==[0-9]*==/==PID==/')|$(grep -c 'three+0x' "$TMP/leaks")"
check "leaks --json: function null, the compact name in name" "None $N3" \
	"$(json_get "$TMP/leaks.json" '" ".join("%s %s" % (f["function"], f["name"]) for r in d["loss_records"] for f in r["frames"] if f["address"] == "'"$addr3"'")')"
check "massif: valgrind's ??? (in FILE) in the heap tree" "$ADDR3: ??? (in $TMP/three)" \
	"$(grep -o "$ADDR3: ??? (in [^)]*)" "$TMP/massif" | head -n 1)"
check "html: the stacks beside the peak in valgrind's way" "$addr3: <span class=\"fn\">???</span> <span class=\"loc\">(in $TMP/three)</span>" \
	"$(grep -o "$addr3: <span class=\"fn\">???</span> <span class=\"loc\">(in [^)]*)</span>" "$TMP/three.html" | head -n 1)"
