#!/bin/sh
# t53-views.sh - every view and export of allocspy-report tells the same
# truth about one dump: frames without a symbol (a stripped program with
# three allocating functions, named one way in valgrind-style text and one
# compact way everywhere else, one pprof function each, with the build-id
# on its mapping).
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS
export HOME="$TMP" GOCACHE="$TMP/go-cache" GOFLAGS=-mod=mod
CC=${CC:-cc}

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi

# --- frames without a symbol ------------------------------------------------------

cat >"$TMP/three.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
void *keep[3];
__attribute__((noinline)) void *alpha(void) { void *p = malloc(1000); memset(p, 1, 1000); return p; }
__attribute__((noinline)) void *beta(void) { void *p = malloc(2000); memset(p, 2, 2000); return p; }
__attribute__((noinline)) void *gamma_(void) { void *p = malloc(3000); memset(p, 3, 3000); return p; }
int main(void) { keep[0] = alpha(); keep[1] = beta(); keep[2] = gamma_(); return 0; }
EOF
if $CC -O1 -o "$TMP/three" "$TMP/three.c" 2>"$TMP/cc.err" && strip "$TMP/three" &&
	(cd "$TMP" && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/three.json" \
		LD_PRELOAD="$LIB" ./three) 2>>"$TMP/cc.err"; then
	ok "a stripped program with three allocating functions runs under the shim"
else
	not_ok "a stripped program with three allocating functions runs under the shim" "$(cat "$TMP/cc.err")"
fi
D=$TMP/three.json
BUILD_ID=$(readelf -n "$TMP/three" | sed -n 's/.*Build ID: //p')
# The compact name of each allocating function's return address, from the
# dump: the module's base name and the offset from its load bias.
NAMES=$(json_get "$D" '" ".join("three+0x%x" % (d["stacks"][s["stack"]][0] - [m for m in d["modules"] if m["path"].endswith("/three")][0]["base"]) for s in sorted(d["stack_stats"], key=lambda s: -s["bytes"]) if s["bytes"] in (1000, 2000, 3000))')
N3=${NAMES%% *} N1=${NAMES##* } N2=${NAMES#* } N2=${N2%% *}
check "the dump: the three stacks, the program's build-id" "3 $BUILD_ID" \
	"$(echo $NAMES | wc -w) $(json_get "$D" '[m for m in d["modules"] if m["path"].endswith("/three")][0]["build_id"]')"

"$REPORT" export --format=pprof -o "$TMP/three.pb.gz" "$D" 2>"$TMP/err"
check "pprof: exit status 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
timeout 120 go tool pprof -top -unit=B -sample_index=alloc_space "$TMP/three.pb.gz" >"$TMP/top" 2>&1
check "go tool pprof -top: one function per allocating function, each its own bytes" \
	"3000B $N3|2000B $N2|1000B $N1" \
	"$(awk '$1 ~ /B$/ && $1 != "0" && $1 == $4 { printf "%s%s %s", n++ ? "|" : "", $1, $6 }' "$TMP/top")"
check "go tool pprof -top: the program's build-id" "Build ID: $BUILD_ID" "$(grep '^Build ID:' "$TMP/top")"
timeout 120 go tool pprof -raw "$TMP/three.pb.gz" >"$TMP/raw" 2>&1
check "go tool pprof -raw: the program's mapping has its build-id and no functions of its own" \
	"$TMP/three $BUILD_ID" "$(sed -n "s|^[0-9]*: 0x[0-9a-f/x]* \($TMP/three [0-9a-f]*\) *$|\1|p" "$TMP/raw")"
check "go tool pprof -raw: the C library's mapping has its build-id and its functions, files and lines" \
	"[FN][FL][LN][IN]" "$(grep -o '/libc\.so\.6 [0-9a-f]\{40\} .*' "$TMP/raw" | cut -d' ' -f3)"

# One compact name for each address everywhere a frame is a name alone;
# valgrind's "??? (in FILE)" where frames are written valgrind's way.
"$REPORT" "$D" >"$TMP/summary" 2>&1
"$REPORT" timeline "$D" >"$TMP/timeline" 2>&1
"$REPORT" export --format=folded "$D" >"$TMP/folded" 2>&1
"$REPORT" export --format=speedscope -o "$TMP/ss.json" "$D" 2>&1
"$REPORT" export --format=callgrind -o "$TMP/cg" "$D" 2>&1
"$REPORT" export --format=massif -o "$TMP/massif" "$D" 2>&1
"$REPORT" leaks --show-leak-kinds=all "$D" >"$TMP/leaks" 2>&1
"$REPORT" --json leaks --show-leak-kinds=all "$D" >"$TMP/leaks.json" 2>&1
"$REPORT" html -o "$TMP/three.html" "$D" 2>&1
for n in $NAMES; do
	check "$n: in the summary's stacks, the timeline, folded, speedscope, callgrind, the page's flame graphs" \
		"yes yes yes yes yes yes" \
		"$(grep -q "^ .*  $n" "$TMP/summary" && echo yes) $(grep -q "  $n$" "$TMP/timeline" && echo yes) $(grep -q ";$n [0-9]*$" "$TMP/folded" && echo yes) $(grep -q "\"name\":\"$n\"" "$TMP/ss.json" && echo yes) $(grep -q "^fn=$n$" "$TMP/cg" && echo yes) $(grep -q "\"$n\"" "$TMP/three.html" && echo yes)"
done
ADDR3=$(json_get "$D" '"0x%X" % [d["stacks"][s["stack"]][0] for s in d["stack_stats"] if s["bytes"] == 3000][0]')
addr3=$(json_get "$D" '"0x%x" % [d["stacks"][s["stack"]][0] for s in d["stack_stats"] if s["bytes"] == 3000][0]')
check "leaks: valgrind's ??? (in FILE), never the compact name" \
	"==PID==    by $ADDR3: ??? (in $TMP/three)|0" \
	"$(grep "by $ADDR3:" "$TMP/leaks" | sed 's/^==[0-9]*==/==PID==/')|$(grep -c 'three+0x' "$TMP/leaks")"
check "leaks --json: function null, the compact name in name" "None $N3" \
	"$(json_get "$TMP/leaks.json" '" ".join("%s %s" % (f["function"], f["name"]) for r in d["loss_records"] for f in r["frames"] if f["address"] == "'"$addr3"'")')"
check "massif: valgrind's ??? (in FILE) in the heap tree" "$ADDR3: ??? (in $TMP/three)" \
	"$(grep -o "$ADDR3: ??? (in [^)]*)" "$TMP/massif" | head -n 1)"
check "html: the stacks beside the peak in valgrind's way" "$addr3: <span class=\"fn\">???</span> <span class=\"loc\">(in $TMP/three)</span>" \
	"$(grep -o "$addr3: <span class=\"fn\">???</span> <span class=\"loc\">(in [^)]*)</span>" "$TMP/three.html" | head -n 1)"

# --- one peak everywhere --------------------------------------------------------------

# The README's quick-start program: 106 bytes at the peak (strdup's 10 among
# them), 96 at exit, where the one snapshot, the peak's, is taken.
cat >"$TMP/prog.c" <<'EOF'
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; char name[24]; };

static struct node *kept;

int main(void)
{
	struct node *lost = malloc(sizeof *lost);   /* leaked, with its child */
	lost->next = malloc(sizeof *lost->next);
	kept = calloc(1, sizeof *kept);             /* still reachable */
	free(strdup("temporary"));
	return 0;
}
EOF
# Two threads that reach many new peaks, so that the peak snapshot (taken at
# the first free after the heap grew 5%) is often below the peak.
cat >"$TMP/peaks.c" <<'EOF'
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
enum { N = 4000 };
static void *work(void *arg)
{
	unsigned seed = (unsigned)(size_t)arg;
	static __thread void *keep[N];
	for (int i = 0; i < N; i++) {
		size_t n = 512 + rand_r(&seed) % 2048;
		keep[i] = malloc(n);
		memset(keep[i], 1, n);
		if (i % 3 == 2) { free(keep[i - 1]); keep[i - 1] = NULL; }
	}
	for (int i = 0; i < N; i++)
		free(keep[i]);
	return NULL;
}
int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, work, (void *)(size_t)(i + 1));
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
EOF
if $CC -g -o "$TMP/prog" "$TMP/prog.c" 2>"$TMP/cc.err" &&
	$CC -g -O1 -pthread -o "$TMP/peaks" "$TMP/peaks.c" 2>>"$TMP/cc.err" &&
	(cd "$TMP" && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/prog.json" \
		LD_PRELOAD="$LIB" ./prog && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 \
		ALLOCSPY_OUTPUT="$TMP/peaks.json" LD_PRELOAD="$LIB" ./peaks) 2>>"$TMP/cc.err"; then
	ok "the quick-start program and a 2-thread program of many peaks run under the shim"
else
	not_ok "the quick-start program and a 2-thread program of many peaks run under the shim" "$(cat "$TMP/cc.err")"
fi
"$REPORT" merge -o "$TMP/merged.json" "$TMP/peaks.json" "$TMP/peaks.json" 2>/dev/null

D=$TMP/prog.json
T=$(json_get "$D" '"%.3f" % d["heap"]["peak_t_s"]')
ST=$(json_get "$D" '"%.3f" % d["snapshots"][0]["t_s"]')
check "prog: the dump's peak, 106 bytes, above its one snapshot's 96 (the peak's)" "106 96 True" \
	"$(json_get "$D" '"%d %d %s" % (d["heap"]["peak_bytes"], d["snapshots"][0]["in_use_bytes"], d["snapshots"][0].get("peak"))')"

# views D NAME: every view's and export's peak of dump D into $TMP/NAME.*.
views() {
	"$REPORT" "$1" >"$TMP/$2.summary" 2>/dev/null
	"$REPORT" timeline "$1" >"$TMP/$2.timeline" 2>/dev/null
	"$REPORT" timeline --svg "$TMP/$2.svg" "$1" 2>/dev/null
	"$REPORT" html -o "$TMP/$2.html" "$1" 2>/dev/null
	"$REPORT" export --format=massif -o "$TMP/$2.massif" "$1" 2>/dev/null
	"$REPORT" export --format=callgrind -o "$TMP/$2.cg" "$1" 2>/dev/null
	"$REPORT" export --format=speedscope -o "$TMP/$2.ss" "$1" 2>/dev/null
	"$REPORT" export --format=pprof -o "$TMP/$2.pb.gz" "$1" 2>/dev/null
	"$REPORT" export --format=heaptrack -o "$TMP/$2.ht" "$1" 2>/dev/null
	timeout 60 ms_print "$TMP/$2.massif" >"$TMP/$2.ms" 2>&1
	python3 "$TOP/test/html-page.py" "$TMP/$2.html" >"$TMP/$2.page" 2>&1
	# The profile's comments, from its string table (go tool pprof shows
	# them as "Comment:" lines; t56 has it read the profiles).
	python3 - "$TMP/$2.pb.gz" >"$TMP/$2.raw" <<'PY'
import gzip, sys
b = gzip.open(sys.argv[1]).read()
def varint(i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
strings, comments, i = [], [], 0
while i < len(b):
    key, i = varint(i)
    if key & 7 == 0:
        v, i = varint(i)
        if key >> 3 == 13:
            comments.append(v)
    elif key & 7 == 2:
        n, i = varint(i)
        if key >> 3 == 6:
            strings.append(b[i:i + n].decode())
        i += n
    else:
        raise SystemExit("wire type %d" % (key & 7))
for c in comments:
    print("Comment: " + strings[c])
PY
}
# peak_lines NAME: the peak as each view says it, one per line.
peak_lines() {
	n=$1
	echo "summary: $(grep '^Peak: ' "$TMP/$n.summary")"
	echo "timeline: $(grep '^Peak: ' "$TMP/$n.timeline")"
	echo "svg: $(grep -o '>peak: [^<]*' "$TMP/$n.svg" | cut -c2-)"
	echo "svg text: $(grep -o '>Peak: [^<]*' "$TMP/$n.svg" | cut -c2-)"
	echo "html chart: $(grep -o 'class="peak-label"[^>]*>peak: [^<]*' "$TMP/$n.html" | head -n 1 | sed 's/.*>peak: /peak: /')"
	echo "html stacks: $(grep -o '<h4>Peak: [^<]*' "$TMP/$n.html" | head -n 1 | cut -c5-)"
	echo "html table: $(grep -o '<td>peak</td><td class="n">[^<]*' "$TMP/$n.html" | sed 's/.*">/Peak: /')"
	echo "massif: $(sed -n 's/^desc: .*; peak: \([^;]*\).*/Peak: \1/p' "$TMP/$n.massif")"
	echo "callgrind: $(sed -n 's/^desc: Peak: /Peak: /p' "$TMP/$n.cg")"
	echo "pprof: $(sed -n 's/^Comment: peak: /Peak: /p; s/^ *peak: /Peak: /p' "$TMP/$n.raw" | head -n 1)"
}
views "$D" prog
P="Peak: 106 bytes in use at $T s"
check "prog: the peak, said one way by the summary, timeline, SVG, page, massif, callgrind and pprof" \
	"summary: $P|timeline: $P|svg: ${P#Peak: }|svg text: $P|html chart: peak: ${P#Peak: }|html stacks: $P|html table: $P|massif: $P|callgrind: $P|pprof: $P" \
	"$(peak_lines prog | sed 's/^svg: peak: /svg: /' | tr '\n' '|' | sed 's/|$//')"
L="snapshot 1 of 1, below the peak (96 bytes in 3 blocks at $ST s)"
check "prog: the detail named by its own snapshot, figure and time: timeline, SVG, page, flame graph, speedscope, massif" \
	"Stacks at $L:|Stacks at $L:|Stacks at $L:|bytes at $L|bytes in use at $L|[not in the tree of $L]" \
	"$(grep '^Stacks at' "$TMP/prog.timeline")|$(grep -o '>Stacks at [^<]*' "$TMP/prog.svg" | cut -c2-)|$(grep -o '<p class="note">Stacks at [^<]*' "$TMP/prog.html" | sed 's/.*">//')|$(json_get "$TMP/prog.page" '[f["title"] for f in d["data"]["dumps"][0]["flames"] if f["key"] == "peak_bytes"][0]')|$(json_get "$TMP/prog.ss" '[p["name"] for p in d["profiles"]][-1]')|$(grep -o '0x0: \[not in the tree[^]]*\]' "$TMP/prog.massif" | cut -c6-)"
check "prog: the chart's top is the peak's 106 bytes, marked # at its time" "yes" \
	"$(sed -n 4p "$TMP/prog.timeline" | grep -q '^ 106^.*#' && echo yes)"
check "prog: ms_print's peak snapshot is the peak's 106 bytes, the largest mem_heap_B" "106 106" \
	"$(awk '/^ *[0-9]+ +[0-9,]+ +[0-9,]+/ { n[$1] = $3 } /Detailed snapshots/ { match($0, /[0-9]+ \(peak\)/); p = substr($0, RSTART, RLENGTH); sub(/ .*/, "", p) } END { print n[p] }' "$TMP/prog.ms" | tr -d ,) $(sed -n 's/^mem_heap_B=//p' "$TMP/prog.massif" | sort -n | tail -n 1)"
"$REPORT" export --format=folded --weight=peak_bytes "$D" >/dev/null 2>"$TMP/err"
check "prog: folded --weight=peak_bytes says whose the weights are" \
	"allocspy-report: note: $D: the stacks' peak_bytes are those of $L; the peak: 106 bytes in use at $T s" \
	"$(cat "$TMP/err")"

# The 2-thread program and the merge of its dump with itself: whether the
# peak snapshot holds the peak or not, every view says the dump's peak.
for n in peaks merged; do
	D=$TMP/$n.json
	views "$D" "$n"
	P=$(json_get "$D" '"Peak: {:,} \u00b1 {:,} bytes in use at %.3f s".format(d["heap"]["peak_bytes"], d["heap"]["peak_bytes_bound"]) % d["heap"]["peak_t_s"]')
	check "$n: the peak, said one way by every view ($(json_get "$D" '"the peak snapshot holds it" if [s for s in d["snapshots"] if s.get("peak")][0]["in_use_bytes"] == d["heap"]["peak_bytes"] else "the peak snapshot holds less"'))" \
		"summary: $P|timeline: $P|svg: ${P#Peak: }|svg text: $P|html chart: peak: ${P#Peak: }|html stacks: $P|html table: $P|massif: $P|callgrind: $P|pprof: $P" \
		"$(peak_lines "$n" | sed 's/^svg: peak: /svg: /; s/^\(svg text: .*\) (the true peak.*/\1/; s/^\(html stacks: .*\) (the true peak.*/\1/' | tr '\n' '|' | sed 's/|$//')"
	check "$n: the range the bound gives, in the summary and the timeline" \
		"$(json_get "$D" '"      (the true peak is between {:,} and {:,} bytes)".format(d["heap"]["peak_bytes"], d["heap"]["peak_bytes"] + d["heap"]["peak_bytes_bound"])')" \
		"$(grep -A1 '^Peak: ' "$TMP/$n.summary" | sed -n 2p)"
	check "$n: the largest mem_heap_B of the massif export, and ms_print's peak, are the dump's peak" \
		"$(json_get "$D" 'd["heap"]["peak_bytes"]') $(json_get "$D" 'd["heap"]["peak_bytes"]')" \
		"$(sed -n 's/^mem_heap_B=//p' "$TMP/$n.massif" | sort -n | tail -n 1) $(awk '/^ *[0-9]+ +[0-9,]+ +[0-9,]+/ { n[$1] = $3 } /Detailed snapshots/ { match($0, /[0-9]+ \(peak\)/); p = substr($0, RSTART, RLENGTH); sub(/ .*/, "", p) } END { print n[p] }' "$TMP/$n.ms" | tr -d ,)"
	check "$n: the stacks' line names their snapshot" \
		"$(json_get "$D" '(lambda i, s: ("Stacks at the peak (snapshot %d of %d: {:,} bytes in {:,} blocks at %.3f s):" if s["in_use_bytes"] == d["heap"]["peak_bytes"] else "Stacks at snapshot %d of %d, below the peak ({:,} bytes in {:,} blocks at %.3f s):").format(s["in_use_bytes"], s["in_use_blocks"]) % (i + 1, len(d["snapshots"]), s["t_s"]))(*[(i, s) for i, s in enumerate(d["snapshots"]) if s.get("peak")][0])')" \
		"$(grep '^Stacks at' "$TMP/$n.timeline")"
done

# --- heaptrack: the dump's allocations, temporaries, peak and leaks --------------------

# ht NAME: heaptrack_print's figures of $TMP/NAME.ht: allocations,
# temporary allocations, the peak (each trace's cost at the peak, added up:
# heaptrack_print rounds its own line) and the bytes leaked (likewise).
ht() {
	timeout 60 heaptrack_print -f "$TMP/$1.ht" >"$TMP/$1.htp" 2>&1
	timeout 60 heaptrack_print -f "$TMP/$1.ht" --flamegraph-cost-type peak -F "$TMP/$1.htpeak" >/dev/null 2>&1
	timeout 60 heaptrack_print -f "$TMP/$1.ht" --flamegraph-cost-type leaked -F "$TMP/$1.htleak" >/dev/null 2>&1
	echo "$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$TMP/$1.htp") $(sed -n 's/^temporary memory allocations: \([0-9]*\).*/\1/p' "$TMP/$1.htp") $(awk '{ s += $NF } END { print s + 0 }' "$TMP/$1.htpeak") $(awk '{ s += $NF } END { print s + 0 }' "$TMP/$1.htleak")"
}
# A Python run: many temporary allocations, and stacks of every kind.
(cd "$TMP" && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/py.json" LD_PRELOAD="$LIB" \
	python3 -c 'import json; [json.dumps({"a": [i] * 10}) for i in range(2000)]')
"$REPORT" export --format=heaptrack -o "$TMP/py.ht" "$TMP/py.json" 2>/dev/null
for n in prog peaks merged py; do
	check "$n: heaptrack_print's allocations, temporary allocations, peak and bytes leaked are the dump's" \
		"$(json_get "$TMP/$n.json" '"%d %d %d %d" % (d["heap"]["allocs"], d["heap"]["temporary"], d["heap"]["peak_bytes"], d["heap"]["in_use_bytes"])')" \
		"$(ht $n)"
done
"$REPORT" export --format=heaptrack -o "$TMP/py.gz" "$TMP/py.json" 2>/dev/null
timeout 60 heaptrack_print -f "$TMP/py.gz" >"$TMP/pygz.htp" 2>&1
check "heaptrack's export to FILE.gz is gzipped, and heaptrack_print reads it as the plain one" \
	"1f8b $(grep -E '^(calls to allocation|temporary memory|peak heap|total memory leaked)' "$TMP/py.htp" | tr '\n' '|')" \
	"$(head -c 2 "$TMP/py.gz" | od -An -tx1 | tr -d ' \n') $(grep -E '^(calls to allocation|temporary memory|peak heap|total memory leaked)' "$TMP/pygz.htp" | tr '\n' '|')"
check "prog: heaptrack_print's peak line and its one temporary allocation, strdup's in main" \
	"peak heap memory consumption: 106B|1 temporary allocations of 1 allocations in total (100.00%) from|main|  at prog.c:13" \
	"$(grep '^peak heap memory' "$TMP/prog.htp")|$(grep -A2 -m1 'temporary allocations of' "$TMP/prog.htp" | tr '\n' '|' | sed 's/|$//')"

# --- many stacks: the views choose, the exports keep every one --------------------------

# many: 1,000 blocks, each from a stack of its own, nine levels of one
# recursive function whose four call sites the block's number chooses.
cat >"$TMP/many.c" <<'EOF'
#include <stdlib.h>

static void **keep;
static unsigned n;
static volatile unsigned sink;

__attribute__((noinline)) static void leaf(unsigned v)
{
	keep[n++] = malloc(16 + v % 64);
	sink += v;
}

__attribute__((noinline)) static void step(unsigned depth, unsigned v, unsigned digits)
{
	if (!depth) {
		leaf(v);
		return;
	}
	switch (digits & 3) {
	case 0: step(depth - 1, v, digits >> 2); sink += 1; break;
	case 1: step(depth - 1, v, digits >> 2); sink += 2; break;
	case 2: step(depth - 1, v, digits >> 2); sink += 3; break;
	default: step(depth - 1, v, digits >> 2); sink += 4; break;
	}
}

int main(int argc, char **argv)
{
	unsigned count = argc > 1 ? (unsigned)atoi(argv[1]) : 1000;

	keep = malloc(count * sizeof *keep);
	for (unsigned i = 0; i < count; i++)
		step(9, i, i);
	return 0;
}
EOF
$CC -O1 -g -o "$TMP/many" "$TMP/many.c" &&
	(cd "$TMP" && ALLOCSPY_BACKTRACE=16 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/many.json" \
		LD_PRELOAD="$LIB" ./many 1000)
# Every stack's totals, as the shim will write them, from the loss records
# (each block is still reachable at exit, each stack one record).
python3 - "$TMP/many.json" "$TMP/all.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ss = [{"stack": r["stack"], "allocs": r["blocks"], "bytes": r["bytes"], "in_use_blocks": r["blocks"],
       "in_use_bytes": r["bytes"], "temporary": 0, "peak_bytes": r["bytes"], "peak_blocks": r["blocks"]}
      for r in d["loss_records"]]
d["stack_stats"] = sorted(ss, key=lambda s: (-s["bytes"], s["stack"]))
d.pop("stack_stats_omitted", None)
tid = d["threads"][0]["tid"]
d["thread_stacks"] = [{"tid": tid, "stack": s["stack"], "allocs": s["allocs"], "bytes": s["bytes"]} for s in ss]
json.dump(d, open(sys.argv[2], "w"))
PY
D=$TMP/all.json
check "many: 1,001 stacks, each with its totals" "1001 1001" \
	"$(json_get "$D" '"%d %d" % (len(d["stacks"]), len(d["stack_stats"]))')"
"$REPORT" "$D" >"$TMP/all.summary" 2>&1
check "many: the summary lists 10 stacks, then the others in one row" \
	"$(json_get "$D" '"  {:>14,} {:>12,} {:>14,}  ... and 991 more stacks".format(*[d["heap"][k] - sum(s[j] for s in d["stack_stats"][:10]) for k, j in (("bytes_allocated", "bytes"), ("allocs", "allocs"), ("in_use_bytes", "in_use_bytes"))])')|11" \
	"$(grep 'more stacks' "$TMP/all.summary")|$(sed -n '/^Stacks/,/more stacks/p' "$TMP/all.summary" | grep -c '^ *[0-9]')"
"$REPORT" timeline "$D" >"$TMP/all.timeline" 2>&1
check "many: the timeline lists 10 stacks at the peak, then the others in one line" \
	"$(json_get "$D" '(lambda p, h: "  {:>14,} {:>5.1f}%  ... and {:,} more stacks".format(sum(x["bytes"] for x in h[10:]), 100 * sum(x["bytes"] for x in h[10:]) / p["in_use_bytes"], len(h) - 10))(*[(s, sorted(s["detail"], key=lambda x: (-x["bytes"], x["stack"]))) for s in d["snapshots"] if s.get("peak")][0])')" \
	"$(grep 'more stacks' "$TMP/all.timeline")"
"$REPORT" timeline --svg "$TMP/all.svg" "$D" 2>/dev/null
"$REPORT" html -o "$TMP/all.html" "$D" 2>/dev/null
check "many: the SVG and the page say so too" \
	"$(json_get "$D" '"... and {:,} more stacks".format(len([s for s in d["snapshots"] if s.get("peak")][0]["detail"]) - 10)') yes" \
	"$(grep -o '\.\.\. and [0-9,]* more stacks' "$TMP/all.svg") $(grep -q "$(json_get "$D" '"... and {:,} more stacks; the 10 largest are listed".format(len([s for s in d["snapshots"] if s.get("peak")][0]["detail"]) - 10)')" "$TMP/all.html" && echo yes)"
"$REPORT" export --format=folded "$D" >"$TMP/all.folded" 2>&1
"$REPORT" export --format=speedscope -o "$TMP/all.ss" "$D" 2>&1
"$REPORT" export --format=callgrind -o "$TMP/all.cg" "$D" 2>&1
check "many: folded and speedscope keep every stack, the bytes the dump's" \
	"$(json_get "$D" '"1001 %d 1001 %d" % (d["heap"]["bytes_allocated"], d["heap"]["bytes_allocated"])')" \
	"$(wc -l <"$TMP/all.folded") $(awk '{ s += $NF } END { print s }' "$TMP/all.folded") $(json_get "$TMP/all.ss" '"%d %d" % (len(d["profiles"][0]["samples"]), sum(d["profiles"][0]["weights"]))')"
# A recursive function's call site is one location more than once in a
# stack: the callgrind export's frames once overflowed their buffer.
check "many: callgrind_annotate's totals of the recursive stacks are the dump's" \
	"$(json_get "$D" '"%d %d %d %d 0" % (d["heap"]["bytes_allocated"], d["heap"]["allocs"], d["heap"]["in_use_bytes"], d["heap"]["in_use_blocks"])')" \
	"$(timeout 60 callgrind_annotate "$TMP/all.cg" 2>&1 | grep 'PROGRAM TOTALS' | sed 's/([^)]*)//g; s/,//g' | awk '{ print $1, $2, $3, $4, $5 }')"

# --- stacks cut at the depth limit ----------------------------------------------------

# With 8 frames, the blocks of many (11 frames down to main) are cut, and
# their innermost 8 frames are alike (the numbers below 50 differ in the
# outer calls): one stack, under one [truncated] frame; main's own block
# is whole. With 16, each stack has 16 frames, the depth, but reaches
# main: none is cut.
(cd "$TMP" && ALLOCSPY_BACKTRACE=8 ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/cut.json" \
	LD_PRELOAD="$LIB" ./many 50)
D=$TMP/cut.json
"$REPORT" export --format=folded "$D" >"$TMP/cut.folded" 2>&1
check "cut at 8 frames: the stack of 8 frames from step down to leaf under [truncated], with the 50 blocks; main's whole" \
	"[truncated];step;step;step;step;step;step;step;leaf $(json_get "$D" 'sum(16 + v % 64 for v in range(50))')|main 400" \
	"$(sed 's/ (many\.c:[0-9]*)//g' "$TMP/cut.folded" | tr '\n' '|' | sed 's/|$//')"
"$REPORT" export --format=speedscope -o "$TMP/cut.ss" "$D" 2>/dev/null
"$REPORT" html -o "$TMP/cut.html" "$D" 2>/dev/null
python3 "$TOP/test/html-page.py" "$TMP/cut.html" >"$TMP/cut.page" 2>&1
check "cut at 8 frames: speedscope's stacks and the page's flame graph have [truncated] at their root" \
	"1 ['[truncated]', 'main']" \
	"$(json_get "$TMP/cut.ss" 'sum(d["shared"]["frames"][s[0]]["name"] == "[truncated]" for s in d["profiles"][0]["samples"])') $(json_get "$TMP/cut.page" '(lambda f, s: sorted(s[n] for n, k in zip(f["n"], f["d"]) if k == 1))([f for f in d["data"]["dumps"][0]["flames"] if f["key"] == "alloc_bytes"][0], d["data"]["dumps"][0]["strings"])')"
check "16 frames down to main: the stack has the depth, reaches main, none is cut" "16 0" \
	"$(json_get "$TMP/all.json" 'max(len(s) for s in d["stacks"])') $(grep -c '^\[truncated\]' "$TMP/all.folded")"
