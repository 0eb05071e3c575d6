#!/bin/sh
# t14-unwind-mask.sh - libunwind's own signal masking, skipped in the shim's
# walks, which block every signal once themselves.
# - Under ALLOCSPY_BACKTRACE=16, a program allocating from 400 call sites
#   makes no rt_sigprocmask call from libunwind (strace -k: the caller of
#   the C library's sigprocmask), and gives valgrind's heap and leak
#   summaries and loss records; the same program calling libunwind itself
#   still has libunwind's calls, and the same records. Interning a new
#   stack makes no rt_sigprocmask call of its own.
# - A program that unwinds with libunwind from a SIGALRM handler, every
#   200 us, while it allocates from new stacks, with libunwind opened by
#   name, or needed by a library it opens, or linked in: each run ends with
#   status 0 within its deadline (a handler landing in one of the shim's
#   walks would wait for ever on a libunwind lock that the walk holds).
# - libunwind's frame cache, one per thread that walks, is mapped populated
#   (MAP_POPULATE), and the shim's start-up walk makes none: a program that
#   never allocates has none, one that walks from 3 threads has 3.
. "$(dirname "$0")/lib.sh"

command -v strace >/dev/null 2>&1 || { not_ok "strace is installed (scripts/deps.sh)"; exit 0; }

# sites.c: 400 functions, each allocating 40 bytes, called twice each;
# every second function loses its second block. With WITH_UNWIND, main
# first unwinds with libunwind itself.
python3 - "$TMP/sites.c" <<'PY'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#include <stdlib.h>\n")
    f.write("#ifdef WITH_UNWIND\n#define UNW_LOCAL_ONLY\n#include <libunwind.h>\n#endif\n")
    for i in range(400):
        f.write("__attribute__((noinline)) static void f%d(int k) { void *p = malloc(40); "
                "__asm__ volatile(\"\" : : \"r\"(p) : \"memory\"); if (!k) free(p); }\n" % i)
    f.write("int main(void)\n{\n")
    f.write("#ifdef WITH_UNWIND\n\tvoid *frames[16];\n\tunw_backtrace(frames, 16);\n#endif\n")
    for i in range(400):
        f.write("\tf%d(0);\n\tf%d(%d);\n" % (i, i, i % 2))
    f.write("\treturn 0;\n}\n")
PY
cc -g -O1 -o "$TMP/sites" "$TMP/sites.c" || not_ok "sites.c: compiles"
cc -g -O1 -DWITH_UNWIND -o "$TMP/sites-unw" "$TMP/sites.c" -lunwind || not_ok "sites.c with libunwind: compiles"

# from_unwind PROG: the rt_sigprocmask calls libunwind made in PROG under
# the shim with 16-frame stacks (each call's stack: the C library's
# functions, then their caller); PROG's text output in PROG.asp.
from_unwind() {
	strace -f -k -e trace=rt_sigprocmask -o "$1.st" \
		env ALLOCSPY_BACKTRACE=16 ALLOCSPY_LEAK_CHECK=full ALLOCSPY_OUTPUT=none \
		LD_PRELOAD="$LIB" "$1" >/dev/null 2>"$1.asp"
	awk '/^ > / { if (!done && !/libc\.so/) { done = 1; if (/libunwind/) c++ } next }
		{ done = 0 } END { print c + 0 }' "$1.st"
}
check "400 call sites: no rt_sigprocmask call from libunwind" 0 "$(from_unwind "$TMP/sites")"
# A new stack is interned, and its copy allocated, while its walk's
# signals are still blocked: no rt_sigprocmask call of their own (the
# shim's add and arena allocation are the callers they would have).
check "400 call sites: no rt_sigprocmask call from interning a new stack" 0 \
	"$(awk '/^ > / { if (!done && !/libc\.so/) { done = 1; if (/\((add|asp__arena_alloc)\+/) c++ } next }
		{ done = 0 } END { print c + 0 }' "$TMP/sites.st")"
n=$(from_unwind "$TMP/sites-unw")
check "400 call sites, and the program's own unw_backtrace: libunwind's calls are there" yes \
	"$([ "$n" -gt 0 ] && echo yes)"

summaries() { sed -n 's/^==[0-9]*== *//p' "$1" | grep -E '^(in use at exit|total heap usage|definitely|indirectly|possibly|still reachable|suppressed):'; }
# records FILE: each loss record's first line and its frames (function,
# file and line), the allocator's own left out; sorted.
records() {
	sed 's/^==[0-9]*== *//' "$1" | awk '
		/ in loss record / { if (r != "") print r; r = $0; sub(/ in loss record .*/, "", r); next }
		r != "" && /^by 0x/ { sub(/^by 0x[0-9A-Fa-f]+: /, ""); r = r " <- " $0; next }
		r != "" && /^at 0x/ { next }
		r != "" { print r; r = "" }
		END { if (r != "") print r }' | sort
}
(cd "$TMP" && valgrind --leak-check=full --num-callers=16 --log-file="$TMP/sites.vg" "$TMP/sites" >/dev/null 2>&1)
check "400 call sites: the heap and leak summaries equal valgrind's" \
	"$(summaries "$TMP/sites.vg")" "$(summaries "$TMP/sites.asp")"
check "400 call sites: the 200 loss records equal valgrind's, frame for frame" \
	"$(records "$TMP/sites.vg")" "$(records "$TMP/sites.asp")"
check "400 call sites: the records are the same when the program links libunwind" \
	"$(records "$TMP/sites.asp")" "$(records "$TMP/sites-unw.asp")"
check "400 call sites: 200 loss records" 200 "$(records "$TMP/sites.asp" | wc -l)"

# prof.c: MODE name (dlopen libunwind.so.8), lib (dlopen a library that
# needs it) or linked. SIGALRM every 200 us, whose handler unwinds with
# libunwind, while 3,000 functions allocate, each a new stack with new code
# addresses for the shim to walk; then the same again until a handler has
# unwound.
cat >"$TMP/unwlib.c" <<'SRC'
#define UNW_LOCAL_ONLY
#include <libunwind.h>
int unwlib_backtrace(void **frames, int n) { return unw_backtrace(frames, n); }
SRC
python3 - "$TMP/prof.c" <<'PY'
import sys
n = 3000
with open(sys.argv[1], "w") as f:
    f.write("""#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#ifdef LINKED
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
static int (*trace)(void **, int);
static volatile long traced;
static void on_alarm(int sig)
{
	void *frames[32];
	(void)sig;
	if (trace(frames, 32) > 0)
		traced++;
}
""")
    for i in range(n):
        f.write("__attribute__((noinline)) static void f%d(void) { void *p = malloc(16); "
                "__asm__ volatile(\"\" : : \"r\"(p) : \"memory\"); free(p); }\n" % i)
    f.write("static void (*const fns[])(void) = {\n")
    f.write(",\n".join("\tf%d" % i for i in range(n)))
    f.write("""
};
int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "name";
#ifdef LINKED
	(void)mode;
	trace = unw_backtrace;
#else
	int lib = strcmp(mode, "lib") == 0;
	void *h = dlopen(lib ? argv[2] : "libunwind.so.8", RTLD_NOW);
	trace = h ? (int (*)(void **, int))dlsym(h, lib ? "unwlib_backtrace" : "unw_backtrace") : NULL;
#endif
	if (trace == NULL)
		return 2;
	/* One walk before the timer, as a profiler makes: the first use of
	 * a dlopened libunwind's TLS mallocs its block (glibc's
	 * __tls_get_addr), which in a handler that interrupted malloc
	 * corrupts the heap; without the shim 5% of runs died of it. */
	void *warm[4];
	trace(warm, 4);
	signal(SIGALRM, on_alarm);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_REAL, &it, NULL);
	for (int r = 0; r < 1000 && (r == 0 || traced == 0); r++)
		for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
			fns[i]();
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("%s\\n", traced > 0 ? "traced" : "not traced");
	return 0;
}
""")
PY
cc -g -O1 -fPIC -shared -o "$TMP/libunwlib.so" "$TMP/unwlib.c" -lunwind || not_ok "unwlib.c: compiles"
cc -g -O1 -o "$TMP/prof" "$TMP/prof.c" -ldl || not_ok "prof.c: compiles"
cc -g -O1 -DLINKED -o "$TMP/prof-linked" "$TMP/prof.c" -lunwind || not_ok "prof.c linked: compiles"
# 5 runs of each, 2 in the quick tier (make check).
RUNS="1 2 3 4 5"
in_tier prof || RUNS="1 2"
for mode in name lib linked; do
	exe=$TMP/prof
	[ "$mode" = linked ] && exe=$TMP/prof-linked
	got= want=
	for run in $RUNS; do
		out=$(timeout 120 env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
			LD_PRELOAD="$LIB" "$exe" "$mode" "$TMP/libunwlib.so" 2>&1)
		got="$got $out $?"
		want="$want traced 0"
	done
	check "SIGALRM unwinding with libunwind ($mode): $(echo $RUNS | wc -w) runs, each traced with status 0" \
		"$want" "$got"
done

# libunwind maps a frame cache (2^14 frames of 16 bytes) for each thread
# that walks. Under the shim a thread's first 8 walks go without one, and
# it is made in one system call (MAP_POPULATE) at the ninth; the shim's own
# start-up walk gets none: a thread that never walks, or walks a few times,
# has none. alone.c allocates nothing (with WITH_UNWIND it unwinds once
# itself, with WITH_BLOCK it keeps a block too); caches.c starts 2 threads
# that each allocate 200 blocks from N stacks (argument; main allocates
# too: pthread_create's thread-local storage).
cat >"$TMP/alone.c" <<'SRC'
#ifdef WITH_UNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
#ifdef WITH_BLOCK
#include <stdlib.h>
void *kept;
#endif
int main(void)
{
#ifdef WITH_BLOCK
	kept = malloc(16);	/* a block for the leak scan to look for */
#endif
#ifdef WITH_UNWIND
	void *frames[16];
	if (unw_backtrace(frames, 16) <= 0)
		return 2;
#endif
	return 0;
}
SRC
cat >"$TMP/caches.c" <<'SRC'
#include <pthread.h>
#include <stdlib.h>
static int stacks;
/* depth frames of its own above the allocation: a stack each */
__attribute__((noinline)) static void *rec(int depth)
{
	void *p = depth > 0 ? rec(depth - 1) : malloc(100);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
static void *work(void *arg)
{
	for (int i = 0; i < 200; i++)
		free(rec(i % stacks));
	return arg;
}
int main(int argc, char **argv)
{
	pthread_t t[2];
	stacks = argc > 1 ? atoi(argv[1]) : 1;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], NULL, work, NULL))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
SRC
cc -g -O1 -o "$TMP/alone" "$TMP/alone.c" || not_ok "alone.c: compiles"
cc -g -O1 -DWITH_UNWIND -o "$TMP/alone-unw" "$TMP/alone.c" -lunwind || not_ok "alone.c with libunwind: compiles"
cc -g -O1 -DWITH_UNWIND -DWITH_BLOCK -o "$TMP/alone-blk" "$TMP/alone.c" -lunwind ||
	not_ok "alone.c with libunwind and a block: compiles"
cc -g -O1 -pthread -o "$TMP/caches" "$TMP/caches.c" || not_ok "caches.c: compiles"
# frame_caches PROG ARG VAR=VALUE...: the number of 256 KiB mappings made
# with MAP_POPULATE (only libunwind's frame caches are), and the status of
# PROG ARG.
frame_caches() {
	prog=$1 arg=$2; shift 2
	strace -f -e trace=mmap -o "$prog.mm" env "$@" ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none \
		ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" "$prog" $arg >/dev/null 2>&1
	rc=$?
	echo "$(grep -c 'mmap(NULL, 262144, .*MAP_POPULATE' "$prog.mm") status $rc"
}
# unwind_maps PROG: the 256 KiB mappings whose caller is libunwind (strace
# -k; PROG has one thread), populated or not, in sample mode. The shim's
# unw_mmap, in libunwind's import slot for mmap, is passed over.
unwind_maps() {
	strace -k -e trace=mmap -o "$1.mk" env ALLOCSPY_MODE=count ALLOCSPY_SAMPLE=1 \
		ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" "$1" \
		>/dev/null 2>&1
	awk '/mmap\(NULL, 262144,/ { want = 1; next }
		want && /^ > / { if (!/libc\.so|\(unw_mmap\+/) { if (/libunwind/) c++; want = 0 } next }
		{ want = 0 } END { print c + 0 }' "$1.mk"
}
check "a program that never allocates, sample mode: no frame cache from libunwind" \
	0 "$(unwind_maps "$TMP/alone")"
check "the same, unwinding once itself: one" 1 "$(unwind_maps "$TMP/alone-unw")"
SAMPLED="ALLOCSPY_MODE=count ALLOCSPY_SAMPLE=1"
check "a program that never allocates, sample mode: no populated mapping" \
	"0 status 0" "$(frame_caches "$TMP/alone" "" $SAMPLED)"
# The shim's libunwind lives in a link namespace of its own (liballocspy(7)):
# a program that links libunwind has its own copy, which makes its frame
# cache as it would without the shim (not populated), in the program's
# memory.
check "the same, unwinding once itself: its own libunwind's frame cache (the one above), as without the shim: not populated" \
	"0 status 0" "$(frame_caches "$TMP/alone-unw" "" $SAMPLED)"
# That cache is the program's memory, which the leak scan (track mode)
# reads, as valgrind does; the shim's own caches it never reads (the
# threads below). The scan reads the roots through process_vm_readv;
# alone-blk keeps a block for it to look for.
strace -k -e trace=mmap,process_vm_readv -o "$TMP/alone-blk.rd" env ALLOCSPY_BACKTRACE=16 \
	ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" "$TMP/alone-blk" >/dev/null 2>&1
rc=$?
# (the 256 KiB mapping libunwind makes, below the C library's mmap)
cache=$(awk '/^mmap\(NULL, 262144,/ { a = $NF; next }
	a != "" && /^ > / { if (!/libc\.so/) { if (/libunwind/) print a; a = "" } next } { a = "" }' \
	"$TMP/alone-blk.rd")
reads=0 in_cache=0
for a in $(sed -n 's/^process_vm_readv(.*\[{iov_base=\(0x[0-9a-f]*\), iov_len=[0-9]*}\], 1, 0).*/\1/p' \
	"$TMP/alone-blk.rd"); do
	reads=$((reads + 1))
	[ -n "$cache" ] && [ $((a)) -ge $((cache)) ] && [ $((a)) -lt $((cache + 262144)) ] &&
		in_cache=$((in_cache + 1))
done
read_in_cache="${cache:+a cache, }$([ $reads -gt 0 ] && echo some || echo no) reads, $([ $in_cache -gt 0 ] && echo some || echo none) in the cache"
check "the program's own walk, track mode: the leak scan reads its frame cache, the program's memory, status 0" \
	"a cache, some reads, some in the cache status 0" "$read_in_cache status $rc"
check "2 threads that walk 12 stacks, sample mode: 2 frame caches, populated" \
	"2 status 0" "$(frame_caches "$TMP/caches" 12 $SAMPLED)"
check "the same, track mode: 2 frame caches, populated" \
	"2 status 0" "$(frame_caches "$TMP/caches" 12)"
check "2 threads that walk one stack, track mode: no frame cache" \
	"0 status 0" "$(frame_caches "$TMP/caches" 1)"
check "the same, sample mode: none" \
	"0 status 0" "$(frame_caches "$TMP/caches" 1 $SAMPLED)"
