#!/bin/sh
# t36-suppress-crossover.sh - suppressions cross over between valgrind and
# allocspy both ways: valgrind's --gen-suppressions=all output suppresses
# the same bytes and blocks under the shim (ALLOCSPY_SUPPRESSIONS), and the
# entries of `allocspy-report leaks --gen-suppressions` do the same under
# valgrind; on an -O2 build with inlined frames, leaks in a thread, strdup,
# realloc, C++ constructors and destructors (C1/C2, D1/D2 symbols) and new[].
# Names are demangled everywhere they are shown, as valgrind shows them.
. "$(dirname "$0")/lib.sh"

# valgrind with its defaults (freeres at exit, as the shim runs it).
VG_FLAGS="--leak-check=full"

cat >"$TMP/cross.c" <<'SRC'
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void *volatile sink;

static inline __attribute__((always_inline)) char *name_copy(const char *s)
{
	return strdup(s);
}

__attribute__((noinline)) void grow(void)
{
	char *p = malloc(10);
	sink = p;
	p = realloc(p, 100);
	sink = p;
}

static void *worker(void *arg)
{
	sink = malloc(33);
	return arg;
}

int main(void)
{
	pthread_t t;

	sink = name_copy("inlined");
	grow();
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	sink = NULL;
	return 0;
}
SRC
cat >"$TMP/cross.cc" <<'SRC'
#include <cstdlib>
#include <cstring>

void *volatile sink;

namespace gui {
template <class T> struct Widget {
	T *data;
	char *name;
	__attribute__((noinline)) explicit Widget(const char *n)
	{
		data = new T[4];
		name = strdup(n);
	}
	__attribute__((noinline)) ~Widget() { sink = malloc(3); }
};
}

int main()
{
	{
		gui::Widget<double> w("on the stack");
		sink = w.data;
		sink = w.name;
	}
	gui::Widget<double> *p = new gui::Widget<double>("on the heap");
	sink = p;
	sink = nullptr;
	return 0;
}
SRC
cc -O2 -g -pthread -o "$TMP/cross_c" "$TMP/cross.c" || { not_ok "cross.c builds"; exit 0; }
c++ -O2 -g -o "$TMP/cross_cxx" "$TMP/cross.cc" || { not_ok "cross.cc builds"; exit 0; }

# vg LOG PROG [valgrind options]: PROG under memcheck.
vg() {
	vlog=$1 vprog=$2; shift 2
	# shellcheck disable=SC2086 # VG_FLAGS is a list of options
	(cd "$TMP" && env -i HOME="${HOME:-/root}" PATH=/usr/bin:/bin timeout -k 5 300 \
		valgrind $VG_FLAGS "$@" --log-file="$vlog" "$vprog" >/dev/null 2>&1)
}
# asp LOG PROG [VAR=VALUE...]: PROG under the shim, 16-frame stacks.
asp() {
	alog=$1 aprog=$2; shift 2
	(cd "$TMP" && env -i HOME="${HOME:-/root}" PATH=/usr/bin:/bin ALLOCSPY_BACKTRACE=16 \
		ALLOCSPY_OUTPUT=none "$@" timeout -k 5 120 env LD_PRELOAD="$LIB" "$aprog" >/dev/null 2>"$alog")
}
# The lines that differ when suppressions work.
sums() { grep -aE '(definitely|indirectly|possibly) lost:|suppressed: [0-9,]+ bytes' "$1" | sed 's/^==[0-9]*== *//'; }
entries() { grep -v '^==' "$1"; }
# same NAME A B: A equals B, and neither is empty.
same() {
	if [ -z "$2" ]; then not_ok "$1" "nothing to compare"; else check "$1" "$2" "$3"; fi
}

for prog in cross_c cross_cxx; do
	d=$TMP/run-$prog
	mkdir -p "$d"
	vg "$d/vg.log" "$TMP/$prog" --show-leak-kinds=definite --gen-suppressions=all
	entries "$d/vg.log" >"$d/vg.supp"
	(cd "$TMP" && env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$d/asp.json" LD_PRELOAD="$LIB" \
		"$TMP/$prog" >/dev/null 2>&1)
	"$REPORT" leaks --show-leak-kinds=definite --gen-suppressions "$d/asp.json" >"$d/leaks.txt"
	entries "$d/leaks.txt" >"$d/asp.supp"
	same "$prog: allocspy-report leaks --gen-suppressions writes valgrind's entries, line for line" \
		"$(cat "$d/vg.supp")" "$(cat "$d/asp.supp")"

	vg "$d/vg-none.log" "$TMP/$prog"
	vg "$d/vg-vg.log" "$TMP/$prog" --suppressions="$d/vg.supp"
	vg "$d/vg-asp.log" "$TMP/$prog" --suppressions="$d/asp.supp"
	asp "$d/asp-vg.log" "$TMP/$prog" ALLOCSPY_SUPPRESSIONS="$d/vg.supp"
	asp "$d/asp-asp.log" "$TMP/$prog" ALLOCSPY_SUPPRESSIONS="$d/asp.supp"
	check "$prog: every definite leak is suppressed under valgrind by its own entries" \
		"definitely lost: 0 bytes in 0 blocks" "$(sums "$d/vg-vg.log" | grep definitely)"
	same "$prog: as much is suppressed as was definitely lost" \
		"$(sums "$d/vg-none.log" | sed -n 's/definitely lost/suppressed/p')" \
		"$(sums "$d/vg-vg.log" | grep suppressed)"
	same "$prog: valgrind's entries suppress the same bytes and blocks under allocspy" \
		"$(sums "$d/vg-vg.log")" "$(sums "$d/asp-vg.log")"
	same "$prog: allocspy's entries suppress the same bytes and blocks under valgrind" \
		"$(sums "$d/vg-vg.log")" "$(sums "$d/vg-asp.log")"
	same "$prog: ... and under allocspy" "$(sums "$d/vg-vg.log")" "$(sums "$d/asp-asp.log")"
done

# --- valgrind's names: demangled, inlined calls, thread stacks ------------------------------------
d=$TMP/run-cross_c
after() { grep -a -A"$2" -- "$1" "$d/leaks.txt" | sed 's/^==[0-9]*== //'; }
check "an inlined call is a line of its own, with its file:line, then its caller's" \
"   by 0x: name_copy (cross.c:9)
   by 0x: main (cross.c:30)" "$(after ': name_copy ' 1 | sed 's/0x[0-9A-F]*/0x/')"
check "... both at the same address" 1 "$(after ': name_copy ' 1 | awk '{ print $2 }' | sort -u | wc -l)"
check "a thread's stack ends in start_thread and clone, as under valgrind" \
"   by 0x: worker (cross.c:22)
   by 0x: start_thread
   by 0x: clone" "$(after ': worker ' 2 | sed 's/0x[0-9A-F]*/0x/; s/: \(start_thread\|clone\) (.*)$/: \1/')"
d=$TMP/run-cross_cxx
check_match "C++ functions are demangled in the leaks report" \
	"by 0x[0-9A-F]+: gui::Widget<double>::Widget\\(char const\\*\\) \\(cross.cc:13\\)" "$(cat "$d/leaks.txt")"
check_match "the allocator's line names operator new[] as valgrind does" \
	"at 0x[0-9A-F]+: operator new\\[\\]\\(unsigned long\\) " "$(cat "$d/leaks.txt")"
check "no mangled name and no frame of the shim in the leaks report's stacks" "" \
	"$(grep -E '_Z|asp__|thread_trampoline' "$d/leaks.txt" | grep -v 'fun:')"
"$REPORT" leaks --json "$d/asp.json" >"$d/leaks.json"
check "--json: the symbol beside the demangled name" \
	"[('gui::Widget<double>::~Widget()', '_ZN3gui6WidgetIdED1Ev')]" \
	"$(json_get "$d/leaks.json" 'sorted({(f["function"], f["symbol"]) for r in d["loss_records"] for f in r["frames"] if "~" in (f["function"] or "")})')"

# --- the records at exit (ALLOCSPY_LEAK_CHECK=full) against valgrind's -------------------------------
# Addresses differ, and so do the allocator's own lines: valgrind's
# replacement is in vgpreload, the shim's interposer in liballocspy.so.
# The thread's DTV (possibly lost) is left out: libunwind's TLS makes it
# larger under the shim. clone's own line is where each run's clone is:
# clone.S under valgrind, clone3.S natively.
frames() {
	sed -n 's/^==[0-9]*== //p' "$1" | awk '/in loss record/ { keep = !/possibly lost/ } /^$/ { keep = 0 } keep' |
		grep -vE '\(in /|: strdup \(strdup.c' |
		sed 's/0x[0-9A-F]*//; s/ of [0-9]*$//; s/: clone (.*)$/: clone/'
}
for prog in cross_c cross_cxx; do
	d=$TMP/run-$prog
	asp "$d/full.log" "$TMP/$prog" ALLOCSPY_LEAK_CHECK=full
	same "$prog: ALLOCSPY_LEAK_CHECK=full prints valgrind's records: names, file:line, inlined calls" \
		"$(frames "$d/vg-none.log")" "$(frames "$d/full.log")"
done

# --- mangled and demangled names in entries; LSan patterns --------------------------------------
# valgrind matches fun: against the symbol as the object writes it
# (mangled), never against the demangled name; LSan matches demangled names.
cat >"$TMP/mangled.supp" <<'SUPP'
{
   any allocation under either constructor symbol
   Memcheck:Leak
   ...
   fun:_ZN3gui6WidgetIdEC?EPKc
}
{
   the destructor, by a wildcard
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:_ZN3gui6WidgetI*D?Ev
}
SUPP
sed 's/fun:_ZN3gui6WidgetIdEC?EPKc/fun:gui::Widget<double>::Widget(char const*)/; s/fun:_ZN3gui6WidgetI\*D?Ev/fun:gui::Widget<*>::~Widget*/' \
	"$TMP/mangled.supp" >"$TMP/demangled.supp"
d=$TMP/run-cross_cxx
vg "$d/vg-man.log" "$TMP/cross_cxx" --suppressions="$TMP/mangled.supp"
asp "$d/asp-man.log" "$TMP/cross_cxx" ALLOCSPY_SUPPRESSIONS="$TMP/mangled.supp"
same "mangled fun: names with wildcards suppress the same leaks under both tools" \
	"$(sums "$d/vg-man.log")" "$(sums "$d/asp-man.log")"
check "... which is every leak under the constructor and destructor" \
"definitely lost: 16 bytes in 1 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
suppressed: 92 bytes in 5 blocks" "$(sums "$d/asp-man.log")"
vg "$d/vg-dem.log" "$TMP/cross_cxx" --suppressions="$TMP/demangled.supp"
asp "$d/asp-dem.log" "$TMP/cross_cxx" ALLOCSPY_SUPPRESSIONS="$TMP/demangled.supp"
same "demangled fun: names: the same under both tools" "$(sums "$d/vg-dem.log")" "$(sums "$d/asp-dem.log")"
check "... nothing suppressed, as valgrind matches fun: against symbols only" \
	"suppressed: 0 bytes in 0 blocks" "$(sums "$d/asp-dem.log" | grep suppressed)"
printf 'leak:gui::Widget\n' >"$TMP/lsan.supp"
asp "$d/asp-lsan.log" "$TMP/cross_cxx" ALLOCSPY_SUPPRESSIONS="$TMP/lsan.supp"
same "an LSan leak: pattern matches demangled names: the same leaks as the mangled entries" \
	"$(sums "$d/vg-man.log")" "$(sums "$d/asp-lsan.log")"

# --- an entry deeper than the stacks captured -------------------------------------------------------
asp "$d/asp-short.log" "$TMP/cross_cxx" ALLOCSPY_BACKTRACE=1 ALLOCSPY_SUPPRESSIONS="$d/vg.supp"
check "ALLOCSPY_BACKTRACE=1 with entries two frames deep: stacks deep enough are captured, no warning" \
	"" "$(grep -a '^allocspy: warning' "$d/asp-short.log")"
same "... and the same leaks are suppressed as under valgrind" \
	"$(sums "$d/vg-vg.log")" "$(sums "$d/asp-short.log")"
