#!/bin/sh
# t80-reliability.sh - the day a preload tool breaks a program: threads,
# fork, _exit, posix_spawn, system(), thousands of threads, signal
# handlers that allocate, dump files that cannot or must not be written,
# periodic dumps of a killed program, fatal signals, children left alone.
. "$(dirname "$0")/lib.sh"

consistent() { json_get "$1" 'd["heap"]["allocs"] - d["heap"]["frees"] == d["heap"]["in_use_blocks"]'; }

# --- one stress program, one consistent dump per process -----------------------------
mkdir -p "$TMP/stress"
timeout 120 env ALLOCSPY_OUTPUT="$TMP/stress/%e.%p.json" LD_PRELOAD="$LIB" \
	"$PROGS/rel_stress" >"$TMP/stress.out" 2>"$TMP/stress.err"
check "stress: ends, exits 0, prints done" "done 0" "$(cat "$TMP/stress.out") $?"
parent=$(ls "$TMP/stress"/rel_stress.*.json | sort -t. -k2 -n | head -n 1)
check "stress: a dump for the parent, the fork child, the spawned true and system's sh" \
	"dash rel_stress rel_stress true" \
	"$(ls "$TMP/stress" | sed 's/\..*//' | sort | tr '\n' ' ' | sed 's/ $//')"
for f in "$TMP/stress"/*.json; do
	check "stress: $(basename "$f" | sed 's/\.[0-9]*\.json//') dump: allocs - frees == blocks in use" \
		True "$(consistent "$f")"
done
check "stress: the parent's 2000 short threads and 4 passers are all listed" 2005 \
	"$(json_get "$parent" 'len(d["threads"])')"
check "stress: one summary per process on stderr" 4 "$(grep -c 'HEAP SUMMARY' "$TMP/stress.err")"

# --- ALLOCSPY_FOLLOW_CHILDREN=no ---------------------------------------------------------
mkdir -p "$TMP/nofollow"
timeout 120 env ALLOCSPY_FOLLOW_CHILDREN=no ALLOCSPY_OUTPUT="$TMP/nofollow/%e.%p.json" \
	LD_PRELOAD="$LIB" "$PROGS/rel_stress" >/dev/null 2>&1
check "ALLOCSPY_FOLLOW_CHILDREN=no: only the program and its fork child dump" \
	"rel_stress rel_stress" "$(ls "$TMP/nofollow" | sed 's/\..*//' | sort | tr '\n' ' ' | sed 's/ $//')"

# --- a signal handler that allocates -------------------------------------------------------
timeout 60 env ALLOCSPY_OUTPUT="$TMP/sig.json" LD_PRELOAD="$LIB" "$PROGS/rel_signal" >"$TMP/sig.out" 2>/dev/null
check "signal handler allocating: no deadlock, status 0" "handled=1 0" "$(cat "$TMP/sig.out") $?"
check "signal handler allocating: allocs - frees == blocks in use" True "$(consistent "$TMP/sig.json")"
check "signal handler allocating: only stdout's buffer is left" 1 \
	"$(json_get "$TMP/sig.json" 'd["heap"]["in_use_blocks"]')"

# --- dump-file safety ----------------------------------------------------------------------
mkdir -p "$TMP/safe"
echo "precious" >"$TMP/safe/victim"
ln -s "$TMP/safe/victim" "$TMP/safe/out.json"
(umask 000 && ALLOCSPY_OUTPUT="$TMP/safe/out.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>&1)
check "a planted symlink: exit status unchanged" 3 "$?"
check "a planted symlink is not followed" "precious" "$(cat "$TMP/safe/victim")"
check "a planted symlink: the dump takes a new name" "True" \
	"$(json_get "$TMP/safe/out-1.json" 'd["format"] == "allocspy-dump"')"
check "the dump is not group- or world-writable, even with umask 000" 644 \
	"$(stat -c %a "$TMP/safe/out-1.json")"
(ALLOCSPY_OUTPUT="$TMP/safe/out.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>&1)
check "a name taken twice: a third name" "out-1.json out-2.json out.json victim" \
	"$(ls "$TMP/safe" | tr '\n' ' ' | sed 's/ $//')"
ALLOCSPY_OUTPUT=/nonexistent/dir/x.json LD_PRELOAD="$LIB" "$PROGS/par_basic" >"$TMP/nw.out" 2>"$TMP/nw.err"
check "an unwritable dump: the program's status is unchanged" 3 "$?"
check "an unwritable dump: one warning" 1 "$(grep -c '^allocspy: warning: cannot write the dump' "$TMP/nw.err")"
check "an unwritable dump: the program's output is unchanged" "$("$PROGS/par_basic" 2>/dev/null)" "$(cat "$TMP/nw.out")"

# The shim's descriptors never reach the programs it executes: traced sh
# and env exec an untraced ls, which lists its own descriptors.
LD_PRELOAD="$LIB" ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
	sh -c 'exec env -u LD_PRELOAD ls /proc/self/fd' >"$TMP/fd.shim" 2>/dev/null
sh -c 'exec env -u LD_PRELOAD ls /proc/self/fd' >"$TMP/fd.bare" 2>/dev/null
check "the shim's file descriptors do not leak into children" "$(cat "$TMP/fd.bare")" "$(cat "$TMP/fd.shim")"

# --- periodic dumps survive SIGKILL --------------------------------------------------------
ALLOCSPY_INTERVAL_MS=50 ALLOCSPY_OUTPUT="$TMP/loop.json" LD_PRELOAD="$LIB" "$PROGS/rel_loop" >/dev/null 2>&1 &
loop=$!
sleep 1
kill -KILL "$loop"
wait "$loop" 2>/dev/null
check "ALLOCSPY_INTERVAL_MS: a program killed by SIGKILL leaves its last figures" True \
	"$(json_get "$TMP/loop.json" 'd["heap"]["allocs"] > 1000 and d["heap"]["in_use_blocks"] >= 100')"
check "ALLOCSPY_INTERVAL_MS: no temporary file is left" "loop.json" \
	"$(cd "$TMP" && ls loop*)"

# --- a fatal signal --------------------------------------------------------------------------
"$PROGS/rel_crash" >/dev/null 2>&1
bare=$?
ALLOCSPY_DUMP_ON_SIGNAL=1 ALLOCSPY_OUTPUT="$TMP/crash.json" LD_PRELOAD="$LIB" \
	"$PROGS/rel_crash" >/dev/null 2>"$TMP/crash.err"
check "ALLOCSPY_DUMP_ON_SIGNAL: the status is the signal's, as without the shim" "$bare" "$?"
check "ALLOCSPY_DUMP_ON_SIGNAL: the dump is written" 2 \
	"$(json_get "$TMP/crash.json" 'd["heap"]["in_use_blocks"]')"
check "ALLOCSPY_DUMP_ON_SIGNAL: the summary is printed" 1 "$(grep -c 'HEAP SUMMARY' "$TMP/crash.err")"

# --- bad settings: one warning each, the default used ------------------------------------
ALLOCSPY_MODE=fast ALLOCSPY_BACKTRACE=x ALLOCSPY_QUIET=maybe ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" \
	"$PROGS/par_basic" >/dev/null 2>"$TMP/bad.err"
check "bad settings: the program's status is unchanged" 3 "$?"
check "bad settings: one warning line each" \
"allocspy: warning: ALLOCSPY_MODE: not one of track, count; using track
allocspy: warning: ALLOCSPY_BACKTRACE: not an integer in range; the default is used
allocspy: warning: ALLOCSPY_QUIET: not 1 or 0 (yes or no); the default is used" \
	"$(grep -a '^allocspy: warning' "$TMP/bad.err")"
