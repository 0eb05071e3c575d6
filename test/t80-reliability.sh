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
st=$?
check "stress: ends, exits 0, prints done" "done 0" "$(cat "$TMP/stress.out") $st"
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
st=$?
check "signal handler allocating: no deadlock, status 0" "handled=1 0" "$(cat "$TMP/sig.out") $st"
check "signal handler allocating: allocs - frees == blocks in use" True "$(consistent "$TMP/sig.json")"
check "signal handler allocating: nothing left (freeres frees stdout's buffer)" 0 \
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
(ALLOCSPY_OUTPUT="$TMP/safe/out.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$TMP/safe.err")
check "a name taken twice: a third name" "out-1.json out-2.json out.json victim" \
	"$(ls "$TMP/safe" | tr '\n' ' ' | sed 's/ $//')"
check "a name taken: the exit text ends saying where the dump went, after a blank line" \
	"
$TMP/safe/out.json exists: the dump was written to $TMP/safe/out-2.json" \
	"$(sed -n 's/^==[0-9]*== //p' "$TMP/safe.err" | tail -n 2)"
(ALLOCSPY_OUTPUT="$TMP/safe/new.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$TMP/safe.err")
check "a free name: the exit text does not name the dump" "" "$(grep -a 'dump was written' "$TMP/safe.err")"
(ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/safe/new.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$TMP/safe.err")
check "a name taken under ALLOCSPY_QUIET=1: nothing printed, the dump written" "|True" \
	"$(cat "$TMP/safe.err")|$(json_get "$TMP/safe/new-1.json" 'd["format"] == "allocspy-dump"')"
ALLOCSPY_OUTPUT=/nonexistent/dir/x.json LD_PRELOAD="$LIB" "$PROGS/par_basic" >"$TMP/nw.out" 2>"$TMP/nw.err"
check "an unwritable dump: the program's status is unchanged" 3 "$?"
check "an unwritable dump: one warning, with the reason" \
	"allocspy: warning: cannot write the dump /nonexistent/dir/x.json: No such file or directory" \
	"$(grep -a '^allocspy: warning:' "$TMP/nw.err")"
check "an unwritable dump: the program's output is unchanged" "$("$PROGS/par_basic" 2>/dev/null)" "$(cat "$TMP/nw.out")"

# A device or a FIFO is written into as it is: no name to take.
ls /dev | grep -c '^null-' >"$TMP/devnull.before"
(ALLOCSPY_OUTPUT=/dev/null LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$TMP/dn.err")
check "ALLOCSPY_OUTPUT=/dev/null: status unchanged, no /dev/null-N made, no name in the text" \
	"3 $(cat "$TMP/devnull.before") " "$? $(ls /dev | grep -c '^null-') $(grep -a 'dump was written' "$TMP/dn.err")"
(ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=/dev/stdout LD_PRELOAD="$LIB" "$PROGS/par_basic" >"$TMP/so.out" 2>/dev/null)
check "ALLOCSPY_OUTPUT=/dev/stdout: the program's output, then the whole dump" \
	"$("$PROGS/par_basic" 2>/dev/null)|allocspy-dump" \
	"$(python3 -c 'import json,sys
t=open(sys.argv[1]).read(); i=t.index("{")
print(t[:i].rstrip("\n") + "|" + json.loads(t[i:])["format"])' "$TMP/so.out")"
mkfifo "$TMP/fifo"
(timeout 20 env ALLOCSPY_OUTPUT="$TMP/fifo" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$TMP/ff.err")
check "a FIFO no one reads: no wait, one warning, status unchanged" \
	"3 allocspy: warning: cannot write the dump $TMP/fifo: No such device or address" \
	"$? $(grep -a '^allocspy: warning:' "$TMP/ff.err")"
timeout 20 cat "$TMP/fifo" >"$TMP/fifo.out" &
reader=$!
sleep 0.2
(ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/fifo" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>&1)
wait $reader
check "a FIFO with a reader: the reader gets the dump" True \
	"$(json_get "$TMP/fifo.out" 'd["format"] == "allocspy-dump"')"
rm -f "$TMP/fifo"
ln -s /dev/null "$TMP/safe/dev.json"
(ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/safe/dev.json" LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>&1)
check "a link to /dev/null outside /dev is not followed: the dump takes a new name" True \
	"$(json_get "$TMP/safe/dev-1.json" 'd["format"] == "allocspy-dump"')"

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
# (A kill during a write leaves no temporary file: t84.)
check "ALLOCSPY_INTERVAL_MS: the dump has its final name, and nothing else is left" "loop.json" \
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
check "bad settings: one warning line each, with the values allowed and the default" \
"allocspy: warning: ALLOCSPY_MODE=fast: not track or count; the default, track, is used
allocspy: warning: ALLOCSPY_BACKTRACE=x: not an integer from 0 to 64; the default, 1, is used
allocspy: warning: ALLOCSPY_QUIET=maybe: not 1 or 0 (yes or no); the default, 0, is used" \
	"$(grep -a '^allocspy: warning' "$TMP/bad.err")"
ALLOCSPY_MODE=fast ALLOCSPY_BACKTRACE=x ALLOCSPY_QUIET=maybe ALLOCSPY_OUTPUT="$TMP/bad.json" LD_PRELOAD="$LIB" \
	"$PROGS/par_basic" >/dev/null 2>"$TMP/bad.err"
check "bad settings: the defaults are in effect (track mode, 1 frame, the summary printed)" "track 1 1" \
	"$(json_get "$TMP/bad.json" '"%s %d" % (d["options"]["mode"], d["options"]["backtrace"])') $(grep -c 'HEAP SUMMARY:' "$TMP/bad.err")"
ALLOCSPY_ERROR_EXITCODE=300 ALLOCSPY_FREERES=maybe ALLOCSPY_ERRORS_FOR_LEAK_KINDS=defnite \
	ALLOCSPY_SNAPSHOTS=-1 ALLOCSPY_UNWIND=dwarf ALLOCSPY_LEAK_CHECK=yes ALLOCSPY_INTERVAL_MS=1s \
	ALLOCSPY_FOLLOW_CHILDREN="$(printf 'a\nb')" ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" \
	"$PROGS/par_basic" >/dev/null 2>"$TMP/bad.err"
check "more bad settings: the program's status is unchanged (no error exit code)" 3 "$?"
check "more bad settings: one line each, in the order they are read; a value's control bytes shown as ?" \
"allocspy: warning: ALLOCSPY_UNWIND=dwarf: not libunwind or fp; the default, libunwind, is used
allocspy: warning: ALLOCSPY_LEAK_CHECK=yes: not summary, full or no; the default, summary, is used
allocspy: warning: ALLOCSPY_ERROR_EXITCODE=300: not an integer from 0 to 255; the default, none (the program's own status), is used
allocspy: warning: ALLOCSPY_FOLLOW_CHILDREN=a?b: not 1 or 0 (yes or no); the default, 1, is used
allocspy: warning: ALLOCSPY_INTERVAL_MS=1s: not an integer from 0 to 86400000; the default, 0 (no periodic dumps), is used
allocspy: warning: ALLOCSPY_SNAPSHOTS=-1: not an integer from 0 to 100000; the default, 100, is used
allocspy: warning: ALLOCSPY_FREERES=maybe: not yes, no, libc or cxx; the default, yes, is used
allocspy: warning: ALLOCSPY_ERRORS_FOR_LEAK_KINDS=defnite: not all, none or a list of definite, indirect, possible, reachable; the default, definite,possible, is used" \
	"$(grep -a '^allocspy: warning' "$TMP/bad.err")"

# --- a preloaded library whose constructor allocates before the shim's ---------------------
cat >"$TMP/early.c" <<'SRC'
#include <stdlib.h>
#include <string.h>
void *early_block, *early_copy;
__attribute__((constructor)) static void early(void)
{
	early_block = malloc(77);
	early_copy = strdup("made before main");
}
SRC
cc -shared -fPIC -o "$TMP/libearly.so" "$TMP/early.c"
fig() { json_get "$1" '"%d %d %d" % (d["heap"]["allocs"], d["heap"]["frees"], d["heap"]["bytes_allocated"])'; }
ALLOCSPY_OUTPUT="$TMP/plain.json" LD_PRELOAD="$LIB" "$PROGS/par_strdup" >/dev/null 2>&1
for order in "$TMP/libearly.so $LIB" "$LIB $TMP/libearly.so"; do
	ALLOCSPY_OUTPUT="$TMP/early.json" LD_PRELOAD="$order" "$PROGS/par_strdup" >/dev/null 2>&1
	set -- $(fig "$TMP/plain.json")
	check "allocations in another preloaded library's constructor are counted ($(basename "${order%% *}") first)" \
		"$(($1 + 2)) $2 $(($3 + 77 + 17))" "$(fig "$TMP/early.json")"
done

# --- dlopen with RTLD_DEEPBIND, and dlclose -------------------------------------------------------
cat >"$TMP/deep.c" <<'SRC'
#include <stdlib.h>
void *deep_alloc(size_t n) { return malloc(n); }
void deep_free(void *p) { free(p); }
SRC
cat >"$TMP/deepmain.c" <<'SRC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_DEEPBIND);
	if (!h)
		return 2;
	void *(*a)(size_t) = (void *(*)(size_t))dlsym(h, "deep_alloc");
	void (*f)(void *) = (void (*)(void *))dlsym(h, "deep_free");
	void *keep = a(1000);
	f(a(2000));
	dlclose(h);
	printf("kept %s\n", keep ? "yes" : "no");
	return 0;
}
SRC
cc -shared -fPIC -o "$TMP/libdeep.so" "$TMP/deep.c" && cc -o "$TMP/deepmain" "$TMP/deepmain.c"
ALLOCSPY_OUTPUT="$TMP/deep.json" LD_PRELOAD="$LIB" "$TMP/deepmain" "$TMP/libdeep.so" >"$TMP/deep.out" 2>"$TMP/deep.err"
st=$?
check "RTLD_DEEPBIND: the program runs as without the shim" "kept yes 0" "$(cat "$TMP/deep.out") $st"
check "RTLD_DEEPBIND: the flag is dropped with one warning" 1 \
	"$(grep -c "^allocspy: warning: dlopen($TMP/libdeep.so, RTLD_DEEPBIND): the flag is dropped" "$TMP/deep.err")"
check "RTLD_DEEPBIND: the library's allocations are counted" "True" \
	"$(json_get "$TMP/deep.json" 'd["functions"]["malloc"]["bytes"] >= 3000 and d["heap"]["in_use_bytes"] >= 1000')"

# --- fork while another thread lists the loaded objects ------------------------------------
# glibc leaves the list's lock held in such a child, whose exit report lists
# the objects: it must end all the same, and list what its parent lists.
for mode in "" "ALLOCSPY_BACKTRACE=16" "ALLOCSPY_MODE=count"; do
	rm -rf "$TMP/lister" && mkdir -p "$TMP/lister"
	# shellcheck disable=SC2086 # the mode's words on purpose
	timeout 60 env $mode ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/lister/%p.json" LD_PRELOAD="$LIB" \
		"$PROGS/rel_fork_lister" >"$TMP/lister.out" 2>&1
	st=$?
	check "fork while a thread lists the objects${mode:+ ($mode)}: every child ends, status 0" \
		"done 20 0" "$(cat "$TMP/lister.out") $st"
	check "fork while a thread lists the objects${mode:+ ($mode)}: a dump per process, each listing the parent's objects" \
		"21 1" "$(python3 - "$TMP/lister" <<'PY'
import json, os, sys
d = sys.argv[1]
mods = set()
files = [f for f in os.listdir(d) if f.endswith(".json")]
for f in files:
    j = json.load(open(os.path.join(d, f)))
    mods.add(json.dumps([(m["path"], m["start"], m["end"], m["build_id"]) for m in j["modules"]]))
print(len(files), len(mods))
PY
)"
done
