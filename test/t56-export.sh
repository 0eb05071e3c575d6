#!/bin/sh
# t56-export.sh - allocspy-report export: each format read by its real
# consumer (go tool pprof, google-pprof, ms_print, callgrind_annotate,
# heaptrack_print, speedscope's schema through ajv, and the folded sums),
# whose totals must be the dump's, on a real run of test/golden/heapprog.c
# under the shim; then refusals.
# A missing consumer is a failure: scripts/deps.sh and scripts/npm-deps.sh
# install them.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
unset DEBUGINFOD_URLS
export HOME="$TMP" GOCACHE="$TMP/go-cache" GOFLAGS=-mod=mod

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi
for tool in go google-pprof ms_print callgrind_annotate heaptrack_print node; do
	if command -v "$tool" >/dev/null; then ok "$tool is installed"; else
		not_ok "$tool is installed" "scripts/deps.sh installs it"
	fi
done
SCHEMA=$B/node_modules/speedscope/dist/release/file-format-schema.json
if [ -f "$SCHEMA" ] && [ -d "$B/node_modules/ajv" ]; then ok "speedscope's schema and ajv are installed"; else
	not_ok "speedscope's schema and ajv are installed" "make node-deps (scripts/npm-deps.sh) installs them"
fi

if heapprog_dump "$TMP" 2>"$TMP/hp.err"; then ok "heapprog: a dump"; else
	not_ok "heapprog: a dump" "$(cat "$TMP/hp.err")"
fi
D=$TMP/heapprog.json
# The dump's own figures, as heapprog.c's header comment gives them.
ALLOCS=668 BYTES=474872 INUSE=21220 BLOCKS=22 PEAK=333072
MAIN_TID=$(json_get "$D" 'd["threads"][0]["tid"]') WORKER_TID=$(json_get "$D" 'd["threads"][1]["tid"]')
check "the dump's figures" "$ALLOCS $BYTES $INUSE $BLOCKS $PEAK" \
	"$(json_get "$D" '"%d %d %d %d %d" % (d["heap"]["allocs"], d["heap"]["bytes_allocated"], d["heap"]["in_use_bytes"], d["heap"]["in_use_blocks"], d["heap"]["peak_bytes"])')"

# export FORMAT ARGS...: the export into $TMP/out.FORMAT, exit 0, no stderr.
export_ok() {
	f=$1
	shift
	"$REPORT" export --format="$f" "$@" -o "$TMP/out.$f" "$D" 2>"$TMP/err"
	check "export --format=$f $*: exit status 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
}

# --- pprof -------------------------------------------------------------------------

export_ok pprof
check "pprof: gzip data" "gzip compressed data" "$(file -b "$TMP/out.pprof" | cut -d, -f1)"
# total TYPE: the total go tool pprof gives for one sample type.
total() {
	timeout 120 go tool pprof -top -unit=B -sample_index="$1" "$TMP/out.pprof" 2>&1 |
		sed -n 's/.*Total samples = \([0-9]*\).*/\1/p'
}
check "go tool pprof: alloc_objects, alloc_space, inuse_objects, inuse_space are the dump's" \
	"$ALLOCS $BYTES $BLOCKS $INUSE" \
	"$(total alloc_objects) $(total alloc_space) $(total inuse_objects) $(total inuse_space)"
timeout 120 go tool pprof -raw "$TMP/out.pprof" >"$TMP/raw" 2>&1
check "go tool pprof -raw: functions with file and line, and modules" \
	"build_index heapprog.c:46|main heapprog.c:82|$TMP/heapprog" \
	"$(grep -o 'build_index heapprog.c:46' "$TMP/raw" | head -n 1)|$(grep -o 'main heapprog.c:82' "$TMP/raw" | head -n 1)|$(grep -o "$TMP/heapprog " "$TMP/raw" | head -n 1 | tr -d ' ')"
check "go tool pprof -raw: the worker's samples carry its thread" \
	"thread:[$WORKER_TID]" "$(grep -A1 ' 100      25600 ' "$TMP/raw" | sed -n 2p | tr -d ' ')"
# The worker's DTV (272 bytes) is allocated by main, in pthread_create.
check "go tool pprof: the thread label splits the allocations" "$((BYTES - 25600))|25600" \
	"$(timeout 60 go tool pprof -top -unit=B -sample_index=alloc_space -nodefraction=0 -tagfocus=thread=$MAIN_TID "$TMP/out.pprof" 2>&1 | sed -n 's/.*Showing nodes accounting for \([0-9]*\)B.*/\1/p')|$(timeout 60 go tool pprof -top -unit=B -sample_index=alloc_space -nodefraction=0 -tagfocus=thread=$WORKER_TID "$TMP/out.pprof" 2>&1 | sed -n 's/.*Showing nodes accounting for \([0-9]*\)B.*/\1/p')"
# pprof on a terminal is refused.
python3 - "$REPORT" "$D" >"$TMP/tty" 2>&1 <<'PY'
import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "export", "--format=pprof", sys.argv[2]])
out = b""
while True:
    try:
        b = os.read(fd, 4096)
    except OSError:
        break
    if not b:
        break
    out += b
_, st = os.waitpid(pid, 0)
print(os.WEXITSTATUS(st), out.decode(errors="replace").strip())
PY
check "pprof to a terminal: refused, exit status 2" \
	"2 allocspy-report: error: the pprof format is binary: give -o FILE or redirect standard output" \
	"$(cat "$TMP/tty")"

# --- gperftools -------------------------------------------------------------------------

export_ok gperftools
check "gperftools: the header" "heap profile:     22:    21220 [   668:   474872] @ heapprofile" \
	"$(head -n 1 "$TMP/out.gperftools")"
gp() {
	(cd "$TMP" && timeout 120 google-pprof --text --show_bytes "$@" ./heapprog out.gperftools 2>/dev/null)
}
check "google-pprof --text: inuse and alloc space, inuse and alloc objects" \
	"Total: $INUSE B|Total: $BYTES B|Total: $BLOCKS objects|Total: $ALLOCS objects" \
	"$(gp | grep '^Total')|$(gp --alloc_space | grep '^Total')|$(gp --inuse_objects | grep '^Total')|$(gp --alloc_objects | grep '^Total')"
check "google-pprof --text: symbolized from the program" "16000  75.4%  75.4%    16000  75.4% grow_cache" \
	"$(gp | grep -m1 grow_cache | sed 's/^ *//')"

# --- massif ----------------------------------------------------------------------------

export_ok massif
check "massif: the header, one desc line with the peak as every view says it" \
	"$(json_get "$D" '"desc: allocspy-report export --format=massif; peak: 333,072 \u00b1 %s bytes in use at %.3f s" % ("{:,}".format(d["heap"]["peak_bytes_bound"]), d["heap"]["peak_t_s"])')|cmd: ./heapprog|time_unit: B" \
	"$(head -n 3 "$TMP/out.massif" | tr '\n' '|' | sed 's/|$//')"
timeout 60 ms_print "$TMP/out.massif" >"$TMP/ms" 2>&1
check "ms_print: exit status 0" 0 "$?"
check "ms_print: the detailed snapshots and the peak are the dump's" \
	"$(json_get "$D" '" Detailed snapshots: [%s]" % ", ".join(str(i) + (" (peak)" if s.get("peak") else "") for i, s in enumerate(d["snapshots"]) if "detail" in s)')" \
	"$(grep 'Detailed snapshots' "$TMP/ms")"
PEAK_AT=$(json_get "$D" '[i for i, s in enumerate(d["snapshots"]) if s.get("peak")][0]')
check "ms_print: the peak is the dump's" "333,072" \
	"$(awk -v p="$PEAK_AT" '$1 == p && NF == 6 { print $3 }' "$TMP/ms")"
check "ms_print: the peak's tree" "->61.49% (204,800B) 0x ADDR: build_index (heapprog.c:46)" \
	"$(grep -m1 '(204,800B).*build_index' "$TMP/ms" | sed 's/0x[0-9A-F]*:/0x ADDR:/')"

# --- callgrind -------------------------------------------------------------------------------

export_ok callgrind
timeout 60 callgrind_annotate "$TMP/out.callgrind" >"$TMP/cg" 2>&1
check "callgrind_annotate: exit status 0" 0 "$?"
check "callgrind_annotate: the totals are the dump's" \
	"474,872 (100.0%) 668 (100.0%) 21,220 (100.0%) 22 (100.0%) 300 (100.0%)  PROGRAM TOTALS" \
	"$(grep 'PROGRAM TOTALS' "$TMP/cg")"
check "callgrind_annotate: the functions" "204,800 (43.13%)  50 ( 7.49%)      0           0            0           heapprog.c:build_index" \
	"$(grep -m1 'heapprog.c:build_index' "$TMP/cg")"
timeout 60 callgrind_annotate --inclusive=yes "$TMP/out.callgrind" >"$TMP/cgi" 2>&1
check "callgrind_annotate --inclusive: main holds what it called" "heapprog.c:main" \
	"$(grep -m1 -o 'heapprog.c:main' "$TMP/cgi")"

# --- heaptrack ----------------------------------------------------------------------------------

export_ok heaptrack
timeout 60 heaptrack_print -f "$TMP/out.heaptrack" >"$TMP/ht" 2>&1
check "heaptrack_print: exit status 0" 0 "$?"
check "heaptrack_print: allocations, peak and leaked are the dump's" \
	"calls to allocation functions: $ALLOCS|peak heap memory consumption: 333.07K|total memory leaked: 21.22K" \
	"$(grep -o 'calls to allocation functions: [0-9]*' "$TMP/ht")|$(grep 'peak heap memory consumption' "$TMP/ht")|$(grep 'total memory leaked' "$TMP/ht")"
check "heaptrack_print: the largest peak is build_index's" "204.80K peak memory consumed over 50 calls from" \
	"$(grep -m1 'peak memory consumed over' "$TMP/ht")"
timeout 60 heaptrack_print -f "$TMP/out.heaptrack" --flamegraph-cost-type peak -F "$TMP/ht.peak" >/dev/null 2>&1
check "heaptrack_print: the temporary allocations are the dump's, the peak exactly its bytes" \
	"temporary memory allocations: $(json_get "$D" 'd["heap"]["temporary"]')|$PEAK" \
	"$(grep -o 'temporary memory allocations: [0-9]*' "$TMP/ht")|$(awk '{ s += $NF } END { print s }' "$TMP/ht.peak")"

# --- folded ---------------------------------------------------------------------------------------

for w in alloc_bytes:$BYTES allocs:$ALLOCS inuse_bytes:$INUSE peak_bytes:$PEAK; do
	"$REPORT" export --format=folded --weight="${w%%:*}" "$D" >"$TMP/folded" 2>"$TMP/err"
	check "folded --weight=${w%%:*}: exit 0, the counts add up to the dump's" "0 ${w#*:}" \
		"$? $(awk '{ s += $NF } END { print s }' "$TMP/folded")"
done
"$REPORT" export --format=folded "$D" >"$TMP/folded" 2>/dev/null
check "folded: root first, with file and line, alloc_bytes by default" \
	"main (heapprog.c:82);build_index (heapprog.c:46) 204800" "$(grep -m1 build_index "$TMP/folded")"

# --- speedscope ------------------------------------------------------------------------------------

export_ok speedscope
check "speedscope: valid against speedscope's schema (ajv)" "valid" \
	"$(NODE_PATH=$B/node_modules node "$TOP/test/speedscope-check.js" "$SCHEMA" "$TMP/out.speedscope" 2>&1)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); del d["shared"]; json.dump(d, open(sys.argv[2], "w"))' \
	"$TMP/out.speedscope" "$TMP/broken.speedscope"
check "speedscope: the check fails on a file without its frames" "not valid" \
	"$(NODE_PATH=$B/node_modules node "$TOP/test/speedscope-check.js" "$SCHEMA" "$TMP/broken.speedscope" 2>&1 | grep -q '^valid$' && echo valid || echo 'not valid')"
check "speedscope: one profile per figure, their totals the dump's" \
	"bytes allocated:$BYTES blocks allocated:$ALLOCS bytes in use at the end:$INUSE bytes in use at the peak:$PEAK" \
	"$(json_get "$TMP/out.speedscope" '" ".join("%s:%d" % (p["name"], sum(p["weights"])) for p in d["profiles"])')"

# --- refusals ----------------------------------------------------------------------------------------

refused() {
	name=$1 st=$2 msg=$3
	shift 3
	(cd "$G" && "$REPORT" "$@") >"$TMP/out" 2>"$TMP/err"
	check "$name" "$st|$msg|" "$?|$(head -n 1 "$TMP/err")|$(cat "$TMP/out")"
}
refused "export without --format" 2 "allocspy-report: error: export needs --format" export track.json
refused "export --format=xml" 2 "allocspy-report: error: bad --format value 'xml' (the formats: pprof, gperftools, massif, callgrind, heaptrack, folded, speedscope)" export --format=xml track.json
refused "export --weight=x" 2 "allocspy-report: error: bad --weight value 'x' (the weights: alloc_bytes, allocs, inuse_bytes, peak_bytes, temporary)" export --format=folded --weight=x track.json
refused "--weight for pprof" 2 "allocspy-report: error: --weight is for --format=folded" \
	export --format=pprof --weight=allocs -o x track.json
refused "export --json" 2 "allocspy-report: error: export writes no JSON of its own" export --json --format=folded track.json
refused "-o without a file" 2 "allocspy-report: error: -o needs a value" export --format=folded track.json -o
refused "a dump without stack_stats" 2 \
	"allocspy-report: error: track.json: no per-stack totals (stack_stats) in this dump, which callgrind needs: run with ALLOCSPY_BACKTRACE=2 or more (its callers are in its snapshots and loss records: timeline, leaks and html show them)" \
	export --format=callgrind track.json
refused "massif of a dump without snapshots" 2 \
	"allocspy-report: error: track.json: no snapshots in this dump, which massif needs" export --format=massif track.json
refused "folded peak_bytes without snapshots" 2 \
	"allocspy-report: error: track.json: no snapshots in this dump, which --weight=peak_bytes needs" \
	export --format=folded --weight=peak_bytes track.json
"$REPORT" export --format=folded -o /nonexistent/x.folded "$D" >/dev/null 2>"$TMP/err"
check "-o into a missing directory: exit status 1" \
	"1|allocspy-report: error: /nonexistent/x.folded: cannot write: No such file or directory" "$?|$(cat "$TMP/err")"
"$REPORT" export --format=folded "$D" >/dev/full 2>"$TMP/err"
check "stdout is full: exit status 1" \
	"1|allocspy-report: error: cannot write the report: No space left on device" "$?|$(cat "$TMP/err")"

# The largest counts a dump may hold: every format writes or refuses, none crashes.
python3 - "$D" "$TMP/big.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
big = 2 ** 63 - 1
d["heap"].update(allocs=big, bytes_allocated=big, peak_bytes=big, in_use_bytes=big, temporary=0)
for s in d["stack_stats"]:
    s.update(allocs=big, bytes=big, in_use_bytes=big, peak_bytes=big, peak_blocks=big, temporary=big)
for s in d["snapshots"]:
    s.update(in_use_bytes=big, in_use_blocks=big)
    s.pop("detail", None)
d["snapshots"][-1]["detail"] = [{"stack": 0, "bytes": big, "blocks": big}]
json.dump(d, open(sys.argv[2], "w"))
PY
for f in pprof gperftools massif callgrind folded speedscope; do
	"$REPORT" export --format=$f -o "$TMP/big.$f" "$TMP/big.json" 2>"$TMP/err"
	check "the largest counts: $f exits 0" "0|" "$?|$(cat "$TMP/err")"
done
"$REPORT" export --format=heaptrack -o "$TMP/big.ht" "$TMP/big.json" 2>"$TMP/err"
check "the largest counts: heaptrack refuses to write 2^63 events" \
	"2|allocspy-report: error: $TMP/big.json: 9223372036854775807 allocations are too many to write one by one for heaptrack (at most 100000000)" \
	"$?|$(cat "$TMP/err")"
