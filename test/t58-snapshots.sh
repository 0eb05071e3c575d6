#!/bin/sh
# t58-snapshots.sh - the shim's heap over time and temporary allocations,
# end to end from real runs: snap_ramp grows to 10 MiB in about a second and
# frees it, with the default caller-only detail and with 16-frame
# backtraces: the dump's peak and snapshots, timeline's chart and the
# function that held the peak, ms_print's and heaptrack_print's peaks on
# the exports. snap_temp makes a known number of temporary allocations:
# per function, in all, and per stack. (No check depends on how long a
# run takes.)
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ] || [ ! -x "$PROGS/snap_ramp" ]; then
	not_ok "allocspy-report, the shim and the snap_* programs are built" "run make && make test-progs"
	exit 0
fi

# run NAME PROG BACKTRACE: PROG under the shim in $TMP, its dump $TMP/NAME.json
# ("" for BACKTRACE: the default, unset).
run() {
	(cd "$TMP" && timeout -k 5 120 env ${3:+ALLOCSPY_BACKTRACE=$3} \
		ALLOCSPY_OUTPUT="$TMP/$1.json" LD_PRELOAD="$LIB" "$PROGS/$2" \
		>"$TMP/$1.out" 2>"$TMP/$1.err")
	check "$1: exit status 0, a dump" "0 yes" "$? $([ -f "$TMP/$1.json" ] && echo yes)"
}

MiB10=10485760
PEAK=10489856	# 10 MiB and the 4,096-byte baseline

# --- the ramp -------------------------------------------------------------------------

for bt in "" 16; do
	n=ramp${bt:-1}
	run "$n" snap_ramp "$bt"
	D=$TMP/$n.json
	label="ramp (backtrace ${bt:-1})"
	detail=callers
	[ -n "$bt" ] && detail=stacks
	check "$label: the detail is $detail" "${bt:-1} $detail" \
		"$(json_get "$D" '"%d %s" % (d["options"]["backtrace"], d["snapshot_info"]["detail"])')"
	check "$label: heap.peak_bytes is 10 MiB and the baseline, exact" "$PEAK 0 yes" \
		"$(json_get "$D" '"%d %d %s" % (d["heap"]["peak_bytes"], d["heap"]["peak_bytes_bound"], "yes" if d["heap"]["peak_bytes"] >= '$MiB10' else "no")')"
	check "$label: the peak snapshot holds it, in 10,241 blocks" "$PEAK 10241" \
		"$(json_get "$D" '"%d %d" % [(s["in_use_bytes"], s["in_use_blocks"]) for s in d["snapshots"] if s.get("peak")][0]')"
	check "$label: the snapshots climb to the peak, then fall to nothing" "ok" "$(python3 - "$D" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["snapshots"]
p = [i for i, x in enumerate(s) if x.get("peak")][0]
up = [x["in_use_bytes"] for x in s[:p + 1]]
bad = []
if len(up) < 10:
    bad.append("%d snapshots up to the peak" % len(up))
if any(b <= a for a, b in zip(up, up[1:])):
    bad.append("not rising: %s" % up)
if s[-1]["in_use_bytes"] != 0 or d["heap"]["in_use_bytes"] != 0:
    bad.append("left %d" % s[-1]["in_use_bytes"])
print("ok" if not bad else "; ".join(bad))
PY
)"
	check "$label: the peak is reached no later than its snapshot is taken" "yes" \
		"$(json_get "$D" '"yes" if d["heap"]["peak_t_s"] <= [s for s in d["snapshots"] if s.get("peak")][0]["t_s"] else "no: %s" % d["heap"]["peak_t_s"]')"

	"$REPORT" timeline "$D" >"$TMP/$n.timeline" 2>"$TMP/err"
	check "$label: timeline exits 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
	check "$label: timeline draws the ramp: each column as high as the one before, up to the peak at the top" "ok" \
		"$(python3 - "$TMP/$n.timeline" <<'PY'
import sys
rows = open(sys.argv[1]).read().split("\n")[3:23]
cols = [r[r.index("|" if "|" in r else "^") + 1:].ljust(72)[:72] for r in rows]
tops = []
for c in range(72):
    filled = [i for i in range(20) if cols[i][c] != " "]
    tops.append(20 - filled[0] if filled else 0)
peak = [c for c in range(72) if any(cols[i][c] == "#" for i in range(20))]
bad = []
if not peak or tops[peak[0]] != 20:
    bad.append("no peak at the top: %s" % peak)
else:
    ramp = tops[:peak[0] + 1]
    if any(b < a for a, b in zip(ramp, ramp[1:])) or len(set(ramp)) < 10:
        bad.append("tops %s" % ramp)
print("ok" if not bad else "; ".join(bad))
PY
)"
	check "$label: timeline's peak lines are the dump's peak and its snapshot" \
		"$(json_get "$D" '"Peak: 10,489,856 bytes in use at %.3f s|Stacks at the peak (snapshot %d of %d: 10,489,856 bytes in 10,241 blocks at %.3f s):" % (d["heap"]["peak_t_s"], [i for i, s in enumerate(d["snapshots"]) if s.get("peak")][0] + 1, len(d["snapshots"]), [s["t_s"] for s in d["snapshots"] if s.get("peak")][0])')" \
		"$(grep -A1 '^Peak: ' "$TMP/$n.timeline" | tr '\n' '|' | sed 's/|$//')"
	check "$label: timeline names grow as holding the peak's 10 MiB" \
		"      10,485,760 100.0%  grow (snap_ramp.c:28)" \
		"$(sed -n '/^Stacks at /{n;n;p;}' "$TMP/$n.timeline")"
	"$REPORT" timeline --json "$D" >"$TMP/$n.tl.json" 2>/dev/null
	check "$label: timeline --json: grow holds over 90% of the peak" "grow 10485760 yes" \
		"$(json_get "$TMP/$n.tl.json" '"%s %d %s" % (d["peak"]["stacks"][0]["frames"][0]["function"], d["peak"]["stacks"][0]["bytes"], "yes" if d["peak"]["stacks"][0]["percent"] > 90 else "no")')"

	# ms_print on the massif export: its peak is the dump's.
	"$REPORT" export --format=massif -o "$TMP/$n.massif" "$D" 2>"$TMP/err"
	timeout 60 ms_print "$TMP/$n.massif" >"$TMP/$n.ms" 2>&1
	at=$(json_get "$D" '[i for i, s in enumerate(d["snapshots"]) if s.get("peak")][0]')
	check "$label: ms_print's peak is the dump's peak_bytes" "10,489,856|$at (peak)" \
		"$(awk -v p="$at" '$1 == p && NF == 6 { print $3 }' "$TMP/$n.ms")|$(grep -o "[0-9]* (peak)" "$TMP/$n.ms")"
done

# heaptrack needs the stacks' figures: the run with backtraces.
D=$TMP/ramp16.json
"$REPORT" export --format=heaptrack -o "$TMP/ramp.ht" "$D" 2>"$TMP/err"
timeout 60 heaptrack_print -f "$TMP/ramp.ht" >"$TMP/ramp.htp" 2>&1
timeout 60 heaptrack_print -f "$TMP/ramp.ht" --flamegraph-cost-type peak -F "$TMP/ramp.peak" >/dev/null 2>&1
check "ramp: heaptrack_print's peak is the dump's peak_bytes" "peak heap memory consumption: 10.49M|$PEAK" \
	"$(grep 'peak heap memory consumption' "$TMP/ramp.htp")|$(awk '{ s += $NF } END { print s + 0 }' "$TMP/ramp.peak")"

# The last snapshot of an exit dump is the heap at exit: it is no later
# than the dump itself. (This fails while the shim stamps that snapshot
# when it writes the JSON, after the leak check, instead of when it read
# the heap.)
for n in ramp1 ramp16; do
	check "$n: the last snapshot is not later than the dump (time.wall_s)" "yes" \
		"$(json_get "$TMP/$n.json" '"yes" if d["snapshots"][-1]["t_s"] <= d["time"]["wall_s"] else "no: last snapshot at %s s, dump.t_s %s s, time.wall_s %s s" % (d["snapshots"][-1]["t_s"], d["dump"]["t_s"], d["time"]["wall_s"])')"
done

# --- temporary allocations ---------------------------------------------------------------------

for bt in "" 16; do
	n=temp${bt:-1}
	run "$n" snap_temp "$bt"
	D=$TMP/$n.json
	label="temporaries (backtrace ${bt:-1})"
	check "$label: heap.temporary and each function's" \
		"allocs 52 temporary 37|malloc 44 29|calloc 5 5|strdup 3 3" \
		"$(json_get "$D" '"allocs %d temporary %d|" % (d["heap"]["allocs"], d["heap"]["temporary"]) + "|".join("%s %d %d" % (f, d["functions"][f]["calls"], d["functions"][f]["temporary"]) for f in ("malloc", "calloc", "strdup"))')"
done
# With backtraces, each stack's: allocs:temporary, by bytes allocated.
check "temporaries (backtrace 16): each stack's" \
	"800:25:25 480:10:0 160:4:4 96:4:0 80:5:5 64:1:0 57:3:3" \
	"$(json_get "$TMP/temp16.json" '" ".join("%d:%d:%d" % (s["bytes"], s["allocs"], s["temporary"]) for s in d["stack_stats"])')"
# callgrind_annotate on the export: each function's own temporary allocations.
"$REPORT" export --format=callgrind -o "$TMP/temp.cg" "$TMP/temp16.json" 2>"$TMP/err"
check "temporaries (backtrace 16): callgrind_annotate's Temporary per function" \
	"keep 0|pairs 4|temps 33|total 37" \
	"$(timeout 60 callgrind_annotate "$TMP/temp.cg" 2>&1 | sed 's/([^)]*)//g; s/,//g' |
		awk '$NF ~ /snap_temp.c:(keep|pairs|temps)$/ { sub(/.*:/, "", $NF); t[$NF] = $5 }
		     /PROGRAM TOTALS/ { total = $5 }
		     END { printf "keep %d|pairs %d|temps %d|total %d", t["keep"], t["pairs"], t["temps"], total }')"

# --- lib.sh's sweep of the dumps, on one planted where a dump of the shim would be ---

mkdir "$TMP/sweep"
python3 - "$TMP/ramp16.json" "$TMP/sweep/bad.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["options"]["output"] = sys.argv[2].replace("bad", "%p")
d["program"]["pid"] = "bad"
d["heap"]["peak_bytes"] = 4096
d["snapshots"][0]["in_use_bytes"] = 5000
json.dump(d, open(sys.argv[2], "w"))
PY
check "lib.sh's sweep fails on a dump whose peak is below its in-use figures" \
	"not ok - t58-snapshots.sh: the 1 dumps the shim wrote: peak_bytes >= in_use_bytes and every snapshot's
#   $TMP/sweep/bad.json: peak_bytes 4096 < snapshots[0].in_use_bytes 5000" \
	"$(TMP=$TMP/sweep dump_sweep)"
rm -rf "$TMP/sweep"
