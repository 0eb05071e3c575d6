#!/bin/sh
# t59-html.sh - allocspy-report html in a browser: Debian's chromium,
# headless, driven by playwright-core (test/html-check.js). On real runs
# under the shim (test/golden/heapprog.c, and a program built here from a
# source file whose name is markup, run with markup in its arguments):
# the page loads with no request but its own file, no console message, no
# error and no dialog; the timeline's peak marker and hover and the flame
# graphs' totals are the dump's, their frames the program's own figures;
# a click zooms a frame to the full width and the root zooms back; the
# search highlights the matching frames; without JavaScript the tables,
# the loss records and the timeline are there; a 1200x800 screenshot. On
# err_frees, the heap errors: each report collapsible, opened by "open all",
# reading as the errors command prints it.
# With README_PNG=FILE the screenshot of heapprog's page is copied there
# (doc/report.png, the README's picture). The quick tier (make check)
# opens heapprog's and err_frees's pages in the browser; the markup pages
# and the two builds' page are read outside it there.
# A missing browser is a failure: scripts/deps.sh and scripts/npm-deps.sh
# install chromium and playwright-core.
. "$(dirname "$0")/lib.sh"
unset DEBUGINFOD_URLS
export NODE_PATH="$B/node_modules" HOME="$TMP"

if [ ! -x "$REPORT" ] || [ ! -f "$LIB" ]; then
	not_ok "allocspy-report and the shim are built" "$REPORT or $LIB is missing"
	exit 0
fi
for tool in chromium node; do
	if command -v "$tool" >/dev/null; then ok "$tool is installed"; else
		not_ok "$tool is installed" "scripts/deps.sh installs it"
		exit 0
	fi
done
if [ -f "$B/node_modules/playwright-core/package.json" ]; then ok "playwright-core is installed"; else
	not_ok "playwright-core is installed" "make node-deps (scripts/npm-deps.sh) installs it"
	exit 0
fi

# browse NAME [SEARCH [ZOOM]]: html-check.js on $TMP/NAME.html; what it saw
# in $TMP/NAME.seen, its screenshot in $TMP/NAME.png.
browse() {
	name=$1
	shift
	if timeout -k 5 180 node "$TOP/test/html-check.js" "$TMP/$name.html" "$TMP/$name.seen" \
		"$TMP/$name.png" "$@" 2>"$TMP/$name.node.err"; then
		ok "$name: the browser opened the page"
	else
		not_ok "$name: the browser opened the page" "$(tail -n 20 "$TMP/$name.node.err")"
		echo '{}' >"$TMP/$name.seen"
	fi
}
seen() { json_get "$TMP/$1.seen" "$2" 2>/dev/null; }

# quiet NAME: the checks every page passes in the browser.
quiet() {
	check "$1: no request but the page itself, with and without JavaScript" \
		"['file://$TMP/$1.html', 'file://$TMP/$1.html']" "$(seen "$1" 'd["requests"]')"
	check "$1: no console message, no error, no dialog" "[] [] []" \
		"$(seen "$1" '"%s %s %s" % (d["console"], d["errors"], d["dialogs"])')"
}

# --- heapprog ---------------------------------------------------------------------------

${CC:-cc} -O0 -g -pthread -o "$TMP/heapprog" "$TOP/test/golden/heapprog.c"
(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$TMP/heapprog.json" \
	LD_PRELOAD="$LIB" ./heapprog >/dev/null 2>"$TMP/heapprog.err")
check "heapprog: a dump with snapshots and stacks" "True True" \
	"$(json_get "$TMP/heapprog.json" '"%s %s" % (len(d["snapshots"]) > 1, len(d["stack_stats"]) > 1)' 2>&1 | tail -n 1)"
"$REPORT" html "$TMP/heapprog.json" -o "$TMP/heapprog.html" 2>"$TMP/err"
check "heapprog: html exits 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
browse heapprog build load_table
quiet heapprog
D=$TMP/heapprog.json

PEAK='[s for s in d["snapshots"] if s.get("peak")][0]'
# The peak marker: the dump's peak, at its snapshot when that holds it,
# else a point of its own at the peak's time whose bytes allocated so far
# are the fewest the snapshots around it allow (allocspy-report(1)); its
# hover text, the snapshot's or the peak's as every view says it.
python3 - "$D" >"$TMP/peak.want" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h, snaps = d["heap"], d["snapshots"]
i = [k for k, s in enumerate(snaps) if s.get("peak")][0]
s = snaps[i]
if s["in_use_bytes"] == h["peak_bytes"]:
    t, alloc = s["t_s"], s["bytes_allocated"]
    hover = "snapshot %d of %d (the peak): %.3f s, {:,} bytes in use in {:,} blocks, {:,} bytes allocated so far".format(
        s["in_use_bytes"], s["in_use_blocks"], s["bytes_allocated"]) % (i + 1, len(snaps), s["t_s"])
else:
    t = h["peak_t_s"]
    before = [x for x in snaps if x["t_s"] <= t]
    after = [x for x in snaps if x["t_s"] > t]
    lo = before[-1] if before else {"bytes_allocated": 0, "bytes_freed": 0}
    alloc = max(lo["bytes_allocated"], lo["bytes_freed"] + h["peak_bytes"])
    if after:
        alloc = min(alloc, after[0]["bytes_allocated"])
    hover = "the peak: {:,} \u00b1 {:,} bytes in use at %.3f s".format(h["peak_bytes"], h["peak_bytes_bound"]) % t
print({"snapshot": str(i), "t": "%.9g" % t, "inUse": str(h["peak_bytes"]),
       "bound": str(h["peak_bytes_bound"]), "allocated": str(alloc)})
print(hover)
PY
check "heapprog: the peak marker's figures are the dump's peak" \
	"$(sed -n 1p "$TMP/peak.want")" "$(seen heapprog 'd["on"]["peak"]')"
check "heapprog: hovering over the peak gives its figures" \
	"$(sed -n 2p "$TMP/peak.want")" "$(seen heapprog 'd["on"]["hover"]')"
check "heapprog: a band per snapshot, and one for the peak when no snapshot holds it; the button draws against bytes allocated" \
	"$(json_get "$D" 'len(d["snapshots"]) + ([s for s in d["snapshots"] if s.get("peak")][0]["in_use_bytes"] < d["heap"]["peak_bytes"])') none inline" \
	"$(seen heapprog '"%d %s %s" % (d["on"]["bands"], d["on"]["alloc_axis"]["time"], d["on"]["alloc_axis"]["alloc"])')"
check "heapprog: each flame graph's root is the dump's figure" \
	"$(json_get "$D" "[('alloc_bytes', d['heap']['bytes_allocated']), ('allocs', d['heap']['allocs']), ('temporary', d['heap']['temporary']), ('inuse_bytes', d['heap']['in_use_bytes']), ('peak_bytes', $PEAK['in_use_bytes'])]")" \
	"$(seen heapprog '[(k, int(v["root"])) for k, v in d["on"]["flames"].items()]')"
# frame GRAPH NAME: the weight of the frame NAME in flame graph GRAPH.
frame() { seen "$1" "sum(f[1] for f in d['on']['flames']['$2']['frames'] if f[0] == '$3')"; }
check "heapprog: frames weigh what the program allocated there" \
	"204800 102400 25600 300 16000 100 204800" \
	"$(frame heapprog alloc_bytes build_index) $(frame heapprog alloc_bytes load_table) $(frame heapprog alloc_bytes worker) $(frame heapprog temporary parse_line) $(frame heapprog inuse_bytes grow_cache) $(frame heapprog inuse_bytes make_leak) $(frame heapprog peak_bytes build_index)"
check "heapprog: by thread, each thread's bytes are thread_stacks'" \
	"$(json_get "$D" '("alloc_bytes/thread", sorted([("thread %d (%s)" % (t, [x["name"] for x in d["threads"] if x["tid"] == t][0]), sum(s["bytes"] for s in d["thread_stacks"] if s["tid"] == t)) for t in {s["tid"] for s in d["thread_stacks"]}]))')" \
	"$(seen heapprog '(d["on"]["by_thread"]["key"], sorted(tuple(t) for t in d["on"]["by_thread"]["threads"]))')"
check "heapprog: a click on load_table zooms it to the full width, the root back" \
	"load_table 1150.0 0.0 0 True" \
	"$(seen heapprog '(lambda z: "%s %.1f %.1f %s %s" % (z["frame"]["name"], z["after"]["width"], z["after"]["x"], z["back"]["zoom"], z["back"]["width"] == z["frame"]["width"] < z["full"]))(d["on"]["zoom"])')"
check "heapprog: the zoomed frame was narrower; the full width is the graph's" "True 1150" \
	"$(seen heapprog '"%s %d" % (d["on"]["zoom"]["frame"]["width"] < 1150, d["on"]["zoom"]["full"])')"
check "heapprog: the search highlights the matching frames" \
	"1 frame matches, $(json_get "$D" '"%.1f" % (100 * 204800 / d["heap"]["bytes_allocated"])')% of the total ['build_index'] True" \
	"$(seen heapprog '"%s %s %s" % (d["on"]["search"]["text"], d["on"]["search"]["matched"], d["on"]["search"]["searching"])')"
line=$(grep -n 'idx\[i\] = calloc(1, 4096);' "$TOP/test/golden/heapprog.c" | cut -d: -f1)
check "heapprog: a frame's file and line on hover (build_index's calloc, line $line)" "True" \
	"$(seen heapprog 'any(t.startswith("build_index  heapprog.c:'"$line"'\n204,800 bytes, ") for t in d["on"]["titles"])')"
check "heapprog: open all opens every loss record" "True" \
	"$(seen heapprog '(lambda o: o[0] == o[1] > 0)(d["on"]["records_open"])')"
check "heapprog: a table sorts by a column of numbers" "descending True" \
	"$(seen heapprog '"%s %s" % (d["on"]["sorted"]["order"], d["on"]["sorted"]["values"] == sorted(d["on"]["sorted"]["values"], reverse=True))')"
check "heapprog: without JavaScript: tables, loss records, the timeline at its time axis" \
	"False 6 $(json_get "$D" 'sum(not r["suppressed"] for r in d["loss_records"])') True False True 0 0" \
	"$(seen heapprog '(lambda o: "%s %d %d %s %s %s %d %d" % (o["js"], o["tables"], o["records"], o["timeline"]["time"], o["timeline"]["alloc"], o["timeline"]["area"], o["controls"], o["flame_svgs"]))(d["off"])')"
check "heapprog: without JavaScript: the peak's figures, a title per snapshot, the flame graphs' note" \
	"True True yes" \
	"$(seen heapprog '"%s %s" % (d["off"]["timeline"]["peak"] == d["on"]["peak"], d["off"]["timeline"]["titles"] == d["on"]["bands"])') $(seen heapprog 'd["off"]["text"]' | grep -q 'allow JavaScript to see them' && echo yes)"
check "heapprog: a screenshot: a PNG of 1200x800 pixels, of some substance" \
	"PNG 1200 800 True" \
	"$(seen heapprog '(lambda s: "%s %d %d %s" % (s["signature"], s["width"], s["height"], 30000 < s["bytes"] < 300000))(d["on"]["screenshot"])')"
if [ -n "${README_PNG:-}" ] && [ -f "$TMP/heapprog.png" ]; then
	cp "$TMP/heapprog.png" "$README_PNG"
fi

# --- heap errors -----------------------------------------------------------------------

# err_frees (every invalid and mismatched free, a fishy size) under the
# shim with 16 frames: a collapsible report per context, opened by "open
# all", each with the program's file and line as the errors command gives
# them; without JavaScript the reports are there, closed.
if [ -x "$PROGS/err_frees" ]; then
	(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$TMP/err_frees.json" \
		LD_PRELOAD="$LIB" "$PROGS/err_frees" >/dev/null 2>&1)
	"$REPORT" html "$TMP/err_frees.json" -o "$TMP/err_frees.html" 2>"$TMP/err"
	check "err_frees: html exits 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
	browse err_frees
	quiet err_frees
	check "err_frees: open all opens the 11 heap error reports; no loss record" "[11, 11] [0, 0]" \
		"$(seen err_frees '"%s %s" % (d["on"]["errors_open"], d["on"]["records_open"])')"
	"$REPORT" errors "$TMP/err_frees.json" 2>/dev/null |
		sed -n 's/^==[0-9]*== *//; s/^\(at\|by\) 0x[0-9A-F]*: /\1 /p; /^Address\|^Invalid\|^Mismatched\|^Argument\|^Block\|^ERROR/p' |
		tr -s ' \n' ' ' | sed 's/ $//' >"$TMP/err_frees.want"
	seen err_frees 'd["on"]["text"]' | sed -n '/^Heap errors$/,/^ERROR SUMMARY/p' |
		sed 's/^\(at\|by\) 0x[0-9a-f]*: /\1 /' | grep -Ev '^(Heap errors|open all|close all|[0-9]+ contexts of)' |
		sed 's/^\(INVALID FREE\|MISMATCHED FREE\|FISHY VALUE\)[[:space:]]*//; s/ (3 errors)$//' |
		tr -s ' \n' ' ' | sed 's/^ //; s/ $//' >"$TMP/err_frees.got"
	check "err_frees: the reports read as the errors command prints them (addresses aside)" \
		"$(cat "$TMP/err_frees.want")" "$(cat "$TMP/err_frees.got")"
	check "err_frees: the program's lines are there, C++ names demangled" "yes yes yes" \
		"$(for s in 'main (err_frees.cc:28)' 'operator new[](unsigned long)' 'release(void*) (err_frees.cc:21)'; do
			seen err_frees 'd["on"]["text"]' | grep -qF "$s" && printf 'yes '; done | sed 's/ $//')"
	check "err_frees: without JavaScript, the 11 reports, closed" "11 0" \
		"$(seen err_frees '"%d %d" % (d["off"]["errors"], d["off"]["text"].count("Block was alloc"))')"
else
	not_ok "err_frees is built" "run make test-progs"
fi

# --- markup in the program's names and arguments, two builds ------------------------------

SRC="$TMP/<img src=x onerror=alert(1)>.c"
cat >"$SRC" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *kept[32];
static void *lost;

static void grow(int n) { for (int i = 0; i < n; i++) kept[i] = malloc(1000); }
static void shrink(int n) { for (int i = 0; i < n; i++) kept[16 + i] = malloc(500); }
static void temporary(void) { for (int i = 0; i < 100; i++) free(malloc(64)); }
static void make_leak(void) { lost = malloc(100); lost = NULL; }

static void big_table(void)
{
	char *t = malloc(1 << 20);

	memset(t, 1, 1 << 20);
	usleep(20000);
	free(t);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0;

	grow(n);
	shrink(10 - n);
	temporary();
	big_table();
	make_leak();
	usleep(20000);
	return 0;
}
EOF
(cd "$TMP" && ${CC:-cc} -O0 -g -o "$TMP/marked" "./<img src=x onerror=alert(1)>.c")
ARG='</script><img src=x onerror=alert(2)>'
for n in 2 8; do
	(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$TMP/marked$n.json" \
		LD_PRELOAD="$LIB" ./marked "$n" "$ARG" >/dev/null 2>&1)
done
"$REPORT" html "$TMP/marked2.json" -o "$TMP/marked.html" 2>"$TMP/err"
check "markup: html exits 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
# In a browser, the full tier only (heapprog's page is the quick tier's).
if in_tier marked; then
	browse marked big big_table
	quiet marked
	check "markup: the argument and the source file name are shown as text" "yes yes" \
		"$(seen marked 'd["on"]["text"]' | grep -qF "$ARG" && echo yes) $(seen marked 'd["on"]["text"]' | grep -qF "<img src=x onerror=alert(1)>.c:" && echo yes)"
	check "markup: in the flame graphs too, with their lines" "True" \
		"$(seen marked 'any("  <img src=x onerror=alert(1)>.c:" in t for t in d["on"]["titles"])')"
	check "markup: frames weigh what the program allocated there" "2000 4000 6400 100 1048576 1048576" \
		"$(frame marked alloc_bytes grow) $(frame marked alloc_bytes shrink) $(frame marked alloc_bytes temporary) $(frame marked temporary temporary) $(frame marked alloc_bytes big_table) $(frame marked peak_bytes big_table)"
	check "markup: a click on big_table zooms it to the full width" "big_table 1150.0 0.0" \
		"$(seen marked '(lambda z: "%s %.1f %.1f" % (z["frame"]["name"], z["after"]["width"], z["after"]["x"]))(d["on"]["zoom"])')"
fi

# Every string of a dump that the page shows, made markup (the full tier:
# the quick tier's markup is the program's above).
if in_tier strings; then
	python3 "$TOP/test/golden/markup.py" "$TOP/test/golden/timed.json" "$TMP/strings.json" >"$TMP/marks"
	"$REPORT" html "$TMP/strings.json" -o "$TMP/strings.html" 2>/dev/null
	check "markup in every string: html exits 0" 0 "$?"
	browse strings
	quiet strings
	while IFS= read -r s; do
		check "markup in every string: shown as text: $s" "yes" \
			"$(seen strings 'd["on"]["text"]' | grep -qF -- "$s" && echo yes)"
	done <"$TMP/marks"
	check "markup in every string: a module's path in the flame graphs' titles" "True" \
		"$(seen strings 'any("/x/<img src=y onerror=alert(4)>.so" in t for t in d["on"]["titles"])')"
fi

"$REPORT" html "$TMP/marked2.json" "$TMP/marked8.json" -o "$TMP/diff.html" 2>"$TMP/err"
check "two builds: html exits 0, nothing on stderr" "0|" "$?|$(cat "$TMP/err")"
python3 "$TOP/test/html-page.py" "$TMP/diff.html" >"$TMP/diff.info"
LINE=$(grep -n '^static void grow' "$SRC" | cut -d: -f1)
check "two builds: grow grew, shrink shrank, by function and file:line" \
	"[['grow (<img src=x onerror=alert(1)>.c:$LINE)', '2,000', '8,000', '+6,000']] [['shrink (<img src=x onerror=alert(1)>.c:$((LINE + 1)))', '4,000', '1,000', '−3,000']]" \
	"$(json_get "$TMP/diff.info" '" ".join(str([r[:4] for r in t["rows"][1:]]) for t in d["tables"] if "sites" in t["class"])' 2>&1 | tail -n 1)"
# In a browser, the full tier only (html-page.py read the page above).
if in_tier diff; then
	browse diff
	quiet diff
	check "two builds: both dumps' flame graphs are drawn" "2" "$(seen diff 'd["on"]["flame_svgs"]')"
fi
