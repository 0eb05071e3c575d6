#!/bin/sh
# t52-html-page.sh - allocspy-report html without a browser: every golden
# dump gives a self-contained page (nothing that loads from elsewhere, a
# Content-Security-Policy that allows only its own style sheet and script,
# by their SHA-256); the page's figures, heap errors and leaks are the
# dump's; text from a dump full of markup is escaped; a large dump is
# thinned as the page says; two dumps give the comparison; usage and write
# errors. The analyzer alone: make check-asan runs it too. t59 opens pages
# in a browser.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
unset DEBUGINFOD_URLS

if [ ! -x "$REPORT" ]; then
	not_ok "allocspy-report is built" "$REPORT is missing"
	exit 0
fi

# page NAME ARGS...: allocspy-report html ARGS -o $TMP/NAME.html, from
# test/golden; its status in $TMP/NAME.rc, stderr in $TMP/NAME.err, what
# test/html-page.py reads of it in $TMP/NAME.info.
page() {
	name=$1
	shift
	(cd "$G" && "$REPORT" html "$@" -o "$TMP/$name.html") >"$TMP/$name.out" 2>"$TMP/$name.err"
	echo $? >"$TMP/$name.rc"
	python3 "$TOP/test/html-page.py" "$TMP/$name.html" >"$TMP/$name.info" 2>&1 ||
		echo '{}' >"$TMP/$name.info"
}
info() { json_get "$TMP/$1.info" "$2" 2>&1 | tail -n 1; }

# --- every golden dump: a page that needs nothing else -----------------------------

SELF='"external %s, urls %s, csp %s, scripts %s, json-lt %s" % (d["external"], d["urls"], d["csp_allows_exactly"], [s[0] for s in d["scripts"]], d["json_script_has_lt"])'
for f in track count signal threads refs strdup noloss timed errors guard; do
	page "$f" "$f.json"
	check "$f.json: exit 0, nothing on stdout, only warnings on stderr" "0||" \
		"$(cat "$TMP/$f.rc")|$(cat "$TMP/$f.out")|$(grep -v '^allocspy-report: warning: ' "$TMP/$f.err")"
	check "$f.json: self-contained: no reference out of the page, only its own style and script" \
		"external [], urls ['http://www.w3.org/2000/svg'], csp True, scripts ['application/json', None], json-lt False" \
		"$(info "$f" "$SELF")"
done
check "the policy: nothing from anywhere, the style sheet and script by hash" \
	"default-src 'none'; style-src 'sha256-; script-src 'sha256-; base-uri 'none'; form-action 'none'" \
	"$(info timed 'd["csp"]' | sed "s/'sha256-[A-Za-z0-9+\/=]*'/'sha256-/g")"

# --- the figures are the dump's -----------------------------------------------------

D=$G/timed.json
check "timed.json: the peak marker's figures are the dump's peak, whose snapshot holds it (both axes)" \
	"$(json_get "$D" '[(lambda i, s: {"data-snapshot": str(i), "data-t": "%.9g" % d["heap"]["peak_t_s"], "data-in-use": str(d["heap"]["peak_bytes"]), "data-bound": str(d["heap"]["peak_bytes_bound"]), "data-allocated": str(s["bytes_allocated"])})(i, s) for i, s in enumerate(d["snapshots"]) if s.get("peak") and s["in_use_bytes"] == d["heap"]["peak_bytes"]] * 2')" \
	"$(info timed 'd["peaks"]')"
check "timed.json: a band and a title per snapshot" "{'tl-time': 3, 'tl-alloc': 3} 3" \
	"$(info timed '"%s %s" % (d["bands"], d["band_titles"])')"
check "timed.json: the flame graphs' totals are the dump's" \
	"$(json_get "$D" '[("alloc_bytes", d["heap"]["bytes_allocated"]), ("allocs", d["heap"]["allocs"]), ("temporary", d["heap"]["temporary"]), ("inuse_bytes", d["heap"]["in_use_bytes"]), ("peak_bytes", [s for s in d["snapshots"] if s.get("peak")][0]["in_use_bytes"])]')" \
	"$(info timed '[(f["key"], f["total"]) for f in d["data"]["dumps"][0]["flames"] if not f["by_thread"]]')"
check "timed.json: bytes allocated by thread, from thread_stacks; the rest as other stacks" \
	"$(json_get "$D" '(lambda by: sorted(by + [("[other stacks]", d["heap"]["bytes_allocated"] - sum(v for _, v in by))]))([("thread %d (%s)" % (t, [x["name"] for x in d["threads"] if x["tid"] == t][0]), sum(s["bytes"] for s in d["thread_stacks"] if s["tid"] == t)) for t in sorted({s["tid"] for s in d["thread_stacks"]})])')" \
	"$(info timed '[sorted((d["data"]["dumps"][0]["strings"][n], v) for n, v, k in zip(f["n"], f["v"], f["d"]) if k == 1) for f in d["data"]["dumps"][0]["flames"] if f["by_thread"] and f["key"] == "alloc_bytes"][0]')"
check "timed.json: each flame graph's root weighs the total, its children no more" "True" \
	"$(info timed 'all(f["v"][0] == f["total"] and f["d"][0] == 0 and sum(v for v, k in zip(f["v"], f["d"]) if k == 1) <= f["total"] for f in d["data"]["dumps"][0]["flames"])')"
check "timed.json: the graphs come from stack_stats, those by thread from thread_stacks" \
	"['stack_stats', 'thread_stacks', 'stack_stats', 'thread_stacks', 'stack_stats', 'stack_stats', 'stack_stats']" \
	"$(info timed '[f["source"] for f in d["data"]["dumps"][0]["flames"]]')"
check "timed.json: the LEAK SUMMARY table is the dump's" \
	"$(json_get "$D" '[["definitely lost", "indirectly lost", "possibly lost", "still reachable", "suppressed"][i] + " %d %d" % (d["leaks"][k]["bytes"], d["leaks"][k]["blocks"]) for i, k in enumerate(["definitely_lost", "indirectly_lost", "possibly_lost", "still_reachable", "suppressed"])]')" \
	"$(info timed '[" ".join(r) for t in d["tables"] if t["class"] == "leak-summary" for r in t["rows"][1:]]')"
check "timed.json: a loss record per record not suppressed" \
	"$(json_get "$D" 'sum(not r.get("suppressed") for r in d["loss_records"])')" "$(info timed 'd["records"]')"
check "timed.json: the exit text, as the summary command prints it" "yes" \
	"$("$REPORT" "$D" 2>/dev/null | sed -n '1,/suppressed:/p' | tr -s ' \n' ' ' | sed 's/ $//' >"$TMP/exit.txt"
	   info timed 'd["text"]' | grep -qF "$(cat "$TMP/exit.txt")" && echo yes)"
check "timed.json: the function table, in the summary's order" \
	"$("$REPORT" --json "$D" 2>/dev/null | python3 -c 'import json,sys; print([f["name"] for f in json.load(sys.stdin)["functions"]])')" \
	"$(info timed '[r[0] for t in d["tables"] if t["class"] == "sortable" and t["rows"][0][0] == "function" for r in t["rows"][1:]]')"
check "timed.json: the thread table" "[['4095', 'tree', '5', '1', '4,315', '0', '0'], ['4097', 'worker-1', '2', '0', '64', '0', '0']]" \
	"$(info timed '[t["rows"][1:] for t in d["tables"] if t["rows"][0][0] == "tid"][0]')"
check "timed.json: the peak as every view says it, the stacks beside it from the timeline" \
	"Peak: 4,000 ± 512 bytes in use at 0.050 s (the true peak is between 4,000 and 4,512 bytes) Stacks at the peak (snapshot 2 of 3: 4,000 bytes in 3 blocks at 0.050 s): 98.4% 3,936 bytes in 1 blocks" \
	"$(info timed 'd["text"]' | grep -o 'Peak: 4,000 .* 98.4% 3,936 bytes in 1 blocks')"

check "count.json: no snapshots, no stacks, no leak check, each said" "yes yes yes [] False" \
	"$(info count 'd["text"]' | grep -q 'No snapshots in this dump (ALLOCSPY_MODE=count takes none)' && echo yes) $(info count 'd["text"]' | grep -q 'No stacks in this dump: run with ALLOCSPY_BACKTRACE=2 or more' && echo yes) $(info count 'd["text"]' | grep -q 'No leak check in this dump (ALLOCSPY_MODE=count runs none)' && echo yes) $(info count 'd["data"]["dumps"][0]["flames"], "timeline" in d["data"]["dumps"][0]' | tr -d '(),')"
check "refs.json: all blocks freed" "yes" \
	"$(info refs 'd["text"]' | grep -q 'All heap blocks were freed -- no leaks are possible' && echo yes)"
check "noloss.json: a leak check without loss records" "yes" \
	"$(info noloss 'd["text"]' | grep -q 'The dump has no loss records' && echo yes)"
check "track.json: without stack_stats, the bytes in use come from the loss records" \
	"[('inuse_bytes', 'loss_records', $(json_get "$G/track.json" 'd["heap"]["in_use_bytes"]'))]" \
	"$(info track '[(f["key"], f["source"], f["total"]) for f in d["data"]["dumps"][0]["flames"]]')"

# --- heap errors ----------------------------------------------------------------------

# errors.json: err_frees under the shim. Its part lists each context as
# the errors command prints it: the heading, what the address is, the
# frames of the call and of the block (here without symbols, the modules
# being elsewhere), then the ERROR SUMMARY.
# in_order NAME: each context of NAME.json, as the errors command gives it
# (heading, frames, what the address is, the block's frames), is in the
# page's text, in order.
in_order() {
	"$REPORT" --json errors "$G/$1.json" >"$TMP/$1.cmd.json" 2>/dev/null
	python3 - "$TMP/$1.cmd.json" "$TMP/$1.info" <<'PY'
import json, sys
cmd, page = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
text, at, missing = page["text"], 0, []
for e in cmd["errors"]:
    # The summary line, then every frame, what the address is, the block's frames.
    parts = [e["heading"]] + ["%s: %s" % (f["address"], f["function"] or "???") for f in e["frames"]]
    parts += [e["description"]] if "description" in e else []
    b = e.get("block", {})
    for f in b.get("free_frames", []) + (["Block was alloc'd at"] if "free_frames" in b else []) + b.get("alloc_frames", []):
        parts.append(f if isinstance(f, str) else "%s: %s" % (f["address"], f["function"] or "???"))
    for p in parts:
        k = text.find(p, at)
        if k < 0:
            missing.append(p)
        else:
            at = k + len(p)
print("in order" if not missing else "missing: %s" % missing[:3])
PY
}
for f in errors guard; do
	check "$f.json: a heap error per context, of its kind, in the dump's order" \
		"$(json_get "$G/$f.json" '[e["kind"] for e in d["errors"]]')" "$(info $f 'd["errors"]')"
	check "$f.json: each context's heading, frames and address, as the errors command gives them, in order" \
		"in order" "$(in_order $f)"
done
check "guard.json: the kinds' labels and headings; the pool's figures after the ERROR SUMMARY" "yes yes" \
	"$(info guard 'd["text"]' | grep -q 'overwritten Bytes before a block were written (found at its free) .*overwritten Bytes after a block were written (found at its free) .*invalid read Invalid read of size 8 ' && echo yes) $(info guard 'd["text"]' | grep -qF 'ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0) Guarded blocks ( ALLOCSPY_GUARD=1 ): 4, 1 of them live, in a pool of 1,024 slots.' && echo yes)"
check "errors.json: the context of three errors says so; the ERROR SUMMARY ends the part" \
	"1 yes" \
	"$(info errors 'd["text"]' | grep -o '(3 errors)' | wc -l) $(info errors 'd["text"]' | grep -q 'bytes inside a block of size 20 alloc.d at 0x[0-9a-f]*: malloc (in /home/dev/src/allocspy/build/liballocspy.so) by 0x[0-9a-f]*: ??? (in /home/dev/src/err/err_frees) ERROR SUMMARY: 13 errors from 11 contexts (suppressed: 0 from 0)' && echo yes)"
check "errors.json: the parts' links name the heap errors" "yes" \
	"$(grep -q '<a href="#d0-errors">heap errors</a>' "$TMP/errors.html" && echo yes)"
check "dumps without heap errors: count mode, an older dump, a track dump without any" \
	"No heap errors in this dump (ALLOCSPY_MODE=count looks for none).|No heap errors in this dump (it was written by an allocspy that did not look for them).|0" \
	"$(info count 'd["text"]' | grep -o 'No heap errors in this dump ([^)]*).')|$(info track 'd["text"]' | grep -o 'No heap errors in this dump ([^)]*).')|$(info track 'len(d["errors"])')"
python3 - "$G/errors.json" "$TMP/noerr.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["errors"] = []
d["error_summary"] = {"errors": 0, "contexts": 0, "suppressed": 2, "suppressed_contexts": 1}
json.dump(d, open(sys.argv[2], "w"))
PY
"$REPORT" html "$TMP/noerr.json" -o "$TMP/noerr.html" 2>/dev/null
python3 "$TOP/test/html-page.py" "$TMP/noerr.html" >"$TMP/noerr.info"
check "a track dump whose errors were all suppressed: none listed, the ERROR SUMMARY" \
	"0 yes" \
	"$(info noerr 'len(d["errors"])') $(info noerr 'd["text"]' | grep -q 'Heap errors No heap errors. ERROR SUMMARY: 0 errors from 0 contexts (suppressed: 2 from 1)' && echo yes)"
# Markup in the strings of a heap error: shown as text.
python3 - "$G/errors.json" "$TMP/errmark.json" >"$TMP/errmarks" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
marks = ["<img src=x onerror=alert(11)>", "<script>alert(12)</script>", "<svg onload=alert(13)>",
         "<b onclick=y>"]
d["errors"][3]["symbol"] = marks[0]
d["errors"][9]["argument"] = marks[1]
d["errors"][9]["function"] = marks[2]
d["errors"][0]["call_frames"] = [marks[3]]
json.dump(d, open(sys.argv[2], "w"))
print("\n".join(marks))
PY
"$REPORT" html "$TMP/errmark.json" -o "$TMP/errmark.html" 2>/dev/null
python3 "$TOP/test/html-page.py" "$TMP/errmark.html" >"$TMP/errmark.info"
check "markup in a heap error: no element, attribute or script comes of it" \
	"external [], urls ['http://www.w3.org/2000/svg'], csp True, scripts ['application/json', None], json-lt False, img 0, b 0" \
	"$(info errmark "$SELF"' + ", img %d, b %d" % (d["tags"].get("img", 0), d["tags"].get("b", 0))')"
while IFS= read -r s; do
	check "markup in a heap error: shown as text: $s" "yes" \
		"$(info errmark 'd["text"]' | grep -qF -- "$s" && echo yes)"
done <"$TMP/errmarks"

# --- two dumps -------------------------------------------------------------------------

page two track.json timed.json
"$REPORT" --json compare "$G/track.json" "$G/timed.json" >"$TMP/cmp.json" 2>/dev/null
check "two dumps: exit 0" 0 "$(cat "$TMP/two.rc")"
check "two dumps: the side-by-side table is compare's" \
	"$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
f = lambda v: "?" if v is None else "%.3f" % v if isinstance(v, float) else "{:,}".format(v)
print([[r["name"]] + [f(v) for v in r["values"]] for r in c["rows"]])' "$TMP/cmp.json")" \
	"$(info two '[r[:3] for t in d["tables"] if t["class"] == "compare" for r in t["rows"][1:]]')"
check "two dumps: the sites that grew and shrank are compare's" \
	"$(python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))["sites"]
sign = lambda s: next((1 if b > a else -1 for k in ("bytes", "in_use_bytes", "calls") for a, b in [s["values"][k]] if None not in (a, b) and a != b), 0)
print([s["site"] for s in c if sign(s) > 0], [s["site"] for s in c if sign(s) < 0])' "$TMP/cmp.json")" \
	"$(info two '" ".join(str([r[0] for r in t["rows"][1:] if float(r[3 if r[3] != "?" else 6].replace(",", "").replace("\u2212", "-").replace("+", "") or 0) * s > 0]) for s in (1, -1) for t in [x for x in d["tables"] if "sites" in x["class"]][:1])')"
check "two dumps: both dumps' parts, each with its own ids" "2 True" \
	"$(info two '"%d %s" % (len(d["data"]["dumps"]), "What changed from A to B" in d["text"])')"
# Two runs of one program: the page names each dump by its file (or its
# --label), never by the command line they share.
mkdir -p "$TMP/run1" "$TMP/run2"
cp "$G/track.json" "$TMP/run1/run.json"
cp "$G/track.json" "$TMP/run2/run.json"
(cd "$TMP" && "$REPORT" html -o "$TMP/runs.html" run1/run.json run2/run.json 2>/dev/null)
python3 "$TOP/test/html-page.py" "$TMP/runs.html" >"$TMP/runs.page" 2>&1
check "two runs of one program: the title, heading, table columns and parts named by their files" \
	"run1/run.json (pid 4095) vs run2/run.json (pid 4095) — allocspy|['', 'run1/run.json', 'run2/run.json', 'ratio']|yes yes" \
	"$(sed -n 's/.*<title>\(.*\)<\/title>.*/\1/p' "$TMP/runs.html")|$(json_get "$TMP/runs.page" '[t["rows"][0] for t in d["tables"] if t["class"] == "compare"][0]')|$(grep -q '<h2>A: run1/run.json</h2>' "$TMP/runs.html" && echo yes) $(grep -q '<h2>B: run2/run.json</h2>' "$TMP/runs.html" && echo yes)"
(cd "$G" && "$REPORT" html --label before --label after -o "$TMP/labels.html" track.json track.json 2>/dev/null)
check "two dumps with --label: their names" "before compared with after|before after" \
	"$(sed -n 's/.*<h1>\([^<]*\) <span class="vs">compared with<\/span> \([^<]*\) <span.*/\1 compared with \2/p' "$TMP/labels.html")|$(grep -o '<h2>[AB]: [a-z]*</h2>' "$TMP/labels.html" | sed 's/<[^>]*>//g; s/^[AB]: //' | tr '\n' ' ' | sed 's/ $//')"

# --- escaping -----------------------------------------------------------------------------

H=$TMP/'hostile <i>x&y.json'
python3 "$G/markup.py" "$D" "$H" >"$TMP/marks"
echo "hostile <i>x&y.json" >>"$TMP/marks"
"$REPORT" html "$H" -o "$TMP/hostile.html" >/dev/null 2>"$TMP/hostile.err"
check "markup in a dump: exit 0" "0|" "$?|$(grep -v '^allocspy-report: warning: ' "$TMP/hostile.err")"
python3 "$TOP/test/html-page.py" "$TMP/hostile.html" >"$TMP/hostile.info"
check "markup in a dump: no element, attribute or script comes of it" \
	"external [], urls ['http://www.w3.org/2000/svg'], csp True, scripts ['application/json', None], json-lt False" \
	"$(info hostile "$SELF")"
check "markup in a dump: no img, iframe or extra svg element" "0 0 5" \
	"$(info hostile '"%d %d %d" % (d["tags"].get("img", 0), d["tags"].get("iframe", 0), d["tags"]["svg"])')"
while IFS= read -r s; do
	check "markup in a dump: shown as text: $s" "yes" \
		"$(info hostile 'd["text"]' | grep -qF -- "$s" && echo yes)"
done <"$TMP/marks"
check "markup in a dump: never raw in the page's source, as text in the script's data" "False True" \
	"$(grep -cF '<img src=y onerror=alert(4)>' "$TMP/hostile.html" | sed 's/^0$/False/') $(info hostile '"/x/<img src=y onerror=alert(4)>.so" in d["data"]["dumps"][0]["strings"]')"

# --- a large dump: thinned, as the page says ------------------------------------------------

python3 - "$D" "$TMP/large.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
n_small, n_snap, n_rec = 2000, 3000, 1500
mod = d["modules"][0]
base = mod["base"] + 0x1000
d["stacks"] = [[base + 16 * i] for i in range(n_small + 1)]
d["stack_stats"] = [{"stack": 0, "allocs": 10, "bytes": 1000000, "in_use_blocks": 0, "in_use_bytes": 0,
                     "temporary": 0, "peak_bytes": 0, "peak_blocks": 0}] + \
                   [{"stack": i, "allocs": 1, "bytes": 100, "in_use_blocks": 1, "in_use_bytes": 100,
                     "temporary": 0, "peak_bytes": 0, "peak_blocks": 0} for i in range(1, n_small + 1)]
d["thread_stacks"] = []
h = d["heap"]
h.update(allocs=10 + n_small + n_rec, bytes_allocated=1000000 + 100 * n_small + n_rec * (n_rec + 1) // 2,
         in_use_blocks=n_rec, in_use_bytes=n_rec * (n_rec + 1) // 2, temporary=0, peak_bytes_bound=0)
h["frees"] = h["allocs"] - n_rec
h["peak_bytes"] = 5000000
d["functions"] = {"malloc": {"calls": h["allocs"], "bytes": h["bytes_allocated"], "failed": 0, "temporary": 0},
                  "free": {"calls": h["frees"], "null": 0}}
d["threads"] = [{"tid": 4095, "name": "big", "allocs": h["allocs"], "frees": h["frees"],
                 "bytes_allocated": h["bytes_allocated"], "ref_acquires": 0, "ref_releases": 0}]
d["loss_records"] = [{"kind": "reachable", "bytes": i + 1, "blocks": 1, "indirect_bytes": 0,
                      "indirect_blocks": 0, "stack": 1 + i % n_small, "suppressed": False} for i in range(n_rec)]
d["leaks"] = {k: {"bytes": 0, "blocks": 0} for k in d["leaks"]}
d["leaks"]["still_reachable"] = {"bytes": h["in_use_bytes"], "blocks": n_rec}
snaps, peak = [], 1234
for i in range(n_snap):
    u = 5000000 - abs(i - peak) * 1000
    a = 10000000 + 10000 * i
    snaps.append({"t_s": i / 1000, "bytes_allocated": a, "bytes_freed": a - max(u, 0),
                  "in_use_bytes": max(u, 0), "in_use_blocks": 10})
snaps[peak]["peak"] = True
d["snapshots"] = snaps
h["peak_t_s"] = snaps[peak]["t_s"]
json.dump(d, open(sys.argv[2], "w"))
EOF
"$REPORT" html "$TMP/large.json" -o "$TMP/large.html" >/dev/null 2>"$TMP/large.err"
check "a large dump: exit 0" "0|" "$?|$(grep -v '^allocspy-report: warning: ' "$TMP/large.err")"
python3 "$TOP/test/html-page.py" "$TMP/large.html" >"$TMP/large.info"
check "a large dump: 1000 of 3000 snapshots drawn, the peak among them, and the page says so" \
	"{'tl-time': 1000, 'tl-alloc': 1000} 1234 5000000 yes" \
	"$(info large '"%s %s %s" % (d["bands"], d["peaks"][0]["data-snapshot"], d["peaks"][0]["data-in-use"])') $(info large 'd["text"]' | grep -q '3000 snapshots; 1000 are drawn, each the largest of a run of consecutive ones (the page draws at most 1000)' && echo yes)"
check "a large dump: 2000 frames below 0.1% merged into one, the total kept" \
	"[0, 1, 1, 1] [2325750, 1125750, 1000000, 200000] [0, 0, 0, 2000] 2000 ['all', '[other stacks]', 'tree+0x1000', '[below 0.1%]']" \
	"$(info large '(lambda f: "%s %s %s %d %s" % (f["d"], f["v"], f["m"], f["merged"], [d["data"]["dumps"][0]["strings"][n] for n in f["n"]]))(d["data"]["dumps"][0]["flames"][0])')"
check "a large dump: the 1000 largest of 1500 loss records, in order, and the page says so" \
	"(1000, ['501', '502', '1,500']) yes" \
	"$(info large 'd["records"], (lambda r: r[:2] + r[-1:])(__import__("re").findall(r"in loss record ([0-9,]+) of 1,500", d["text"]))') $(info large 'd["text"]' | grep -q '1500 loss records of every kind.*the 1000 largest are listed (the page lists at most 1000)' && echo yes)"

# --- the command line -------------------------------------------------------------------------

(cd "$G" && "$REPORT" html timed.json) >"$TMP/stdout.html" 2>/dev/null
check "without -o: the same page on stdout" "" "$(cmp "$TMP/stdout.html" "$TMP/timed.html" 2>&1)"

# refused NAME STATUS MESSAGE ARGS...: allocspy-report ARGS exits with STATUS and
# prints MESSAGE as its first line on stderr, nothing on stdout.
refused() {
	name=$1 status=$2 msg=$3
	shift 3
	(cd "$G" && "$REPORT" "$@") >"$TMP/out" 2>"$TMP/err"
	check "$name" "$status|$msg|" "$?|$(head -n 1 "$TMP/err")|$(cat "$TMP/out")"
}
refused "html of three dumps" 2 "allocspy-report: error: two dumps at most" html track.json timed.json count.json
refused "html without a dump" 2 "allocspy-report: error: no dump given" html
refused "html --json" 2 "allocspy-report: error: html writes no JSON of its own" html --json track.json
refused "-o for the summary" 2 "allocspy-report: error: -o is an option of the export, merge and html commands" \
	-o "$TMP/x.html" track.json
refused "html -o without a file" 2 "allocspy-report: error: -o needs a value" html track.json -o
refused "html -o in a missing directory" 1 \
	"allocspy-report: error: $TMP/none/x.html: cannot write: No such file or directory" html track.json -o "$TMP/none/x.html"
refused "html of a bad second dump" 2 "allocspy-report: error: $TMP/nope.json: No such file or directory" \
	html track.json "$TMP/nope.json"
(cd "$G" && "$REPORT" html count.json) >/dev/full 2>"$TMP/err"
check "html to a full disk: exit status 1" \
	"1|allocspy-report: error: cannot write the report: No space left on device" "$?|$(cat "$TMP/err")"
"$REPORT" html "$G/count.json" -o /dev/full >/dev/null 2>"$TMP/err"
check "html -o /dev/full: exit status 1" \
	"1|allocspy-report: error: /dev/full: cannot write: No space left on device" "$?|$(cat "$TMP/err")"
