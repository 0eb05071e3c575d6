#!/bin/sh
# t48-rss-live.sh - where the resident memory goes, and the heap while it
# runs: allocspy-report rss on programs of known figures (a fragmented
# heap: about 50 MB free inside the allocator; large blocks half written,
# a waiting thread, a mapping of the program's own) and on real programs
# (the rows add up to the resident size within 2%); its errors, --json and
# the html page; the live view in /dev/shm (made, readable by its user
# only, removed at exit, none with ALLOCSPY_LIVE=0) and allocspy top PID,
# in a tmux pane as a person sees it, and without a terminal, with its
# exit statuses.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIB" ] || [ ! -x "$LAUNCH" ]; then
	not_ok "the shim and the launcher are built" "run make"
	exit 0
fi

# traced NAME PROG ARGS...: PROG under the shim, quiet; its dump is
# $TMP/NAME.json, its status $TMP/NAME.rc.
traced() {
	tn=$1; shift
	(cd "$TMP" && env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/$tn.json" LD_PRELOAD="$LIB" "$@" \
		>"$TMP/$tn.out" 2>"$TMP/$tn.err")
	echo $? >"$TMP/$tn.rc"
}

# rss_get DUMP EXPR: EXPR of the dump's rss (r) and heap (h), in Python.
rss_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); r=d["rss"]; h=d["heap"]; print(eval(sys.argv[2]))' "$1" "$2"
}

# adds_up DUMP: the rows of allocspy-report --json rss add up to rss_bytes,
# and "unexplained" is within 2% of it.
adds_up() {
	"$REPORT" --json rss "$1" | python3 -c '
import json, sys
j = json.load(sys.stdin)
rows = {r["name"]: r["bytes"] for r in j["rows"]}
total = sum(rows.values())
u = rows["unexplained"]
print("sum=rss" if total == j["rss_bytes"] else "sum %d != rss %d" % (total, j["rss_bytes"]),
      "within 2%" if abs(u) * 50 <= j["rss_bytes"] else "unexplained %d of %d" % (u, j["rss_bytes"]))'
}

# --- rss: a fragmented heap ---------------------------------------------------------

traced frag "$PROGS/rss_frag"
check "rss_frag: exit status 0" 0 "$(cat "$TMP/frag.rc")"
check "rss_frag: the rows are the dump's, in order" \
	"heap_in_use slack not_resident allocator_free large_blocks thread_stacks allocspy other_anonymous file_mappings unexplained" \
	"$("$REPORT" --json rss "$TMP/frag.json" | python3 -c 'import json,sys; print(" ".join(r["name"] for r in json.load(sys.stdin)["rows"]))')"
check "rss_frag: 51,200,000 bytes in use (the dump's in-use bytes), 400,000 of slack, all resident, no large block" \
	"51200000 51200000 400000 0 0 0" \
	"$(rss_get "$TMP/frag.json" '"%d %d %d %d %d %d" % (r["heap_in_use_bytes"], h["in_use_bytes"], r["slack_bytes"], r["not_resident_bytes"], r["large_blocks_bytes"], r["large_blocks"])')"
check "rss_frag: about 50 MB free inside the allocator (50,000 freed chunks of 1,040 bytes between live ones)" \
	"yes" "$(rss_get "$TMP/frag.json" '"yes" if 52000000 <= r["allocator_free_bytes"] <= 54000000 else r["allocator_free_bytes"]')"
check "rss_frag: glibc's allocator, one heap (brk's), one stack" "glibc 1 1" \
	"$(rss_get "$TMP/frag.json" '"%s %d %d" % (r["allocator"], r["arena_heaps"], r["thread_stacks"])')"
check "rss_frag: the rows add up to the resident size" "sum=rss within 2%" "$(adds_up "$TMP/frag.json")"
"$REPORT" rss "$TMP/frag.json" >"$TMP/frag.txt" 2>"$TMP/frag.txt.err"
check "rss_frag: the text's status and stderr" "0|" "$?|$(cat "$TMP/frag.txt.err")"
check_match "rss_frag: the text's first line" \
	'^Resident memory at exit \(rss_frag, pid [0-9]+\): [0-9,]+ bytes$' "$(head -n 1 "$TMP/frag.txt")"
check "rss_frag: the text's rows of known figures" \
	"  heap in use (the blocks' requested bytes)           51,200,000
  slack in live blocks (usable size less asked)          400,000
  in use but not resident (never written)                      0
  large blocks' mappings, beyond their size                    0" \
	"$(grep -E '^  (heap in use|slack|in use but|large)' "$TMP/frag.txt" | sed 's/ *[-0-9.]*%$//')"
check_match "rss_frag: the text names the free memory, the peaks and the allocator" \
	"^  free inside the allocator's heaps +5[0-9],[0-9]{3},[0-9]{3} +[0-9.]+%
Peak resident memory \(the kernel's high-water mark\): [0-9,]+ bytes
Peak of the heap in use: 102,400,000 bytes
The allocator: glibc; 1 heap, 0 large blocks in mappings of their own, 1 thread stack$" \
	"$(grep -E "^  free inside|^Peak|^The allocator" "$TMP/frag.txt" | tr -d '\r')"

# --- rss: large blocks half written, a waiting thread, the program's own mapping -------

traced mixed "$PROGS/rss_mixed"
check "rss_mixed: exit status 0" 0 "$(cat "$TMP/mixed.rc")"
check "rss_mixed: 8,388,608 bytes in use not resident (4 MiB of malloc's 8 never written, calloc's 4), two large blocks of 16-byte headers" \
	"8388608 2 32" \
	"$(rss_get "$TMP/mixed.json" '"%d %d %d" % (r["not_resident_bytes"], r["large_blocks"], r["large_blocks_bytes"])')"
check "rss_mixed: the slack: 4,080 bytes in each large block's last page, 4 and 8 in two small ones" "8172" \
	"$(rss_get "$TMP/mixed.json" 'r["slack_bytes"]')"
check "rss_mixed: the heap in use is the dump's; two heaps (brk's, the thread's arena), two stacks" \
	"yes 2 2" "$(rss_get "$TMP/mixed.json" '"%s %d %d" % ("yes" if r["heap_in_use_bytes"] == h["in_use_bytes"] else "no", r["arena_heaps"], r["thread_stacks"])')"
check "rss_mixed: the program's own 2 MiB mapping is other anonymous memory" "yes" \
	"$(rss_get "$TMP/mixed.json" '"yes" if r["other_anonymous_bytes"] >= 2097152 else r["other_anonymous_bytes"]')"
check "rss_mixed: the rows add up to the resident size" "sum=rss within 2%" "$(adds_up "$TMP/mixed.json")"
check "rss_mixed: the text's negative row" \
	"  in use but not resident (never written)             -8,388,608" \
	"$("$REPORT" rss "$TMP/mixed.json" | grep '^  in use but' | sed 's/ *[-0-9.]*%$//')"

# --- rss: programs outside the tests ----------------------------------------------------

mkdir -p "$TMP/real"
seq 1 200000 | shuf --random-source=/dev/zero >"$TMP/real/lines"
(cd "$TMP/real" && env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/real/sort.%p.json" LD_PRELOAD="$LIB" \
	sort -n lines >/dev/null 2>&1)
(cd "$TMP/real" && env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/real/perl.%p.json" LD_PRELOAD="$LIB" \
	perl -e 'my %h; $h{$_} = [1 .. 20] for 1 .. 50000; delete $h{$_} for grep { $_ % 2 } 1 .. 50000;' \
	>/dev/null 2>&1)
(cd "$TMP/real" && env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/real/sqlite.%p.json" LD_PRELOAD="$LIB" \
	sqlite3 :memory: 'create table t(a, b); with recursive c(x) as (select 1 union all select x + 1 from c limit 50000) insert into t select x, hex(randomblob(40)) from c; create index i on t(b); select count(*) from t;' \
	>/dev/null 2>&1)
n=0 bad=
for f in "$TMP"/real/*.json; do
	[ -f "$f" ] || continue
	n=$((n + 1))
	a=$(adds_up "$f")
	[ "$a" = "sum=rss within 2%" ] || bad="$bad ${f##*/}: $a;"
done
check "sort, perl and sqlite3: every dump's rows add up to the resident size within 2%" "3 dumps|" "$n dumps|$bad"

# --- rss: errors ---------------------------------------------------------------------

(cd "$TMP" && env ALLOCSPY_MODE=count ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT="$TMP/count.json" LD_PRELOAD="$LIB" \
	"$PROGS/rss_frag")
"$REPORT" rss "$TMP/count.json" >"$TMP/out" 2>"$TMP/err"
check "a count-mode dump: status 2, one line" \
	"2|allocspy-report: error: $TMP/count.json: no resident memory in this dump (ALLOCSPY_MODE=count measures none)|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["rss"]["not_resident_bytes"] = 10**12; json.dump(d, open(sys.argv[2], "w"))' \
	"$TMP/frag.json" "$TMP/bad.json"
"$REPORT" rss "$TMP/bad.json" >"$TMP/out" 2>"$TMP/err"
check "more bytes not resident than in use: status 2, one line" \
	"2|allocspy-report: error: $TMP/bad.json: rss.not_resident_bytes: 1000000000000 is above rss.heap_in_use_bytes + rss.slack_bytes (51600000)|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["rss"]["file_bytes"] = "x"; json.dump(d, open(sys.argv[2], "w"))' \
	"$TMP/frag.json" "$TMP/bad2.json"
"$REPORT" --json rss "$TMP/bad2.json" >"$TMP/out" 2>"$TMP/err"
check "a figure of the wrong type: status 2, one line" \
	"2|allocspy-report: error: $TMP/bad2.json: rss.file_bytes: expected an integer, found a string|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
"$REPORT" rss "$TMP/frag.json" "$TMP/frag.json" >"$TMP/out" 2>"$TMP/err"
check "rss takes one dump" "2|allocspy-report: error: one dump only
Try 'allocspy-report --help'." "$?|$(cat "$TMP/err")"

# --- rss: the page -------------------------------------------------------------------

"$REPORT" html -o "$TMP/frag.html" "$TMP/frag.json"
check "the page of rss_frag: the table of resident memory" \
	"memory|heap in use (the blocks' requested bytes)|slack in live blocks (usable size less asked)|in use but not resident (never written)|free inside the allocator's heaps|large blocks' mappings, beyond their size|thread stacks|allocspy's own memory|other anonymous memory|file mappings|unexplained 51,200,000 400,000" \
	"$(python3 "$TOP/test/html-page.py" "$TMP/frag.html" | python3 -c '
import json, sys
t = [t for t in json.load(sys.stdin)["tables"] if t["class"] == "rss"][0]["rows"]
print("|".join(r[0] for r in t), t[1][1], t[2][1])')"
"$REPORT" html -o "$TMP/count.html" "$TMP/count.json"
check "the page of a count-mode dump says it has no resident memory" "1" \
	"$(grep -c 'No resident memory in this dump (ALLOCSPY_MODE=count measures none)' "$TMP/count.html")"

# --- the live view ----------------------------------------------------------------------

# live NAME SECONDS ENV...: live_ramp under the launcher, in the background,
# for SECONDS; its pid in $TMP/NAME.pid, its status in $TMP/NAME.rc.
live() {
	ln=$1 ls=$2; shift 2
	(env ALLOCSPY_QUIET=1 ALLOCSPY_OUTPUT=none "$@" "$LAUNCH" "$PROGS/live_ramp" "$ls" \
		>/dev/null 2>&1 &
	 echo $! >"$TMP/$ln.pid"; wait $!; echo $? >"$TMP/$ln.rc")&
	while [ ! -s "$TMP/$ln.pid" ]; do sleep 0.05; done
}
live a 8
live b 8 ALLOCSPY_LIVE=0
live c 4 ALLOCSPY_MODE=count
live k 9
sleep 60 &
D=$!
A=$(cat "$TMP/a.pid") B=$(cat "$TMP/b.pid") C=$(cat "$TMP/c.pid") K=$(cat "$TMP/k.pid")
V=/dev/shm/allocspy.$A
# A traced program without a view is waited for, 3 s, meanwhile.
("$LAUNCH" top "$B" >"$TMP/topb" 2>"$TMP/topb.err"; echo $? >"$TMP/topb.rc") &
sleep 1.6
check "the live view is made, readable and writable by its user only" "600 $(id -u)" \
	"$(stat -c '%a %u' "$V" 2>&1)"
check "ALLOCSPY_LIVE=0: no live view" "absent" \
	"$([ -e "/dev/shm/allocspy.$B" ] && echo there || echo absent)"
check "the ticker is neither a thread of the program nor its child" "1|0" \
	"$(sed -n 's/^Threads:[[:space:]]*//p' "/proc/$A/status")|$(ps -o pid= --ppid "$A" | wc -l)"
# The ticker: the allocspy-tick whose command line (the program's memory)
# is A's. It sleeps between its updates: a few milliseconds of CPU at most.
TICK=
for t in $(ps -C allocspy-tick -o pid=); do
	[ "$(tr '\0' ' ' <"/proc/$t/cmdline" 2>/dev/null)" = "$(tr '\0' ' ' <"/proc/$A/cmdline")" ] && TICK=$t
done
kill -KILL "$K"
i=0
while [ -e "/dev/shm/allocspy.$K" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i + 1)); done
check "a program killed (no exit report): its ticker removes the live view" "absent" \
	"$([ -e "/dev/shm/allocspy.$K" ] && echo there || echo absent)"
"$LAUNCH" top -n 1 "$C" >"$TMP/topc" 2>&1 </dev/null
check "count mode: no bytes in use, no sites" \
	"in use     ? (ALLOCSPY_MODE=count keeps no sizes)|(no sites in count mode)" \
	"$(grep '^in use' "$TMP/topc")|$(grep '^(no sites' "$TMP/topc")"

# allocspy top in a tmux pane, as a person sees it.
if command -v tmux >/dev/null 2>&1; then
	T="tmux -L allocspy-t48-$$ -f /dev/null"
	$T new-session -d -s top -x 110 -y 30 "$LAUNCH top $A; echo \$? >$TMP/tmux.rc; sleep 60"
	i=0
	while ! $T capture-pane -p -t top | grep -q 'keep_name' && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	$T capture-pane -p -t top >"$TMP/cap1"
	sleep 1.2
	$T capture-pane -p -t top >"$TMP/cap2"
	check_match "tmux: the view's first line" \
		"^allocspy top: pid $A \(live_ramp\), running [0-9.]+ s, updated [0-9.]+ s ago   q: quit\$" \
		"$(head -n 1 "$TMP/cap1")"
	check "tmux: the site table's heading, and the top site named by function and line" \
		"         in use        change     blocks  site (2 hold memory)|grow_cache (live_ramp.c:14)|keep_name (live_ramp.c:20)" \
		"$(sed -n 6p "$TMP/cap2")|$(sed -n 7p "$TMP/cap2" | sed 's/.*  //')|$(sed -n 8p "$TMP/cap2" | sed 's/.*  //')"
	u1=$(sed -n 2p "$TMP/cap1") u2=$(sed -n 2p "$TMP/cap2")
	check_match "tmux: the bytes in use, a second apart" \
		'^in use     [0-9,]+ bytes in [0-9,]+ blocks    peak [0-9,]+ bytes$' "$u2"
	if [ -n "$u1" ] && [ "$u1" != "$u2" ]; then ok "tmux: the figures changed between the two captures"; else
		not_ok "tmux: the figures changed between the two captures" "$u1" "$u2"
	fi
	check_match "tmux: the top site grew since the last refresh" \
		'^ +[0-9,]+ +\+[0-9,]+ +[0-9,]+  grow_cache' "$(sed -n 7p "$TMP/cap2")"
	$T send-keys -t top q
	i=0
	while [ ! -s "$TMP/tmux.rc" ] && [ $i -lt 30 ]; do sleep 0.1; i=$((i + 1)); done
	check "tmux: q ends it with status 0" "0" "$(cat "$TMP/tmux.rc" 2>&1)"
	$T kill-server 2>/dev/null
else
	ok "allocspy top in tmux # SKIP tmux is not installed (make test-deps)"
fi

check "the ticker used less than 20 ms of CPU in the program's first 5 s" "yes" \
	"$(cut -d' ' -f1 "/proc/${TICK:-0}/schedstat" 2>&1 | awk '{ print ($1 ~ /^[0-9]+$/ && $1 < 20000000) ? "yes" : "no: " $0 }')"

# Without a terminal: a block per refresh; -n stops.
"$LAUNCH" top -n 2 "$A" >"$TMP/top2" 2>"$TMP/top2.err" </dev/null
check "top -n 2: status 0, nothing on stderr, two refreshes" "0||2" \
	"$?|$(cat "$TMP/top2.err")|$(grep -c '^allocspy top: pid' "$TMP/top2")"
check_match "top -n 2: the second refresh has the rates" \
	'^allocs     [0-9,]+, [0-9,]+/s    frees 0, 0/s$' "$(grep '^allocs' "$TMP/top2" | tail -n 1)"
# Until the program ends.
"$LAUNCH" top "$A" >"$TMP/topend" 2>&1 </dev/null
check "top until the program ends: status 0, the last line" \
	"0|allocspy top: pid $A (live_ramp) ended" "$?|$(tail -n 1 "$TMP/topend")"
while [ ! -s "$TMP/a.rc" ]; do sleep 0.1; done
check "the program under top: status 0" "0" "$(cat "$TMP/a.rc")"
check "the live view is removed at exit" "absent" "$([ -e "$V" ] && echo there || echo absent)"

# Not traced, not there, usage.
"$LAUNCH" top "$D" >"$TMP/out" 2>"$TMP/err"
check "a program not traced: status 1, one line" \
	"1|allocspy: error: top: pid $D (sleep) is not traced by allocspy: it has no live view (/dev/shm/allocspy.$D)|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
kill "$D" 2>/dev/null
wait "$D" 2>/dev/null
"$LAUNCH" top "$D" >"$TMP/out" 2>"$TMP/err"
check "no such process: status 1, one line" "1|allocspy: error: top: no process $D|" \
	"$?|$(cat "$TMP/err")|$(cat "$TMP/out")"
check "traced with ALLOCSPY_LIVE=0: status 1 after waiting, one line" \
	"1|allocspy: error: top: pid $B (live_ramp) runs under allocspy but publishes no live view (ALLOCSPY_LIVE=0?)|" \
	"$(cat "$TMP/topb.rc")|$(cat "$TMP/topb.err")|$(cat "$TMP/topb")"
"$LAUNCH" top >"$TMP/out" 2>"$TMP/err"
check "top without a PID: status 125" \
	"125|allocspy: error: top: no PID (try allocspy top --help; to trace a program named top: allocspy -- top)" \
	"$?|$(cat "$TMP/err")"
"$LAUNCH" top 12x >"$TMP/out" 2>"$TMP/err"
check "top with a bad PID: status 125" "125|allocspy: error: top: '12x' is not a process ID" \
	"$?|$(cat "$TMP/err")"
"$LAUNCH" top -x 1 >"$TMP/out" 2>"$TMP/err"
check "top with an unknown option: status 125" \
	"125|allocspy: error: top: unknown option '-x' (try allocspy top --help)" "$?|$(cat "$TMP/err")"
check "allocspy -- top still runs a program named top" "0" \
	"$(cd "$TMP" && mkdir -p bin && printf '#!/bin/sh\nexit 0\n' >bin/top && chmod +x bin/top &&
	   PATH="$TMP/bin:$PATH" ALLOCSPY_OUTPUT=none "$LAUNCH" -- top >/dev/null 2>&1; echo $?)"
wait
