#!/bin/sh
# t72-invariants.sh - process.c's written invariants held against the
# code: the lock list names every lock the shim defines and nothing else,
# fork's prepare handler takes them in the list's order, and the process's
# state (asp__state) is changed by process.c's three functions only; and
# platform.h, which alone names the machine, stops other platforms.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1

# --- the lock list -------------------------------------------------------------------

# The list: the lines of invariant 1 that end "(file.c: name)".
sed -n '/^ \* 1\. Locks\./,/^ \* 2\. fork\./p' shim/process.c |
	sed -n 's/^ \*  *\(.*[^ ]\)  *(\([a-z]*\.c\): \([a-z_]*\))$/\2 \3/p' >"$TMP/listed"
check "process.c lists 10 locks" "10" "$(wc -l <"$TMP/listed" | tr -d ' ')"

# The code: every asp_lock_t the shim defines (a variable or a field), and
# every lock that is a holder word taken by compare-and-swap.
for f in shim/*.c shim/*.h; do
	[ "$f" = shim/lock.h ] && continue
	sed -n -e 's/^\(static \)\{0,1\}asp_lock_t \([a-z_]*\)\( = ASP_LOCK_INIT\)\{0,1\};.*/\2/p' \
		-e 's/^\t\{1,\}asp_lock_t \([a-z_]*\);.*/\1/p' \
		-e 's/^\(static \)\{0,1\}uintptr_t \(g_holder\);.*/\2/p' \
		-e 's/^\t\{1,\}uintptr_t \(holder\);.*/\1/p' "$f" |
		sed "s|^|${f#shim/} |"
done | sort >"$TMP/defined"
sort "$TMP/listed" >"$TMP/listed.sorted"
check "every lock the shim defines is in process.c's list, and every listed one is defined" \
	"$(cat "$TMP/defined")" "$(cat "$TMP/listed.sorted")"
check "the code defines 10 locks" "10" "$(wc -l <"$TMP/defined" | tr -d ' ')"

# fork's prepare handler takes them in the list's order: the call that
# takes each file's lock, in the order atfork_prepare makes them. The
# site index and the heap errors it leaves to the child (invariant 2).
sed -n '/^static void atfork_prepare(void)$/,/^}/p' shim/process.c >"$TMP/prepare"
taken=
for call in asp__loader_fork_close:thread.c asp__stack_atfork_prepare:stack.c asp__snapshot_atfork_prepare:snapshot.c \
	asp__live_lock_all:live.c asp__threads_atfork_prepare:thread.c g_start_lock:process.c \
	asp__sample_atfork_prepare:sample.c asp__arena_atfork_prepare:arena.c; do
	n=$(grep -n "${call%%:*}" "$TMP/prepare" | head -1 | cut -d: -f1)
	[ -n "$n" ] && taken="$taken$n ${call#*:}
"
done
printf '%s' "$taken" | sort -n | cut -d' ' -f2 >"$TMP/taken"
grep -vE '^(sitemap\.c|errors\.c) ' "$TMP/listed" | cut -d' ' -f1 >"$TMP/order"
check "atfork_prepare takes the locks in the list's order" "$(cat "$TMP/order")" "$(cat "$TMP/taken")"
check "the gate is asp__loader_fork_close's, taken first there" "asp_lock(&g_gate);" \
	"$(sed -n '/^void asp__loader_fork_close(/,/^}/p' shim/thread.c | grep 'asp_lock' | head -1 | tr -d '\t')"
check "the child lets go of the site index and of the heap errors" "1 1" \
	"$(sed -n '/^void asp__sitemap_atfork_child(/,/^}/p' shim/sitemap.c | grep -c '__atomic_store_n(&g_holder, 0') $(sed -n '/^void asp__errors_atfork_child(/,/^}/p' shim/errors.c | grep -c 'asp_lock_reset(&g_lock)')"

# --- the state ------------------------------------------------------------------------

# Stores to asp__state: plain assignments and atomic stores.
grep -nE 'asp__state[[:space:]]*=[^=]|store[a-z_]*\(&asp__state' shim/*.c shim/*.h >"$TMP/stores"
check "asp__state is changed in process.c only" "" "$(grep -v '^shim/process\.c:' "$TMP/stores")"
# In process.c, by asp__init_slow (the start), asp__counting_stop and
# asp__counting_restart: the function each store is in.
awk '/^[a-z].*\(/ { fn = $0 } /asp__state[[:space:]]*=[^=]|store[a-z_]*\(&asp__state/ { print fn }' \
	shim/process.c | sed 's/(.*//; s/.* //' >"$TMP/storers"
check "process.c changes it in asp__init_slow, asp__counting_stop and asp__counting_restart" \
	"asp__init_slow
asp__counting_stop
asp__counting_restart" "$(cat "$TMP/storers")"
check "no asp__fast, the second state it once had" "" "$(grep -nw 'asp__fast' shim/*.c shim/*.h)"

# --- the platform ---------------------------------------------------------------------

# Another platform stops the build in platform.h, before anything else.
CC=${CC:-cc}
for m in __x86_64__ __linux__; do
	$CC -fsyntax-only -U$m -D_GNU_SOURCE -x c shim/platform.h >"$TMP/plat" 2>&1
	check "without $m the build stops with platform.h's error" "1" \
		"$(grep -c 'error: #error "liballocspy builds for x86-64 Linux only' "$TMP/plat")"
done
check "on this platform platform.h builds" "" "$($CC -fsyntax-only -D_GNU_SOURCE -x c shim/platform.h 2>&1)"
# The machine's registers, relocations and instructions are named in
# platform.h and platform.c only.
check "no register, x86-64 relocation, libunwind x86-64 name or %fs outside platform.h" "" \
	"$(grep -nE 'REG_R[A-Z0-9]+|REG_ERR|R_X86_64_|UNW_X86_64_|%fs:|__seg_fs|__x86_64__' shim/*.c shim/*.h | grep -v '^shim/platform\.[ch]:')"
