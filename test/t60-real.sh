#!/bin/sh
# t60-real.sh - real programs under the shim in valgrind's environment: the
# same stdout and exit status as under valgrind, and the same HEAP SUMMARY.
# Programs that run others (tar runs gzip, gcc its compilers, make its
# recipes) are compared on their own summary only: valgrind does not trace
# the children it execs, while the shim, inherited through LD_PRELOAD,
# prints one summary per process. The traced program waits for its
# children, so its summary is the last one. test/README.md lists what each
# case compares and why.
. "$(dirname "$0")/lib.sh"

# A home of our own: no ~/.gitconfig, ~/.sqliterc or history files.
HOME=$TMP/home
export HOME
mkdir -p "$HOME"

# Extra variables both runs get (valgrind passes them through), and a
# setup command run in the run's directory before each of the two runs.
XENV=
SETUP=:

# xrun_vg LOG PROG ARGS...: run_vg with $XENV added to the environment.
xrun_vg() {
	xlog=$1; shift
	env -i HOME="$HOME" PATH=/usr/local/bin:/usr/bin:/bin LANG=C $XENV $(freeres_env) \
		valgrind $(freeres_flags) \
		--leak-check=summary --log-file="$xlog" "$@" >"$xlog.out" 2>"$xlog.err" </dev/null
	echo $? >"$xlog.rc"
}

# xrun_shim LOG PROG ARGS...: run_shim with $XENV added to the environment
# (and $SHIM_PRELOAD as the LD_PRELOAD, when set).
xrun_shim() {
	xlog=$1; shift
	vg_env $XENV $(freeres_env) LD_PRELOAD="${SHIM_PRELOAD:-$(padded_preload)}" "$@" \
		>"$xlog.out" 2>"$xlog.err" </dev/null
	echo $? >"$xlog.rc"
	grep -a '^==[0-9]*==' "$xlog.err" >"$xlog" || true
}

# real_parity NAME WHICH STATUS PROG ARGS...: with valgrind's defaults, then
# both runs without freeres (FREERES=no, lib.sh). WHICH is "all" (every
# summary in order, HEAP and LEAK SUMMARY, as lib.sh leak_parity) or "last"
# (the traced process's own summaries, the last ones printed). Then stdout
# and status, and that the status is STATUS (so that two equal failures do
# not pass). With LEAKS=vgalloc, the leak kinds differ as liballocspy(7)
# says: blocks that valgrind calls possibly lost are still reachable under
# the shim, and nothing else differs; a third run, over test/vgalloc.c
# (valgrind's always-moving realloc, blocks without old bytes), gives
# valgrind's LEAK SUMMARY exactly. Each run
# starts in the same, emptied directory, so that PWD is equal and the
# program sees the same files (make, for one, allocates per directory
# entry); the logs are kept outside it.
# The quick tier (make check) compares these, each in one freeres form
# (lib.sh freeres_forms); the full tier every case in both.
QUICK_CASES="python3_-c perl_-e sort cppcheck_(C++) tar_czf_(gzip_is_a_child) sqlite3"
real_parity() {
	# shellcheck disable=SC2086 # the words are the case names
	in_tier "$(echo "$1" | tr ' ' _)" $QUICK_CASES || return 0
	freeres_forms
	for FREERES in $FORMS; do
		[ "$FREERES" = yes ] && FREERES=
		one_parity "$1${FREERES:+ (freeres=no)}" "$@"
	done
	FREERES=
}

# possible_to_reachable VG ASP: "moved" when ASP's LEAK SUMMARY is VG's
# with some blocks (at least one) moved from possibly lost to still
# reachable, and nothing else changed; else both summaries.
possible_to_reachable() {
	python3 - "$1" "$2" <<'PY'
import re, sys
def summary(path):
    out = {}
    for line in open(path, errors="replace"):
        m = re.search(r"(definitely lost|indirectly lost|possibly lost|still reachable|suppressed): ([0-9,]+) bytes in ([0-9,]+) blocks", line)
        if m:
            out[m.group(1)] = (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", "")))
    return out
vg, asp = summary(sys.argv[1]), summary(sys.argv[2])
same = all(vg.get(k) == asp.get(k) for k in ("definitely lost", "indirectly lost", "suppressed"))
try:
    db = vg["possibly lost"][0] - asp["possibly lost"][0]
    dn = vg["possibly lost"][1] - asp["possibly lost"][1]
    moved = (db, dn) == (asp["still reachable"][0] - vg["still reachable"][0],
                         asp["still reachable"][1] - vg["still reachable"][1]) and dn > 0
except KeyError:
    moved = False
print("moved" if same and moved else "valgrind %s, shim %s" % (vg, asp))
PY
}

# last_leak_lines LOG: the leak lines of the last summary in LOG (the
# traced process's own), from its last HEAP SUMMARY on.
last_leak_lines() {
	awk '/HEAP SUMMARY:/ { buf = "" } { buf = buf $0 "\n" } END { printf "%s", buf }' "$1" >"$1.last"
	leak_lines "$1.last"
}

# heap_of LOG: the heap lines compared: the traced process's own (its last
# summary) when only its own are (which = last), else all of them.
heap_of() {
	if [ "$which" = last ]; then
		heap_lines "$1" | tail -n 2
	else
		heap_lines "$1"
	fi
}

one_parity() {
	rname=$1 which=$3 rstatus=$4; shift 4
	rdir=$TMP/$(echo "$rname" | tr -c 'A-Za-z0-9_\n-' _)
	mkdir -p "$rdir"
	# A program may keep its parent's pid as text (bash's PPID): two runs
	# whose parents' pids have different numbers of digits differ by a byte
	# a digit. A pair whose heap summaries differ is run again, twice at
	# most, so that only a difference that stays fails.
	for try in 1 2 3; do
		rm -rf "$rdir/run" && mkdir "$rdir/run"
		(cd "$rdir/run" && $SETUP && xrun_vg "$rdir/vg" "$@")
		rm -rf "$rdir/run" && mkdir "$rdir/run"
		(cd "$rdir/run" && $SETUP && xrun_shim "$rdir/asp" "$@")
		[ "$(heap_of "$rdir/vg")" = "$(heap_of "$rdir/asp")" ] && break
	done
	if [ "$which" = last ]; then
		check "$rname: own heap summary equals valgrind's" \
			"$(heap_of "$rdir/vg")" "$(heap_of "$rdir/asp")"
		check "$rname: own leak summary equals valgrind's" \
			"$(last_leak_lines "$rdir/vg")" "$(last_leak_lines "$rdir/asp")"
	else
		check "$rname: heap summary equals valgrind's" \
			"$(heap_lines "$rdir/vg")" "$(heap_lines "$rdir/asp")"
		if [ "${LEAKS:-}" = vgalloc ]; then
			check "$rname: leak summary: only blocks possibly lost under valgrind are still reachable" \
				"moved" "$(possible_to_reachable "$rdir/vg" "$rdir/asp")"
			rm -rf "$rdir/run" && mkdir "$rdir/run"
			(cd "$rdir/run" && $SETUP && SHIM_PRELOAD=$(vgalloc_preload) xrun_shim "$rdir/vgalloc" "$@")
			check "$rname: over vgalloc.so, heap and leak summaries equal valgrind's" \
				"$(heap_lines "$rdir/vg"; leak_lines "$rdir/vg")" \
				"$(heap_lines "$rdir/vgalloc"; leak_lines "$rdir/vgalloc")"
		else
			check "$rname: leak summary equals valgrind's" \
				"$(leak_lines "$rdir/vg")" "$(leak_lines "$rdir/asp")"
		fi
	fi
	check "$rname: same stdout and status" \
		"$(cat "$rdir/vg.out" "$rdir/vg.rc")" "$(cat "$rdir/asp.out" "$rdir/asp.rc")"
	check "$rname: status under valgrind" "$rstatus" "$(cat "$rdir/vg.rc")"
}

# --- interpreters --------------------------------------------------------
XENV=PYTHONHASHSEED=0
real_parity "python3 -c" all 0 /usr/bin/python3 -c 'print(sum(range(10)))'
XENV="PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0"
real_parity "perl -e" all 3 /usr/bin/perl -e '
	my %h; $h{"k$_"} = [$_, $_ * 2] for 1 .. 2000;
	my @s = sort { $a <=> $b } map { $_->[1] % 97 } values %h;
	printf "%d keys, first %d, last %d, %s\n", scalar(keys %h), $s[0], $s[-1], join(",", map { sprintf "%02x", $_ } unpack("C*", "perl"));
	exit 3;'
XENV=

cat >"$TMP/script.sh" <<'SH'
declare -A count
words=()
i=0
while [ $i -lt 500 ]; do
	w="word$((i % 37))"
	count[$w]=$(( ${count[$w]:-0} + 1 ))
	words+=("$w-$i")
	i=$((i + 1))
done
f() { local s=""; for x in "$@"; do s="$s${x:0:2}"; done; printf '%s' "${#s}"; }
printf '%d distinct, %d words, f=%s, upper=%s\n' "${#count[@]}" "${#words[@]}" "$(f "${words[@]}")" "${words[7]^^}"
exit 4
SH
real_parity "bash script" all 4 /usr/bin/bash "$TMP/script.sh"

# --- text tools on a generated file ------------------------------------------
awk 'BEGIN { x = 7; for (i = 0; i < 20000; i++) { x = (x * 1103515245 + 12345) % 2147483648; printf "%08x,%d,%s\n", x, x % 1000, (i % 3 ? "b" : "a") } }' >"$TMP/data.csv"
real_parity "sort" all 0 /usr/bin/sort -t, -k2,2n -k1,1 "$TMP/data.csv"
real_parity "sed" all 0 /usr/bin/sed -e 's/,\([0-9]*\),/-\1-/' -e '/a$/d' "$TMP/data.csv"
# mawk shrinks its compiled program with realloc after keeping the old
# address, and reuses freed memory for its pools (liballocspy(7)).
LEAKS=vgalloc
real_parity "awk" all 0 /usr/bin/mawk -F, '{ s[$2 % 10] += $2; n[$3]++ } END { for (k = 0; k < 10; k++) print k, s[k]; print n["a"], n["b"] }' "$TMP/data.csv"
# 3000 lines of 8 words (from 5000) and a number, all drawn by an LCG.
awk 'BEGIN { x = 11; for (i = 0; i < 5000; i++) { w = ""; x = (x * 1103515245 + 12345) % 2147483648; n = 3 + x % 7
		for (j = 0; j < n; j++) { x = (x * 1103515245 + 12345) % 2147483648; w = w sprintf("%c", 97 + int(x / 65536) % 26) }
		words[i] = w }
	for (i = 0; i < 3000; i++) { line = ""
		for (j = 0; j < 8; j++) { x = (x * 1103515245 + 12345) % 2147483648; line = line words[int(x / 65536) % 5000] " " }
		x = (x * 1103515245 + 12345) % 2147483648; print line (x % 100000) } }' >"$TMP/words.txt"
real_parity "mawk, counting words" all 0 /usr/bin/mawk '{c[$1]++} END {n=0; for (k in c) n++; print n}' "$TMP/words.txt"
LEAKS=

# --- a C++ program -------------------------------------------------------------
printf 'int f(int *p) { return *p; }\nint main(void) { int x = 1; return f(&x) - 1; }\n' >"$TMP/check.c"
real_parity "cppcheck (C++)" all 0 /usr/bin/cppcheck --quiet "$TMP/check.c"

# --- archives -----------------------------------------------------------------
mkdir -p "$TMP/tree/sub/deeper"
for i in 1 2 3 4 5 6 7 8; do
	seq 1 $((i * 300)) >"$TMP/tree/file$i.txt"
	echo "$i" >"$TMP/tree/sub/s$i"
done
cp "$TMP/data.csv" "$TMP/tree/sub/deeper/"
real_parity "tar cf" all 0 /usr/bin/tar cvf out.tar -C "$TMP" tree
real_parity "tar czf (gzip is a child)" last 0 /usr/bin/tar czvf out.tgz -C "$TMP" tree

# --- git, in a fresh repository each time -------------------------------------
XENV="GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Alloc GIT_AUTHOR_EMAIL=alloc@example.com GIT_AUTHOR_DATE=2023-11-14T22:13:20+0000 GIT_COMMITTER_NAME=Spy GIT_COMMITTER_EMAIL=spy@example.com GIT_COMMITTER_DATE=2023-11-14T22:13:20+0000"
GITC="-c maintenance.auto=false -c gc.auto=0"
# The working tree's files get an old time, so that none is "racily
# clean" (as new as the index): git would then read it again, and how much
# it allocates would depend on the clock.
age_files() { find repo -path repo/.git -prune -o -type f -exec touch -d @1700000000 {} +; }
git_files() {
	mkdir -p repo/src
	for i in 1 2 3 4 5; do seq 1 $((i * 50)) >repo/src/f$i.txt; done
	echo "readme" >repo/README
	age_files
}
git_native() { env $XENV git $GITC -C repo "$@" >/dev/null 2>&1; }
setup_empty() { rm -rf repo; }
setup_files() { rm -rf repo && mkdir repo && git_native init -q -b main && git_files; }
setup_added() { setup_files && git_native add .; }
setup_history() {
	setup_added && git_native commit -q -m first &&
		echo more >>repo/README && age_files && git_native commit -q -a -m second &&
		seq 1 9 >repo/src/f6.txt && age_files && git_native add . && git_native commit -q -m third
}
SETUP=setup_empty
real_parity "git init" all 0 /usr/bin/git $GITC init -q -b main repo
SETUP=setup_files
real_parity "git add" all 0 /usr/bin/git $GITC -C repo add .
SETUP=setup_added
real_parity "git commit" all 0 /usr/bin/git $GITC -C repo commit -m "a commit"
SETUP=setup_history
real_parity "git log" all 0 /usr/bin/git $GITC -C repo log --stat --format='%H %an %s'
SETUP=:
XENV=

# --- build tools ----------------------------------------------------------------
mkdir -p "$TMP/src"
cat >"$TMP/src/a.c" <<'C'
#include <stdio.h>
int twice(int);
int main(void) { printf("%d\n", twice(21)); return 0; }
C
echo 'int twice(int x) { return 2 * x; }' >"$TMP/src/b.c"
real_parity "gcc two files (cc1, as, ld are children)" last 0 /usr/bin/gcc -O0 -o prog "$TMP/src/a.c" "$TMP/src/b.c"
[ "$TIER" = full ] && check "gcc under the shim: the program it built runs" 42 "$("$rdir/run/prog" 2>&1)"

cat >"$TMP/info.mk" <<'MK'
WORDS := $(foreach i,1 2 3 4 5 6 7 8 9,item$(i).c other$(i).h)
SRCS := $(filter %.c,$(WORDS))
$(info $(words $(SRCS)) sources: $(patsubst %.c,%.o,$(sort $(SRCS))))
$(info $(subst item,ITEM,$(firstword $(SRCS))) $(lastword $(WORDS)))
all: ;
MK
real_parity "make, functions only" all 0 /usr/bin/make -s -f "$TMP/info.mk"
cat >"$TMP/build.mk" <<'MK'
all: one two
one:
	echo built one
two: one
	printf '%s\n' "built two"
MK
real_parity "make, recipes (children)" last 0 /usr/bin/make -s -f "$TMP/build.mk"

# --- sqlite3 ------------------------------------------------------------------------
if command -v sqlite3 >/dev/null 2>&1; then
	real_parity "sqlite3" all 0 /usr/bin/sqlite3 -batch :memory: \
		"create table t(a integer primary key, b text); with recursive c(x) as (select 1 union all select x + 1 from c where x < 2000) insert into t select x, printf('row %d', x) from c; create index tb on t(b); select count(*), sum(a), max(b) from t where a % 3 = 0;"
else
	echo "ok - sqlite3 # SKIP sqlite3 not installed"
fi
