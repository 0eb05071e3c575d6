#!/bin/sh
# t13-stack-cache.sh - a stack found in the thread's stack cache is the one
# libunwind finds: the loss records of ALLOCSPY_BACKTRACE=16 equal valgrind
# --leak-check=full's, frame for frame, for a function called from two
# callers at the same depth (the cache's key is the same, the callers'
# return addresses tell them apart) and from a recursion whose frames grow
# by alloca (frame-pointer-based frames), built with and without
# optimisation.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/cache.c" <<'SRC'
#include <alloca.h>
#include <pthread.h>
#include <stdlib.h>

__attribute__((noinline)) static void *xalloc(size_t n)
{
	void *p = malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

__attribute__((noinline)) static void one(int i)
{
	void *p = xalloc(24);
	if (i % 5 == 0)
		free(p);
}

__attribute__((noinline)) static void two(int i)
{
	void *p = xalloc(40);
	if (i % 2 == 0)
		free(p);
}

__attribute__((noinline)) static void deep(int d, int n)
{
	char *pad = alloca((size_t)n);
	pad[0] = (char)d;
	__asm__ volatile("" : : "r"(pad) : "memory");
	if (d > 0)
		deep(d - 1, n);
	else
		xalloc(8);
}

__attribute__((noinline)) static void deep_from(int d, int n)
{
	deep(d, n);
	__asm__ volatile("" : : : "memory");
}

static void *worker(void *arg)
{
	for (int i = 0; i < 3000; i++)
		(i % 3 ? one : two)(i + (int)(long)arg);
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, (void *)1L);
	worker(NULL);
	pthread_join(t, NULL);
	for (int r = 0; r < 20; r++)
		for (int d = 0; d < 4; d++)
			for (int n = 16; n <= 256; n += 16) {
				deep(d, n);
				if (n % 64 == 0)
					deep_from(d, n);
			}
	return 0;
}
SRC

# records FILE: each loss record's first line and its functions and lines,
# addresses and the allocator's own frame left out; records sorted. A
# thread's outermost frame is clone3 natively and clone under valgrind
# (which has no clone3): "clone" either way.
records() {
	sed 's/^==[0-9]*== *//' "$1" | awk '
		/ in loss record / { if (r != "") print r; r = $0; sub(/ in loss record .*/, "", r); next }
		r != "" && /^by 0x/ { sub(/^by 0x[0-9A-Fa-f]+: /, ""); sub(/^clone \(clone3?\.S:[0-9]+\)$/, "clone"); r = r " <- " $0; next }
		r != "" && /^at 0x/ { next }
		r != "" { print r; r = "" }
		END { if (r != "") print r }' | sort
}

for opt in -O0 -O2; do
	exe=$TMP/cache$opt
	cc -g $opt -fno-inline -pthread -o "$exe" "$TMP/cache.c" || { not_ok "cache.c $opt: compiles"; continue; }
	(cd "$TMP" && valgrind --leak-check=full --num-callers=16 --log-file="$exe.vg" "$exe" >/dev/null 2>&1)
	(cd "$TMP" && env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$exe.json" LD_PRELOAD="$LIB" "$exe" >/dev/null 2>&1)
	"$REPORT" leaks "$exe.json" >"$exe.leaks" 2>&1
	check "$opt: the loss records and their stacks equal valgrind --leak-check=full's" \
		"$(records "$exe.vg")" "$(records "$exe.leaks")"
	check "$opt: the two callers' records are apart, in each thread" "4" \
		"$(records "$exe.leaks" | grep -cE '^[0-9,]+ bytes in [0-9,]+ blocks are definitely lost <- xalloc \(cache.c:[0-9]+\) <- (one|two) ')"
done

# Thread churn: a thread record reused by a new thread keeps its stack
# cache, so 3,000 short threads, one after another, each taking the same
# stack three times (a cache's learning), leave the process no larger than
# 300 of them did (a cache is about 100 KiB).
cat >"$TMP/churn.c" <<'SRC'
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *volatile sink;

static void *work(void *arg)
{
	for (int i = 0; i < 3; i++) {
		sink = malloc(32);
		free(sink);
	}
	return arg;
}

static long vm_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, "VmSize:", 7) == 0)
			kib = atol(line + 7);
	if (f)
		fclose(f);
	return kib;
}

int main(void)
{
	long after300 = 0;
	for (int i = 0; i < 3000; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, work, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 1;
		if (i == 299)
			after300 = vm_kib();
	}
	printf("%s\n", vm_kib() - after300 < 8192 ? "flat" : "growing");
	return 0;
}
SRC
cc -O1 -pthread -o "$TMP/churn" "$TMP/churn.c" || not_ok "churn.c: compiles"
check "3,000 short threads with 16-frame stacks: the process's size stays flat, status 0" "flat 0" \
	"$(env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/churn" 2>/dev/null) $?"
