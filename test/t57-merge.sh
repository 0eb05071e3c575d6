#!/bin/sh
# t57-merge.sh - allocspy-report merge: the dumps of a parent and its child
# (test/progs/merge_fork, by plain fork and by fork and exec, where ASLR
# moves the modules) add up into one dump: its counts are the sums, its
# snapshots the sum of each process's latest, its stacks one per code path;
# every command reads it, and every export of it has the totals of the two
# inputs' exports added up, as each format's own consumer reads them (go
# tool pprof, google-pprof, ms_print, callgrind_annotate, heaptrack_print,
# the folded sums, speedscope's). A dump merged with itself doubles; a bad
# file among good ones is refused by name.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
unset DEBUGINFOD_URLS
export HOME="$TMP" GOCACHE="$TMP/go-cache" GOFLAGS=-mod=mod

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ] || [ ! -x "$PROGS/merge_fork" ]; then
	not_ok "allocspy-report, the shim and merge_fork are built" "run make && make test-progs"
	exit 0
fi
for tool in go google-pprof ms_print callgrind_annotate heaptrack_print; do
	if command -v "$tool" >/dev/null; then ok "$tool is installed"; else
		not_ok "$tool is installed" "scripts/deps.sh installs it"
	fi
done

# py CODE ARGS...: python3 with the dumps' json at hand.
py() {
	code=$1
	shift
	python3 -c "import json, sys
def load(f): return json.load(open(f))
$code" "$@"
}

# totals DUMP: every export's totals, one "name value" line each, as the
# consumers read them. (Files go to DUMP.*.)
totals() {
	d=$1
	for f in pprof gperftools massif callgrind heaptrack speedscope; do
		"$REPORT" export --format=$f -o "$d.$f" "$d" 2>>"$d.export.err" || echo "export-$f-failed 1"
	done
	for t in alloc_objects alloc_space inuse_objects inuse_space; do
		echo "pprof-$t $(timeout 120 go tool pprof -top -unit=B -sample_index=$t "$d.pprof" 2>&1 |
			sed -n 's/.*Total samples = \([0-9]*\).*/\1/p')"
	done
	for t in inuse_space alloc_space inuse_objects alloc_objects; do
		echo "google-pprof-$t $(timeout 120 google-pprof --text --show_bytes --$t \
			"$PROGS/merge_fork" "$d.gperftools" 2>/dev/null | sed -n 's/^Total: \([0-9]*\) .*/\1/p')"
	done
	# ms_print's peak: the row of the snapshot it marks as the peak.
	timeout 60 ms_print "$d.massif" >"$d.ms" 2>&1
	peak=$(sed -n 's/.*[ [,]\([0-9][0-9]*\) (peak).*/\1/p' "$d.ms")
	echo "ms_print-peak $(awk -v p="$peak" '$1 == p && NF == 6 { gsub(",", "", $3); print $3 }' "$d.ms")"
	timeout 60 callgrind_annotate "$d.callgrind" 2>&1 | grep 'PROGRAM TOTALS' |
		sed 's/([^)]*)//g; s/,//g' | awk '{ for (i = 1; i <= 5; i++) print "callgrind-" i, $i }'
	echo "heaptrack-calls $(timeout 60 heaptrack_print -f "$d.heaptrack" 2>&1 |
		sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p')"
	for c in peak leaked allocations; do
		timeout 60 heaptrack_print -f "$d.heaptrack" --flamegraph-cost-type $c \
			-F "$d.ht-$c" >/dev/null 2>&1
		echo "heaptrack-$c $(awk '{ s += $NF } END { print s + 0 }' "$d.ht-$c")"
	done
	for w in alloc_bytes allocs inuse_bytes peak_bytes; do
		echo "folded-$w $("$REPORT" export --format=folded --weight=$w "$d" 2>/dev/null |
			awk '{ s += $NF } END { print s + 0 }')"
	done
	py 'for p in load(sys.argv[1])["profiles"]:
    print("speedscope-" + p["name"].replace(" ", "_"), sum(p["weights"]))' "$d.speedscope"
}

# sum_totals A B: the per-line sums of two totals files.
sum_totals() {
	paste -d' ' "$1" "$2" | awk '$1 == $3 { print $1, $2 + $4; next } { print "mismatch", $1, $3 }'
}

# --- the runs ------------------------------------------------------------------------

for mode in fork exec; do
	W=$TMP/$mode
	mkdir -p "$W"
	(cd "$W" && timeout -k 5 60 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$W/m.%p.json" \
		LD_PRELOAD="$LIB" "$PROGS/merge_fork" $mode >"$W/out" 2>"$W/err")
	check "$mode: merge_fork exits 0" 0 "$?"
	# The parent's dump and the child's: the child's ppid is the parent's pid.
	set -- $(py '
ds = {f: load(f)["program"] for f in sys.argv[1:]}
for c, p in ((c, p) for c in ds for p in ds if ds[c]["ppid"] == ds[p]["pid"]):
    print(p, c)' "$W"/m.*.json)
	P=${1:-} C=${2:-}
	check "$mode: two dumps, the parent's and its child's" "2 yes" \
		"$(ls "$W"/m.*.json | wc -l) $([ -n "$C" ] && echo yes)"
	# The known amounts (a forked child also counts what it inherited).
	if [ $mode = fork ]; then child="83 82 410372 409632"; else child="42 41 246516 245776"; fi
	check "$mode: the parent's and the child's figures" "52 51 164596 163856|$child" \
		"$(json_get "$P" '"%d %d %d %d" % tuple(d["heap"][k] for k in ("allocs", "frees", "bytes_allocated", "peak_bytes"))')|$(json_get "$C" '"%d %d %d %d" % tuple(d["heap"][k] for k in ("allocs", "frees", "bytes_allocated", "peak_bytes"))')"

	M=$W/merged.json
	"$REPORT" merge "$P" "$C" -o "$M" >"$W/m.out" 2>"$W/m.err"
	check "$mode: merge exits 0, writes nothing on stdout or stderr" "0||" "$?|$(cat "$W/m.out")|$(cat "$W/m.err")"

	check "$mode: the heap counters are the sums" "ok" "$(py '
a, b, m = (load(f) for f in sys.argv[1:4])
keys = ("allocs", "frees", "bytes_allocated", "in_use_bytes", "in_use_blocks", "failed",
        "untracked_frees", "temporary")
bad = [k for k in keys if m["heap"][k] != a["heap"][k] + b["heap"][k]]
print("ok" if not bad else "differ: %s" % bad)' "$P" "$C" "$M")"
	check "$mode: functions, histogram, leaks, refs are the sums" "ok" "$(py '
a, b, m = (load(f) for f in sys.argv[1:4])
def add(x, y):
    if isinstance(x, dict):
        return {k: add(x[k], y[k]) if k in x and k in y else x.get(k, y.get(k)) for k in set(x) | set(y)}
    return x + y if x is not None and y is not None else None
hist = {}
for d in (a, b):
    for h in d["histogram"]:
        hist[h["le"]] = hist.get(h["le"], 0) + h["count"]
ok = (m["functions"] == add(a["functions"], b["functions"]) and
      {h["le"]: h["count"] for h in m["histogram"]} == hist and
      m["leaks"] == add(a["leaks"], b["leaks"]) and m["refs"] == add(a["refs"], b["refs"]))
print("ok" if ok else "differ")' "$P" "$C" "$M")"
	check "$mode: the threads are both dumps', each with its pid" "ok" "$(py '
a, b, m = (load(f) for f in sys.argv[1:4])
want = [dict(t, pid=d["program"]["pid"]) for d in (a, b) for t in d["threads"]]
print("ok" if m["threads"] == want else "differ")' "$P" "$C" "$M")"
	check "$mode: the processes, with their own figures" "ok" "$(py '
a, b, m = (load(f) for f in sys.argv[1:4])
ok = len(m["processes"]) == 2
for d, p in zip((a, b), m["processes"]):
    ok = ok and all(p[k] == d["program"][k] for k in ("pid", "ppid", "exe", "argv"))
    ok = ok and p["heap"] == d["heap"] and p["time"] == d["time"] and p["dump"] == d["dump"]
    ok = ok and abs(p["start_s"] - (d["time"]["start_unix"] - a["time"]["start_unix"])) < 1e-6
print("ok" if ok else "differ")' "$P" "$C" "$M")"
	check "$mode: the merged clock starts with the first process, ends with the last" "ok" "$(py '
a, b, m = (load(f) for f in sys.argv[1:4])
s0 = min(d["time"]["start_unix"] for d in (a, b))
end = max(d["time"]["start_unix"] - s0 + d["time"]["wall_s"] for d in (a, b))
ok = m["time"]["start_unix"] == s0 and abs(m["time"]["wall_s"] - end) < 1e-6
ok = ok and m["time"]["user_s"] == a["time"]["user_s"] + b["time"]["user_s"]
print("ok" if ok else "differ")' "$P" "$C" "$M")"

	# The snapshots, replayed here: each process's latest at each instant,
	# and nothing held by a process that has ended before the last one.
	check "$mode: each merged snapshot is the sum of the processes' latest, until each ends" "ok" "$(py '
ds = [load(f) for f in sys.argv[1:3]]
m = load(sys.argv[3])
s0 = min(d["time"]["start_unix"] for d in ds)
ev = [(d["time"]["start_unix"] - s0 + s["t_s"], k, j)
      for k, d in enumerate(ds) for j, s in enumerate(d["snapshots"])]
ends = [d["time"]["start_unix"] - s0 + d.get("dump", {}).get("t_s", d["time"]["wall_s"]) for d in ds]
for k, d in enumerate(ds):
    if ends[k] < max(ends):
        ev.append((max(ends[k], d["time"]["start_unix"] - s0 + d["snapshots"][-1]["t_s"]), k, 1 << 60))
ev.sort()
keys = ("bytes_allocated", "bytes_freed", "in_use_bytes", "in_use_blocks")
latest, want, i = {}, [], 0
while i < len(ev):
    t = ev[i][0]
    while i < len(ev) and ev[i][0] == t:
        k, j = ev[i][1], ev[i][2]
        if j == 1 << 60:
            o = latest[k]
            latest[k] = {"bytes_allocated": o["bytes_allocated"], "in_use_bytes": 0, "in_use_blocks": 0,
                         "bytes_freed": o["bytes_freed"] + o["in_use_bytes"]}
        else:
            latest[k] = ds[k]["snapshots"][j]
        i += 1
    want.append([t] + [sum(s[k] for s in latest.values()) for k in keys])
got = [[s["t_s"]] + [s[k] for k in keys] for s in m["snapshots"]]
ok = len(got) == len(want) and all(abs(g[0] - w[0]) < 1e-9 and g[1:] == w[1:] for g, w in zip(got, want))
peaks = [i for i, s in enumerate(m["snapshots"]) if s.get("peak")]
best = max(range(len(want)), key=lambda i: (want[i][3], -i))
print("ok" if ok and peaks == [best] else "differ: %s peaks %s/%d" % (got == want, peaks, best))' "$P" "$C" "$M")"
	# Each holds its peak while the other reaches its own: the merged
	# peak is the sum of the two, exactly, with no bound.
	check "$mode: the merged peak is the sum of the processes' peaks, exact" \
		"$(py 'a, b = load(sys.argv[1]), load(sys.argv[2]); print(a["heap"]["peak_bytes"] + b["heap"]["peak_bytes"], 0)' "$P" "$C")" \
		"$(json_get "$M" '"%d %d" % (d["heap"]["peak_bytes"], d["heap"]["peak_bytes_bound"])')"
	check "$mode: the peak snapshot's detail and stack_stats' peak figures add up to it" "ok" "$(py '
m = load(sys.argv[1])
p = [s for s in m["snapshots"] if s.get("peak")][0]
ok = sum(x["bytes"] for x in p["detail"]) == p["in_use_bytes"] == m["heap"]["peak_bytes"]
ok = ok and sum(s["peak_bytes"] for s in m["stack_stats"]) == p["in_use_bytes"]
print("ok" if ok else "differ")' "$M")"

	# Stacks: one per code path, frames at their offsets in the merged modules.
	check "$mode: one module per file, stacks rebased onto them" "ok" "$(py '
ds = [load(f) for f in sys.argv[1:3]]
m = load(sys.argv[3])
def where(d, a):
    for x in d["modules"]:
        if x["base"] <= a < x["end"]:
            return (x["path"], a - x["base"])
    return ("", a)
paths = [x["path"] for x in m["modules"]]
ok = len(paths) == len(set(paths)) == len({x["path"] for d in ds for x in d["modules"]})
mine = {tuple(where(m, a) for a in s) for s in m["stacks"]}
theirs = {tuple(where(d, a) for a in s) for d in ds for s in d["stacks"]}
print("ok" if ok and mine == theirs and len(m["stacks"]) == len(mine) else "differ")' "$P" "$C" "$M")"
	check "$mode: churn and leave_one, the same code in both, are one stack each" \
		"main;churn 1280|main;leave_one 200" \
		"$("$REPORT" export --format=folded "$M" 2>/dev/null | sed 's/ ([^)]*)//g' |
			grep -E ';(churn|leave_one) ' | sort | tr '\n' '|' | sed 's/|$//')"
	check "$mode: one loss record for the two lost blocks" \
		"200 bytes in 2 blocks are definitely lost in loss record 1 of 1" \
		"$("$REPORT" leaks "$M" 2>/dev/null | sed -n 's/^==[0-9]*== \(.*lost in loss record.*\)/\1/p')"

	# Every command reads it.
	for c in summary leaks "compare $P" timeline "timeline --json" "timeline --svg $W/t.svg" "--json summary"; do
		# shellcheck disable=SC2086 # the words are the arguments
		"$REPORT" $c "$M" >/dev/null 2>"$W/c.err"
		check "$mode: allocspy-report ${c%% /*} reads the merged dump" "0|" "$?|$(cat "$W/c.err")"
	done

	# Every export: the merged dump's totals are the inputs' added up
	# (the quick tier, make check, reads the exports of fork's alone).
	in_tier "$mode" fork || continue
	totals "$P" >"$W/p.totals"
	totals "$C" >"$W/c.totals"
	totals "$M" >"$W/m.totals"
	check "$mode: every consumer read every export (26 totals each)" "26 26 26||" \
		"$(grep -c ' [0-9][0-9]*$' "$W/p.totals") $(grep -c ' [0-9][0-9]*$' "$W/c.totals") $(grep -c ' [0-9][0-9]*$' "$W/m.totals")|$(cat "$P.export.err" "$C.export.err")|$(cat "$M.export.err")"
	check "$mode: every export's totals are the sums of the inputs'" "$(sum_totals "$W/p.totals" "$W/c.totals")" \
		"$(cat "$W/m.totals")"
	check "$mode: ms_print's and heaptrack's peaks are the merged dump's" \
		"$(json_get "$M" 'd["heap"]["peak_bytes"]') $(json_get "$M" 'd["heap"]["peak_bytes"]')" \
		"$(sed -n 's/^ms_print-peak //p' "$W/m.totals") $(sed -n 's/^heaptrack-peak //p' "$W/m.totals")"
done

# With exec, the child's modules lie elsewhere: rebasing is what merged them.
check "exec: ASLR loaded the program at different bases in the two processes" "2" \
	"$(for f in "$TMP"/exec/m.*.json; do json_get "$f" '[m["base"] for m in d["modules"] if m["path"].endswith("/merge_fork")][0]'; done | sort -u | wc -l)"

# --- a dump with itself ---------------------------------------------------------------------

P1=$(ls "$TMP"/exec/m.*.json | head -n 1)
"$REPORT" merge "$P1" "$P1" -o "$TMP/self.json" 2>"$TMP/err"
check "a dump merged with itself: exit 0" "0|" "$?|$(cat "$TMP/err")"
check "a dump merged with itself: every count doubles, the stacks stay" "ok" "$(py '
a, m = load(sys.argv[1]), load(sys.argv[2])
h = {k: 2 * v for k, v in a["heap"].items() if k not in ("peak_t_s", "peak_bytes_bound")}
ok = all(m["heap"][k] == v for k, v in h.items()) and m["heap"]["peak_bytes_bound"] == 2 * a["heap"]["peak_bytes_bound"]
ok = ok and len(m["stacks"]) == len(a["stacks"]) and len(m["snapshots"]) == len(a["snapshots"])
ok = ok and [2 * s["in_use_bytes"] for s in a["snapshots"]] == [s["in_use_bytes"] for s in m["snapshots"]]
ok = ok and sorted(2 * s["bytes"] for s in a["stack_stats"]) == sorted(s["bytes"] for s in m["stack_stats"])
ok = ok and len(m["threads"]) == 2 * len(a["threads"]) and len(m["processes"]) == 2
print("ok" if ok else "differ")' "$P1" "$TMP/self.json")"
totals "$P1" >"$TMP/one.totals"
totals "$TMP/self.json" >"$TMP/self.totals"
check "a dump merged with itself: every export's totals double" \
	"$(awk '{ print $1, 2 * $2 }' "$TMP/one.totals")" "$(cat "$TMP/self.totals")"

# One dump merged alone is written as the shim wrote it: its keys in the
# same order, its arrays that grow with the stacks one element a line,
# but for what a merge changes (processes, each thread's pid, no rss).
"$REPORT" merge "$P1" -o "$TMP/alone.json" 2>"$TMP/err"
check "a dump merged alone: exit 0, the shim's keys in its order and layout" "0||ok" "$?|$(cat "$TMP/err")|$(py '
import re
a, m = load(sys.argv[1]), load(sys.argv[2])
keys = [k for k in a if k != "rss"]
keys.insert(keys.index("modules") + 1, "processes")
tail = lambda f: (lambda t: t[t.index("\n \"loss_records\": ["):])(open(f).read())
pid = lambda x: x.group(1) + ", \"pid\": %d}" % a["program"]["pid"]
ok = list(m) == keys and [list(x) for x in m["snapshots"]] == [list(x) for x in a["snapshots"]]
ok = ok and tail(sys.argv[2]) == re.sub(r"(\{\"tid\": .*)\}", pid, tail(sys.argv[1]))
print("ok" if ok else "differ")' "$P1" "$TMP/alone.json")"

# A merged dump merges again: its processes are kept.
"$REPORT" merge "$TMP/exec/merged.json" "$TMP/fork/merged.json" -o "$TMP/four.json" 2>"$TMP/err"
check "merged dumps merge: exit 0, four processes, the counts add up" "0||4 $(($(json_get "$TMP/exec/merged.json" 'd["heap"]["allocs"]') + $(json_get "$TMP/fork/merged.json" 'd["heap"]["allocs"]')))" \
	"$?|$(cat "$TMP/err")|$(json_get "$TMP/four.json" '"%d %d" % (len(d["processes"]), d["heap"]["allocs"])')"

# Different programs merge, with a note.
if heapprog_dump "$TMP" 2>"$TMP/hp.err"; then
	"$REPORT" merge "$P1" "$TMP/heapprog.json" -o "$TMP/two.json" 2>"$TMP/err"
	check "different programs: merged, with one warning" \
		"0|allocspy-report: warning: $TMP/heapprog.json: another program ($TMP/heapprog) than $P1's ($PROGS/merge_fork); merged all the same" \
		"$?|$(cat "$TMP/err")"
else
	not_ok "heapprog: a dump" "$(cat "$TMP/hp.err")"
fi

# To stdout without -o.
"$REPORT" merge "$P1" "$P1" >"$TMP/stdout.json" 2>"$TMP/err"
check "without -o: the same dump on stdout" "0|" "$?|$(cmp "$TMP/stdout.json" "$TMP/self.json" 2>&1)"

# --- the largest counts ------------------------------------------------------------------------

py '
d = load(sys.argv[1])
big = 2 ** 63 - 1
for k in ("allocs", "frees", "bytes_allocated", "in_use_bytes", "in_use_blocks", "peak_bytes", "temporary"):
    d["heap"][k] = big
for s in d["stack_stats"]:
    s.update(allocs=big, bytes=big, in_use_bytes=big, in_use_blocks=big, peak_bytes=big, peak_blocks=big, temporary=big)
for s in d["snapshots"]:
    s.update(in_use_bytes=big, in_use_blocks=big, bytes_allocated=big, bytes_freed=big)
    if "detail" in s:
        s["detail"] = [{"stack": 0, "bytes": big // 2, "blocks": 1}, {"stack": 1, "bytes": big // 2, "blocks": 1}]
json.dump(d, open(sys.argv[2], "w"))' "$P1" "$TMP/big.json"
"$REPORT" merge "$TMP/big.json" "$TMP/big.json" "$TMP/big.json" -o "$TMP/bigm.json" 2>"$TMP/err"
check "the largest counts: merged, saturated at 2^63 - 1, and the result reads" "0||9223372036854775807 9223372036854775807|0" \
	"$?|$(cat "$TMP/err")|$(json_get "$TMP/bigm.json" '"%d %d" % (d["heap"]["allocs"], d["heap"]["peak_bytes"])')|$("$REPORT" timeline "$TMP/bigm.json" >/dev/null 2>&1; echo $?)"

# --- refusals ------------------------------------------------------------------------------------

# refused NAME STATUS STDERR ARGS...: exit status, the whole stderr, no output file.
refused() {
	name=$1 st=$2 msg=$3
	shift 3
	rm -f "$TMP/out.json"
	"$REPORT" "$@" >"$TMP/out" 2>"$TMP/err"
	check "$name" "$st|$msg||no file" "$?|$(head -n 1 "$TMP/err")|$(cat "$TMP/out")|$([ -e "$TMP/out.json" ] && echo file || echo no file)"
}
printf 'not json' >"$TMP/bad.json"
refused "a file that is not JSON among good ones: exit 2, the file named" 2 \
	"allocspy-report: error: $TMP/bad.json: not valid JSON: '[' or '{' expected near 'not' (line 1, column 3)" \
	merge "$P1" "$TMP/bad.json" "$P1" -o "$TMP/out.json"
py 'd = load(sys.argv[1]); d["version"] = 2; json.dump(d, open(sys.argv[2], "w"))' "$P1" "$TMP/v2.json"
refused "a dump of another version: exit 2" 2 \
	"allocspy-report: error: $TMP/v2.json: version 2 is not supported (this allocspy-report reads version 1)" \
	merge "$P1" "$TMP/v2.json" -o "$TMP/out.json"
refused "a count-mode dump with track-mode ones" 2 \
	"allocspy-report: error: $G/count.json: a count-mode dump cannot be merged with $P1, a track-mode one" \
	merge "$P1" "$G/count.json" -o "$TMP/out.json"
py 'd = load(sys.argv[1]); d["time"]["start_unix"] = "yesterday"; json.dump(d, open(sys.argv[2], "w"))' "$P1" "$TMP/start.json"
refused "a start time that is not a number" 2 \
	"allocspy-report: error: $TMP/start.json: time.start_unix: expected a number, found another type" \
	merge "$P1" "$TMP/start.json" -o "$TMP/out.json"
py 'd = load(sys.argv[1]); d["processes"] = [{"pid": 1}]; json.dump(d, open(sys.argv[2], "w"))' "$P1" "$TMP/procs.json"
refused "processes of an earlier merge without their start" 2 \
	"allocspy-report: error: $TMP/procs.json: processes[0].start_s: expected a number, found nothing" \
	merge "$P1" "$TMP/procs.json" -o "$TMP/out.json"
py 'd = load(sys.argv[1]); del d["processes"][1]["heap"]; json.dump(d, open(sys.argv[2], "w"))' "$TMP/self.json" "$TMP/noheap.json"
refused "a merged dump whose process has no heap: every command refuses it" 2 \
	"allocspy-report: error: $TMP/noheap.json: processes[1].heap: missing" \
	summary "$TMP/noheap.json"
refused "a missing file" 2 "allocspy-report: error: $TMP/none.json: No such file or directory" \
	merge "$P1" "$TMP/none.json" -o "$TMP/out.json"
refused "merge without a dump" 2 "allocspy-report: error: no dump given" merge -o "$TMP/out.json"
refused "merge --json" 2 "allocspy-report: error: merge writes a dump, which is JSON already" \
	--json merge "$P1" -o "$TMP/out.json"
refused "-o for the summary" 2 "allocspy-report: error: -o is an option of the export, merge and html commands" \
	"$P1" -o "$TMP/out.json"
"$REPORT" merge "$P1" -o /nonexistent/m.json >/dev/null 2>"$TMP/err"
check "-o into a missing directory: exit status 1" \
	"1|allocspy-report: error: /nonexistent/m.json: cannot write: No such file or directory" "$?|$(cat "$TMP/err")"
"$REPORT" merge "$P1" >/dev/full 2>"$TMP/err"
check "stdout is full: exit status 1" \
	"1|allocspy-report: error: cannot write the report: No space left on device" "$?|$(cat "$TMP/err")"

# --- processes that did not run together ----------------------------------------------

# A suite run one process after another: each holds 256 KiB more every
# 20 ms up to 1 MiB, which it still holds at exit. Once a process has
# ended its blocks stop counting: the merged heap falls to nothing between
# them, its peak is one process's 1 MiB, exact (they never ran together),
# and only the last one's blocks are in use at the end of the heap over
# time, while in use at exit adds up the three processes'.
cat >"$TMP/hold.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(void)
{
	const struct timespec ms20 = { 0, 20000000 };
	for (int i = 0; i < 4; i++) {
		char *p = malloc(256 * 1024);
		memset(p, 1, 256 * 1024);
		nanosleep(&ms20, NULL);
	}
	return 0;
}
EOF
mkdir -p "$TMP/suite"
if ${CC:-cc} -O1 -o "$TMP/hold" "$TMP/hold.c"; then
	for i in 1 2 3; do
		(cd "$TMP/suite" && ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/suite/hold.%p.json" \
			LD_PRELOAD="$LIB" "$TMP/hold")
		sleep 0.05
	done
fi
"$REPORT" merge -o "$TMP/suite.json" "$TMP"/suite/hold.*.json 2>"$TMP/err"
check "a suite of 3 processes one after another: merged, exit 0" "0|" "$?|$(cat "$TMP/err")"
check "the suite: the peak is one process's 1 MiB, exact; in use at exit the three's 3 MiB" \
	"1048576 0 3145728 12" \
	"$(json_get "$TMP/suite.json" '"%d %d %d %d" % (d["heap"]["peak_bytes"], d["heap"]["peak_bytes_bound"], d["heap"]["in_use_bytes"], d["heap"]["in_use_blocks"])')"
check "the suite: the heap over time (repeats left out) falls to nothing when each of the first two ends, the last one's 1 MiB at the end" \
	"[262144, 524288, 786432, 1048576, 0, 262144, 524288, 786432, 1048576, 0, 262144, 524288, 786432, 1048576]" \
	"$(json_get "$TMP/suite.json" '(lambda v: [x for i, x in enumerate(v) if i == 0 or x != v[i - 1]])([s["in_use_bytes"] for s in d["snapshots"]])')"
check "the suite: the snapshots' clock counts what each ended process held as freed" \
	"3145728 2097152" "$(json_get "$TMP/suite.json" '"%d %d" % (d["snapshots"][-1]["bytes_allocated"], d["snapshots"][-1]["bytes_freed"])')"
"$REPORT" timeline "$TMP/suite.json" >"$TMP/suite.tl" 2>&1
check "the suite: its one stack, a caller alone, stays cut at the depth limit, as in each dump" \
	"[0] [0] [0]|1 [0]" \
	"$(for f in "$TMP"/suite/hold.*.json; do json_get "$f" 'd["truncated_stacks"]'; done | tr '\n' ' ' | sed 's/ $//')|$(json_get "$TMP/suite.json" '"%d %s" % (len(d["stacks"]), d["truncated_stacks"])')"
check "the suite: timeline's peak is one process's" "Peak: 1,048,576 bytes in use at $(json_get "$TMP/suite.json" '"%.3f" % d["heap"]["peak_t_s"]') s" \
	"$(grep '^Peak' "$TMP/suite.tl")"
