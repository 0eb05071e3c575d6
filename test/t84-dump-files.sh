#!/bin/sh
# t84-dump-files.sh - what a death leaves. rel_loop writes a dump every
# 10 ms (ALLOCSPY_INTERVAL_MS=10) and is killed by SIGKILL 50 times, at
# random moments, some inside a write: no run leaves a temporary file, and
# each leaves one whole dump under its own name, or none when the kill
# lands between the unlink and the link. Then the summary text and
# the dump of one process, both or neither: the text goes to a FIFO
# (ALLOCSPY_LOG_FILE), so the report waits between the dump and the text
# until a reader comes, and a SIGTERM sent then, in track and count mode,
# with ALLOCSPY_DUMP_ON_SIGNAL 1 and 0, waits for the text: the process
# leaves both, then dies of the signal.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIB" ] || [ ! -x "$PROGS/rel_loop" ] || [ ! -x "$PROGS/par_basic" ]; then
	not_ok "the shim and the test programs are built" "run make && make test-progs"
	exit 0
fi

# --- SIGKILL during periodic dumps ---------------------------------------------------------------

mkdir -p "$TMP/kill"
# 50 runs, 20 in the quick tier (make check).
KILLS=50
in_tier kills || KILLS=20
i=0
while [ $i -lt $KILLS ]; do
	i=$((i + 1))
	ALLOCSPY_INTERVAL_MS=10 ALLOCSPY_OUTPUT="$TMP/kill/d$i.json" LD_PRELOAD="$LIB" \
		"$PROGS/rel_loop" >/dev/null 2>&1 &
	pid=$!
	# Once its first dump is there, 50 to 140 ms more: a few dumps
	# each, the last one cut at any point.
	k=0
	while [ ! -f "$TMP/kill/d$i.json" ] && [ $k -lt 400 ]; do sleep 0.01; k=$((k + 1)); done
	sleep "$(printf "0.%02d" $(( (i * 37) % 10 + 5 )))"
	kill -KILL $pid
	wait $pid 2>/dev/null
done
check "SIGKILL during periodic dumps: 0 of $KILLS runs leave a temporary file" "0" \
	"$(ls -a "$TMP/kill" | grep -vcE '^(\.|\.\.|d[0-9]+\.json)$')"
python3 - "$TMP/kill" >"$TMP/kill.res" <<'PY'
import json, os, sys
files = os.listdir(sys.argv[1])
whole = 0
for f in files:
    try:
        d = json.load(open(os.path.join(sys.argv[1], f)))
    except ValueError:
        continue
    whole += d["dump"]["reason"] == "interval" and d["heap"]["allocs"] > 0
print(len(files), whole)
PY
read -r files whole <"$TMP/kill.res"
# A kill between the unlink of a run's last dump and the link of the next
# leaves none (liballocspy(7)): two system calls, 20 to 70 us here, against
# 10 ms, so about 1 run in 100 to 200 (0 of 400 idle, 1 of 100, 2 of 50 on
# a loaded CI machine). A tenth of the runs may go so: a bound missed by
# chance once in 10^4 CI runs at a loss of 1 in 100, and still a failure
# when dumps are lost for any other reason.
least=$((KILLS - KILLS / 10))
check "SIGKILL during periodic dumps: every file left is a whole mid-run dump, one a run, at least $least of $KILLS" \
	"yes yes" "$([ "$files" = "$whole" ] && echo yes || echo "no: $files files, $whole whole") $([ "$whole" -ge $least ] && echo yes || echo "no: $whole")"
echo "# $whole of the $KILLS runs left their dump"

# --- the text and the dump: both or neither --------------------------------------------------------

both() {
	d=$TMP/both-$1-$2
	mkdir -p "$d"
	mkfifo "$d/log"
	ALLOCSPY_MODE=$1 ALLOCSPY_DUMP_ON_SIGNAL=$2 ALLOCSPY_LOG_FILE="$d/log" ALLOCSPY_OUTPUT="$d/d.json" \
		LD_PRELOAD="$LIB" "$PROGS/par_basic" >/dev/null 2>"$d/err" &
	pid=$!
	# The dump is written; the text waits for the FIFO's reader.
	k=0
	while [ ! -f "$d/d.json" ] && [ $k -lt 200 ]; do sleep 0.05; k=$((k + 1)); done
	sleep 0.2
	kill -TERM $pid
	sleep 0.3
	timeout 10 cat "$d/log" >"$d/text"
	wait $pid 2>/dev/null
	st=$?
	rm -f "$d/log"	# (the sweep at the end opens every file)
	echo "$st $(grep -c 'HEAP SUMMARY' "$d/text") $(json_get "$d/d.json" 'd["dump"]["reason"]' 2>/dev/null)"
}
for mode in track count; do
	for dos in 1 0; do
		check "$mode mode, ALLOCSPY_DUMP_ON_SIGNAL=$dos: a SIGTERM between the dump and the text waits for the text, then ends the process" \
			"143 1 exit" "$(both $mode $dos)"
	done
done
