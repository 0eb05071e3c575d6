#!/bin/sh
# t32-guard.sh - guarded sampling (ALLOCSPY_GUARD): with ALLOCSPY_GUARD=1
# every block of a page or less gets a page of its own before a guard page,
# so test/guard/guarded.c's misuses are caught in every run: a write 1 to
# 64 bytes past a 128-byte block and a read and a write after free fault
# and are reported in valgrind's words with the access's stack and the
# block's, then the program dies of the SIGSEGV (139); bytes written before
# a block or in the slack past a small one are found at its free, and a
# double free is told as a free of a block freed before; the program's own
# SIGSEGV handler gets a fault outside the pool; a clean run has no error.
# Then the dump's errors and guard figures, ALLOCSPY_GUARD=1000 on the same
# clean run, the option in count mode, and the pool under threads.
. "$(dirname "$0")/lib.sh"

G=$TMP/guarded
${CC:-cc} -O0 -g -fno-omit-frame-pointer -pthread -o "$G" "$TOP/test/guard/guarded.c" ||
	{ not_ok "test/guard/guarded.c builds"; exit 0; }

# run NAME ENV... -- ARGS: the program under the shim, its text in NAME.err,
# its dump NAME.json, its status NAME.rc.
run() {
	rn=$1
	shift
	rm -f "$TMP/$rn.json"
	(cd "$TMP" && env "$@" ALLOCSPY_OUTPUT="$TMP/$rn.json" LD_PRELOAD="$LIB" "$G" $ARGS \
		>"$TMP/$rn.out" 2>"$TMP/$rn.err")
	echo $? >"$TMP/$rn.rc"
}

# report NAME: the error's report, prefix stripped, addresses masked.
report() {
	sed -n 's/^==[0-9]*== \{0,1\}//p' "$TMP/$1.err" |
		awk '/^(Invalid|Bytes)/ { on = 1 } /^$/ { on = 0 } on' |
		sed -E 's/0x[0-9A-Fa-f]+/0x/g; s/\(in [^)]*\)/(in)/'
}

line_of() { grep -n "$1" "$TOP/test/guard/guarded.c" | head -n 1 | cut -d: -f1; }
# (the clean run guards its 8 blocks of 1 to 3,280 bytes; their reallocs
# come from the allocator)
POKE=$(line_of 'p\[at\] = 1;')
MALLOC128=$(line_of 'char \*p = malloc(128);')

n=0
for over in 1 2 7 8 9 15 16 17 31 32 33 48 63 64; do
	ARGS="over $over" run over ALLOCSPY_GUARD=1
	if [ "$(cat "$TMP/over.rc")" = 139 ] && report over | grep -qx " Address 0x is $((over - 1)) bytes after a block of size 128 alloc'd"; then
		n=$((n + 1))
	else
		not_ok "a write $over bytes past a 128-byte block: caught" "$(cat "$TMP/over.rc")" "$(report over)"
	fi
done
check "writes 1 to 64 bytes past a 128-byte block: each caught, with its distance (14 runs), status 139" 14 "$n"
check "a write past a block: valgrind's report, the access's stack and the block's" \
"Invalid write of size 1
   at 0x: poke (guarded.c:$POKE)
   by 0x: main (guarded.c:$((MALLOC128 + 1)))
 Address 0x is 7 bytes after a block of size 128 alloc'd
   at 0x: malloc (in)
   by 0x: main (guarded.c:$MALLOC128)" "$(ARGS="over 8" run over ALLOCSPY_GUARD=1 ALLOCSPY_BACKTRACE=16; report over)"
check_match "the fatal signal's block follows, as valgrind's" \
	"Process terminating with default action of signal 11 \(SIGSEGV\)" "$(cat "$TMP/over.err")"
python3 - "$TMP/over.json" >"$TMP/over.dump" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["errors"][0]
print(e["kind"], e["size"], e["where"], e["block"]["size"], e["block"]["offset"], e["block"]["function"],
      len(d["stacks"][e["stack"]]) >= 2, d["error_summary"]["errors"], d["options"]["guard"],
      d["guard"]["slots"], d["guard"]["guarded"] >= 1)
EOF
check "the dump: the error (kind, size, where, the block), the summary, the pool" \
	"invalid_write 1 after 128 135 malloc True 1 1 1024 True" "$(cat "$TMP/over.dump")"

for how in read-after write-after; do
	ARGS=$how run uaf ALLOCSPY_GUARD=1
	kind=read
	[ $how = write-after ] && kind=write
	check "$how: status 139" 139 "$(cat "$TMP/uaf.rc")"
	check "$how: an invalid $kind of size 8, 8 bytes inside the block, its free's and its allocation's stacks" \
"Invalid $kind of size 8
   at 0x: main (guarded.c)
 Address 0x is 8 bytes inside a block of size 128 free'd
   at 0x: free (in)
   by 0x: main (guarded.c)
 Block was alloc'd at
   at 0x: malloc (in)
   by 0x: main (guarded.c)" "$(report uaf | sed 's/(guarded.c:[0-9]*)/(guarded.c)/')"
done

ARGS="under 3" run under ALLOCSPY_GUARD=1
check "a write before a block: found at its free, the program goes on" "0
Bytes before a block were written (found at its free)
 Address 0x is 3 bytes before a block of size 128 alloc'd" \
	"$(cat "$TMP/under.rc"; report under | grep -v '^   ')"
for s in 1 2 3; do
	ARGS="slack $s" run slack ALLOCSPY_GUARD=1
	check "a write $s past a 13-byte block, in its slack: found at its free" "0
Bytes after a block were written (found at its free)
 Address 0x is 0 bytes after a block of size 13 alloc'd" \
		"$(cat "$TMP/slack.rc"; report slack | grep -v '^   ')"
done
ARGS=double run double ALLOCSPY_GUARD=1
check "a double free of a guarded block: a free of a block freed before" "0
Invalid free() / delete / delete[] / realloc()
 Address 0x is 0 bytes inside a block of size 20 free'd
 Block was alloc'd at" "$(cat "$TMP/double.rc"; report double | grep -v '^   ')"
ARGS=handler run handler ALLOCSPY_GUARD=1
check "the program's own SIGSEGV handler gets a fault outside the pool" "3" "$(cat "$TMP/handler.rc")"
ARGS=clean run clean ALLOCSPY_GUARD=1
check "a clean run: no error, exit 0" "0 ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)" \
	"$(cat "$TMP/clean.rc") $(grep -a 'ERROR SUMMARY' "$TMP/clean.err" | sed 's/^==[0-9]*== //')"
check "a clean run: its blocks were guarded" "True" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["guard"]["guarded"] >= 8)' "$TMP/clean.json")"
ARGS=calloc-reuse run reuse ALLOCSPY_GUARD=1
check "calloc of a reused slot (its page keeps its last block's bytes): zeros, no error, exit 0" \
	"0 nonzero 0 ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 0 from 0)" \
	"$(cat "$TMP/reuse.rc") $(grep nonzero "$TMP/reuse.out") $(grep -a 'ERROR SUMMARY' "$TMP/reuse.err" | sed 's/^==[0-9]*== //')"
ARGS=clean run clean1000 ALLOCSPY_GUARD=1000
check "ALLOCSPY_GUARD=1000: the same clean run, exit 0" "0" "$(cat "$TMP/clean1000.rc")"
ARGS="over 8" run count ALLOCSPY_GUARD=1 ALLOCSPY_MODE=count
check "count mode: ALLOCSPY_GUARD is refused with a warning" \
	"allocspy: warning: ALLOCSPY_GUARD: blocks are guarded in track mode; 0 (no guarded blocks) is used" \
	"$(grep -a 'ALLOCSPY_GUARD' "$TMP/count.err")"

# The same misuse caught in every run, 20 runs.
n=0
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
	ARGS="write-after" run again ALLOCSPY_GUARD=1
	[ "$(cat "$TMP/again.rc")" = 139 ] && grep -q 'Invalid write of size 8' "$TMP/again.err" && n=$((n + 1))
done
check "a write after free: caught in every one of 20 runs" 20 "$n"
