#!/bin/sh
# run.sh - `make bench`: the overhead of allocspy and of other tools on the
# seed workloads and real programs, as ratios to the bare program timed in
# the same pairs; then the exit report's time with 5,000,000 blocks live.
#
# Environment (all optional):
#   BENCH_RUNS=11       pairs per tool and workload
#   BENCH_SLOW_RUNS=3   pairs for heaptrack
#   BENCH_BUDGET=3      seconds of pairs per tool and workload; a slow tool
#                       gets fewer pairs (at least BENCH_MIN_RUNS=3)
#   BENCH_REAL_BUDGET=15  the same for the real programs, which run for a
#                       second each: more pairs, so that one row can be read
#   BENCH_TIMEOUT=120   seconds before one run counts as failed (a hang is
#                       caught sooner: after 50x the bare time, at least 10 s)
#   BENCH_ONLY="a b"    only workloads whose names start with these words
#   BENCH_TOOLS="..."   the tool columns, default
#                       "limit limit-ret count track bt16 bt16-fp sample guard memusage heaptrack"
# The limit column is build/benches/libfloor.so (floor.c): an interposer that
# only forwards, the least any LD_PRELOAD tool can cost; limit-ret is
# libfloor-ret.so, the same looking at each allocation's result.
# The table goes to stdout, and the raw numbers to build/benches/results.tsv.
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
BB=$B/benches
RUNS=${BENCH_RUNS:-11}
SLOW=${BENCH_SLOW_RUNS:-3}
BUDGET=${BENCH_BUDGET:-3}
REAL_BUDGET=${BENCH_REAL_BUDGET:-15}
MIN=${BENCH_MIN_RUNS:-3}
TIMEOUT=${BENCH_TIMEOUT:-120}
ONLY=${BENCH_ONLY:-}
TOOLS=${BENCH_TOOLS:-limit limit-ret count track bt16 bt16-fp sample guard memusage heaptrack}
LIB=$(pwd)/$B/liballocspy.so
FLOOR=$(pwd)/$BB/libfloor.so
FLOOR_RET=$(pwd)/$BB/libfloor-ret.so
MEMUSAGE=/usr/lib/x86_64-linux-gnu/libmemusage.so
PAIRTIME=$BB/pairtime
RESULTS=$BB/results.tsv

for p in pairtime malloc_free thread_perf nullfree gitalloc strdup_free \
	seed000-strdup seed000-refcount seed000-grefcount seed000-mutex libfloor.so libfloor-ret.so \
	churn cxxmap exitscan; do
	if [ ! -x "$BB/$p" ]; then
		echo "run.sh: error: $BB/$p is not built: run \`make bench-progs\`" >&2
		exit 2
	fi
done
# The system python, not a version manager's shell-script shim: a shim would
# time a shell and its startup too.
if [ -x /usr/bin/python3 ]; then
	PY=/usr/bin/python3
else
	PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || PY=
fi

# A user's own settings must not leak into the runs.
for v in $(env | sed -n 's/^\(ALLOCSPY_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset MEMUSAGE_OUTPUT MEMUSAGE_PROG_NAME MEMUSAGE_BUFFER_SIZE \
	MEMUSAGE_NO_TIMER MEMUSAGE_TRACE_MMAP LD_PRELOAD

tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocspy-bench.XXXXXX") || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

have_shim=1
if [ ! -f "$LIB" ]; then
	have_shim=
	echo "run.sh: warning: $LIB is not built; its columns read n/a" >&2
fi
have_heaptrack=1
command -v heaptrack >/dev/null 2>&1 || have_heaptrack=
have_memusage=1
[ -f "$MEMUSAGE" ] || have_memusage=

SHIM="LD_PRELOAD=$LIB ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1"

# variant_args TOOL: the pairtime words that name TOOL's variant and set its
# environment (before the program's own VAR=VALUE words), or nothing when
# TOOL is unavailable; variant_cmd TOOL: the command that runs the program
# under it, when the tool is one (after them).
variant_args() {
	case $1 in
	limit) echo "-V limit LD_PRELOAD=$FLOOR" ;;
	limit-ret) echo "-V limit-ret LD_PRELOAD=$FLOOR_RET" ;;
	count) [ -n "$have_shim" ] && echo "-V count $SHIM ALLOCSPY_MODE=count" ;;
	track) [ -n "$have_shim" ] && echo "-V track $SHIM" ;;
	bt16) [ -n "$have_shim" ] && echo "-V bt16 $SHIM ALLOCSPY_BACKTRACE=16" ;;
	bt16-fp) [ -n "$have_shim" ] &&
		echo "-V bt16-fp $SHIM ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=fp" ;;
	sample) [ -n "$have_shim" ] && echo "-V sample $SHIM ALLOCSPY_MODE=count ALLOCSPY_BACKTRACE=16 ALLOCSPY_SAMPLE=524288" ;;
	guard) [ -n "$have_shim" ] && echo "-V guard $SHIM ALLOCSPY_GUARD=1000" ;;
	memusage) [ -n "$have_memusage" ] && echo "-V memusage LD_PRELOAD=$MEMUSAGE" ;;
	heaptrack) [ -n "$have_heaptrack" ] && echo "-V heaptrack:$SLOW" ;;
	esac
	return 0
}
variant_cmd() {
	case $1 in
	heaptrack) echo "heaptrack -o $tmp/heaptrack" ;;
	esac
}

# fmt_ratio R: "1.23x", "45.6x", or n/a.
fmt_ratio() {
	case $1 in
	''|-) echo n/a ;;
	*) awk -v r="$1" 'BEGIN { printf(r < 10 ? "%.2fx" : "%.1fx", r) }' ;;
	esac
}

printf '# allocspy bench: %s, %s CPUs, %s, glibc %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" \
	"$(nproc)" "$(uname -r)" "$(ldd --version 2>/dev/null | sed -n '1s/.* //p')"
printf '# %s pairs per tool (heaptrack %s; fewer when its pairs exceed %s s per workload, %s s for a real program)\n' \
	"$RUNS" "$SLOW" "$BUDGET" "$REAL_BUDGET"
printf '# load average before: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
header=$(printf '%-22s %9s' workload "bare ms")
for t in $TOOLS; do header=$(printf '%s %9s' "$header" "$t"); done
echo "$header"
printf '%s\n' "$header" | sed 's/./-/g'
printf 'workload\tseed\tvariant\truns\tmedian_ms\tratio\tmin_ratio\tmax_ratio\tstatus\tmaxrss_kb\n' >"$RESULTS"

notes=
# wl NAME SEED [VAR=VALUE ...] PROG ARG...: one row of the table (the
# VAR=VALUE words are the program's environment, bare and under each tool).
wl() {
	name=$1 seed=$2
	shift 2
	if [ -n "$ONLY" ]; then
		hit=
		for w in $ONLY; do case $name in "$w"*) hit=1 ;; esac; done
		[ -n "$hit" ] || return 0
	fi
	penv=
	while [ $# -gt 0 ]; do
		case $1 in *=*) penv="$penv $1"; shift ;; *) break ;; esac
	done
	vargs=
	for t in $TOOLS; do
		a=$(variant_args "$t")
		[ -n "$a" ] && vargs="$vargs $a $penv $(variant_cmd "$t") $*"
	done
	# shellcheck disable=SC2086 # the words are split on purpose
	"$PAIRTIME" -n "$RUNS" -m "$MIN" -b "$BUDGET" -t "$TIMEOUT" -T 50 -e "$tmp/$name." \
		-V bare $penv "$@" $vargs >"$tmp/out" 2>"$tmp/err"
	if ! grep -q '^bare	[0-9]*	[0-9]' "$tmp/out"; then
		printf '%-22s %9s\n' "$name" "failed"
		notes="$notes
$name: the bare program failed: $(cat "$tmp/out" "$tmp/err" | head -3)"
		return 0
	fi
	awk -F'\t' -v w="$name" -v s="$seed" 'BEGIN { OFS = "\t" }
		{ print w, s, $1, $2, $3, $4, $5, $6, $7, $8 }' "$tmp/out" >>"$RESULTS"
	bare=$(awk -F'\t' '$1 == "bare" { print $3 }' "$tmp/out")
	row=$(printf '%-22s %9.1f' "$name" "$bare")
	for t in $TOOLS; do
		r=$(awk -F'\t' -v t="$t" '$1 == t && $7 == "ok" { print $4 }' "$tmp/out")
		row=$(printf '%s %9s' "$row" "$(fmt_ratio "$r")")
		st=$(awk -F'\t' -v t="$t" '$1 == t && $7 != "ok" { print $7 }' "$tmp/out")
		if [ -n "$st" ]; then
			msg=$(grep -v '^$' "$tmp/$name.$t.err" 2>/dev/null | head -2 | tr '\n' ' ')
			notes="$notes
$name / $t: $st${msg:+: $msg}"
		fi
	done
	echo "$row"
}

# name                seed  program and arguments
wl s003-malloc1024-t5  003  "$BB/malloc_free" 5 100000 1024
wl s003-malloc1024-t2  003  "$BB/malloc_free" 2 3000000 1024
wl s001-thread_perf    001  "$BB/thread_perf" 10 500 1000
wl s002-nullfree-2     002  "$BB/nullfree" 2
wl s002-nullfree-50    002  "$BB/nullfree" 50
wl s002-nullfree-98    002  "$BB/nullfree" 98
wl s004-small-100B     004  "$BB/gitalloc" small
wl s004-medium-100K    004  "$BB/gitalloc" medium
wl s004-big-100M       004  "$BB/gitalloc" big
wl s000-strdup_free-t2 000  "$BB/strdup_free" 2 3000000
wl s000-glib-strdup-t2 000  "$BB/seed000-strdup" 2
wl s000-glib-refcnt-t2 000  "$BB/seed000-refcount" 2
wl s000-refcnt-t2-2M   000  "$BB/seed000-refcount" 2 2000000
wl s000-grefcnt-t2-2M  000  "$BB/seed000-grefcount" 2 2000000
wl s000-glib-mutex-t2  000  "$BB/seed000-mutex" 2
if [ -n "$PY" ]; then
	wl python-json         -    "$PY" benches/json_bench.py 200000
fi

# Real programs whose blocks live: the live table's cost, which the seed
# loops above hide (each frees its block at once).
if [ -z "$ONLY" ] || echo " $ONLY " | grep -q ' r-\| r '; then
	echo
	echo "Real programs whose blocks live"
	echo "$header"
	printf '%s\n' "$header" | sed 's/./-/g'
fi
BUDGET=$REAL_BUDGET
wl r-churn             real "$BB/churn" 2 20000 8000000 64
wl r-cxx-map           real "$BB/cxxmap" 100000 300000
if [ -n "$PY" ]; then
	wl r-python-json   real PYTHONMALLOC=malloc "$PY" benches/json_bench.py 100000 parse
fi
if command -v sqlite3 >/dev/null 2>&1; then
	wl r-sqlite3       real sqlite3 -init benches/sqlite_bench.sql :memory: .quit
fi
if command -v perl >/dev/null 2>&1; then
	wl r-perl-hash     real perl benches/perl_hash.pl 300000
fi
# The geometric mean of each tool's ratios over the real programs, then
# their maximum resident set sizes (medians, MB: bare, then each tool).
awk -F'\t' -v tools="$TOOLS" '
	$2 == "real" && $9 == "ok" { n[$3]++; lg[$3] += log($6); rss[$1, $3] = $10; rows[$1] = 1 }
	$2 == "real" && $3 == "bare" && $9 == "ok" { order[++nr] = $1 }
	END {
		if (nr == 0) exit
		nt = split(tools, t, " ")
		row = sprintf("%-22s %9s", "geometric mean", "")
		for (i = 1; i <= nt; i++)
			row = row sprintf(" %9s", n[t[i]] ? sprintf(exp(lg[t[i]] / n[t[i]]) < 10 ? "%.2fx" : "%.1fx", exp(lg[t[i]] / n[t[i]])) : "n/a")
		print row
		print ""
		print "Maximum resident set size, MB (median of the runs)"
		row = sprintf("%-22s %9s", "workload", "bare")
		for (i = 1; i <= nt; i++) row = row sprintf(" %9s", t[i])
		print row
		gsub(/./, "-", row); print row
		for (r = 1; r <= nr; r++) {
			w = order[r]
			row = sprintf("%-22s %9.1f", w, rss[w, "bare"] / 1024)
			for (i = 1; i <= nt; i++)
				row = row sprintf(" %9s", ((w, t[i]) in rss) && rss[w, t[i]] != "-" ? sprintf("%.1f", rss[w, t[i]] / 1024) : "n/a")
			print row
		}
	}' "$RESULTS"

# The exit report of a program with 5,000,000 blocks live: seconds from
# main's return to the process's end (exitscan.c), by how the blocks are
# held, bare and in track mode with the full leak check.
if [ -n "$have_shim" ] && { [ -z "$ONLY" ] || echo " $ONLY " | grep -q ' exit'; }; then
	echo
	echo "The exit report with 5,000,000 blocks live (ALLOCSPY_LEAK_CHECK=full), seconds"
	echo "from main's return to the end, median of 3 runs"
	printf '%-22s %9s %9s\n' "held by" bare track
	printf '%-22s %9s %9s\n' "--------" "----" "-----"
	for shape in lost array shuffled chain tree list lostchain; do
		b=$("$BB/exitscan" "$shape" 5000000 3 2>/dev/null | cut -d' ' -f1)
		t=$(env LD_PRELOAD="$LIB" ALLOCSPY_OUTPUT=none ALLOCSPY_LEAK_CHECK=full \
			"$BB/exitscan" "$shape" 5000000 3 2>/dev/null | cut -d' ' -f1)
		printf '%-22s %9s %9s\n' "exit-$shape" "${b:-failed}" "${t:-failed}"
	done
fi

echo
echo "Ratios are medians of paired runs (tool time / bare time of the same pair)."
echo "Raw numbers (runs, min and max ratios): $RESULTS"
if [ -n "$notes" ]; then
	echo "n/a:$notes"
fi
printf '# load average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
