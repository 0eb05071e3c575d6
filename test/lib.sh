# lib.sh - sourced by every test/t*.sh: TAP output and the valgrind harness.
# Each check prints "ok - name" or "not ok - name" followed by "#" lines.

set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
B=${B:-build}
case $B in /*) ;; *) B=$TOP/$B ;; esac
# The shim, the launcher and the test programs come from $SHIM_B when it is
# set: the sanitizer run (make check-asan) builds only the report in B.
SB=${SHIM_B:-$B}
case $SB in /*) ;; *) SB=$TOP/$SB ;; esac
LIB=$SB/liballocspy.so
REPORT=$B/allocspy-report
LAUNCH=$SB/allocspy
PROGS=$SB/test/progs
TMP=$(mktemp -d "${TMPDIR:-/tmp}/allocspy-test.XXXXXX")
trap 'dump_sweep; rm -rf "$TMP"' EXIT
VG_PRELOAD=/usr/libexec/valgrind/vgpreload_core-amd64-linux.so:/usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so

ok() { echo "ok - $1"; }

# The tier: "quick" under make check, "full" under make check-full and when
# a file is run by itself. A file marked "# tier: full" in its first lines
# runs only in the full tier (run.sh); a file that runs a long list of cases
# runs a few of them in the quick tier: in_tier NAME WORD... is true in the
# full tier, and in the quick tier when NAME is one of the WORDs.
TIER=${TIER:-full}
in_tier() {
	[ "$TIER" = full ] && return 0
	it=$1; shift
	for w in "$@"; do [ "$it" = "$w" ] && return 0; done
	return 1
}

# dump_sweep: when a test ends, every dump the shim wrote under $TMP (a file
# whose path is its own options.output with %p and %% put in) is checked:
# heap.peak_bytes is at least heap.in_use_bytes and every snapshot's
# in_use_bytes. One line, "ok" or "not ok" with each dump that fails, when
# the shim wrote any; dumps made by hand (copies under other names,
# mutations) are not the shim's and are left alone.
dump_sweep() {
	[ -d "$TMP" ] || return 0
	python3 - "$TMP" "$0" <<'PY'
import json, os, sys
seen, bad = 0, []
for top, _, files in os.walk(sys.argv[1]):
    for f in files:
        path = os.path.join(top, f)
        try:
            if (os.path.islink(path) or not os.path.isfile(path)
                    or os.path.getsize(path) > 1 << 30):
                continue
            with open(path, "rb") as fh:
                head = fh.read(256)
            if not head.startswith(b"{") or b'"allocspy-dump"' not in head:
                continue
            with open(path) as fh:
                d = json.load(fh)
            tmpl, pid = d["options"]["output"], str(d["program"]["pid"])
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            continue
        name, i = "", 0
        while i < len(tmpl):
            two = tmpl[i:i + 2]
            name += pid if two == "%p" else "%" if two == "%%" else tmpl[i]
            i += 2 if two in ("%p", "%%") else 1
        if os.path.realpath(name) != os.path.realpath(path):
            continue
        seen += 1
        heap = d.get("heap", {})
        peak = heap.get("peak_bytes")
        if peak is None:    # count mode: no peak
            continue
        why = []
        if heap.get("in_use_bytes") is not None and heap["in_use_bytes"] > peak:
            why.append("in_use_bytes %d" % heap["in_use_bytes"])
        for k, s in enumerate(d.get("snapshots", [])):
            if s["in_use_bytes"] > peak:
                why.append("snapshots[%d].in_use_bytes %d" % (k, s["in_use_bytes"]))
                break
        if why:
            bad.append("%s: peak_bytes %d < %s" % (path, peak, ", ".join(why)))
if seen:
    name = "%s: the %d dumps the shim wrote: peak_bytes >= in_use_bytes and every snapshot's" % (
        os.path.basename(sys.argv[2]), seen)
    print(("not ok - " if bad else "ok - ") + name)
    for b in bad:
        print("#   " + b)
PY
}

# not_ok NAME DETAIL...: a failure with its detail as TAP comments.
not_ok() {
	n=$1; shift
	echo "not ok - $n"
	[ $# -gt 0 ] && printf '%s\n' "$@" | sed 's/^/#   /'
	return 0
}

# check NAME EXPECTED ACTUAL: exact string equality.
check() {
	if [ "$2" = "$3" ]; then ok "$1"; else
		not_ok "$1" "expected:" "$2" "actual:" "$3"
	fi
}

# check_match NAME REGEX ACTUAL: an extended-regex match on the whole text.
check_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else
		not_ok "$1" "expected to match: $2" "actual:" "$3"
	fi
}

# padded_preload [EXTRA]: $LIB (then :EXTRA) with extra slashes so that
# LD_PRELOAD has exactly the length valgrind's has (programs that copy
# their environment allocate by size).
padded_preload() {
	p=$LIB${1:+:$1}
	while [ ${#p} -lt ${#VG_PRELOAD} ]; do p=/$p; done
	printf '%s' "$p"
}

# vgalloc_preload: builds test/vgalloc.c into $TMP/vgalloc.so (once) and
# prints an LD_PRELOAD of valgrind's length that puts it under the shim:
# glibc's allocator with valgrind's always-moving realloc and blocks that
# hold no old bytes.
vgalloc_preload() {
	[ -f "$TMP/vgalloc.so" ] ||
		${CC:-cc} -shared -fPIC -O2 -o "$TMP/vgalloc.so" "$TOP/test/vgalloc.c" || return 1
	padded_preload "$TMP/vgalloc.so"
}

# vg_env: the environment valgrind gives the program, in its order.
# The caller appends LD_PRELOAD. The run is killed after 120 s
# ($RUN_TIMEOUT), so that a hang fails a test instead of the whole run.
vg_env() {
	${RUN_TIMEOUT-timeout -k 5 120} env -i LD_LIBRARY_PATH=/usr/lib/debug HOME="${HOME:-/root}" \
		PATH=/usr/local/bin:/usr/bin:/bin LANG=C GLIBCPP_FORCE_NEW=1 \
		PWD="$PWD" GLIBCXX_FORCE_NEW=1 "$@"
}

# FREERES=no: both runs without the libraries' freeres (valgrind's
# --run-libc-freeres=no --run-cxx-freeres=no, the shim's ALLOCSPY_FREERES=no).
# Both programs then see ALLOCSPY_FREERES=no in their environment.
FREERES=${FREERES:-}
freeres_env() { [ -n "$FREERES" ] && printf 'ALLOCSPY_FREERES=%s' "$FREERES"; return 0; }
freeres_flags() {
	[ "$FREERES" = no ] && printf '%s' "--run-libc-freeres=no --run-cxx-freeres=no"
	return 0
}

# freeres_forms: sets FORMS to the freeres forms a parity check runs, "yes"
# (valgrind's default) and "no" (both tools without freeres): both in the
# full tier; in the quick tier one, each in turn from one check to the next,
# so that a file still meets both with half the valgrind runs.
FREERES_TURN=0
freeres_forms() {
	if [ "$TIER" = full ]; then
		FORMS="yes no"
	else
		FREERES_TURN=$((1 - FREERES_TURN))
		if [ $FREERES_TURN -eq 1 ]; then FORMS=yes; else FORMS=no; fi
	fi
}

# run_vg LOG PROG ARGS...: PROG under memcheck, its report in LOG.
# The program's stdout goes to LOG.out and its status to LOG.rc.
run_vg() {
	log=$1; shift
	env -i HOME="${HOME:-/root}" PATH=/usr/local/bin:/usr/bin:/bin LANG=C $(freeres_env) \
		timeout -k 5 600 valgrind $(freeres_flags) \
		--leak-check=summary --log-file="$log" "$@" >"$log.out" 2>"$log.err" </dev/null
	echo $? >"$log.rc"
}

# run_shim LOG PROG ARGS...: PROG under the shim, in valgrind's environment.
# Extra ALLOCSPY_* settings come from $SHIM_ENV (they change the environment's
# size, so parity tests leave it empty); $SHIM_PRELOAD, when set, is the
# LD_PRELOAD (vgalloc_preload's). The summary is read off stderr.
run_shim() {
	log=$1; shift
	vg_env ${SHIM_ENV:-} $(freeres_env) LD_PRELOAD="${SHIM_PRELOAD:-$(padded_preload)}" "$@" \
		>"$log.out" 2>"$log.err" </dev/null
	echo $? >"$log.rc"
	grep -a '^==[0-9]*==' "$log.err" >"$log" || true
}

# heap_lines LOG: the two HEAP SUMMARY figures, prefix stripped.
heap_lines() {
	grep -aE 'in use at exit:|total heap usage:' "$1" | sed 's/^==[0-9]*== *//'
}

# leak_lines LOG: the LEAK SUMMARY figures, or valgrind's "All heap blocks
# were freed" line, prefix stripped.
leak_lines() {
	grep -aE '(definitely|indirectly|possibly) lost:|still reachable:|suppressed: [0-9,]+ bytes|reachable via heuristic|(stdstring|length64|newarray|multipleinheritance) *:|All heap blocks were freed' "$1" |
		sed 's/^==[0-9]*== *//'
}

# both_runs DIR PROG ARGS...: PROG under valgrind (logs DIR/vg*) and under
# the shim (DIR/asp*), each started in the same emptied directory DIR/run,
# so that both see the same working directory and files.
both_runs() {
	d=$1; shift
	rm -rf "$d/run" && mkdir -p "$d/run"
	(cd "$d/run" && run_vg "$d/vg" "$@")
	rm -rf "$d/run" && mkdir "$d/run"
	(cd "$d/run" && run_shim "$d/asp" "$@")
}

# parity NAME PROG ARGS...: the HEAP SUMMARY lines under the shim equal
# valgrind's, and the program's stdout and status are unchanged: with
# valgrind's defaults, then both without freeres.
parity() {
	name=$1; shift
	freeres_forms
	for FREERES in $FORMS; do
		[ "$FREERES" = yes ] && FREERES=
		n=$name${FREERES:+ (freeres=no)}
		d=$TMP/$(echo "$n" | tr -c 'A-Za-z0-9_\n-' _)
		both_runs "$d" "$@"
		check "$n: heap summary equals valgrind's" "$(heap_lines "$d/vg")" "$(heap_lines "$d/asp")"
		check "$n: same stdout and status" \
			"$(cat "$d/vg.out" "$d/vg.rc")" "$(cat "$d/asp.out" "$d/asp.rc")"
	done
	FREERES=
}

# leak_parity NAME PROG ARGS...: the LEAK SUMMARY equals valgrind's too.
# valgrind's own LEAK SUMMARY is not the same in every run: about 1 run in
# 60 of leak_mmap finds a word that points into one of its big blocks
# (possibly lost, not definitely lost). When the two differ, valgrind runs
# again, twice at most, in the same directory; the shim's one run must
# equal one of valgrind's.
leak_parity() {
	name=$1; shift
	freeres_forms
	for FREERES in $FORMS; do
		[ "$FREERES" = yes ] && FREERES=
		n=$name${FREERES:+ (freeres=no)}
		d=$TMP/$(echo "$n" | tr -c 'A-Za-z0-9_\n-' _)
		both_runs "$d" "$@"
		check "$n: heap summary equals valgrind's" "$(heap_lines "$d/vg")" "$(heap_lines "$d/asp")"
		lp_try=0
		while [ "$(leak_lines "$d/vg")" != "$(leak_lines "$d/asp")" ] && [ $lp_try -lt 2 ]; do
			lp_try=$((lp_try + 1))
			mv "$d/vg" "$d/vg.$lp_try"
			rm -rf "$d/run" && mkdir "$d/run"
			(cd "$d/run" && run_vg "$d/vg" "$@")
		done
		check "$n: leak summary equals valgrind's" "$(leak_lines "$d/vg")" "$(leak_lines "$d/asp")"
	done
	FREERES=
}

# no_mangled NAME FILE...: no mangled C++ name (_Z...) in any of the files,
# which hold human-readable output; a suppression entry's fun: lines are
# the exception, as they keep the symbol valgrind's own entries have.
no_mangled() {
	nm_name=$1; shift
	nm_hits=$(grep -aHnE '(^|[^A-Za-z0-9_])_Z[A-Za-z0-9_]+' "$@" | grep -avE '^[^:]*:[0-9]+: *fun:' | head -n 5)
	if [ -z "$nm_hits" ]; then ok "$nm_name"; else
		not_ok "$nm_name" "mangled names:" "$nm_hits"
	fi
}

# json_get FILE EXPR: a value out of a dump, through python3's json module.
json_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"
}

# heapprog_dump DIR: test/golden/heapprog built in DIR and run there under
# the shim with 16-frame backtraces and a full leak check; its dump is
# DIR/heapprog.json. Returns non-zero, with the reason on stderr, when a
# step fails.
heapprog_dump() {
	${CC:-cc} -O0 -g -pthread -o "$1/heapprog" "$TOP/test/golden/heapprog.c" || return 1
	rm -f "$1/heapprog.json"
	(cd "$1" && timeout -k 5 60 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_LEAK_CHECK=full \
		ALLOCSPY_OUTPUT="$1/heapprog.json" LD_PRELOAD="$LIB" ./heapprog \
		>"$1/heapprog.out" 2>"$1/heapprog.err") || { cat "$1/heapprog.err" >&2; return 1; }
	[ -f "$1/heapprog.json" ] || { echo "heapprog wrote no dump" >&2; return 1; }
}

# normalize_libc: frames in files other than heapprog.c (the C library's,
# whose lines and depth vary with its version) become "[libc]", one line
# for a run of them; $TMP becomes TMP.
normalize_libc() {
	python3 -c '
import re, sys
out, prev = [], None
for line in sys.stdin.read().split("\n"):
    line = line.replace(sys.argv[1], "TMP")
    line = re.sub(r"[^ <]+ \((?!heapprog\.c:)[^ ()]+:[0-9]+\)", "[libc]", line)
    if line.strip() == "< [libc]" and prev is not None and prev.rstrip().endswith("[libc]"):
        continue
    out.append(line)
    prev = line
sys.stdout.write("\n".join(out))
' "$TMP"
}
