#!/bin/sh
# soak.sh - a deadlock hunt: every fork and thread torture case under the
# shim, many times, in every mode, pinned to one CPU and on both, each run
# under a deadline. A run that hangs gets gdb on every process left of it
# (every thread's stack), then is killed. Every run must end with its own
# output and status, and every dump it leaves must be whole and consistent
# (allocs - frees == blocks in use; the peak not below what is in use).
# A failed run's files are kept, in a directory its FAIL line names.
#
#   sh test/soak.sh [-r RUNS] [-d SECONDS] [-t TIMEOUT] [-m MODES] [CASE...]
#
# -r RUNS     runs of each case, mode and CPU setting per round (default 1)
# -d SECONDS  keep going, round after round, until this much time has
#             passed (default: one round)
# -t TIMEOUT  seconds a run may go without writing a dump before it counts
#             as hung (default 20; a run whose processes keep ending, each
#             writing its dump, is slow, not hung: at most 5 times TIMEOUT)
# -m MODES    the modes to run, of: track count bt16 bt16fp interval
#             sample csample (the last two: sampled stacks, one per 256
#             bytes on average, in track and count mode; default: all)
# CASE        the cases to run (default: all): fork_pool fork_signal
#             vfork_threads exit_fork cxx_fork fork_loader perl_threads
#             python_mp
#
# The last line is "soak: R runs, H hangs, F failures"; the exit status is
# 0 when both are 0. `make soak` runs it for an hour. SOAK_FORKS sets how
# many times the perl, C++ and fork_loader cases fork (default 30, 100 and
# 100: each perl
# child's exit report checks its parent's heap of some 45,000 blocks for
# leaks and writes its dump, 0.1-0.3 s).
#
# A child that fork_signal forks from a signal handler which landed between
# a table operation and its count, and that ends inside that handler, may
# be off by that one block, and by one more for each other thread whose
# handler had landed in the shim at that fork: none of those operations
# ends in the child. Each child notes that number (FORK_SIGNAL_NOTES), and
# its dump may differ by no more.
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
case $B in /*) ;; *) B=$PWD/$B ;; esac
LIB=$B/liballocspy.so
S=$B/test/soak

runs=1 budget=0 limit=20 modes="track count bt16 bt16fp interval sample csample"
while getopts r:d:t:m: o; do
	case $o in
	r) runs=$OPTARG ;;
	d) budget=$OPTARG ;;
	t) limit=$OPTARG ;;
	m) modes=$OPTARG ;;
	*) echo "usage: sh test/soak.sh [-r RUNS] [-d SECONDS] [-t TIMEOUT] [-m MODES] [CASE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
cases=${*:-fork_pool fork_signal vfork_threads exit_fork cxx_fork fork_loader perl_threads python_mp}

for f in "$LIB" "$S/fork_pool" "$S/fork_signal" "$S/vfork_threads" "$S/exit_fork" "$S/cxx_fork" "$S/fork_loader"; do
	[ -e "$f" ] || { echo "soak: $f is missing: run make B=$B test-progs first" >&2; exit 2; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/allocspy-soak.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

mode_env() {
	case $1 in
	track) echo "" ;;
	count) echo "ALLOCSPY_MODE=count" ;;
	bt16) echo "ALLOCSPY_BACKTRACE=16" ;;
	bt16fp) echo "ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=fp" ;;
	interval) echo "ALLOCSPY_INTERVAL_MS=5" ;;
	sample) echo "ALLOCSPY_BACKTRACE=16 ALLOCSPY_SAMPLE=256" ;;
	csample) echo "ALLOCSPY_MODE=count ALLOCSPY_BACKTRACE=16 ALLOCSPY_SAMPLE=256" ;;
	esac
}

command_of() {
	case $1 in
	fork_pool) echo "$S/fork_pool 40" ;;
	fork_signal) echo "$S/fork_signal" ;;
	vfork_threads) echo "$S/vfork_threads" ;;
	exit_fork) echo "$S/exit_fork" ;;
	cxx_fork) echo "$S/cxx_fork ${SOAK_FORKS:-100}" ;;
	fork_loader) echo "$S/fork_loader ${SOAK_FORKS:-100}" ;;
	perl_threads) echo "perl" ;;
	python_mp) echo "python3 $PWD/test/soak/mp_fork.py" ;;
	esac
}

# The processes of a tree, its root first.
tree() {
	echo "$1"
	for c in $(pgrep -P "$1" 2>/dev/null); do tree "$c"; done
}

total=0 hangs=0 fails=0
one_run() {
	name=$1 mode=$2 pin=$3
	d=$TMP/run
	rm -rf "$d" && mkdir -p "$d"
	cmd=$(command_of "$name")
	(
		cd "$d" || exit 2
		# shellcheck disable=SC2046,SC2086 # words on purpose
		if [ "$name" = perl_threads ]; then
			exec $pin env $(mode_env "$mode") FORK_SIGNAL_NOTES="$d" ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$d/%e.%p.json" \
				LD_PRELOAD="$LIB" perl -Mthreads -Mthreads::shared -MPOSIX -e '
				my $stop :shared = 0;
				my @t = map { threads->create(sub { while (!$stop) { my @a = map { "x" x $_ } 1 .. 200 } }) } 1 .. 2;
				for (1 .. '"${SOAK_FORKS:-30}"') { my $p = fork; POSIX::_exit(0) unless $p; waitpid($p, 0) }
				$stop = 1; $_->join for @t; print "done\n"'
		fi
		exec $pin env $(mode_env "$mode") FORK_SIGNAL_NOTES="$d" ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$d/%e.%p.json" \
			LD_PRELOAD="$LIB" $cmd
	) >"$TMP/out" 2>"$TMP/err" </dev/null &
	pid=$!
	tenths=0 quiet=0 dumps=0
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((tenths % 10)) -eq 0 ]; then
			n=$(find "$d" -name '*.json' 2>/dev/null | wc -l)
			if [ "$n" -ne "$dumps" ]; then
				dumps=$n quiet=0
			fi
		fi
		if [ "$quiet" -ge $((limit * 10)) ] || [ "$tenths" -ge $((limit * 50)) ]; then
			tenths=$((limit * 50))
			hangs=$((hangs + 1))
			echo "HANG: $name, mode $mode${pin:+, pinned}: every thread of every process left:"
			for p in $(tree "$pid"); do
				echo "--- pid $p: $(tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null)"
				timeout 60 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null |
					grep -E '^Thread|^#' | head -n 200
			done
			for p in $(tree "$pid"); do kill -9 "$p" 2>/dev/null; done
			break
		fi
		sleep 0.1
		tenths=$((tenths + 1)) quiet=$((quiet + 1))
	done
	wait "$pid"
	rc=$?
	total=$((total + 1))
	[ "$tenths" -ge $((limit * 50)) ] && return
	why=
	[ "$rc" -eq 0 ] || why="status $rc"
	[ "$(cat "$TMP/out")" = done ] || why="$why; output: $(head -c 200 "$TMP/out")"
	ls "$d"/*.tmp >/dev/null 2>&1 && why="$why; a temporary file was left"
	bad=$(python3 - "$d" "$name" <<'PY'
import json, os, sys
d = sys.argv[1]
for f in sorted(os.listdir(d)):
    if not f.endswith(".json"):
        continue
    # fork_signal's children: the operations they may have cut (its notes)
    slack = 0
    note = os.path.join(d, f.split(".")[-2] + ".cut")
    if sys.argv[2] == "fork_signal" and os.path.exists(note):
        slack = int(open(note).read())
    try:
        j = json.load(open(os.path.join(d, f)))
    except Exception as e:
        print(f + ": not a whole dump: " + str(e)); continue
    h = j["heap"]
    if abs(h["allocs"] - h["frees"] - h["in_use_blocks"]) > slack:
        print("%s: allocs - frees = %d, blocks in use %d" % (f, h["allocs"] - h["frees"], h["in_use_blocks"]))
    if h.get("peak_bytes") is not None and h["peak_bytes"] < h["in_use_bytes"]:
        print("%s: peak %d below in use %d" % (f, h["peak_bytes"], h["in_use_bytes"]))
PY
)
	[ -z "$bad" ] || why="$why; $bad"
	if [ -n "$why" ]; then
		fails=$((fails + 1))
		echo "FAIL: $name, mode $mode${pin:+, pinned}: $why"
		head -n 20 "$TMP/err" | sed 's/^/  stderr: /'
		# The run's files (dumps, notes) stay for a look, under ${TMPDIR:-/tmp}.
		keep=$(mktemp -d "${TMPDIR:-/tmp}/allocspy-soak-fail.XXXXXX") &&
			cp -a "$d/." "$keep/" && echo "  the run's files: $keep"
	fi
}

start=$(date +%s)
while :; do
	for name in $cases; do
		c_runs=0 c_hangs=$hangs c_fails=$fails
		for mode in $modes; do
			for pin in "taskset -c 0" ""; do
				i=0
				while [ "$i" -lt "$runs" ]; do
					one_run "$name" "$mode" "$pin"
					i=$((i + 1))
					c_runs=$((c_runs + 1))
				done
			done
		done
		echo "soak: $name: $c_runs runs, $((hangs - c_hangs)) hangs, $((fails - c_fails)) failures"
	done
	[ $(($(date +%s) - start)) -lt "$budget" ] || break
done
echo "soak: $total runs, $hangs hangs, $fails failures"
[ "$hangs" -eq 0 ] && [ "$fails" -eq 0 ]
