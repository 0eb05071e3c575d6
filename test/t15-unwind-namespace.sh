#!/bin/sh
# t15-unwind-namespace.sh - 16 frames with libunwind leave the program's
# heap as it is: the shim loads libunwind into a link namespace of its own,
# so its liblzma does not satisfy the program's own later loads. nm -D on
# libstdc++ (binutils opens two plugins, which need liblzma): the same bytes
# and blocks in use with the caller alone, 16 frames by frame pointers and
# 16 by libunwind, the same totals with the first two, and with libunwind
# the one difference liballocspy(7) gives (the loader's table of dlopen'ed
# objects, shared by the namespaces, grown at start-up: one 2,304-byte
# block less). A program asks the loader whether liblzma and libunwind are
# loaded in its namespace (RTLD_NOLOAD): no, as without the shim. Its own
# thread keys keep their values in 4 threads whose every allocation is a
# new stack for libunwind to walk (libunwind's key comes from the
# program's C library, not from its own copy's, which numbers from 0).
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIB" ]; then
	not_ok "the shim is built" "run make"
	exit 0
fi

# --- nm -D --------------------------------------------------------------------------------------

STDCXX=/usr/lib/x86_64-linux-gnu/libstdc++.so.6
if command -v nm >/dev/null 2>&1 && [ -f "$STDCXX" ]; then
	for cfg in "ALLOCSPY_BACKTRACE=1" "ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=fp" \
		"ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=libunwind"; do
		# shellcheck disable=SC2086 # the settings are words
		env $cfg ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" nm -D "$STDCXX" 2>"$TMP/nm.err" >/dev/null
		heap_lines "$TMP/nm.err" | paste -sd'|'
	done >"$TMP/nm.heap"
	one=$(sed -n 1p "$TMP/nm.heap")
	check "nm -D: 16 frames by frame pointers give the caller alone's heap summary" \
		"$one" "$(sed -n 2p "$TMP/nm.heap")"
	check "nm -D: 16 frames by libunwind: the same in use at exit" \
		"${one%%|*}" "$(sed -n 3p "$TMP/nm.heap" | cut -d'|' -f1)"
	python3 - "$TMP/nm.heap" >"$TMP/nm.diff" <<'PY'
import re, sys
rows = [[int(x.replace(",", "")) for x in re.findall(r"[0-9][0-9,]*", line.split("|")[1])]
        for line in open(sys.argv[1])]
print("%d allocs, %d frees, %d bytes" % tuple(a - b for a, b in zip(rows[0], rows[2])))
PY
	check "nm -D: 16 frames by libunwind: the loader's table of dlopen'ed objects needs one 2,304-byte block less" \
		"1 allocs, 1 frees, 2304 bytes" "$(cat "$TMP/nm.diff")"
else
	not_ok "nm and $STDCXX are here"
fi

# --- the program's namespace and thread keys -------------------------------------------------------

cat >"$TMP/ns.c" <<'SRC'
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_key_t keys[3];
static int bad;

/* depth frames of its own above the allocation: a new stack each time */
__attribute__((noinline)) static void *rec(int depth, int site)
{
	void *p = depth > 0 ? rec(depth - 1, site) : malloc(16 + site);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

static void *work(void *arg)
{
	long me = (long)arg;
	for (int k = 0; k < 3; k++)
		pthread_setspecific(keys[k], (void *)(me * 10 + k + 1));
	for (int i = 0; i < 300; i++) {
		free(rec(i % 30, (int)me));
		for (int k = 0; k < 3; k++)
			bad += pthread_getspecific(keys[k]) != (void *)(me * 10 + k + 1);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];
	const char *libs[] = { "liblzma.so.5", "libunwind.so.8" };
	for (int i = 0; i < 2; i++)
		printf("%s %s\n", libs[i], dlopen(libs[i], RTLD_NOW | RTLD_NOLOAD) ? "loaded" : "not loaded");
	for (int k = 0; k < 3; k++)
		pthread_key_create(&keys[k], NULL);
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, work, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("keys: %d values lost\n", bad);
	return 0;
}
SRC
if ${CC:-cc} -O0 -g -pthread -o "$TMP/ns" "$TMP/ns.c" -ldl; then
	native=$("$TMP/ns"; echo "status $?")
	for unwind in libunwind fp; do
		check "16 frames by $unwind: liblzma and libunwind are not in the program's namespace, its keys keep their values" \
			"$native" "$(ALLOCSPY_BACKTRACE=16 ALLOCSPY_UNWIND=$unwind ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
				LD_PRELOAD="$LIB" "$TMP/ns"; echo "status $?")"
	done
	check "natively: neither library is loaded, no value lost" "liblzma.so.5 not loaded
libunwind.so.8 not loaded
keys: 0 values lost
status 0" "$native"
else
	not_ok "ns.c compiles"
fi
