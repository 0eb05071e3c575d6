#!/bin/sh
# t10-parity.sh - the allocation API itself under the shim against valgrind:
# the HEAP SUMMARY lines, stdout and exit status of each test program must
# be equal (lib.sh parity). Then the dump's per-function counters of a few
# programs whose calls are known, and the errno semantics and pvalloc,
# which valgrind cannot judge.
. "$(dirname "$0")/lib.sh"

# prog_parity NAME ARGS...: parity for $PROGS/NAME, or "not ok" when the
# program was not built (make test-progs builds it).
prog_parity() {
	pn=$1; shift
	if [ ! -x "$PROGS/$pn" ]; then
		not_ok "$pn: built" "missing $PROGS/$pn: run make test-progs"
		return 0
	fi
	parity "$pn${1:+ $*}" "$PROGS/$pn" "$@"
}

# dump_run NAME PROG ARGS...: PROG under the shim with a dump, in $D.
# (Names here avoid "n", "name", "d" and "log", which lib.sh sets.)
dump_run() {
	pn=$1; shift
	D=$TMP/$pn.json
	rm -f "$D"
	SHIM_ENV="ALLOCSPY_OUTPUT=$D" run_shim "$TMP/$pn.dump" "$@"
}

# dump_check NAME EXPR EXPECTED: EXPR (python, over the dump "d") of $D.
dump_check() {
	if [ -s "$D" ]; then
		check "$1" "$3" "$(json_get "$D" "$2" 2>&1)"
	else
		not_ok "$1" "no dump written at $D"
	fi
}

for p in par_basic par_realloc par_memalign par_strdup par_fail par_realloc_fail \
	par_threads par_detached par_tsd par_fork par_pending; do
	prog_parity $p
done
for how in return exit _exit thread-exit quick_exit; do
	prog_parity par_exit $how
done

# par_pthread_exit: threads end by pthread_exit and pthread_cancel, which
# load libgcc_s (6 allocations valgrind counts, which the shim hid when it
# loaded libgcc_s itself).
prog_parity par_pthread_exit
# ... and with main ending by pthread_exit while a thread it started
# allocates: that thread ends the process, the main thread a zombie whose
# /proc/self files list nothing. The leak summary too (a block lost, one
# reachable from a global, the thread's DTV possibly lost). Then the total
# heap usage line in count mode.
if [ -x "$PROGS/par_pthread_exit" ]; then
	leak_parity "par_pthread_exit main" "$PROGS/par_pthread_exit" main
	d=$TMP/par_pthread_exit_main
	rm -rf "$d/run" && mkdir "$d/run"
	SHIM_ENV=ALLOCSPY_MODE=count
	(cd "$d/run" && run_shim "$d/asp" "$PROGS/par_pthread_exit" main)
	SHIM_ENV=
	check "par_pthread_exit main, count mode: total heap usage equals valgrind's" \
		"$(heap_lines "$d/vg" | grep 'total heap')" "$(heap_lines "$d/asp" | grep 'total heap')"
fi

# par_exit_many: a library registers 100 exit handlers before main, so the
# shim's own handler sits in a block glibc allocated, freed with the older
# ones after the handlers ran (3 blocks of 1,040 bytes; the shim used to
# report them in use). Track mode with the leak summary, then the
# "total heap usage" line in count mode and with stacks.
for how in return exit; do
	if [ -x "$PROGS/par_exit_many" ]; then
		leak_parity "par_exit_many $how" "$PROGS/par_exit_many" $how
		d=$TMP/par_exit_many_$how	# leak_parity's run with freeres
		for mode in "ALLOCSPY_MODE=count" "ALLOCSPY_BACKTRACE=16"; do
			rm -rf "$d/run" && mkdir "$d/run"
			SHIM_ENV=$mode
			(cd "$d/run" && run_shim "$d/asp" "$PROGS/par_exit_many" $how)
			SHIM_ENV=
			check "par_exit_many $how, $mode: total heap usage equals valgrind's" \
				"$(heap_lines "$d/vg" | grep 'total heap')" "$(heap_lines "$d/asp" | grep 'total heap')"
		done
	else
		not_ok "par_exit_many: built" "missing $PROGS/par_exit_many: run make test-progs"
	fi
done

# Per-function counters: each call counted once, under the name the
# program called. par_basic: 337 mallocs (one is stdout's buffer), 170
# callocs, 106 reallocs (realloc(NULL, n) twice, realloc(p, 0) once: still
# realloc calls), free(NULL) twice; 6 blocks of size 0 (malloc(0),
# calloc(0, 16), calloc(16, 0), realloc(NULL, 0) and 2 in the loop).
dump_run basic "$PROGS/par_basic"
dump_check "par_basic: malloc calls" 'd["functions"]["malloc"]["calls"]' 337
dump_check "par_basic: calloc calls" 'd["functions"]["calloc"]["calls"]' 170
dump_check "par_basic: realloc calls" 'd["functions"]["realloc"]["calls"]' 106
dump_check "par_basic: free(NULL) calls" 'd["functions"]["free"]["null"]' 2
dump_check "par_basic: heap allocs, frees" \
	'(d["heap"]["allocs"], d["heap"]["frees"], d["heap"]["in_use_blocks"])' '(612, 607, 5)'
dump_check "par_basic: zero-size blocks in histogram bucket 0" \
	'[h["count"] for h in d["histogram"] if h["le"] == 0]' '[6]'
dump_check "par_basic: histogram sums to allocs" \
	'sum(h["count"] for h in d["histogram"]) == d["heap"]["allocs"]' True

# par_strdup: libc's strdup calls malloc inside; that is one strdup, not a
# malloc too. The only malloc is stdout's buffer.
dump_run strdup "$PROGS/par_strdup"
dump_check "par_strdup: strdup, strndup, wcsdup calls" \
	'(d["functions"]["strdup"]["calls"], d["functions"]["strndup"]["calls"], d["functions"]["wcsdup"]["calls"])' \
	'(101, 101, 2)'
dump_check "par_strdup: malloc calls" 'd["functions"]["malloc"]["calls"]' 1

# par_fail: 6 failed calls; none of them is an alloc.
dump_run fail "$PROGS/par_fail"
dump_check "par_fail: failed calls" \
	'(d["heap"]["failed"], d["functions"]["calloc"]["failed"], d["functions"]["malloc"]["failed"], d["functions"]["memalign"]["failed"], d["functions"]["posix_memalign"]["failed"])' \
	'(6, 3, 1, 1, 1)'
dump_check "par_fail: allocs" 'd["heap"]["allocs"]' 3

# errno and return values are libc's own: the shim's output equals the
# native run's.
if [ -x "$PROGS/asp_errno" ]; then
	native=$(cd "$TMP" && "$PROGS/asp_errno" 2>/dev/null; echo "status $?")
	shim=$(cd "$TMP" && vg_env LD_PRELOAD="$LIB" "$PROGS/asp_errno" 2>/dev/null; echo "status $?")
	check "asp_errno: errno and results as without the shim" "$native" "$shim"
else
	not_ok "asp_errno: built" "missing $PROGS/asp_errno"
fi

# asp_fp_wild: malloc called with rbp on a made-up frame whose saved frame
# pointer is 0xfffffffffffffff0 (code built without frame pointers may
# leave such a value). The frame-pointer walks must stop there: stdout and
# status as natively, and the heap summary valgrind's, with both unwinders.
if [ -x "$PROGS/asp_fp_wild" ]; then
	native=$(cd "$TMP" && "$PROGS/asp_fp_wild" 2>/dev/null; echo "status $?")
	for unwind in fp libunwind; do
		shim=$(cd "$TMP" && vg_env ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=$unwind ALLOCSPY_OUTPUT=none \
			LD_PRELOAD="$LIB" "$PROGS/asp_fp_wild" 2>"$TMP/fp_wild.$unwind.err"; echo "status $?")
		check "asp_fp_wild, 16 frames by $unwind: stdout and status as without the shim" "$native" "$shim"
		check "asp_fp_wild, 16 frames by $unwind: total heap usage" \
			"total heap usage: 4 allocs, 4 frees, 4,396 bytes allocated" \
			"$(heap_lines "$TMP/fp_wild.$unwind.err" | grep 'total heap')"
	done
else
	not_ok "asp_fp_wild: built" "missing $PROGS/asp_fp_wild"
fi

# pvalloc: valgrind 3.19 aborts on it, so only the dump is checked: 3
# calls, 3 allocs and 3 frees of the program's own, all blocks aligned.
dump_run pvalloc "$PROGS/asp_pvalloc"
check "asp_pvalloc: stdout and status" "aligned=1|0" "$(cat "$TMP/pvalloc.dump.out")|$(cat "$TMP/pvalloc.dump.rc")"
dump_check "asp_pvalloc: pvalloc calls" 'd["functions"]["pvalloc"]["calls"]' 3
dump_check "asp_pvalloc: nothing in use at exit (freeres frees stdout's buffer)" \
	'(d["heap"]["allocs"] - d["heap"]["frees"], d["heap"]["in_use_blocks"])' '(0, 0)'
