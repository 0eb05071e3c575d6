#!/bin/sh
# t55-timeline.sh - allocspy-report timeline: the chart of the heap over
# time and the stacks at the peak, as text (golden files), JSON and SVG, on
# a hand-written dump and on a real run of test/golden/heapprog.c under the
# shim, whose snapshots are the shim's; dumps without snapshots and usage
# errors.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
unset DEBUGINFOD_URLS

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi

# --- a hand-written dump ----------------------------------------------------------

(cd "$G" && "$REPORT" timeline timed.json) >"$TMP/out" 2>"$TMP/err"
check "timed.json: exit status 0" 0 "$?"
check "timed.json: stdout is timed.timeline.expected" "" "$(diff "$G/timed.timeline.expected" "$TMP/out")"
check "timed.json: the missing modules' warnings" "$(cat "$G/timed.err")
allocspy-report: warning: /nonexistent/allocspy-golden/libc.so.6: no symbols: No such file or directory" \
	"$(cat "$TMP/err")"

# --- a real run --------------------------------------------------------------------

if heapprog_dump "$TMP" 2>"$TMP/hp.err"; then
	ok "heapprog: a dump with snapshots"
else
	not_ok "heapprog: a dump with snapshots" "$(cat "$TMP/hp.err")"
fi
D=$TMP/heapprog.json
check "heapprog: the peak, its blocks, and the stacks that held it" "333072 351 204800:50 102400:200 25600:100 272:1" \
	"$(json_get "$D" '"%d %d " % (d["heap"]["peak_bytes"], [s for s in d["snapshots"] if s.get("peak")][0]["in_use_blocks"]) + " ".join("%d:%d" % (x["bytes"], x["blocks"]) for x in [s for s in d["snapshots"] if s.get("peak")][0]["detail"])')"
"$REPORT" timeline "$D" >"$TMP/out" 2>"$TMP/err"
check "heapprog: exit status 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
# The chart follows the run's times: its frame, labels and peak are checked
# against the dump; the stacks at the peak against heapprog.peak.expected.
check "heapprog: the title, the chart's frame and labels, the peak's line, from the dump" "ok" \
	"$(python3 - "$D" "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
out = open(sys.argv[2]).read().split("\n")
snaps = d["snapshots"]
pi = [i for i, s in enumerate(snaps) if s.get("peak")][0]
p = snaps[pi]
c = lambda v: "{:,}".format(v)
want = ["Heap in use over time (heapprog, pid %d): %d snapshots, %d detailed (@), the peak (#)"
        % (d["program"]["pid"], len(snaps), sum("detail" in s for s in snaps)), "", "   KiB"]
bound = d["heap"]["peak_bytes_bound"]
h = d["heap"]
peak_lines = ["Peak: %s%s bytes in use at %.3f s" % (
    c(h["peak_bytes"]), " \u00b1 " + c(bound) if bound else "", h["peak_t_s"])]
if bound:
    peak_lines.append("      (the true peak is between %s and %s bytes)" % (
        c(h["peak_bytes"]), c(h["peak_bytes"] + bound)))
peak_lines.append(("Stacks at the peak (snapshot %d of %d: %s bytes in %s blocks at %.3f s):"
                   if p["in_use_bytes"] == h["peak_bytes"] else
                   "Stacks at snapshot %d of %d, below the peak (%s bytes in %s blocks at %.3f s):") % (
    pi + 1, len(snaps), c(p["in_use_bytes"]), c(p["in_use_blocks"]), p["t_s"]))
bad = []
if out[:3] != want:
    bad.append("title %r" % out[:3])
rows = out[3:23]
if not rows[0].startswith("%5.1f^" % (h["peak_bytes"] / 1024)) or "#" not in rows[0]:
    bad.append("top row %r" % rows[0])
if not all(r.startswith("     |") for r in rows[1:]):
    bad.append("rows")
if out[23] != "   0 +" + "-" * 72 + ">s" or not out[24].endswith("%.3f" % snaps[-1]["t_s"]):
    bad.append("axis %r %r" % (out[23], out[24]))
if out[25:26 + len(peak_lines)] != [""] + peak_lines:
    bad.append("peak %r, want %r" % (out[25:26 + len(peak_lines)], peak_lines))
print("ok" if not bad else "; ".join(bad))
PY
)"
sed -n '/^Stacks at /,$p' "$TMP/out" | sed 1d | normalize_libc >"$TMP/out.n"
check "heapprog: the stacks at the peak are heapprog.peak.expected (C library frames as [libc])" "" \
	"$(diff "$G/heapprog.peak.expected" "$TMP/out.n")"

"$REPORT" timeline --json "$D" >"$TMP/t.json" 2>/dev/null
check "--json: exit status 0" 0 "$?"
check "--json: the snapshots, the peak and its figures are the dump's, then its snapshot's" \
	"$(json_get "$D" '"%d %d %.6f %d %d %d %.6f %d %d %s" % (len(d["snapshots"]), 333072, d["heap"]["peak_t_s"], d["heap"]["peak_bytes_bound"], [i for i, s in enumerate(d["snapshots"]) if s.get("peak")][0], 333072, [s for s in d["snapshots"] if s.get("peak")][0]["t_s"], 333072, 351, True)')" \
	"$(json_get "$TMP/t.json" '"%d %d %.6f %d %d %d %.6f %d %d %s" % (len(d["snapshots"]), d["peak"]["in_use_bytes"], d["peak"]["t_s"], d["peak"]["bound"], d["peak"]["snapshot"], d["peak"]["in_use_bytes"], d["peak"]["snapshot_t_s"], d["peak"]["snapshot_in_use_bytes"], d["peak"]["snapshot_in_use_blocks"], d["peak"]["exact"])')"
check "--json: the snapshots' figures are the dump's" "ok" \
	"$(python3 -c 'import json,sys
a = json.load(open(sys.argv[1]))["snapshots"]; b = json.load(open(sys.argv[2]))["snapshots"]
k = ("in_use_bytes", "in_use_blocks", "bytes_allocated", "bytes_freed")
print("ok" if [["%.6f" % x["t_s"]] + [x[n] for n in k] + [x["peak"], x["detailed"]] for x in a] ==
      [["%.6f" % x["t_s"]] + [x[n] for n in k] + [x.get("peak", False), "detail" in x] for x in b] else "differ")' "$TMP/t.json" "$D")"
check "--json: the stacks at the peak, largest first, with their frames" \
	"204800:61.49:build_index:heapprog.c:46>main 102400:30.74:load_table:heapprog.c:29>main 25600:7.69:worker:heapprog.c:54>start_thread" \
	"$(json_get "$TMP/t.json" '" ".join("%d:%.2f:%s:%s:%s>%s" % (s["bytes"], s["percent"], s["frames"][0]["function"], s["frames"][0]["file"], s["frames"][0]["line"], s["frames"][1]["function"]) for s in d["peak"]["stacks"][:3])')"

"$REPORT" timeline --svg "$TMP/t.svg" "$D" >"$TMP/out" 2>"$TMP/err"
check "--svg: exit status 0, nothing on stdout or stderr" "0||" "$?|$(cat "$TMP/out")|$(cat "$TMP/err")"
check "--svg: well-formed XML, an svg element" "{http://www.w3.org/2000/svg}svg" \
	"$(python3 -c 'import sys, xml.etree.ElementTree as E; print(E.parse(sys.argv[1]).getroot().tag)' "$TMP/t.svg" 2>&1)"
check "--svg: standalone (no reference outside the file)" "0" \
	"$(grep -c -E 'href|url\(|@import|<script|<image' "$TMP/t.svg")"
check "--svg: the peak's label, as every view says it, and its stacks" \
	"$(json_get "$D" '"peak: 333,072 \u00b1 %s bytes in use at %.3f s" % ("{:,}".format(d["heap"]["peak_bytes_bound"]), d["heap"]["peak_t_s"])')|61.5%  204,800 bytes in 50 blocks|at build_index (heapprog.c:46)" \
	"$(grep -o 'peak: [0-9,]* ± [0-9,]* bytes in use at [0-9.]* s' "$TMP/t.svg")|$(grep -o '61.5%  204,800 bytes in 50 blocks' "$TMP/t.svg")|$(grep -o 'at build_index (heapprog.c:46)' "$TMP/t.svg")"
check "--svg: one step of the heap's path per snapshot, and the last one to the end" \
	"$(($(json_get "$D" 'len(d["snapshots"])') + 1))" \
	"$(grep -o ' H[0-9.]* V[0-9.]*' "$TMP/t.svg" | wc -l)"
"$REPORT" timeline --svg=/nonexistent/dir/t.svg "$D" >"$TMP/out" 2>"$TMP/err"
check "--svg into a missing directory: exit status 1 and the error" \
	"1|allocspy-report: error: /nonexistent/dir/t.svg: cannot write: No such file or directory" \
	"$?|$(cat "$TMP/err")"

# The largest counts a dump may hold draw without overflow.
python3 - "$D" "$TMP/big.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
big = 2 ** 63 - 1
d["heap"]["peak_bytes"] = big
for s in d["snapshots"]:
    s.update(in_use_bytes=big, in_use_blocks=big, bytes_allocated=big, bytes_freed=big)
    if "detail" in s:
        s["detail"] = [{"stack": 0, "bytes": big // 2, "blocks": 1}, {"stack": 1, "bytes": big // 2, "blocks": 1}]
json.dump(d, open(sys.argv[2], "w"))
PY
for args in "" "--json" "--svg $TMP/big.svg"; do
	# shellcheck disable=SC2086 # the words are the arguments
	"$REPORT" timeline $args "$TMP/big.json" >/dev/null 2>"$TMP/err"
	check "the largest counts: timeline ${args%% *} exits 0" "0|" "$?|$(grep error "$TMP/err")"
done

# --- refusals ----------------------------------------------------------------------

# refused NAME STATUS STDERR ARGS...: exit status and the whole stderr.
refused() {
	name=$1 st=$2 msg=$3
	shift 3
	(cd "$G" && "$REPORT" "$@") >"$TMP/out" 2>"$TMP/err"
	check "$name" "$st|$msg|" "$?|$(head -n 1 "$TMP/err")|$(cat "$TMP/out")"
}
refused "a dump without snapshots: exit status 2 and why" 2 \
	"allocspy-report: error: track.json: no snapshots in this dump (it was written without them)" \
	timeline track.json
refused "a count-mode dump" 2 \
	"allocspy-report: error: count.json: no snapshots in this dump (ALLOCSPY_MODE=count takes none)" \
	timeline count.json
refused "timeline of two dumps" 2 "allocspy-report: error: one dump only" timeline timed.json timed.json
refused "timeline --svg without a file" 2 "allocspy-report: error: --svg needs a value" timeline timed.json --svg
refused "timeline --svg= without a file" 2 "allocspy-report: error: --svg needs a file name" timeline --svg= timed.json
refused "timeline --svg with --json" 2 "allocspy-report: error: --svg and --json together" \
	timeline --json --svg x.svg timed.json
refused "--svg for the summary" 2 "allocspy-report: error: --svg is an option of the timeline command" --svg x.svg timed.json
