#!/bin/sh
# t31-heap-errors.sh - valgrind's heap errors in track mode, against
# valgrind on the same program (test/progs/err_frees.cc: every invalid and
# mismatched free, a realloc of a freed block, a fishy size, and one error
# three times from one place): the same error reports in the same order
# (headings, the call's frames, the address's description, the block's
# frames; addresses masked), the same ERROR SUMMARY and HEAP SUMMARY, the
# program running to the end with the same output and status; with the
# caller alone (the default, each stack cut to its first frame of the
# program's) and with 16 frames (whole). Then the error exit code, valgrind's
# own suppressions of these errors, the dump's errors, count mode, and a
# thread that frees another's block twice.
. "$(dirname "$0")/lib.sh"

P=$PROGS/err_frees
[ -x "$P" ] || { not_ok "err_frees is built" "run make test-progs"; exit 0; }

# reports LOG [CUT]: the error reports of a log, prefix stripped, every
# address 0x..., a path after "(in " and the thread's stack address made
# the same; with CUT, only the first of the program's frames under each
# "at" (the replacement's or the interposer's) line.
reports() {
	sed -n 's/^==[0-9]*== \{0,1\}//p' "$1" |
	awk -v cut="${2:-}" '
		/^(Invalid free|Mismatched free|Argument )/ { on = 1 }
		/^HEAP SUMMARY/ { on = 0 }
		!on { next }
		/^   at / { by = 0 }
		/^   by / { if (cut && by++) next }
		/^ *in frame #/ { next }	# valgrind: which frame of the stack
		{ print }' |
	sed -E 's/0x[0-9A-Fa-f]+/0x/g; s/\(in [^)]*\)/(in)/'
}

vgd=$TMP/vg
mkdir -p "$vgd"
(cd "$TMP" && env -i HOME="${HOME:-/root}" PATH=/usr/bin:/bin LANG=C timeout -k 5 300 \
	valgrind --leak-check=full --log-file="$vgd/log" "$P" >"$vgd/out" 2>/dev/null)
echo $? >"$vgd/rc"

for bt in 1 16; do
	d=$TMP/bt$bt
	mkdir -p "$d"
	(cd "$TMP" && vg_env ALLOCSPY_BACKTRACE=$bt ALLOCSPY_LEAK_CHECK=full ALLOCSPY_OUTPUT="$d/dump.json" \
		LD_PRELOAD="$LIB" "$P" >"$d/out" 2>"$d/log")
	echo $? >"$d/rc"
	cut=
	[ $bt = 1 ] && cut=1
	check "ALLOCSPY_BACKTRACE=$bt: the program runs to the end as under valgrind (stdout, status)" \
		"$(cat "$vgd/out"; cat "$vgd/rc")" "$(cat "$d/out"; cat "$d/rc")"
	check "ALLOCSPY_BACKTRACE=$bt: the error reports are valgrind's" \
		"$(reports "$vgd/log" $cut)" "$(reports "$d/log" $cut)"
	check "ALLOCSPY_BACKTRACE=$bt: the ERROR SUMMARY is valgrind's" \
		"$(grep -a 'ERROR SUMMARY' "$vgd/log" | sed 's/^==[0-9]*== //')" \
		"$(grep -a 'ERROR SUMMARY' "$d/log" | sed 's/^==[0-9]*== //')"
	check "ALLOCSPY_BACKTRACE=$bt: the HEAP SUMMARY is valgrind's" \
		"$(heap_lines "$vgd/log")" "$(heap_lines "$d/log")"
done
check "the ERROR SUMMARY's figures" "ERROR SUMMARY: 13 errors from 11 contexts (suppressed: 0 from 0)" \
	"$(grep -a 'ERROR SUMMARY' "$TMP/bt1/log" | sed 's/^==[0-9]*== //')"
check "a double free names the free and the allocation" \
	"Invalid free() / delete / delete[] / realloc()
   at 0x: free (in)
   by 0x: main (err_frees.cc:28)
 Address 0x is 0 bytes inside a block of size 10 free'd
   at 0x: free (in)
   by 0x: main (err_frees.cc:27)
 Block was alloc'd at
   at 0x: malloc (in)
   by 0x: main (err_frees.cc:26)" "$(reports "$TMP/bt1/log" | sed -n 1,9p)"

# The dump: every context with its count, the summary, the stacks.
python3 - "$TMP/bt16/dump.json" >"$TMP/dump.txt" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
e = d["errors"]
print(len(e), sum(x["count"] for x in e))
print(" ".join(x["kind"] for x in e))
print(" ".join(x.get("where", "-") for x in e))
print(d["error_summary"])
first = e[0]
print(first["function"], first["block"]["size"], first["block"]["function"],
      len(d["stacks"][first["stack"]]) > 0, len(d["stacks"][first["block"]["free_stack"]]))
EOF
check "the dump: 11 contexts, 13 errors, their kinds, where their addresses are, the summary" \
	"11 13
invalid_free invalid_free invalid_free invalid_free invalid_free mismatched_free mismatched_free mismatched_free invalid_free fishy_value invalid_free
freed block stack global unknown block block block freed - block
{'errors': 13, 'contexts': 11, 'suppressed': 0, 'suppressed_contexts': 0}
free 10 malloc True 1" "$(cat "$TMP/dump.txt")"

# The error exit code: valgrind's --error-exitcode counts these errors.
(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 300 valgrind -q --error-exitcode=97 "$P" \
	>/dev/null 2>&1)
vrc=$?
(cd "$TMP" && vg_env ALLOCSPY_ERROR_EXITCODE=97 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$P" \
	>/dev/null 2>&1)
check "ALLOCSPY_ERROR_EXITCODE=97: the status valgrind's --error-exitcode=97 gives" "97 97" "$vrc $?"

# valgrind's own suppressions of these errors apply: Memcheck:Free every
# invalid and mismatched free, Memcheck:FishyValue the fishy size; without
# the latter, the fishy size alone is reported.
(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 300 valgrind --gen-suppressions=all \
	--log-file="$TMP/gen.log" "$P" >/dev/null 2>&1)
sed -n '/^{/,/^}/p' "$TMP/gen.log" >"$TMP/free.supp"
check "valgrind wrote 10 Memcheck:Free suppressions and a Memcheck:FishyValue" "10 1" \
	"$(grep -c '^   Memcheck:Free' "$TMP/free.supp") $(grep -c '^   Memcheck:FishyValue' "$TMP/free.supp")"
(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 300 valgrind --suppressions="$TMP/free.supp" \
	--log-file="$TMP/vsupp.log" "$P" >/dev/null 2>&1)
(cd "$TMP" && vg_env ALLOCSPY_SUPPRESSIONS="$TMP/free.supp" ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" \
	"$P" >/dev/null 2>"$TMP/asupp.log")
check "Memcheck:Free suppressions: the ERROR SUMMARY valgrind gives with them" \
	"$(grep -a 'ERROR SUMMARY' "$TMP/vsupp.log" | sed 's/^==[0-9]*== //')" \
	"$(grep -a 'ERROR SUMMARY' "$TMP/asupp.log" | sed 's/^==[0-9]*== //')"
sed '/^{/{N;N;/FishyValue/{:a;N;/\n}/!ba;d}}' "$TMP/free.supp" >"$TMP/free-only.supp"
(cd "$TMP" && vg_env ALLOCSPY_SUPPRESSIONS="$TMP/free-only.supp" ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" \
	"$P" >/dev/null 2>"$TMP/asupp2.log")
check "Memcheck:Free suppressions alone: only the fishy size is reported" \
	"Argument 'size' of function malloc has a fishy (possibly negative) value: -5
ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 12 from 10)" \
	"$(grep -aE '^==[0-9]*== (Argument|Invalid|Mismatched|ERROR)' "$TMP/asupp2.log" | sed 's/^==[0-9]*== //')"

# Count mode keeps no table: the frees go to the allocator, as natively.
(cd "$TMP" && "$P" >/dev/null 2>&1)
native=$?
(cd "$TMP" && ALLOCSPY_MODE=count ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$P" >/dev/null 2>&1)
check "count mode: no checks, the program's native status (glibc aborts it)" "134 $native" "$? $native"
