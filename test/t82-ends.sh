#!/bin/sh
# t82-ends.sh - how processes end under the shim, and what it reports then:
# an honest peak, the same figures whatever the mode, periodic dumps that
# keep time, dumps made on a fatal signal (even one landing inside malloc),
# the exit status applied after stdio's last flush, the arguments as they
# were at start-up, threads that block signals, a non-PIE program's loss
# records, and libunwind's memory out of the program's figures.
. "$(dirname "$0")/lib.sh"

# --- the peak ---------------------------------------------------------------------
ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/peak.json" LD_PRELOAD="$LIB" "$PROGS/rel_peak" >/dev/null
# At the barrier: 4 x 256 KiB, and the 4 threads' DTVs of 272 bytes.
check "4 threads holding 256 KiB each at once: the true peak lies in [peak_bytes, peak_bytes + peak_bytes_bound]" \
	True "$(json_get "$TMP/peak.json" 'd["heap"]["peak_bytes"] <= 1049664 <= d["heap"]["peak_bytes"] + d["heap"]["peak_bytes_bound"]')"
check "... and the bound is 16 KiB for each thread that ran at once" True \
	"$(json_get "$TMP/peak.json" 'd["heap"]["peak_bytes_bound"] in (4 * 16384, 5 * 16384)')"
ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/peak1.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null
check "one thread: the peak is exact (bound 0)" 0 "$(json_get "$TMP/peak1.json" 'd["heap"]["peak_bytes_bound"]')"

# --- the same figures in every mode, on the threaded programs -----------------------------
# The HEAP SUMMARY's counts (count mode cannot say the bytes in use) and,
# where there is one, the LEAK SUMMARY.
figures() { grep -aE 'total heap usage|in use at exit|lost:|reachable:' "$1" | sed 's/^==[0-9]*== *//; s/in use at exit: [0-9,?]* bytes in/in use at exit: in/'; }
# (the quick tier, make check: three of the six programs)
for p in par_threads par_detached par_tsd leak_threads stress cxx_threads; do
	in_tier "$p" par_threads leak_threads cxx_threads || continue
	for m in "" "ALLOCSPY_MODE=count" "ALLOCSPY_BACKTRACE=16" "ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=fp"; do
		(cd "$TMP" && env $m ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$PROGS/$p" >/dev/null 2>"$TMP/mode.err")
		if [ -z "$m" ]; then
			base=$(figures "$TMP/mode.err")
			continue
		fi
		want=$base
		[ "$m" = ALLOCSPY_MODE=count ] && want=$(printf '%s\n' "$base" | grep -v 'lost:\|reachable:')
		check "$p: ${m:-track}: the same HEAP and LEAK SUMMARY as in track mode" "$want" "$(figures "$TMP/mode.err")"
	done
done

# --- periodic dumps ------------------------------------------------------------------------
ALLOCSPY_INTERVAL_MS=100 ALLOCSPY_OUTPUT="$TMP/iv.json" LD_PRELOAD="$LIB" \
	"$PROGS/rel_interval" "$TMP/iv.json" >"$TMP/iv.out" 2>/dev/null
set -- $(cat "$TMP/iv.out")
check "ALLOCSPY_INTERVAL_MS=100, one allocation a millisecond for 1.2 s: 5 dumps or more (one at least every 250 ms)" \
	True "$(python3 -c "print($1 >= 5)")"
check "... never two within 100 ms (as the dumps' own times say)" True "$(python3 -c "print($2 >= 99)")"
check "... a mid-run dump says so (reason interval)" interval "${4:-}"
"$REPORT" "$TMP/iv.json" >/dev/null 2>&1
check "... the last dump, at exit, reads as one" "exit" "$(json_get "$TMP/iv.json" 'd["dump"]["reason"]')"

# A dump slower than half the interval (60,000 live blocks with their
# stacks, ALLOCSPY_INTERVAL_MS=1) puts the next one as long after its end:
# the program keeps half of the time and ends (a second at most here; a
# dump at every allocation would take minutes).
ALLOCSPY_INTERVAL_MS=1 ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=fp ALLOCSPY_OUTPUT="$TMP/slow.json" \
	LD_PRELOAD="$LIB" timeout 120 "$PROGS/rel_slow_dump" >"$TMP/slow.out" 2>/dev/null
check "ALLOCSPY_INTERVAL_MS=1, dumps slower than half of it: the program ends as it would (status, output)" \
	"0 done" "$? $(cat "$TMP/slow.out")"
check "... its last dump is the exit's, with every block it left" "exit 0" \
	"$(json_get "$TMP/slow.json" '"%s %d" % (d["dump"]["reason"], d["heap"]["in_use_blocks"])')"

# --- a fatal signal -------------------------------------------------------------------------
ALLOCSPY_DUMP_ON_SIGNAL=1 ALLOCSPY_OUTPUT="$TMP/segv.json" LD_PRELOAD="$LIB" \
	"$PROGS/rel_crash" >/dev/null 2>"$TMP/segv.err"
check "SIGSEGV: the status is the signal's" 139 "$?"
check "SIGSEGV: the dump names the signal" "signal 11 SIGSEGV" \
	"$(json_get "$TMP/segv.json" '"%s %d %s" % (d["dump"]["reason"], d["dump"]["signal"]["number"], d["dump"]["signal"]["name"])')"
check "SIGSEGV: the exit text says so first, as valgrind's" \
	"Process terminating with default action of signal 11 (SIGSEGV)" \
	"$(grep -a 'Process terminating' "$TMP/segv.err" | sed 's/^==[0-9]*== //')"
check "SIGSEGV: the report's summary says so too" \
	"Process terminating with default action of signal 11 (SIGSEGV)" \
	"$("$REPORT" "$TMP/segv.json" | grep -a 'Process terminating' | sed 's/^==[0-9]*== //')"

# SIGTERM landing anywhere, inside malloc and the shim's table too.
mkdir -p "$TMP/term"
term_hangs=0 term_bad=
i=0
while [ $i -lt 20 ]; do
	rm -f "$TMP/term"/*
	# Emptied here, not by the job's redirection, which may come after the
	# first look below: the last run's "ready" would let the signal land
	# before the shim has its handler.
	: >"$TMP/term.out"
	ALLOCSPY_DUMP_ON_SIGNAL=1 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/term/t.json" LD_PRELOAD="$LIB" \
		"$PROGS/rel_term" >"$TMP/term.out" 2>/dev/null &
	pid=$!
	n=0
	while [ "$(cat "$TMP/term.out")" != ready ] && [ $n -lt 3000 ]; do sleep 0.01; n=$((n + 1)); done
	sleep 0.0$((i % 9 + 1))
	kill -TERM "$pid"
	n=0
	while kill -0 "$pid" 2>/dev/null && [ $n -lt 200 ]; do sleep 0.05; n=$((n + 1)); done
	if kill -0 "$pid" 2>/dev/null; then
		term_hangs=$((term_hangs + 1))
		kill -KILL "$pid"
	fi
	wait "$pid"
	st=$?
	# The signal may land between an operation's table change and its
	# count: that one block may be off.
	got="$st $(ls "$TMP/term" | tr '\n' ' ')$(json_get "$TMP/term/t.json" 'd["dump"]["signal"]["name"] + " " + str(abs(d["heap"]["allocs"] - d["heap"]["frees"] - d["heap"]["in_use_blocks"]) <= 1)' 2>&1 | tail -n 1)"
	[ "$got" = "143 t.json SIGTERM True" ] || term_bad="$term_bad
run $i: $got"
	i=$((i + 1))
done
check "SIGTERM into 4 threads in malloc and free, 20 times: no hang" 0 "$term_hangs"
check "... each ends by SIGTERM with one whole dump naming it (consistent but for the block the signal interrupted), and no temporary file" "" "$term_bad"

# --- ALLOCSPY_ERROR_EXITCODE after stdio's last flush ----------------------------------------------
cat >"$TMP/buffered.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
	void *lost = malloc(10);
	lost = NULL;
	printf("buffered, never flushed by the program");
	return 0;
}
SRC
cc -o "$TMP/buffered" "$TMP/buffered.c"
out=$(ALLOCSPY_ERROR_EXITCODE=3 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/buffered" 2>/dev/null)
check "ALLOCSPY_ERROR_EXITCODE=3 and a leak: status 3, and the program's buffered output is written" \
	"3 buffered, never flushed by the program" "$? $out"
out=$(ALLOCSPY_ERROR_EXITCODE=3 ALLOCSPY_FREERES=no ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/buffered" 2>/dev/null)
check "... without freeres too" "3 buffered, never flushed by the program" "$? $out"
check "locale -a | wc -c: the same under ALLOCSPY_ERROR_EXITCODE=3" "$(locale -a | wc -c)" \
	"$(ALLOCSPY_ERROR_EXITCODE=3 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" locale -a | wc -c)"
check "gcc --version: the same under ALLOCSPY_ERROR_EXITCODE=3" "$(gcc --version)" \
	"$(ALLOCSPY_ERROR_EXITCODE=3 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" gcc --version 2>/dev/null)"

# --- the arguments as they were -------------------------------------------------------------------
ALLOCSPY_OUTPUT="$TMP/argv.json" LD_PRELOAD="$LIB" "$PROGS/rel_argv" one two >/dev/null 2>&1
check "argv in the dump as at start-up, though the program overwrote it" "['one', 'two']" \
	"$(json_get "$TMP/argv.json" 'd["program"]["argv"][1:]')"

# --- threads that block every signal at exit -------------------------------------------------------
both_runs "$TMP/blocked" "$PROGS/rel_blocked"
check "a thread blocking every signal, waiting at exit: the heap summary equals valgrind's" \
	"$(heap_lines "$TMP/blocked/vg")" "$(heap_lines "$TMP/blocked/asp")"
check "... and the leak summary (its stack is a root, above the stack pointer of its system call)" \
	"$(leak_lines "$TMP/blocked/vg")" "$(leak_lines "$TMP/blocked/asp")"
check "... and the program's status is its own (no real-time signal left pending)" \
	"$(cat "$TMP/blocked/vg.rc")" "$(cat "$TMP/blocked/asp.rc")"

# --- a non-PIE program: the loss record's top frame is the shim's malloc --------------------------
printf '#include <stdlib.h>\nvoid *p;\nint main(void) { p = malloc(7); p = 0; return 0; }\n' >"$TMP/nopie.c"
cc -g -no-pie -fno-pie -o "$TMP/nopie" "$TMP/nopie.c"
ALLOCSPY_LEAK_CHECK=full ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/nopie" 2>"$TMP/nopie.err"
check_match "non-PIE: the record's first line is malloc in the shim, not the program's PLT" \
	'at 0x[0-9A-F]+: malloc \(in .*liballocspy\.so\)' "$(grep -a ' at 0x' "$TMP/nopie.err")"

# --- libunwind (loaded for backtraces) is not the program's -----------------------------------------
# Both runs with environments of one size (perl copies its environment).
XPERL="PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0"
env $XPERL ALLOCSPY_BACKTRACE=01 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" perl -MPOSIX -e 'print "x\n"' >/dev/null 2>"$TMP/perl.err"
env $XPERL ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" perl -MPOSIX -e 'print "x\n"' >/dev/null 2>"$TMP/perl16.err"
check "perl -MPOSIX: the same blocks in use and the same LEAK SUMMARY with 16-frame libunwind stacks" \
	"$(heap_lines "$TMP/perl.err" | grep 'in use'; leak_lines "$TMP/perl.err")" \
	"$(heap_lines "$TMP/perl16.err" | grep 'in use'; leak_lines "$TMP/perl16.err")"
