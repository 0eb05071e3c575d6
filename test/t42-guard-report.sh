#!/bin/sh
# t42-guard-report.sh - allocspy-report on the errors of guarded blocks
# (ALLOCSPY_GUARD): for each misuse of test/guard/guarded.c (a write past a
# block, bytes written before one, reads and writes after free, before a
# freed block, in a slot no block had, by an instruction of unknown size,
# slack written, several in one run), with the caller alone and with 16
# frames, the errors command's text is the exit text's error reports and
# ERROR SUMMARY byte for byte. --json gives their kinds, sizes and blocks;
# --gen-suppressions writes valgrind's Memcheck:AddrN entries, line for
# line valgrind's own for the same access, and allocspy's own for bytes
# written around a block; every entry silences its error under the shim,
# an entry of another size does not, valgrind reads the file and keeps to
# its own kinds. Then the summary's and merge's figures of the pool, and
# compare and check counting the errors.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS

[ -x "$REPORT" ] || { not_ok "allocspy-report is built" "$REPORT is missing"; exit 0; }
G=$TMP/guarded
${CC:-cc} -O0 -g -fno-omit-frame-pointer -pthread -o "$G" "$TOP/test/guard/guarded.c" ||
	{ not_ok "test/guard/guarded.c builds"; exit 0; }

# run NAME ARGS ENV...: guarded ARGS under the shim with ALLOCSPY_GUARD=1;
# its text in NAME.log, its dump NAME.json, its status in NAME.rc.
run() {
	rn=$1 ra=$2
	shift 2
	rm -f "$TMP/$rn.json"
	# shellcheck disable=SC2086 # ARGS are words
	# (the status taken inside, so that no shell reports the SIGSEGV)
	(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_GUARD=1 "$@" ALLOCSPY_OUTPUT="$TMP/$rn.json" \
		LD_PRELOAD="$LIB" "$G" $ra >/dev/null 2>"$TMP/$rn.log"
	echo $? >"$TMP/$rn.rc") 2>/dev/null
}

# exit_reports LOG: the exit text's error reports and its ERROR SUMMARY
# (a fatal signal's report, between them, left out).
exit_reports() {
	grep -a '^==[0-9]*==' "$1" |
		awk '/^==[0-9]*== (Invalid|Bytes|Mismatched|Argument)/ { on = 1 }
			/^==[0-9]*== (HEAP SUMMARY:|Process terminating)/ { on = 0 }
			on || /^==[0-9]*== ERROR SUMMARY:/ { print }' |
		awk '!(/^==[0-9]*== $/ && last ~ /^==[0-9]*== $/) { print } { last = $0 }'
}
# masked FILE: the text, prefix gone, addresses masked.
masked() { sed 's/^==[0-9]*== \{0,1\}//; s/0x[0-9A-Fa-f]*/0x/g; s/(in [^)]*)/(in)/' "$1"; }
line_of() { grep -n "$1" "$TOP/test/guard/guarded.c" | head -n 1 | cut -d: -f1; }
POKE=$(line_of 'p\[at\] = 1;')
MALLOC128=$(line_of 'char \*p = malloc(128);')

# --- the text is the exit text's --------------------------------------------------------

# name|arguments|status|reports
CASES="over|over 8|139|1
under|under 3|0|1
read|read-after|139|1
write|write-after|139|1
slack|slack 2|0|1
bfreed|before-freed|139|1
wild|wild|139|1
unsized|unsized|139|1
several|several|139|3"
for bt in 1 16; do
	echo "$CASES" | while IFS='|' read -r n a st nr; do
		run "$n$bt" "$a" ALLOCSPY_BACKTRACE=$bt
		exit_reports "$TMP/$n$bt.log" >"$TMP/$n$bt.want"
		"$REPORT" errors "$TMP/$n$bt.json" >"$TMP/$n$bt.got" 2>"$TMP/$n$bt.err"
		rc=$?
		check "$a, ALLOCSPY_BACKTRACE=$bt: status $st, $nr report(s) at exit, errors exits 0 quietly" \
			"$st $nr 0|" \
			"$(cat "$TMP/$n$bt.rc") $(grep -cE '== (Invalid|Bytes)' "$TMP/$n$bt.want") $rc|$(cat "$TMP/$n$bt.err")"
		check "$a, ALLOCSPY_BACKTRACE=$bt: the errors command's text is the exit text's, byte for byte" \
			"" "$(cmp "$TMP/$n$bt.want" "$TMP/$n$bt.got" 2>&1; diff "$TMP/$n$bt.want" "$TMP/$n$bt.got")"
	done
done
check "a write 8 bytes past a 128-byte block, 16 frames: the access's stack, the block's" \
	"Invalid write of size 1
   at 0x: poke (guarded.c:$POKE)
   by 0x: main (guarded.c:$((MALLOC128 + 1)))
 Address 0x is 7 bytes after a block of size 128 alloc'd
   at 0x: malloc (in)
   by 0x: main (guarded.c:$MALLOC128)

ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 0 from 0)" "$(masked "$TMP/over16.got")"
check "the first frame is the faulting instruction's address, not one past it" "yes" \
	"$(python3 - "$TMP/over16.json" "$TMP/over16.got" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
pc = d["stacks"][d["errors"][0]["stack"]][0] - 1
at = re.search(r"    at 0x([0-9A-F]+): poke", open(sys.argv[2]).read())
print("yes" if at and int(at.group(1), 16) == pc else "no: %x %s" % (pc, at and at.group(1)))
PY
)"
check "the headings and addresses of the other misuses" \
	"Bytes before a block were written (found at its free)| Address 0x is 3 bytes before a block of size 128 alloc'd
Invalid read of size 8| Address 0x is 8 bytes inside a block of size 128 free'd| Block was alloc'd at
Invalid write of size 8| Address 0x is 8 bytes inside a block of size 128 free'd| Block was alloc'd at
Bytes after a block were written (found at its free)| Address 0x is 0 bytes after a block of size 13 alloc'd
Invalid read of size 8| Address 0x is 8 bytes before a block of size 128 free'd| Block was alloc'd at
Invalid read of size 1| Address 0x is not stack'd, malloc'd or (recently) free'd
Invalid write| Address 0x is 0 bytes inside a block of size 128 free'd| Block was alloc'd at" \
	"$(for n in under read write slack bfreed wild unsized; do masked "$TMP/${n}16.got" | grep -v '^   \|^$\|^ERROR' | paste -sd'|'; done)"
check "several in one run: bytes before a block and in a slack, then a read after free" \
	"Bytes before a block were written (found at its free)
 Address 0x is 2 bytes before a block of size 20 alloc'd
Bytes after a block were written (found at its free)
 Address 0x is 1 bytes after a block of size 13 alloc'd
Invalid read of size 8
 Address 0x is 16 bytes inside a block of size 128 free'd
 Block was alloc'd at
ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)" \
	"$(masked "$TMP/several16.got" | grep -v '^   \|^$')"

# --- --json ---------------------------------------------------------------------------

for n in over read under unsized; do
	"$REPORT" errors --json --gen-suppressions "$TMP/${n}16.json" >"$TMP/$n.ej" 2>/dev/null
done
J='(lambda e: "%s %s %s %s %s %d %d %s %s" % (e["kind"], e["size"] if "size" in e else "-", e["function"], e["where"], [f["function"] for f in e["frames"]], e["block"]["offset"], e["block"]["size"], [f["function"] for f in e["block"]["alloc_frames"]], [f["function"] for f in e["block"].get("free_frames", [])]))(d["errors"][0])'
check "--json: an invalid write: its size, no function, the access's frames, the block after it" \
	"invalid_write 1 None after ['poke', 'main'] 135 128 ['malloc', 'main'] []" "$(json_get "$TMP/over.ej" "$J")"
check "--json: an invalid read after free: the block's free and allocation" \
	"invalid_read 8 None freed ['main'] 8 128 ['malloc', 'main'] ['free', 'main']" "$(json_get "$TMP/read.ej" "$J")"
check "--json: bytes written before a block: the free called, a negative offset" \
	"overwritten - free before ['free', 'main'] -3 128 ['malloc', 'main'] []" "$(json_get "$TMP/under.ej" "$J")"
check "--json: an access of unknown size: size 0, the heading without one" \
	"invalid_write 0 Invalid write" "$(json_get "$TMP/unsized.ej" '"%s %d %s" % (d["errors"][0]["kind"], d["errors"][0]["size"], d["errors"][0]["heading"])')"
check "--json: the heading and description are the text's lines" \
	"$(grep -v '^==[0-9]*==    \|^==[0-9]*== $\|ERROR SUMMARY' "$TMP/over16.got" | sed 's/^==[0-9]*== //')" \
	"$(json_get "$TMP/over.ej" '"%s\n %s" % (d["errors"][0]["heading"], d["errors"][0]["description"])')"
check "--json: the dump's address, a hex string; the frames' addresses the text's" "yes yes" \
	"$(json_get "$TMP/over.ej" '"yes" if int(d["errors"][0]["address"], 16) == json.load(open(sys.argv[1].replace("over.ej", "over16.json")))["errors"][0]["address"] else "no"') $(grep -q "at $(json_get "$TMP/over.ej" 'd["errors"][0]["frames"][0]["address"].upper().replace("0X", "0x")'): poke" "$TMP/over16.got" && echo yes)"

# --- --gen-suppressions ---------------------------------------------------------------

# supp FILE: the suppressions of a text.
supp() { sed -n '/^{/,/^}/p' "$1"; }
for bt in 1 16; do
	for n in over under read write slack bfreed wild unsized several; do
		"$REPORT" errors --gen-suppressions "$TMP/$n$bt.json" >"$TMP/gen-$n$bt.txt" 2>/dev/null
		supp "$TMP/gen-$n$bt.txt" >"$TMP/$n$bt.supp"
	done
done
check "--gen-suppressions: the reports as without it, an entry after each" \
	"$(cat "$TMP/several16.got")" "$(sed '/^{/,/^}/d' "$TMP/gen-several16.txt")"
check "--gen-suppressions: valgrind's kinds by size, allocspy's for an unknown size and for bytes written around a block" \
	"Memcheck:Addr1|allocspy:Overwritten|Memcheck:Addr8|Memcheck:Addr8|allocspy:Overwritten|Memcheck:Addr8|Memcheck:Addr1|allocspy:Addr allocspy:Overwritten allocspy:Overwritten Memcheck:Addr8" \
	"$(for n in over under read write slack bfreed wild unsized; do sed -n 3p "$TMP/${n}16.supp" | tr -d ' '; done | paste -sd'|') $(grep -o '[a-zA-Z]*:[A-Z][a-zA-Z0-9]*$' "$TMP/several16.supp" | paste -sd' ')"
check "an invalid write: no function above the access's frames" \
	"{
   <insert_a_suppression_name_here>
   Memcheck:Addr1
   fun:poke
   fun:main
}" "$(cat "$TMP/over16.supp")"
check "bytes written before a block: the free, then the program's frames" \
	"{
   <insert_a_suppression_name_here>
   allocspy:Overwritten
   fun:free
   fun:main
}" "$(cat "$TMP/under16.supp")"
check "with the caller alone: the faulting function only" \
	"{
   <insert_a_suppression_name_here>
   Memcheck:Addr1
   fun:poke
}" "$(cat "$TMP/over1.supp")"

# valgrind sees the same accesses (it has no guard, but checks every
# byte): its own entries are ours, line for line.
if command -v valgrind >/dev/null; then
	for n in over:over_8 read:read-after write:write-after bfreed:before-freed; do
		a=$(echo "${n#*:}" | tr _ ' ')
		# shellcheck disable=SC2086 # $a is words
		(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 120 valgrind --gen-suppressions=all \
			--log-file="$TMP/vg-${n%%:*}.log" "$G" $a >/dev/null 2>&1)
		supp "$TMP/vg-${n%%:*}.log" >"$TMP/vg-${n%%:*}.supp"
		check "$a: valgrind's --gen-suppressions=all entry is ours with 16 frames, line for line" \
			"$(cat "$TMP/${n%%:*}16.supp")" "$(cat "$TMP/vg-${n%%:*}.supp")"
	done
	cat "$TMP/several16.supp" "$TMP/unsized16.supp" "$TMP/over16.supp" >"$TMP/mixed.supp"
	(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 120 valgrind --suppressions="$TMP/mixed.supp" \
		--log-file="$TMP/vg-mixed.log" "$G" over 8 >/dev/null 2>&1)
	check "valgrind reads allocspy's entries among its own, keeps to its kinds: the write suppressed" \
		"ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 1 from 1)" \
		"$(grep -a 'FATAL\|ERROR SUMMARY' "$TMP/vg-mixed.log" | sed 's/^==[0-9]*== //')"
else
	ok "valgrind's entries # SKIP valgrind is not installed"
fi

# Each case's entries silence its errors under the shim; the program
# still dies of the fault.
echo "$CASES" | while IFS='|' read -r n a st nr; do
	for bt in 1 16; do
		run "s-$n$bt" "$a" ALLOCSPY_BACKTRACE=$bt ALLOCSPY_SUPPRESSIONS="$TMP/$n$bt.supp"
		"$REPORT" errors "$TMP/s-$n$bt.json" >"$TMP/s-$n$bt.got" 2>/dev/null
		check "$a, ALLOCSPY_BACKTRACE=$bt: its entries suppress it under the shim, at exit and in the dump" \
			"$st ERROR SUMMARY: 0 errors from 0 contexts (suppressed: $nr from $nr)|ERROR SUMMARY: 0 errors from 0 contexts (suppressed: $nr from $nr)" \
			"$(cat "$TMP/s-$n$bt.rc") $(grep -a 'ERROR SUMMARY' "$TMP/s-$n$bt.log" | sed 's/^==[0-9]*== //')|$(sed 's/^==[0-9]*== //' "$TMP/s-$n$bt.got")"
	done
done
if [ -f "$TMP/vg-read.supp" ]; then
	run vgs "read-after" ALLOCSPY_BACKTRACE=16 ALLOCSPY_SUPPRESSIONS="$TMP/vg-read.supp"
	check "valgrind's own entry for the read after free suppresses it under the shim" \
		"ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 1 from 1)" \
		"$(grep -a 'ERROR SUMMARY' "$TMP/vgs.log" | sed 's/^==[0-9]*== //')"
fi
sed 's/Memcheck:Addr8/Memcheck:Addr4/' "$TMP/read16.supp" >"$TMP/addr4.supp"
sed 's/Memcheck:Addr8/allocspy:Addr/' "$TMP/read16.supp" >"$TMP/any.supp"
sed 's/Memcheck:Addr8/Memcheck,allocspy:Addr8/' "$TMP/read16.supp" >"$TMP/tools.supp"
sed 's/Memcheck:Addr8/Helgrind:Addr8/' "$TMP/read16.supp" >"$TMP/other.supp"
for s in addr4:0 any:1 tools:1 other:0; do
	run "k-${s%%:*}" read-after ALLOCSPY_BACKTRACE=16 ALLOCSPY_SUPPRESSIONS="$TMP/${s%%:*}.supp"
	check "the read of 8 bytes, an entry $(sed -n 3p "$TMP/${s%%:*}.supp" | tr -d ' '): suppressed ${s#*:}" \
		"ERROR SUMMARY: $((1 - ${s#*:})) errors from $((1 - ${s#*:})) contexts (suppressed: ${s#*:} from ${s#*:})" \
		"$(grep -a 'ERROR SUMMARY' "$TMP/k-${s%%:*}.log" | sed 's/^==[0-9]*== //')"
done
run k-free "under 3" ALLOCSPY_BACKTRACE=16 ALLOCSPY_SUPPRESSIONS="$TMP/over16.supp"
run k-over "over 8" ALLOCSPY_BACKTRACE=16 ALLOCSPY_SUPPRESSIONS="$TMP/under16.supp"
check "an Addr entry does not take bytes written around a block, nor an Overwritten entry a write" \
	"ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 0 from 0)
ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 0 from 0)" \
	"$(grep -ah 'ERROR SUMMARY' "$TMP/k-free.log" "$TMP/k-over.log" | sed 's/^==[0-9]*== //')"

# --- the pool's figures, merge, compare, check ------------------------------------------

check "the summary: the guarded blocks, as the dump has them" \
	"Guarded: 2 blocks, 2 of them live (ALLOCSPY_GUARD=1, 1,024 slots)|{'mean': 1, 'slots': 1024, 'guarded': 2, 'live': 2}" \
	"$("$REPORT" "$TMP/over16.json" 2>/dev/null | grep '^Guarded')|$("$REPORT" --json "$TMP/over16.json" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["guard"])')"
check "the summary of a dump without guarded blocks: no such line, guard null" "0 None" \
	"$("$REPORT" "$TOP/test/golden/errors.json" 2>/dev/null | grep -c '^Guarded') $("$REPORT" --json "$TOP/test/golden/errors.json" 2>/dev/null | python3 -c 'import json, sys; print(json.load(sys.stdin)["guard"])')"
"$REPORT" merge -o "$TMP/merged.json" "$TMP/over16.json" "$TMP/several16.json" 2>"$TMP/merge.err"
rc=$?
"$REPORT" errors "$TMP/merged.json" >"$TMP/merged.got" 2>&1
# frames FILE: the text, the prefix and the frames' addresses masked.
frames() { sed 's/^==[0-9]*==/==PID==/; s/^\(==PID==    [ab][ty] \)0x[0-9A-F]*:/\10xADDR:/' "$1"; }
check "merge: both dumps' reports in turn, the access's frames moved with their modules, the sum" \
	"0|$(frames "$TMP/over16.got" | sed '$d'; frames "$TMP/several16.got" | sed '$d')
==PID== ERROR SUMMARY: 4 errors from 4 contexts (suppressed: 0 from 0)" \
	"$(cat "$TMP/merge.err")$rc|$(frames "$TMP/merged.got")"
check "merge: the pools added up, each process's kept" \
	"{'mean': 1, 'slots': 2048, 'guarded': 6, 'live': 3} 1 [2, 4]" \
	"$(json_get "$TMP/merged.json" '"%s %s %s" % (d["guard"], d["options"]["guard"], [p["guard"]["guarded"] for p in d["processes"]])')"
check "compare: the heap errors of each dump" "heap errors 1 3" \
	"$("$REPORT" compare "$TMP/over16.json" "$TMP/several16.json" 2>/dev/null | grep '^ *heap errors' | awk '{ print $1, $2, $3, $4 }')"
"$REPORT" check --max-errors=2 "$TMP/several16.json" >"$TMP/chk.out" 2>/dev/null
rc=$?
"$REPORT" check --max-errors=3 "$TMP/several16.json" >/dev/null 2>&1
check "check: the run's 3 errors exceed --max-errors=2, not 3" "1 0" "$rc $?"
