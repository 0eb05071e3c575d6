#!/bin/sh
# t46-sample.sh - ALLOCSPY_SAMPLE: stacks for a Poisson sample of the bytes
# allocated. sample_sites allocates known bytes from nine sites (sizes from
# 8 bytes to 5 MB); sampled every 65,536 bytes with a fixed seed, in track
# and in count mode: the totals, the HEAP and LEAK SUMMARY and the counts
# per function and thread are those of the unsampled run, every site with
# at least 5% of the bytes is estimated within 10% (bytes and allocations),
# the estimates of what is in use at exit are right where they are exact
# (a site whose blocks all stay live), the same seed samples the same
# allocations again, the report and the exports say the figures are
# estimates, and the dump's new keys are in liballocspy(7). Then threads
# and fork under sampling, a sampled block's address reused unsampled
# (sample_reuse), bad values, and merge's refusal to mix sampled and exact
# figures.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1
unset DEBUGINFOD_URLS

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ] || [ ! -x "$PROGS/sample_sites" ]; then
	not_ok "allocspy-report, the shim and sample_sites are built" "run make && make test-progs"
	exit 0
fi

MEAN=65536
SEED=4242

# run NAME PROG VAR=VALUE...: PROG under the shim in $TMP/NAME.d, its dump
# $TMP/NAME.json, its stdout, stderr and status beside it.
run() {
	n=$1 p=$2
	shift 2
	rm -rf "$TMP/$n.d" "$TMP/$n.json" && mkdir "$TMP/$n.d"
	(cd "$TMP/$n.d" && timeout -k 5 300 env "$@" ALLOCSPY_OUTPUT="$TMP/$n.json" \
		LD_PRELOAD="$LIB" "$PROGS/$p" >"$TMP/$n.out" 2>"$TMP/$n.err")
	echo $? >"$TMP/$n.rc"
}

# figures DUMP: the exact figures, one per line: heap totals, every
# function's calls and bytes, every thread's allocs, frees and bytes.
figures() {
	json_get "$1" '"\n".join(["heap %s" % [d["heap"][k] for k in ("allocs", "frees", "bytes_allocated", "in_use_blocks", "in_use_bytes", "failed")]] + ["%s %s" % (n, sorted(f.items())) for n, f in sorted(d["functions"].items())] + ["thread %d %d %d" % (t["allocs"], t["frees"], t["bytes_allocated"]) for t in d["threads"]] + ["hist %s" % d["histogram"]])'
}

# sites DUMP WEIGHT: "site value" per site, from the folded export (the
# allocating function is the innermost frame).
sites() {
	"$REPORT" export --format=folded --weight="$2" "$1" 2>/dev/null |
		sed -n 's/.*;\(site_[a-z]*\) ([^)]*) \([0-9]*\)$/\1 \2/p' | sort
}

# The program's sites: name, size, count (sample_sites.c).
SITES="site_tiny 32 3500000
site_small 1000 120000
site_medium 20000 6000
site_large 300000 400
site_huge 5000000 24
site_keep 5000 400
site_leak 700 1000
site_crumbs 8 100000
site_odd 100 50000"

# within NAME FILE WEIGHT: each site with 5% or more of the bytes, its
# estimate for WEIGHT (alloc_bytes or allocs) within 10% of the truth.
within() {
	python3 - "$2" "$3" "$SITES" <<'PY'
import sys
est = dict((l.split()[0], int(l.split()[1])) for l in open(sys.argv[1]) if l.strip())
weight = sys.argv[2]
rows = [l.split() for l in sys.argv[3].splitlines()]
total = sum(int(s) * int(c) for _, s, c in rows)
bad, checked = [], 0
for name, size, count in rows:
    nbytes = int(size) * int(count)
    if nbytes * 20 < total:
        continue
    checked += 1
    want = nbytes if weight == "alloc_bytes" else int(count)
    got = est.get(name, 0)
    if abs(got - want) * 10 > want:
        bad.append("%s: %d estimated, %d true" % (name, got, want))
print("%d sites within 10%%" % checked if not bad else "; ".join(bad))
PY
}

# --- track mode ---------------------------------------------------------------------------------

run plain sample_sites ALLOCSPY_LEAK_CHECK=full
run track sample_sites ALLOCSPY_LEAK_CHECK=full ALLOCSPY_BACKTRACE=16 \
	ALLOCSPY_SAMPLE=$MEAN ALLOCSPY_SAMPLE_SEED=$SEED
check "track: stdout and status as without sampling" "ok
0" "$(cat "$TMP/track.out" "$TMP/track.rc")"
check "track: the HEAP SUMMARY is the unsampled run's" \
	"$(heap_lines "$TMP/plain.err")" "$(heap_lines "$TMP/track.err")"
check "track: ... 3,777,825 allocs of 600,504,096 bytes, 500 blocks live" \
"in use at exit: 2,070,000 bytes in 500 blocks
total heap usage: 3,777,825 allocs, 3,777,325 frees, 600,504,096 bytes allocated" \
	"$(heap_lines "$TMP/track.err")"
check "track: the LEAK SUMMARY is the unsampled run's" \
	"$(leak_lines "$TMP/plain.err")" "$(leak_lines "$TMP/track.err")"
check "track: the totals, functions, threads and histogram are the unsampled run's" \
	"$(figures "$TMP/plain.json")" "$(figures "$TMP/track.json")"
check "track: the dump says how it was sampled" "$MEAN $MEAN $SEED" \
	"$(json_get "$TMP/track.json" '"%d %d %d" % (d["options"]["sample"], d["sample"]["mean_bytes"], d["sample"]["seed"])')"
check "track: the unsampled dump says it was not" "0 False" \
	"$(json_get "$TMP/plain.json" '"%d %s" % (d["options"]["sample"], "sample" in d)')"

sites "$TMP/track.json" alloc_bytes >"$TMP/track.bytes"
sites "$TMP/track.json" allocs >"$TMP/track.allocs"
check "track: every site has an estimate" "$(printf '%s\n' "$SITES" | cut -d' ' -f1 | sort)" \
	"$(cut -d' ' -f1 "$TMP/track.bytes")"
check "track: bytes of each site with 5% or more, within 10%" "5 sites within 10%" \
	"$(within track "$TMP/track.bytes" alloc_bytes)"
check "track: allocations of each site with 5% or more, within 10%" "5 sites within 10%" \
	"$(within track "$TMP/track.allocs" allocs)"
check "track: the 5 MB blocks are always sampled: exact" "site_huge 120000000" \
	"$(grep '^site_huge ' "$TMP/track.bytes")"
# site_keep's blocks all stay live: the same samples, the same estimate.
check "track: in use at exit: site_keep's estimate is its bytes', site_leak's below, no other site" \
	"site_keep $(sed -n 's/^site_keep //p' "$TMP/track.bytes")
site_leak yes" "$(sites "$TMP/track.json" inuse_bytes | sed 's/^\(site_leak\) \([0-9]*\)$/\1 yes/')"
check "track: the stack_stats keys are the estimates and the samples" \
	"est_allocs est_bytes est_in_use_blocks est_in_use_bytes est_peak_blocks est_peak_bytes est_temporary samples stack" \
	"$(json_get "$TMP/track.json" '" ".join(sorted(d["stack_stats"][0]))')"
check "track: the samples add up to the sampled allocations' (site_huge: all 24)" "24" \
	"$(json_get "$TMP/track.json" '[s["samples"] for s in d["stack_stats"] if s["est_bytes"] == 120000000][0]')"
check "track: the peak's detail and thread_stacks are estimates too" "est_blocks est_bytes stack|est_allocs est_bytes samples stack tid" \
	"$(json_get "$TMP/track.json" '" ".join(sorted([s for s in d["snapshots"] if s.get("peak")][0]["detail"][0])) + "|" + " ".join(sorted(d["thread_stacks"][0]))')"

# The loss records: exact bytes and blocks; the sampled ones with their
# stacks, the others with their caller, marked.
check "track: loss records add up to the LEAK SUMMARY, each marked sampled or not" "2070000 500 True True" \
	"$(json_get "$TMP/track.json" '"%d %d %s %s" % (sum(r["bytes"] for r in d["loss_records"]), sum(r["blocks"] for r in d["loss_records"]), any(r["sampled"] for r in d["loss_records"]), any(not r["sampled"] for r in d["loss_records"]))')"
check "track: unsampled loss records say so, on stderr and in allocspy-report leaks" "yes yes" \
	"$(grep -q '(not sampled by ALLOCSPY_SAMPLE: the caller only)' "$TMP/track.err" && echo yes) $("$REPORT" leaks --show-leak-kinds=all "$TMP/track.json" 2>/dev/null | grep -q '(not sampled by ALLOCSPY_SAMPLE: the caller only)' && echo yes)"

# The same seed, the same samples.
run again sample_sites ALLOCSPY_LEAK_CHECK=full ALLOCSPY_BACKTRACE=16 \
	ALLOCSPY_SAMPLE=$MEAN ALLOCSPY_SAMPLE_SEED=$SEED
check "track: the same seed gives the same estimates" "$(cat "$TMP/track.bytes")" \
	"$(sites "$TMP/again.json" alloc_bytes)"
check "track: ... and the same samples" \
	"$(json_get "$TMP/track.json" 'sorted(s["samples"] for s in d["stack_stats"])')" \
	"$(json_get "$TMP/again.json" 'sorted(s["samples"] for s in d["stack_stats"])')"

# The report says the stack figures are estimates.
"$REPORT" "$TMP/track.json" >"$TMP/track.report" 2>&1
check "report: the stacks table says it shows estimates" \
"  sampled: one stack per 65,536 bytes allocated on average; the figures are estimates
      est. bytes  est. allocs    est. in use  samples  where" \
	"$(sed -n '/^Stacks/{n;p;n;p;}' "$TMP/track.report")"
check "report: site_huge's row: exact, 24 samples" "yes" \
	"$(grep -qE '^ +120,000,000 +24 +0 +24  site_huge ' "$TMP/track.report" && echo yes)"
check "report --json: the summary names the sampling" "$MEAN $SEED" \
	"$("$REPORT" --json "$TMP/track.json" | python3 -c 'import json,sys; s=json.load(sys.stdin)["sample"]; print(s["mean_bytes"], s["seed"])')"
"$REPORT" export --format=folded "$TMP/track.json" >/dev/null 2>"$TMP/export.err"
check "export: a note that the stack figures are estimates" \
	"allocspy-report: note: $TMP/track.json: the stack figures are estimates from sampled allocations (ALLOCSPY_SAMPLE: one per 65,536 bytes on average)" \
	"$(cat "$TMP/export.err")"
"$REPORT" export --format=massif -o "$TMP/track.massif" "$TMP/track.json" 2>/dev/null
check "export --format=massif: its desc says so" \
	"desc: allocspy-report export --format=massif (sampled: ALLOCSPY_SAMPLE=65536, the trees are estimates); peak:" \
	"$(head -n 1 "$TMP/track.massif" | sed 's/; peak: .*/; peak:/')"
"$REPORT" export --format=callgrind -o "$TMP/track.callgrind" "$TMP/track.json" 2>/dev/null
check "export --format=callgrind: a desc line says so" "desc: Sampled: ALLOCSPY_SAMPLE=65536; the costs are estimates" \
	"$(grep '^desc: Sampled' "$TMP/track.callgrind")"
"$REPORT" timeline "$TMP/track.json" >"$TMP/track.timeline" 2>&1
check "timeline: the stacks at the peak are estimates" "1" \
	"$(grep -c '(estimates: ALLOCSPY_SAMPLE sampled one stack per 65,536 bytes on average)' "$TMP/track.timeline")"

# --- count mode ---------------------------------------------------------------------------------

run cplain sample_sites ALLOCSPY_MODE=count
run count sample_sites ALLOCSPY_MODE=count ALLOCSPY_BACKTRACE=16 \
	ALLOCSPY_SAMPLE=$MEAN ALLOCSPY_SAMPLE_SEED=$SEED
check "count: stdout and status as without sampling" "ok
0" "$(cat "$TMP/count.out" "$TMP/count.rc")"
check "count: the HEAP SUMMARY is the unsampled run's" \
	"$(heap_lines "$TMP/cplain.err")" "$(heap_lines "$TMP/count.err")"
check "count: the totals, functions, threads and histogram are the unsampled run's" \
	"$(figures "$TMP/cplain.json")" "$(figures "$TMP/count.json")"
sites "$TMP/count.json" alloc_bytes >"$TMP/count.bytes"
check "count: bytes of each site with 5% or more, within 10%" "5 sites within 10%" \
	"$(within count "$TMP/count.bytes" alloc_bytes)"
sites "$TMP/count.json" allocs >"$TMP/count.allocs"
check "count: allocations of each site with 5% or more, within 10%" "5 sites within 10%" \
	"$(within count "$TMP/count.allocs" allocs)"
check "count: the same seed samples as in track mode" "$(cat "$TMP/track.bytes")" "$(cat "$TMP/count.bytes")"
check "count: in use at exit, from the table of sampled blocks: site_keep's all, site_leak's some" \
	"site_keep $(sed -n 's/^site_keep //p' "$TMP/count.bytes")
site_leak yes" "$(sites "$TMP/count.json" inuse_bytes | sed 's/^\(site_leak\) \([0-9]*\)$/\1 yes/')"
for m in track count; do
	check "$m: temporary allocations: each site freeing at once has its allocations' estimate, site_keep none" \
		"$(grep -v '^site_keep \|^site_leak ' "$TMP/$m.allocs")" \
		"$(sites "$TMP/$m.json" temporary | grep -v '^site_leak ')"
done
check "count: no peak estimates (count mode has no snapshots)" \
	"est_allocs est_bytes est_in_use_blocks est_in_use_bytes est_temporary samples stack" \
	"$(json_get "$TMP/count.json" '" ".join(sorted(d["stack_stats"][0]))')"

# --- the keys are documented ----------------------------------------------------------------------

sed -n 's/^\.It Sy //p' man/liballocspy.7 | tr -d ' ' | tr ',' '\n' | sort -u >"$TMP/man.keys"
"$REPORT" merge -o "$TMP/merged.json" "$TMP/track.json" "$TMP/again.json" 2>"$TMP/merge.err"
check "merge: two sampled dumps merge" "0" "$?"
for f in track count merged; do
	check "liballocspy(7) describes every key of the $f dump" "" "$(python3 - "$TMP/$f.json" "$TMP/man.keys" <<'PY'
import json, sys
seen = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            seen.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(json.load(open(sys.argv[1])))
known = set(l.strip() for l in open(sys.argv[2]))
fns = set(json.load(open(sys.argv[1]))["functions"])
print(" ".join(sorted(seen - known - fns)))
PY
)"
done
check "merge: the merged dump is sampled, its estimates the sums" "$MEAN
$(awk '{ print $1, 2 * $2 }' "$TMP/track.bytes")" \
	"$(json_get "$TMP/merged.json" 'd["sample"]["mean_bytes"]')
$(sites "$TMP/merged.json" alloc_bytes)"
check "merge: each loss record says, as in the dumps merged, whether its stack was sampled" \
	"$(json_get "$TMP/track.json" '" ".join(sorted(str(r["sampled"]) for r in d["loss_records"]))')|$("$REPORT" leaks "$TMP/track.json" 2>&1 | grep -c 'not sampled by ALLOCSPY_SAMPLE')" \
	"$(json_get "$TMP/merged.json" '" ".join(sorted(str(r["sampled"]) for r in d["loss_records"]))')|$("$REPORT" leaks "$TMP/merged.json" 2>&1 | grep -c 'not sampled by ALLOCSPY_SAMPLE')"
"$REPORT" merge -o "$TMP/mixed.json" "$TMP/track.json" "$TMP/plain.json" 2>"$TMP/mixed.err"
check "merge: a sampled and an unsampled dump do not merge (exit 2)" \
	"2|allocspy-report: error: $TMP/plain.json: ALLOCSPY_SAMPLE=0 here and 65536 in $TMP/track.json: dumps sampled differently cannot be merged" \
	"$?|$(cat "$TMP/mixed.err")"

# --- threads and fork ---------------------------------------------------------------------------------

# Every allocation of 1 byte or more is sampled now and then at a mean of
# 64 bytes: each thread's own countdown, the table of sampled blocks in
# count mode, and its lock across fork.
for mode in track count; do
	for p in par_threads par_fork par_realloc; do
		run "$p-$mode-0" "$p" ALLOCSPY_MODE=$mode
		run "$p-$mode-s" "$p" ALLOCSPY_MODE=$mode ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=64
		check "$p ($mode, sampled every 64 bytes): output, status and HEAP SUMMARY as unsampled" \
			"$(cat "$TMP/$p-$mode-0.out" "$TMP/$p-$mode-0.rc"; heap_lines "$TMP/$p-$mode-0.err")" \
			"$(cat "$TMP/$p-$mode-s.out" "$TMP/$p-$mode-s.rc"; heap_lines "$TMP/$p-$mode-s.err")"
	done
done

# valgrind's numbers, sampled: the same environment for both runs.
if command -v valgrind >/dev/null 2>&1; then
	for p in leak_chain leak_threads par_threads; do
		SHIM_ENV="ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=64 ALLOCSPY_SAMPLE_SEED=1" \
			leak_parity "$p (sampled every 64 bytes)" "$PROGS/$p"
	done
else
	ok "valgrind parity when sampled # SKIP valgrind is not installed"
fi

# --- a sampled block's address again, unsampled ---------------------------------------------------------

# sample_reuse: site_first's block (sampled) is not a temporary; its address
# comes back to site_empty's block (0 bytes: never sampled), freed at once.
# That temporary is not site_first's: the sampled stacks' temporaries are
# site_warm's 4, the other 2 (site_empty's) are the unsampled stacks'.
run reuse sample_reuse ALLOCSPY_MODE=count ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=1 ALLOCSPY_SAMPLE_SEED=1 ALLOCSPY_QUIET=1
check "count mode, a sampled block's address handed out again unsampled and freed at once: a temporary of no sampled stack" \
	"0 address reused|main (sample_reuse.c:27);site_warm (sample_reuse.c:22) 4
[other stacks] 2|6" \
	"$(cat "$TMP/reuse.rc") $(cat "$TMP/reuse.out")|$("$REPORT" export --format=folded --weight=temporary "$TMP/reuse.json" 2>/dev/null)|$(json_get "$TMP/reuse.json" 'd["heap"]["temporary"]')"

# --- bad values ------------------------------------------------------------------------------------------

bad() {
	run bad par_basic "$@"
	printf '%s|%s|%s' "$(cat "$TMP/bad.rc")" "$(grep -a '^allocspy: warning' "$TMP/bad.err")" \
		"$(json_get "$TMP/bad.json" '"%d %s" % (d["options"]["sample"], "sample" in d)')"
}
for v in abc -5 1099511627777 12x " 7"; do
	check "ALLOCSPY_SAMPLE='$v': one warning with the range and the default; no sampling" \
		"3|allocspy: warning: ALLOCSPY_SAMPLE=$v: not an integer from 0 to 1099511627776; the default, 0 (no sampling), is used|0 False" \
		"$(bad ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE="$v")"
done
check "ALLOCSPY_SAMPLE=1099511627776, the largest: taken" "3||1099511627776 True" \
	"$(bad ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=1099511627776)"
check "ALLOCSPY_SAMPLE=0: no sampling, no warning" "3||0 False" \
	"$(bad ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=0)"
check "ALLOCSPY_SAMPLE without ALLOCSPY_BACKTRACE of 2 or more: one warning; no sampling" \
	"3|allocspy: warning: ALLOCSPY_SAMPLE: stacks are sampled with ALLOCSPY_BACKTRACE of 2 or more; 0 (no sampling) is used|0 False" \
	"$(bad ALLOCSPY_SAMPLE=4096)"
for v in x -1 9223372036854775808; do
	check "ALLOCSPY_SAMPLE_SEED='$v': one warning with the range and the default" \
		"3|allocspy: warning: ALLOCSPY_SAMPLE_SEED=$v: not an integer from 0 to 9223372036854775807; the default, a random seed, is used|4096 True" \
		"$(bad ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=4096 ALLOCSPY_SAMPLE_SEED="$v")"
done
check "ALLOCSPY_SAMPLE_SEED=9223372036854775807, the largest: in the dump" "9223372036854775807" \
	"$(run seed par_basic ALLOCSPY_BACKTRACE=8 ALLOCSPY_SAMPLE=4096 ALLOCSPY_SAMPLE_SEED=9223372036854775807; json_get "$TMP/seed.json" 'd["sample"]["seed"]')"
