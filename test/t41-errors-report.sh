#!/bin/sh
# t41-errors-report.sh - allocspy-report errors against the shim's exit
# text: on test/progs/err_frees (every kind of heap error) with the caller
# alone and with 16 frames, and on a program whose thread frees twice and
# frees its stack while main leaks (a full leak check, so that the ERROR
# SUMMARY counts a loss record too), the command's text is the exit text's
# error reports and ERROR SUMMARY byte for byte. --gen-suppressions writes
# valgrind's own entries, which suppress every error under the shim (its
# ERROR SUMMARY's suppressed counts, the dump's) and under valgrind;
# --json gives the same reports; merge keeps every process's; a dump
# without heap errors says so in one line; a track dump with none gives
# the ERROR SUMMARY alone.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS

P=$PROGS/err_frees
[ -x "$P" ] || { not_ok "err_frees is built" "run make test-progs"; exit 0; }
[ -x "$REPORT" ] || { not_ok "allocspy-report is built" "$REPORT is missing"; exit 0; }

# exit_reports LOG: the error reports of an exit text and its ERROR SUMMARY
# line, as the shim wrote them.
exit_reports() {
	grep -a '^==[0-9]*==' "$1" |
		awk '/^==[0-9]*== (Invalid free|Mismatched free|Argument .* fishy)/ { on = 1 }
			/^==[0-9]*== HEAP SUMMARY:/ { on = 0 }
			on || /^==[0-9]*== ERROR SUMMARY:/ { print }'
}

# run NAME PROG ENV...: PROG under the shim in $TMP; its exit text in
# $TMP/NAME.log, its dump $TMP/NAME.json, stdout and status in NAME.out.
run() {
	rn=$1 rp=$2
	shift 2
	(cd "$TMP" && timeout -k 5 60 env "$@" ALLOCSPY_OUTPUT="$TMP/$rn.json" LD_PRELOAD="$LIB" \
		"$rp" >"$TMP/$rn.out" 2>"$TMP/$rn.log"; echo "status $?" >>"$TMP/$rn.out")
}

# --- the text is the exit text's ---------------------------------------------------

for bt in 1 16; do
	run "bt$bt" "$P" ALLOCSPY_BACKTRACE=$bt ALLOCSPY_LEAK_CHECK=full
	exit_reports "$TMP/bt$bt.log" >"$TMP/bt$bt.want"
	"$REPORT" errors "$TMP/bt$bt.json" >"$TMP/bt$bt.got" 2>"$TMP/bt$bt.err"
	check "err_frees, ALLOCSPY_BACKTRACE=$bt: errors exits 0, nothing on stderr" "0|" \
		"$?|$(cat "$TMP/bt$bt.err")"
	check "err_frees, ALLOCSPY_BACKTRACE=$bt: 11 reports and the ERROR SUMMARY at exit" \
		"11 ==PID== ERROR SUMMARY: 13 errors from 11 contexts (suppressed: 0 from 0)" \
		"$(grep -cE '== (Invalid|Mismatched|Argument)' "$TMP/bt$bt.want") $(tail -n 1 "$TMP/bt$bt.want" | sed 's/^==[0-9]*==/==PID==/')"
	check "err_frees, ALLOCSPY_BACKTRACE=$bt: the errors command's text is the exit text's, byte for byte" \
		"" "$(cmp "$TMP/bt$bt.want" "$TMP/bt$bt.got" 2>&1; diff "$TMP/bt$bt.want" "$TMP/bt$bt.got")"
done
check "ALLOCSPY_BACKTRACE=16: the frames of the context of three errors, through release()" \
	"   by 0xADDR: release(void*) (err_frees.cc:21)
   by 0xADDR: main (err_frees.cc:58)" \
	"$(sed -n 's/^==[0-9]*== //p' "$TMP/bt16.got" | grep -A2 '^   at 0x[0-9A-F]*: free' | grep 'release\|:58)' | sed 's/0x[0-9A-F]*/0xADDR/')"
check "ALLOCSPY_BACKTRACE=1: the same context, its caller alone" \
	"   by 0xADDR: release(void*) (err_frees.cc:21)
   by 0xADDR: main (err_frees.cc:30)" \
	"$(sed -n 's/^==[0-9]*== //p' "$TMP/bt1.got" | grep -A4 'release' | grep -E 'release|malloc' -A1 | grep '   by' | sed 's/0x[0-9A-F]*/0xADDR/')"

# A thread frees a block twice and frees its own stack; main leaks a block
# (a definite loss record, which a full leak check counts in the ERROR
# SUMMARY); the thread's stacks run through start_thread and clone.
cat >"$TMP/thr.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *lost;

static void *worker(void *arg)
{
	char local[16];
	char *s = strdup(arg);

	free(s);
	free(s);		/* twice */
	free(local);		/* the thread's stack */
	return NULL;
}

int main(void)
{
	pthread_t t;

	lost = malloc(40);
	lost = NULL;
	pthread_create(&t, NULL, worker, "a name");
	pthread_join(t, NULL);
	return 0;
}
EOF
if ${CC:-cc} -O0 -g -pthread -Wno-free-nonheap-object -o "$TMP/thr" "$TMP/thr.c" 2>"$TMP/cc.err"; then
	run thr "$TMP/thr" ALLOCSPY_BACKTRACE=16 ALLOCSPY_LEAK_CHECK=full
	exit_reports "$TMP/thr.log" >"$TMP/thr.want"
	"$REPORT" errors "$TMP/thr.json" >"$TMP/thr.got" 2>/dev/null
	check "a thread's double free and stack free, a leak: 2 reports, the leak counted in the ERROR SUMMARY" \
		"2 ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)" \
		"$(grep -cE '== (Invalid|Mismatched|Argument)' "$TMP/thr.want") $(tail -n 1 "$TMP/thr.want" | sed 's/^==[0-9]*== //')"
	check "a thread's errors: the errors command's text is the exit text's, byte for byte" \
		"" "$(cmp "$TMP/thr.want" "$TMP/thr.got" 2>&1; diff "$TMP/thr.want" "$TMP/thr.got")"
	check "a thread's errors: the free of its stack, on thread 2's; strdup's two frames; the thread's stack ends in clone" \
		"yes yes yes" \
		"$(grep -q "is on thread 2's stack" "$TMP/thr.got" && echo yes) $(grep -A1 ': malloc (in ' "$TMP/thr.got" | grep -q ': strdup (in ' && echo yes) $(grep -q ': clone (' "$TMP/thr.got" && echo yes)"
else
	not_ok "the thread program builds" "$(cat "$TMP/cc.err")"
fi

# --- --gen-suppressions --------------------------------------------------------------

# supp FILE: the suppressions of a text, one entry after the other.
supp() { sed -n '/^{/,/^}/p' "$1"; }
(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 120 valgrind --gen-suppressions=all \
	--log-file="$TMP/vg-gen.log" "$P" >/dev/null 2>&1)
supp "$TMP/vg-gen.log" >"$TMP/vg.supp"
for bt in 1 16; do
	"$REPORT" errors --gen-suppressions "$TMP/bt$bt.json" >"$TMP/gen$bt.txt" 2>/dev/null
	supp "$TMP/gen$bt.txt" >"$TMP/gen$bt.supp"
	check "--gen-suppressions, ALLOCSPY_BACKTRACE=$bt: the reports as without it, an entry after each" \
		"$(cat "$TMP/bt$bt.got")" "$(sed '/^{/,/^}/d' "$TMP/gen$bt.txt")"
	check "--gen-suppressions, ALLOCSPY_BACKTRACE=$bt: 10 Memcheck:Free entries, 1 Memcheck:FishyValue with malloc(size)" \
		"10 1 1" \
		"$(grep -c '^   Memcheck:Free$' "$TMP/gen$bt.supp") $(grep -c '^   Memcheck:FishyValue$' "$TMP/gen$bt.supp") $(grep -A1 '^   Memcheck:FishyValue$' "$TMP/gen$bt.supp" | grep -c '^   malloc(size)$')"
done
check "--gen-suppressions with 16 frames: valgrind's own --gen-suppressions=all entries, line for line" \
	"" "$(diff "$TMP/vg.supp" "$TMP/gen16.supp")"
check "--gen-suppressions with the caller alone: the frames of release(), without main below it" \
	"{
   <insert_a_suppression_name_here>
   Memcheck:Free
   fun:free
   fun:_ZL7releasePv
}" "$(tail -n 6 "$TMP/gen1.supp")"

for bt in 1 16; do
	run "supp$bt" "$P" ALLOCSPY_SUPPRESSIONS="$TMP/gen$bt.supp"
	(cd "$TMP" && env -i PATH=/usr/bin:/bin timeout -k 5 120 valgrind \
		--suppressions="$TMP/gen$bt.supp" --log-file="$TMP/vsupp$bt.log" "$P" >/dev/null 2>&1)
	check "the entries of ALLOCSPY_BACKTRACE=$bt suppress every error, under the shim and under valgrind" \
		"ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 13 from 11)
ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 13 from 11)" \
		"$(grep -a 'ERROR SUMMARY' "$TMP/supp$bt.log" | sed 's/^==[0-9]*== //')
$(grep -a 'ERROR SUMMARY' "$TMP/vsupp$bt.log" | sed 's/^==[0-9]*== //')"
	"$REPORT" errors "$TMP/supp$bt.json" >"$TMP/supp$bt.got" 2>&1
	check "the entries of ALLOCSPY_BACKTRACE=$bt: the shim's dump has no error left, the ERROR SUMMARY alone" \
		"0|==PID== ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 13 from 11)" \
		"$?|$(sed 's/^==[0-9]*==/==PID==/' "$TMP/supp$bt.got")"
done
# Without the FishyValue entry, the fishy size alone is reported.
sed '/^{/{N;N;/FishyValue/{:a;N;/\n}/!ba;d}}' "$TMP/gen16.supp" >"$TMP/free-only.supp"
run freeonly "$P" ALLOCSPY_BACKTRACE=16 ALLOCSPY_SUPPRESSIONS="$TMP/free-only.supp"
"$REPORT" errors "$TMP/freeonly.json" 2>/dev/null | sed 's/^==[0-9]*== //' >"$TMP/freeonly.got"
check "the Memcheck:Free entries alone: the fishy size is the one report left" \
	"Argument 'size' of function malloc has a fishy (possibly negative) value: -5
ERROR SUMMARY: 1 errors from 1 contexts (suppressed: 12 from 10)" \
	"$(grep -E '^(Argument|Invalid|Mismatched|ERROR)' "$TMP/freeonly.got")"

# --- --json -----------------------------------------------------------------------------

"$REPORT" errors --json --gen-suppressions "$TMP/bt16.json" >"$TMP/bt16.ej" 2>/dev/null
check "--json: exit 0, the dump's file and pid, the ERROR SUMMARY" \
	"0 $TMP/bt16.json True {'errors': 13, 'contexts': 11, 'suppressed': 0, 'suppressed_contexts': 0}" \
	"$? $(json_get "$TMP/bt16.ej" '"%s %s %s" % (d["file"], d["pid"] == json.load(open(sys.argv[1].replace(".ej", ".json")))["program"]["pid"], d["error_summary"])' 2>&1 | tail -n 1)"
check "--json: each context's kind, count, function and where" \
	"invalid_free 1 free freed|invalid_free 1 free block|invalid_free 1 free stack|invalid_free 1 free global|invalid_free 1 free unknown|mismatched_free 1 free block|mismatched_free 1 delete_sized block|mismatched_free 1 delete[] block|invalid_free 1 realloc freed|fishy_value 1 malloc -|invalid_free 3 free block" \
	"$(json_get "$TMP/bt16.ej" '"|".join("%s %d %s %s" % (e["kind"], e["count"], e["function"], e.get("where", "-")) for e in d["errors"])')"
check "--json: the double free's frames, the block's free and allocation, with files and lines" \
	"free:None main:28 | 0 10 malloc | free:None main:27 | malloc:None main:26" \
	"$(json_get "$TMP/bt16.ej" '(lambda e, f: "%s | %d %d %s | %s | %s" % (f(e["frames"]), e["block"]["offset"], e["block"]["size"], e["block"]["function"], f(e["block"]["free_frames"]), f(e["block"]["alloc_frames"])))(d["errors"][0], lambda fr: " ".join("%s:%s" % (x["function"], x["line"]) for x in fr))')"
check "--json: the interposers' symbols, demangled names and the shim's module" \
	"_ZdlPvm operator delete(void*, unsigned long) liballocspy.so | _Znam operator new[](unsigned long)" \
	"$(json_get "$TMP/bt16.ej" '"%s %s %s | %s %s" % (d["errors"][6]["frames"][0]["symbol"], d["errors"][6]["frames"][0]["function"], d["errors"][6]["frames"][0]["module"].rsplit("/", 1)[1], d["errors"][5]["block"]["alloc_frames"][0]["symbol"], d["errors"][5]["block"]["alloc_frames"][0]["function"])')"
check "--json: the stack's thread, the global's symbol, the fishy argument and value" \
	"1 _ZL10global_int 0 size -5" \
	"$(json_get "$TMP/bt16.ej" '"%d %s %d %s %d" % (d["errors"][2]["thread"], d["errors"][3]["symbol"], d["errors"][3]["offset"], d["errors"][9]["argument"], d["errors"][9]["value"])')"
json_get "$TMP/bt16.ej" '"\n".join([y for e in d["errors"] for y in ([e["heading"]] + ([" " + e["description"]] if "description" in e else []))])' \
	>"$TMP/json.lines" 2>&1
check "--json: each heading and address's description, the text's lines" \
	"$(sed -n 's/^==[0-9]*== \(Invalid\|Mismatched\|Argument\| Address\)/\1/p' "$TMP/bt16.got")" "$(cat "$TMP/json.lines")"
check "--json --gen-suppressions: each context's entry, the text's" "$(cat "$TMP/gen16.supp")" \
	"$(json_get "$TMP/bt16.ej" '"".join(e["suppression"] for e in d["errors"])' 2>&1)"
"$REPORT" --json errors "$TMP/bt1.json" >"$TMP/bt1.ej" 2>/dev/null
check "--json before the command; without --gen-suppressions, no suppression" "0 False" \
	"$? $(json_get "$TMP/bt1.ej" 'any("suppression" in e for e in d["errors"])')"

# --- dumps without heap errors ---------------------------------------------------------------

run count "$PROGS/par_basic" ALLOCSPY_MODE=count
# nomore NAME FILE WHY ARGS...: errors ARGS FILE exits 2 with one line, "no
# heap errors in this dump (WHY)", and nothing on stdout.
nomore() {
	nn=$1 nf=$2 why=$3
	shift 3
	"$REPORT" errors "$@" "$nf" >"$TMP/nm.out" 2>"$TMP/nm.err"
	check "$nn: status 2, one line, nothing on stdout" \
		"2|allocspy-report: error: $nf: no heap errors in this dump ($why)|" \
		"$?|$(cat "$TMP/nm.err")|$(cat "$TMP/nm.out")"
}
nomore "a count-mode dump" "$TMP/count.json" "ALLOCSPY_MODE=count looks for none"
nomore "a count-mode dump, --json" "$TMP/count.json" "ALLOCSPY_MODE=count looks for none" --json
nomore "a track dump of an allocspy without heap errors" "$TOP/test/golden/track.json" \
	"it was written by an allocspy that did not look for them"
# merge keeps each process's contexts, one dump's after the other's, the
# frames moved with their modules, the ERROR SUMMARY the sum; unless a dump
# has none.
"$REPORT" merge -o "$TMP/merged.json" "$TMP/bt1.json" "$TMP/bt16.json" 2>"$TMP/merge.err"
# frames FILE: the text, the prefix and the frames' addresses masked.
frames() { sed 's/^==[0-9]*==/==PID==/; s/^\(==PID==    [ab][ty] \)0x[0-9A-F]*:/\10xADDR:/' "$1"; }
"$REPORT" errors "$TMP/merged.json" >"$TMP/merged.got" 2>&1
check "a merged dump: both dumps' reports in turn, then the ERROR SUMMARY of both" \
	"0|$(frames "$TMP/bt1.got" | sed '$d'; frames "$TMP/bt16.got" | sed '$d')
==PID== ERROR SUMMARY: 26 errors from 22 contexts (suppressed: 0 from 0)" \
	"$(cat "$TMP/merge.err")$?|$(frames "$TMP/merged.got")"
python3 - "$TMP/bt1.json" "$TMP/old.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
del d["errors"], d["error_summary"]
json.dump(d, open(sys.argv[2], "w"))
PY
"$REPORT" merge -o "$TMP/merged-old.json" "$TMP/old.json" "$TMP/bt16.json" 2>"$TMP/merge.err"
check "merged with a dump without heap errors: one warning" \
	"allocspy-report: warning: $TMP/old.json: no heap errors: the merged dump has none" "$(cat "$TMP/merge.err")"
nomore "a merged dump without heap errors" "$TMP/merged-old.json" "a dump merged into it had none"

# A track dump without errors: the ERROR SUMMARY alone.
run clean "$PROGS/par_basic"
"$REPORT" errors "$TMP/clean.json" >"$TMP/clean.got" 2>&1
check "a track dump without heap errors: the exit text's ERROR SUMMARY alone, status 0" \
	"0|$(grep -a 'ERROR SUMMARY' "$TMP/clean.log")" "$?|$(cat "$TMP/clean.got")"
check "... --json: no errors" "[] 0" \
	"$("$REPORT" errors --json "$TMP/clean.json" 2>/dev/null | python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["errors"], d["error_summary"]["errors"])')"

# --- the command line ------------------------------------------------------------------

"$REPORT" errors "$TMP/bt1.json" "$TMP/bt16.json" >"$TMP/out" 2>"$TMP/err"
check "errors with two dumps: a usage error" "2|allocspy-report: error: one dump only" \
	"$?|$(head -n 1 "$TMP/err")"
"$REPORT" errors --show-leak-kinds=all "$TMP/bt1.json" >"$TMP/out" 2>"$TMP/err"
check "errors --show-leak-kinds: a usage error" \
	"2|allocspy-report: error: --show-leak-kinds is an option of the leaks command" \
	"$?|$(head -n 1 "$TMP/err")"
"$REPORT" eror "$TMP/bt1.json" >"$TMP/out" 2>"$TMP/err"
check "a misspelled errors command: the suggestion" \
	"2|allocspy-report: error: unknown command 'eror'; did you mean 'errors'? (the commands: summary, leaks, errors, compare, check, timeline, export, merge, html, help)" \
	"$?|$(head -n 1 "$TMP/err")"
