#!/bin/sh
# t50-report.sh - allocspy-report: the summary, leaks, errors and compare
# commands against the golden files in test/golden, loss records symbolized from a
# program built here, the JSON outputs, the exit text against the shim's,
# and the command line.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
CC=${CC:-cc}
unset DEBUGINFOD_URLS	# no network lookups for debugging information

if [ ! -x "$REPORT" ]; then
	not_ok "allocspy-report is built" "$REPORT is missing"
	exit 0
fi

# golden NAME EXPECTED ARGS...: allocspy-report ARGS exits 0 and writes
# test/golden/EXPECTED on stdout, byte for byte, and on stderr the lines of
# test/golden/EXPECTED with .err for .expected, or nothing.
golden() {
	name=$1 exp=$2
	shift 2
	(cd "$G" && "$REPORT" "$@") >"$TMP/out" 2>"$TMP/err"
	check "$name: exit status 0" 0 "$?"
	check "$name: stdout is $exp" "" "$(diff "$G/$exp" "$TMP/out" 2>&1)"
	err=$G/${exp%.expected}.err
	if [ -f "$err" ]; then
		check "$name: stderr is ${err#"$G"/}" "$(cat "$err")" "$(cat "$TMP/err")"
	else
		check "$name: stderr is empty" "" "$(cat "$TMP/err")"
	fi
}

# --- the summary ---------------------------------------------------------------------

golden "summary of a track dump with leaks" track.expected track.json
golden "summary of a count dump" count.expected count.json
golden "summary with refs, all blocks freed, no leaks key" refs.expected refs.json
golden "summary without a leak check" strdup.expected strdup.json
golden "summary of 25 threads and more, unknown keys" threads.expected threads.json
golden "summary of a leak check without loss records" noloss.expected noloss.json
golden "summary of a dump written during the run: peak bound and time, temporary" \
	timed.expected timed.json
golden "summary of a dump written at a fatal signal" signal.expected signal.json
golden "summary of a dump with heap errors: the ERROR SUMMARY" errors.expected errors.json
golden "summary of a guarded run: the fatal fault, the ERROR SUMMARY, the guarded blocks" \
	guard.expected guard.json

# --- leaks -----------------------------------------------------------------------------

golden "leaks: definite and possible by default" track.leaks.expected leaks track.json
golden "leaks: --show-leak-kinds=all" track.leaks-all.expected \
	leaks --show-leak-kinds=all track.json
golden "leaks: --show-leak-kinds=indirect,reachable" track.leaks-ir.expected \
	leaks --show-leak-kinds=indirect,reachable track.json
golden "leaks: --show-leak-kinds=none" track.leaks-none.expected \
	leaks --show-leak-kinds=none track.json
golden "leaks: --gen-suppressions" track.supp.expected \
	leaks --gen-suppressions --show-leak-kinds=definite,possible,reachable track.json
golden "leaks: nothing left" refs.leaks.expected leaks refs.json
golden "leaks: no loss records" noloss.leaks.expected leaks noloss.json

# --- errors -----------------------------------------------------------------------------

# errors.json: err_frees under the shim, every kind of heap error, its
# modules elsewhere (frames without symbols: t41 compares symbolized
# reports with the shim's exit text).
golden "errors: every kind of heap error" errors.errors.expected errors errors.json
golden "errors --gen-suppressions" errors.supp.expected errors --gen-suppressions errors.json
# guard.json: test/guard/guarded.c several under the shim with
# ALLOCSPY_GUARD=1 and 16 frames, its modules elsewhere: bytes written
# before a block and after one, then a read after free (t42 compares the
# symbolized reports with the exit text).
golden "errors: a guarded block's errors" guard.errors.expected errors guard.json
golden "errors --gen-suppressions: Memcheck:Addr8, allocspy:Overwritten" guard.supp.expected \
	errors --gen-suppressions guard.json

# --- compare ----------------------------------------------------------------------------

golden "compare: two dumps of different programs" compare-2.expected \
	compare strdup.json refs.json
golden "compare: three dumps" compare-3.expected \
	compare strdup.json refs.json count.json
golden "compare: the same program, track and count" compare-same.expected \
	compare track.json count.json

# --- symbolized loss records -------------------------------------------------------------

# leakprog prints return addresses in its own code relative to its load
# bias; the dump places it at BASE and the report must find the functions,
# lines and inlined calls those addresses are in.
BASE=93824992231424		# 0x555555554000
if $CC -g -O0 -o "$TMP/leakprog" "$G/leakprog.c" 2>"$TMP/cc.err" &&
	"$TMP/leakprog" >"$TMP/addrs"; then
	ok "leakprog builds and runs"
else
	not_ok "leakprog builds and runs" "$(cat "$TMP/cc.err")"
fi
addr() { sed -n "s/^$1 //p" "$TMP/addrs"; }

# The addresses lie in the functions nm says they do.
# in_fn NAME ADDR: ADDR is after the start of function NAME and not past it.
in_fn() {
	# shellcheck disable=SC2046 # nm's two words: the start and the size
	set -- $(nm -S "$TMP/leakprog" | awk -v f="$1" '$4 == f { print $1, $2 }') "$2"
	if [ $# -ne 3 ]; then
		echo "no symbol"
	elif [ $(($3)) -gt $((0x$1)) ] && [ $(($3)) -le $((0x$1 + 0x$2)) ]; then
		echo yes
	else
		echo no
	fi
}
check "nm: the fill call returns into make_tree" yes "$(in_fn make_tree "$(addr fill)")"
check "nm: the show call returns into make_tree" yes "$(in_fn make_tree "$(addr make_tree)")"
check "nm: make_tree returns into main" yes "$(in_fn main "$(addr main)")"

build_id=$(readelf -n "$TMP/leakprog" | sed -n 's/.*Build ID: *//p')
# leakprog_dump EXE BUILD_ID OUT: the dump of leakprog.json.in.
leakprog_dump() {
	sed -e "s|@EXE@|$1|g" -e "s|@BUILD_ID@|$2|" \
		-e "s|@BASE@|$BASE|" \
		-e "s|@FILL@|$((BASE + $(addr fill)))|" \
		-e "s|@MAKE_TREE@|$((BASE + $(addr make_tree)))|" \
		-e "s|@MAIN@|$((BASE + $(addr main)))|g" \
		-e "s|@GONE_BASE@|139637976727552|" -e "s|@GONE_END@|139637976793088|" \
		-e "s|@GONE@|139637976732212|g" \
		-e "s|@LIBC_BASE@|139706696204288|" -e "s|@LIBC@|139706696375696|" \
		"$G/leakprog.json.in" >"$3"
}
# normalized: the output with addresses as 0xADDR and $TMP as TMP.
normalized() {
	sed -e 's/ 0x[0-9A-F][0-9A-F]*: / 0xADDR: /' -e "s|$TMP|TMP|g" "$1"
}
# sym_golden NAME EXPECTED DUMP ARGS...: like golden, addresses normalized;
# the stderr lines go to $TMP/err.
sym_golden() {
	name=$1 exp=$2 dump=$3
	shift 3
	"$REPORT" leaks "$@" "$dump" >"$TMP/out" 2>"$TMP/err"
	check "$name: exit status 0" 0 "$?"
	normalized "$TMP/out" >"$TMP/out.n"
	check "$name: stdout is $exp" "" "$(diff "$G/$exp" "$TMP/out.n" 2>&1)"
}
gone="allocspy-report: warning: /nonexistent/allocspy-golden/libgone.so: no symbols: No such file or directory"

leakprog_dump "$TMP/leakprog" "$build_id" "$TMP/leakprog.json"
sym_golden "symbolized leaks" leakprog.leaks.expected "$TMP/leakprog.json"
check "symbolized leaks: one warning, for the missing module only" "$gone" "$(cat "$TMP/err")"
sym_golden "symbolized leaks, all kinds, suppressions" leakprog.supp.expected \
	"$TMP/leakprog.json" --show-leak-kinds=all --gen-suppressions

leakprog_dump "$TMP/leakprog" 0123456789abcdef "$TMP/mismatch.json"
sym_golden "build-id mismatch: the same records" leakprog.leaks.expected "$TMP/mismatch.json"
check "build-id mismatch: one warning for the module, when first used" \
	"$gone
allocspy-report: warning: $TMP/leakprog: not the file that ran, symbols may be wrong [build-id mismatch]" \
	"$(cat "$TMP/err")"

# Separate debugging information through .gnu_debuglink, next to the file.
mkdir -p "$TMP/stripped"
if objcopy --only-keep-debug "$TMP/leakprog" "$TMP/stripped/leakprog.debug" &&
	objcopy --strip-all --add-gnu-debuglink="$TMP/stripped/leakprog.debug" \
		"$TMP/leakprog" "$TMP/stripped/leakprog"; then
	check "the stripped copy has no .debug_info or .symtab" "" \
		"$(readelf -SW "$TMP/stripped/leakprog" | grep -E '\.debug_info|\.symtab')"
	leakprog_dump "$TMP/stripped/leakprog" "$build_id" "$TMP/stripped.json"
	sym_golden "separate debug info by debuglink" leakprog.leaks.expected "$TMP/stripped.json"
	check "separate debug info: no other warning" "$gone" "$(cat "$TMP/err")"
else
	not_ok "objcopy makes a stripped copy with a debuglink"
fi

# --- JSON -----------------------------------------------------------------------------

# json_ok NAME ARGS...: the output of allocspy-report ARGS parses as JSON.
json_ok() {
	name=$1
	shift
	(cd "$G" && "$REPORT" "$@") >"$TMP/j.json" 2>/dev/null
	check "--json $name: exit status 0" 0 "$?"
	if python3 -m json.tool "$TMP/j.json" >/dev/null 2>"$TMP/j.err"; then
		ok "--json $name: valid JSON"
	else
		not_ok "--json $name: valid JSON" "$(cat "$TMP/j.err")"
	fi
}
for d in track count refs strdup threads noloss timed signal; do
	json_ok "summary $d" --json $d.json
done
json_ok "leaks" leaks --json --show-leak-kinds=all --gen-suppressions track.json
json_ok "errors" errors --json --gen-suppressions errors.json
json_ok "summary with an ERROR SUMMARY" --json errors.json
check "--json summary: the ERROR SUMMARY, or null" \
	"{'errors': 13, 'contexts': 11, 'suppressed': 0, 'suppressed_contexts': 0} None" \
	"$(json_get "$TMP/j.json" 'd["error_summary"]') $( (cd "$G" && "$REPORT" --json track.json) | python3 -c 'import json, sys; print(json.load(sys.stdin)["error_summary"])')"
json_ok "errors of guarded blocks" errors --json --gen-suppressions guard.json
check "--json errors of guarded blocks: kind, size, function, where, offset" \
	"overwritten - free before -2|overwritten - free after 14|invalid_read 8 None freed 16" \
	"$(json_get "$TMP/j.json" '"|".join("%s %s %s %s %d" % (e["kind"], e.get("size", "-"), e["function"], e["where"], e["block"]["offset"]) for e in d["errors"])')"
json_ok "summary of a guarded run" --json guard.json
check "--json summary: the guarded blocks" "{'mean': 1, 'slots': 1024, 'guarded': 4, 'live': 1}" \
	"$(json_get "$TMP/j.json" 'd["guard"]')"
json_ok "compare" compare --json strdup.json refs.json count.json

(cd "$G" && "$REPORT" --json track.json) >"$TMP/s.json"
check "--json summary: heap" "4379 283 4000" \
	"$(json_get "$TMP/s.json" '"%d %d %d" % (d["heap"]["bytes_allocated"], d["heap"]["in_use_bytes"], d["heap"]["peak_bytes"])')"
check "--json summary: leaks, functions, histogram" "132 malloc:5 calloc:1 strdup:1 free:1 malloc_usable_size:1 9-16:1" \
	"$(json_get "$TMP/s.json" '" ".join([str(d["leaks"]["definitely_lost"]["bytes"])] + ["%s:%d" % (f["name"], f["calls"]) for f in d["functions"]] + ["%d-%d:%d" % (b["min"], b["max"], b["count"]) for b in d["histogram"][:1]])')"
(cd "$G" && "$REPORT" --json timed.json) >"$TMP/tm.json" 2>/dev/null
check "--json summary: the dump's reason and time, the peak's bound and time, temporary" \
	"interval 0.1 None 512 0.05 2 malloc:1 strdup:1" \
	"$(json_get "$TMP/tm.json" '"%s %s %s %d %s %d %s" % (d["dump"]["reason"], d["dump"]["t_s"], d["dump"]["signal"], d["heap"]["peak_bytes_bound"], d["heap"]["peak_t_s"], d["heap"]["temporary"], " ".join("%s:%d" % (f["name"], f["temporary"]) for f in d["functions"] if f.get("temporary")))')"
(cd "$G" && "$REPORT" --json signal.json) >"$TMP/sg.json" 2>/dev/null
check "--json summary: the signal" "signal 11 SIGSEGV" \
	"$(json_get "$TMP/sg.json" '"%s %d %s" % (d["dump"]["reason"], d["dump"]["signal"]["number"], d["dump"]["signal"]["name"])')"
(cd "$G" && "$REPORT" --json threads.json) >"$TMP/t.json"
check "--json summary: every thread, most allocations first" "25 3 5008 5017" \
	"$(json_get "$TMP/t.json" '"%d %d %d %d" % (len(d["threads"]), d["threads_omitted"], d["threads"][0]["tid"], d["threads"][19]["tid"])')"
(cd "$G" && "$REPORT" --json count.json) >"$TMP/c.json"
check "--json summary: count mode has null sizes" "None None count" \
	"$(json_get "$TMP/c.json" '"%s %s %s" % (d["heap"]["in_use_bytes"], d["heap"]["peak_bytes"], d["mode"])')"

"$REPORT" leaks --json --show-leak-kinds=all --gen-suppressions "$TMP/leakprog.json" \
	>"$TMP/l.json" 2>/dev/null
check "--json leaks: records shown and their numbers" "1/5 2/5 3/5 5/5" \
	"$(json_get "$TMP/l.json" '" ".join("%d/%d" % (r["record"], r["of"]) for r in d["loss_records"])')"
check "--json leaks: the inlined frames of record 5" \
	"fill:leakprog.c:25:True build:leakprog.c:30:True make_tree:leakprog.c:35:False main:leakprog.c:44:False" \
	"$(json_get "$TMP/l.json" '" ".join("%s:%s:%s:%s" % (f["function"], f["file"], f["line"], f["inlined"]) for f in d["loss_records"][3]["frames"])')"
check "--json leaks: frames without symbols" "None None /nonexistent/allocspy-golden/libgone.so" \
	"$(json_get "$TMP/l.json" '"%s %s %s" % (d["loss_records"][2]["frames"][0]["module"], d["loss_records"][2]["frames"][1]["function"], d["loss_records"][2]["frames"][1]["module"])')"
check "--json leaks: the suppression and the allocation function" "new fun:_Znwm" \
	"$(json_get "$TMP/l.json" '"%s %s" % (d["loss_records"][3]["alloc_fn"], d["loss_records"][3]["suppression"].split("\n")[4].strip())')"

(cd "$G" && "$REPORT" compare --json strdup.json refs.json count.json) >"$TMP/cmp.json"
check "--json compare: labels, note, allocs and ratios" \
	"['strdup', 'refs', 'count']|True|[40004, 3, 1234567]|0.0000750|30.8611" \
	"$(json_get "$TMP/cmp.json" '"%s|%s|%s|%.7f|%.4f" % ([x["label"] for x in d["dumps"]], d["different_programs"], d["rows"][0]["values"], d["rows"][0]["ratios"][0], d["rows"][0]["ratios"][1])')"
# The dumps are named by their files, never by a command line two runs share.
labels() {
	(cd "$G" && "$REPORT" --json compare "$@") 2>"$TMP/err" | python3 -c 'import json, sys; print(" | ".join(x["label"] for x in json.load(sys.stdin)["dumps"]))'
}
check "compare: labels from the files' base names, less .json" "strdup | refs" "$(labels strdup.json refs.json)"
mkdir -p "$TMP/run1" "$TMP/run2" "$TMP/qwertyuiopqwerty/a" "$TMP/qwertyuiopqwerty/b"
for dir in run1 run2 qwertyuiopqwerty/a qwertyuiopqwerty/b; do cp "$G/track.json" "$TMP/$dir/run.json"; done
labels_in_tmp() {
	(cd "$TMP" && "$REPORT" --json compare "$@") 2>/dev/null | python3 -c 'import json, sys; print(" | ".join(x["label"] for x in json.load(sys.stdin)["dumps"]))'
}
check "compare: two files of one base name: the names as given" "run1/run.json | run2/run.json" \
	"$(labels_in_tmp run1/run.json run2/run.json)"
check "compare: a long name as given keeps its last 24 columns" \
	"...uiopqwerty/a/run.json | ...uiopqwerty/b/run.json" \
	"$(labels_in_tmp qwertyuiopqwerty/a/run.json qwertyuiopqwerty/b/run.json)"
check "compare: one file twice: #2 after the second" "track | track #2" "$(labels track.json track.json)"
check "compare: --label NAME per dump, in order; the rest by their files" "before | after | count" \
	"$(labels --label before strdup.json --label=after refs.json count.json)"
(cd "$G" && "$REPORT" compare --label before --label after track.json count.json) >"$TMP/out" 2>/dev/null
check "compare: the text table's columns, named by --label" "before           after        ratio" \
	"$(sed -n 1p "$TMP/out" | sed 's/^ *//')"

check "--json compare: unknown sizes are null" "[0, 0, None] [None, None]" \
	"$(json_get "$TMP/cmp.json" '"%s %s" % ([r for r in d["rows"] if r["name"].startswith("in use")][0]["values"], [r for r in d["rows"] if r["name"].startswith("in use")][0]["ratios"])')"

# --- the exit text is the shim's, byte for byte ---------------------------------------------

if [ -f "$LIB" ]; then
	cat >"$TMP/exit.c" <<'EOF'
#include <allocspy.h>
#include <stdlib.h>
#include <string.h>

static void *kept;

int main(int argc, char **argv)
{
	void **chain = malloc(2 * sizeof *chain);
	asp_ref_t *r = malloc(sizeof *r);

	asp_ref_init(r);
	for (int i = 0; i < 1500; i++) {
		asp_ref_acquire(r);
		asp_ref_release(r);
		free(strdup("a string of some length"));
	}
	asp_ref_release(r);
	free(r);
	chain[0] = malloc(1000);
	chain = NULL;
	kept = calloc(3, 7);
	if (argc > 1)
		free(kept);
	return 0;
}
EOF
	if $CC -O0 -g -Iinclude -I"$TOP/include" -o "$TMP/exit" "$TMP/exit.c" 2>"$TMP/cc.err"; then
		# exit_parity NAME ENV...: the report's first lines are the exit text.
		exit_parity() {
			name=$1
			shift
			rm -f "$TMP/exit.json"
			timeout 60 env "$@" ALLOCSPY_OUTPUT="$TMP/exit.json" \
				LD_PRELOAD="$LIB" "$TMP/exit" >/dev/null 2>"$TMP/exit.err"
			# The loss records of a full leak check are the leaks
			# command's, the heap errors' reports the errors
			# command's; the summary is the rest.
			grep -a '^==[0-9]*==' "$TMP/exit.err" |
				awk '/ in loss record |== (Invalid free|Mismatched free|Argument .*fishy)/ { skip = 1 } !skip { print } skip && /^==[0-9]*== $/ { skip = 0 }' \
				>"$TMP/exit.txt"
			grep -a ' in loss record ' "$TMP/exit.err" >"$TMP/exit.records"
			if [ ! -s "$TMP/exit.txt" ] || [ ! -f "$TMP/exit.json" ]; then
				not_ok "exit text, $name: the shim wrote it and a dump" \
					"$(tail -n 3 "$TMP/exit.err")"
				return
			fi
			"$REPORT" "$TMP/exit.json" >"$TMP/exit.rep" 2>&1
			head -n "$(wc -l <"$TMP/exit.txt")" "$TMP/exit.rep" >"$TMP/exit.head"
			check "exit text, $name: the report starts with it, byte for byte" "" \
				"$(cmp "$TMP/exit.txt" "$TMP/exit.head" 2>&1; diff "$TMP/exit.txt" "$TMP/exit.head")"
			if [ -s "$TMP/exit.records" ]; then
				"$REPORT" leaks "$TMP/exit.json" 2>&1 | grep -a ' in loss record ' >"$TMP/exit.rrec"
				check "exit text, $name: leaks prints the same loss records" \
					"$(cat "$TMP/exit.records")" "$(cat "$TMP/exit.rrec")"
			fi
		}
		exit_parity "track, full leak check" ALLOCSPY_LEAK_CHECK=full ALLOCSPY_BACKTRACE=4
		exit_parity "track, no leak check" ALLOCSPY_LEAK_CHECK=no
		exit_parity "count mode" ALLOCSPY_MODE=count
	else
		not_ok "the exit text program builds" "$(cat "$TMP/cc.err")"
	fi
else
	ok "exit text equals the shim's # SKIP $LIB not built"
fi

# --- the command line ---------------------------------------------------------------------

"$REPORT" --help >"$TMP/out" 2>"$TMP/err"
check "--help: exit status 0" 0 "$?"
check "--help: the usage on stdout, nothing on stderr" "usage: allocspy-report [--json] [summary] DUMP|" \
	"$(head -n 1 "$TMP/out")|$(cat "$TMP/err")"
"$REPORT" --version >"$TMP/out" 2>"$TMP/err"
check "--version: exit status 0" 0 "$?"
check "--version: the version" "allocspy-report 0.1.0|" "$(cat "$TMP/out")|$(cat "$TMP/err")"
(cd "$G" && "$REPORT" leaks --help track.json) >"$TMP/out" 2>&1
check "leaks --help: the usage" "usage: allocspy-report [--json] [summary] DUMP" "$(head -n 1 "$TMP/out")"

# usage NAME ERROR ARGS...: exit status 2, the error line, then a hint
# (not the whole usage), on stderr only.
usage() {
	name=$1 msg=$2
	shift 2
	(cd "$G" && "$REPORT" "$@") >"$TMP/out" 2>"$TMP/err"
	check "usage error, $name: exit status 2" 2 "$?"
	check "usage error, $name: the message and a hint on stderr, no stdout" \
		"allocspy-report: error: $msg|Try 'allocspy-report --help'.|" \
		"$(cat "$TMP/err" | tr '\n' '|')$(cat "$TMP/out")"
}
usage "no arguments" "no dump given"
usage "no dump for leaks" "no dump given" leaks
usage "two dumps" "one dump only" track.json count.json
CMDS="(the commands: summary, leaks, errors, compare, check, timeline, export, merge, html, help)"
FORMATS="(the formats: pprof, gperftools, massif, callgrind, heaptrack, folded, speedscope)"
usage "a misspelled command" "unknown command 'leak'; did you mean 'leaks'? $CMDS" leak track.json
usage "a misspelled command alone" "unknown command 'leak'; did you mean 'leaks'? $CMDS" leak
usage "two letters swapped" "unknown command 'hmtl'; did you mean 'html'? $CMDS" hmtl track.json
usage "a misspelled command before its options" "unknown command 'exprot'; did you mean 'export'? $CMDS" \
	exprot --format=pprof track.json
usage "a word that is no command nor file, then a dump" "unknown command 'frobnicate' $CMDS" \
	frobnicate track.json
usage "unknown option" "unknown option '--verbose'" --verbose track.json
usage "a misspelled option" "unknown option '--jsn'; did you mean '--json'?" --jsn track.json
usage "a misspelled option with its value" "unknown option '--fromat'; did you mean '--format'?" \
	export --fromat=pprof track.json
usage "a misspelled format" "bad --format value 'pprf'; did you mean 'pprof'? $FORMATS" \
	export --format=pprf track.json
usage "a format far from any" "bad --format value 'svg' $FORMATS" export --format svg track.json
usage "a misspelled weight" \
	"bad --weight value 'alocs'; did you mean 'allocs'? (the weights: alloc_bytes, allocs, inuse_bytes, peak_bytes, temporary)" \
	export --format=folded --weight=alocs track.json
usage "a misspelled leak kind" "bad --show-leak-kinds value 'definite,posible'; did you mean 'possible' for 'posible'?" \
	leaks --show-leak-kinds=definite,posible track.json
(cd "$G" && "$REPORT" nosuch.json) >"$TMP/out" 2>"$TMP/err"
check "a missing dump far from any command: exit status 2, the file's error" \
	"2|allocspy-report: error: nosuch.json: No such file or directory" "$?|$(cat "$TMP/err")"
for h in help -h; do
	"$REPORT" $h >"$TMP/out" 2>"$TMP/err"
	check "$h: exit status 0, the usage on stdout as --help writes it, nothing on stderr" "0||" \
		"$?|$("$REPORT" --help | cmp - "$TMP/out" 2>&1)|$(cat "$TMP/err")"
done
usage "a leaks option for the summary" "--gen-suppressions is an option of the leaks and errors commands" \
	--gen-suppressions track.json
usage "a leaks option for compare" "--show-leak-kinds is an option of the leaks command" \
	compare --show-leak-kinds all track.json count.json
usage "--show-leak-kinds without its value" "--show-leak-kinds needs a value" leaks track.json --show-leak-kinds
usage "summary with two dumps" "one dump only" summary track.json count.json
usage "bad leak kinds" "bad --show-leak-kinds value 'definite,lost'" \
	leaks --show-leak-kinds=definite,lost track.json
usage "empty leak kinds" "bad --show-leak-kinds value ''" leaks --show-leak-kinds= track.json
usage "compare with one dump" "compare needs two dumps or more" compare track.json
usage "more labels than dumps" "more --label names than dumps" compare --label a --label b --label c \
	track.json count.json
usage "--label for the summary" "--label is an option of the compare and html commands" --label a track.json
usage "an empty --label" "--label needs a name" compare --label= track.json count.json

# Options before the command, the command's explicit name, a value after a space.
(cd "$G" && "$REPORT" --json leaks track.json) >"$TMP/a" 2>/dev/null
(cd "$G" && "$REPORT" leaks --json track.json) >"$TMP/b" 2>/dev/null
check "--json before leaks: the same output as after it" "" "$(cmp "$TMP/a" "$TMP/b" 2>&1)"
check "... which is JSON" True "$(json_get "$TMP/a" '"loss_records" in d')"
(cd "$G" && "$REPORT" summary track.json) >"$TMP/a" 2>&1
(cd "$G" && "$REPORT" track.json) >"$TMP/b" 2>&1
check "summary DUMP: the default command by its name" "" "$(cmp "$TMP/a" "$TMP/b" 2>&1)"
(cd "$G" && "$REPORT" leaks --show-leak-kinds definite track.json) >"$TMP/a" 2>&1
(cd "$G" && "$REPORT" leaks --show-leak-kinds=definite track.json) >"$TMP/b" 2>&1
check "--show-leak-kinds definite: the value after a space" "" "$(cmp "$TMP/a" "$TMP/b" 2>&1)"
check "... shows the definite records only" "2 0" \
	"$(grep -c 'definitely lost in loss record' "$TMP/a") $(grep -c 'possibly lost in loss record' "$TMP/a")"

# After "--", an argument starting with "-" is a dump.
(cd "$G" && "$REPORT" -- -track.json) >"$TMP/out" 2>"$TMP/err"
check "--: a dump named -track.json" "2|allocspy-report: error: -track.json: No such file or directory" \
	"$?|$(cat "$TMP/err")"
(cd "$G" && "$REPORT" leaks track.json --json -- --show-leak-kinds=all) >"$TMP/out" 2>"$TMP/err"
check "--: options before it still count" "2|allocspy-report: error: one dump only" \
	"$?|$(sed -n 1p "$TMP/err")"

# A report that cannot be written is exit status 1.
(cd "$G" && "$REPORT" track.json) >/dev/full 2>"$TMP/err"
check "stdout is full: exit status 1 and the error" \
	"1|allocspy-report: error: cannot write the report: No space left on device" \
	"$?|$(cat "$TMP/err")"
(cd "$G" && "$REPORT" compare --json strdup.json refs.json) >/dev/full 2>"$TMP/err"
check "stdout is full, JSON: exit status 1" 1 "$?"

# leaks on a dump without a leak check is an error.
(cd "$G" && "$REPORT" leaks count.json) >"$TMP/out" 2>"$TMP/err"
check "leaks on a count dump: exit status 2 and the reason" \
	"2|allocspy-report: error: count.json: no leak check in this dump (ALLOCSPY_MODE=count runs none)|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
(cd "$G" && "$REPORT" leaks strdup.json) >"$TMP/out" 2>"$TMP/err"
check "leaks with ALLOCSPY_LEAK_CHECK=no: exit status 2 and the reason" \
	"2|allocspy-report: error: strdup.json: no leak check in this dump (ALLOCSPY_LEAK_CHECK=no)" \
	"$?|$(cat "$TMP/err")"
