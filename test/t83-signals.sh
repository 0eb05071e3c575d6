#!/bin/sh
# t83-signals.sh - valgrind's default on a fatal signal, which the shim
# follows by default (ALLOCSPY_DUMP_ON_SIGNAL=1): sig_fatal dies of
# SIGTERM, SIGINT, SIGSEGV (a fault at 0x10) and SIGABRT, and of a SIGINT
# it raises after setting its own handler and the default again, under
# valgrind and under the shim in valgrind's environment: the same "Process
# terminating with default action of signal N (NAME)" block (the fault's
# address, the stack, function and file:line, addresses aside; not
# valgrind's hint about its --main-stacksize), before the same HEAP and
# LEAK SUMMARY, the same stdout and wait status. What sigaction and signal
# show the program is what they show without the shim; a signal the
# program ignores or handles is its own. ALLOCSPY_DUMP_ON_SIGNAL=0 turns it
# all off. Then Python's multiprocessing pool, whose terminate() ends its
# workers with SIGTERM: each worker leaves its summary and its dump. Then
# SIGTERM from outside on sig_busy, inside the allocator most of the time,
# single-threaded and with 3 threads: each run dies of it within 10 s, with
# its text, its dump and a named stack.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS

if [ ! -f "$LIB" ] || [ ! -x "$PROGS/sig_fatal" ] || [ ! -x "$PROGS/sig_busy" ]; then
	not_ok "the shim and the sig_* programs are built" "run make && make test-progs"
	exit 0
fi

# fatal_block LOG: valgrind's lines for the signal: from the blank line
# before "Process terminating" to the blank line after the stack, the
# addresses replaced, valgrind's advice about its own options left out.
fatal_block() {
	awk '/Process terminating/ { on = 1; print prev; print; next } on { print } on && /^==[0-9]+== *$/ { exit } { prev = $0 }' "$1" |
		grep -v -e 'If you believe this happened' -e 'overflow in your program' \
			-e 'possible), you can try' -e 'main thread stack using the' \
			-e 'main thread stack size used' |
		sed -e 's/^==[0-9]*==/==PID==/' -e 's/0x[0-9A-F]*:/0x...:/'
}

# order LOG: the report's headings in the order they come.
order() {
	grep -oE 'Process terminating|HEAP SUMMARY|LEAK SUMMARY' "$1" | paste -sd' '
}

if command -v valgrind >/dev/null 2>&1; then
	for mode in term int segv abrt view; do
		d=$TMP/vg-$mode
		mkdir -p "$d"
		both_runs "$d" "$PROGS/sig_fatal" "$mode"
		check "$mode: the fatal signal's lines equal valgrind's" \
			"$(fatal_block "$d/vg")" "$(fatal_block "$d/asp")"
		check "$mode: they come first, then the summaries, as valgrind's" \
			"$(order "$d/vg")" "$(order "$d/asp")"
		check "$mode: heap and leak summary equal valgrind's" \
			"$(heap_lines "$d/vg"; leak_lines "$d/vg")" "$(heap_lines "$d/asp"; leak_lines "$d/asp")"
		check "$mode: same stdout and wait status" \
			"$(cat "$d/vg.out" "$d/vg.rc")" "$(cat "$d/asp.out" "$d/asp.rc")"
	done
	check "segv: the fault's address and a stack, as valgrind gives them" \
		"==PID== 
==PID== Process terminating with default action of signal 11 (SIGSEGV)
==PID==  Access not within mapped region at address 0x10
==PID==    at 0x...: main (sig_fatal.c:61)
==PID== " "$(fatal_block "$TMP/vg-segv/asp")"
	for mode in ignore handle; do
		d=$TMP/vg-$mode
		mkdir -p "$d"
		both_runs "$d" "$PROGS/sig_fatal" "$mode"
		check "$mode: the program's own action; the summaries and status equal valgrind's" \
			"$(heap_lines "$d/vg"; leak_lines "$d/vg"; cat "$d/vg.out" "$d/vg.rc")" \
			"$(heap_lines "$d/asp"; leak_lines "$d/asp"; cat "$d/asp.out" "$d/asp.rc")"
	done
else
	not_ok "valgrind is installed"
fi

# --- the dump, the program's view, the switch ------------------------------------------------

native=$("$PROGS/sig_fatal" view 2>/dev/null; echo "status $?")
shim=$(ALLOCSPY_OUTPUT="$TMP/view.json" LD_PRELOAD="$LIB" "$PROGS/sig_fatal" view 2>"$TMP/view.err"; echo "status $?")
check "sigaction and signal show the program what they show without the shim" "$native" "$shim"
check "the dump says why it was written" "signal 2 SIGINT" \
	"$(json_get "$TMP/view.json" '"%s %d %s" % (d["dump"]["reason"], d["dump"]["signal"]["number"], d["dump"]["signal"]["name"])')"
ALLOCSPY_DUMP_ON_SIGNAL=0 ALLOCSPY_OUTPUT="$TMP/off.json" LD_PRELOAD="$LIB" "$PROGS/sig_fatal" term \
	>/dev/null 2>"$TMP/off.err"
check "ALLOCSPY_DUMP_ON_SIGNAL=0: SIGTERM's status, no text, no dump" "143|0|no" \
	"$?|$(grep -c '^==' "$TMP/off.err")|$([ -f "$TMP/off.json" ] && echo yes || echo no)"

# --- Python's multiprocessing pool: terminate() sends SIGTERM ---------------------------------

if command -v python3 >/dev/null 2>&1; then
	mkdir -p "$TMP/pool"
	cat >"$TMP/pool/pool.py" <<'EOF'
import multiprocessing as mp, os, sys, time
def init(q):
    global started
    started = q
def work(n):
    data = [bytes(1000) for _ in range(n)]
    os.write(1, b"worker %d\n" % os.getpid())  # one write: the two workers run at once
    started.put(os.getpid())
    time.sleep(60)
    return len(data)
if __name__ == "__main__":
    mp.set_start_method("fork")
    q = mp.Queue()
    with mp.Pool(2, initializer=init, initargs=(q,)) as pool:
        r = pool.map_async(work, [100, 200], chunksize=1)
        # both workers at work, however slow the machine
        q.get(timeout=40), q.get(timeout=40)
        time.sleep(0.2)
        pool.terminate()
    print("terminated", flush=True)
EOF
	(cd "$TMP/pool" && timeout -k 5 60 env ALLOCSPY_LOG_FILE="$TMP/pool/log.%p" \
		ALLOCSPY_OUTPUT="$TMP/pool/d.%p.json" LD_PRELOAD="$LIB" python3 pool.py >out 2>err)
	check "pool: the parent ends as usual" "0 terminated" "$? $(grep -c worker "$TMP/pool/out" | grep -q 2 && tail -n 1 "$TMP/pool/out")"
	workers=$(sed -n 's/^worker //p' "$TMP/pool/out" | sort)
	res=
	for w in $workers; do
		res="$res$(grep -c 'Process terminating with default action of signal 15 (SIGTERM)' "$TMP/pool/log.$w" 2>/dev/null)"
		res="$res $(grep -c 'HEAP SUMMARY' "$TMP/pool/log.$w" 2>/dev/null)"
		res="$res $(json_get "$TMP/pool/d.$w.json" 'd["dump"]["reason"] + " " + d["dump"]["signal"]["name"]' 2>/dev/null)|"
	done
	check "pool: each of the 2 workers ended by SIGTERM leaves its summary and its dump" \
		"1 1 signal SIGTERM|1 1 signal SIGTERM|" "$res"
else
	not_ok "python3 is installed"
fi

# --- SIGTERM from outside, in the allocator ----------------------------------------------------

busy() {
	n=$1
	rm -f "$TMP/busy.json"
	ALLOCSPY_OUTPUT="$TMP/busy.json" LD_PRELOAD="$LIB" "$PROGS/sig_busy" "$n" >"$TMP/busy.out" 2>"$TMP/busy.err" &
	pid=$!
	k=0
	while ! grep -q ready "$TMP/busy.out" 2>/dev/null && [ $k -lt 100 ]; do sleep 0.05; k=$((k + 1)); done
	sleep 0.2
	t0=$(date +%s)
	kill -TERM $pid
	k=0
	while kill -0 $pid 2>/dev/null && [ $k -lt 300 ]; do sleep 0.05; k=$((k + 1)); done
	kill -KILL $pid 2>/dev/null
	wait $pid
	st=$?
	echo "$st $(($(date +%s) - t0 <= 10)) $(grep -c 'HEAP SUMMARY' "$TMP/busy.err") $([ -f "$TMP/busy.json" ] && echo dump) $(grep -A1 'Process terminating' "$TMP/busy.err" | grep -cE '   at 0x[0-9A-F]+: [^?]')"
}
# 5 runs each, 2 in the quick tier (make check).
RUNS="1 2 3 4 5"
in_tier busy || RUNS="1 2"
for threads in 1 3; do
	res= want=
	for i in $RUNS; do res="$res$(busy $threads)|"; want="${want}143 1 1 dump 1|"; done
	check "SIGTERM from outside, $threads thread(s) allocating: $(echo $RUNS | wc -w) runs die of it within 10 s, each with its text, its dump and a named stack" \
		"$want" "$res"
done
