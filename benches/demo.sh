#!/bin/sh
# demo.sh - `make demo`: seed 000's question, "is my refcount build better
# than my strdup build?", answered under the shim.
#
# The three builds of benches/seed000.c (strdup, atomic refcount with
# allocspy.h, mutex refcount) run under liballocspy.so at 2, 5 and 8 threads;
# `allocspy-report compare` then puts each thread count's three dumps side
# by side. Last, each build is timed bare and under the shim, so that the
# shim's own cost is visible next to the times in the dumps.
#
# Environment (all optional):
#   DEMO_DIR=build/demo    where the dumps go (NAME-THREADS.json)
#   DEMO_THREADS="2 5 8"   the thread counts
#   DEMO_GETS=100000       get_string() calls per thread, as in the seed
#   DEMO_RUNS=5            timed pairs per build and thread count
set -u
cd "$(dirname "$0")/.." || exit 2
B=${B:-build}
case $B in /*) ;; *) B=$(pwd)/$B ;; esac
BB=$B/benches
LIB=$B/liballocspy.so
REPORT=$B/allocspy-report
DIR=${DEMO_DIR:-$B/demo}
THREADS=${DEMO_THREADS:-2 5 8}
GETS=${DEMO_GETS:-100000}
RUNS=${DEMO_RUNS:-5}
BUILDS="strdup refcount mutex"

die() {
	echo "demo.sh: error: $*" >&2
	exit 1
}

for f in "$LIB" "$REPORT" "$BB/pairtime" "$BB/seed000-strdup" \
	"$BB/seed000-refcount" "$BB/seed000-mutex"; do
	[ -e "$f" ] || die "$f is not built: run \`make demo\` (or \`make && make bench-progs\`)"
done
for v in $(env | sed -n 's/^\(ALLOCSPY_[A-Z_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD

mkdir -p "$DIR" || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/allocspy-demo.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

# 1. The dumps, with the cross-thread handoffs of the shared refcount
# counted (ALLOCSPY_REF_CROSS=1; the timings below leave it off).
for t in $THREADS; do
	for b in $BUILDS; do
		out=$DIR/$b-$t.json
		rm -f "$out"
		if ! ALLOCSPY_OUTPUT=$out ALLOCSPY_QUIET=1 ALLOCSPY_REF_CROSS=1 LD_PRELOAD=$LIB \
			"$BB/seed000-$b" "$t" "$GETS" 2>"$tmp/err"; then
			cat "$tmp/err" >&2
			die "seed000-$b $t failed under the shim"
		fi
		[ -s "$out" ] || die "seed000-$b $t: the shim wrote no dump to $out"
	done
done

# 2. The comparisons.
for t in $THREADS; do
	echo "== seed 000, $t threads x $GETS gets: strdup, atomic refcount, mutex refcount"
	echo "\$ allocspy-report compare strdup-$t.json refcount-$t.json mutex-$t.json"
	(cd "$DIR" && "$REPORT" compare "strdup-$t.json" "refcount-$t.json" \
		"mutex-$t.json") 2>"$tmp/err"
	rc=$?
	if [ $rc -ne 0 ]; then
		cat "$tmp/err" >&2
		die "\`allocspy-report compare\` failed with exit status $rc;" \
			"the compare subcommand may not be finished yet"
	fi
	echo
done

# 3. Time without the shim and under it (track mode, no dump written).
echo "== time without the shim, and under it (median of $RUNS paired runs, ms)"
printf '%-8s' threads
for b in $BUILDS; do printf ' %9s' "$b"; done
for b in $BUILDS; do printf ' %15s' "$b+shim"; done
echo
for t in $THREADS; do
	bare_row=$(printf '%-8s' "$t")
	shim_row=
	for b in $BUILDS; do
		if ! "$BB/pairtime" -n "$RUNS" -m 1 -e "$tmp/" \
			-V bare "$BB/seed000-$b" "$t" "$GETS" \
			-V shim LD_PRELOAD="$LIB" ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
			"$BB/seed000-$b" "$t" "$GETS" >"$tmp/out"; then
			die "seed000-$b $t failed when timed bare"
		fi
		bare_row=$(printf '%s %9s' "$bare_row" \
			"$(awk -F'\t' '$1 == "bare" { printf("%.1f", $3) }' "$tmp/out")")
		shim_row=$(printf '%s %15s' "$shim_row" "$(awk -F'\t' '$1 == "shim" {
			if ($7 == "ok") printf("%.1f (%.2fx)", $3, $4); else print "n/a" }' "$tmp/out")")
	done
	echo "$bare_row$shim_row"
done
echo
echo "The dumps are in $DIR. The times inside them (and in the compare tables)"
echo "are taken under the shim; the bare columns above are the programs alone."
