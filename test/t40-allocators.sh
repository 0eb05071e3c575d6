#!/bin/sh
# t40-allocators.sh - the shim over another allocator: LD_PRELOAD="liballocspy.so
# libtcmalloc.so" (and jemalloc). A program's HEAP SUMMARY under it differs
# from its glibc run by exactly what an empty program's does: what the
# allocator (and the libstdc++ it loads) allocates at load time. The
# programs are single-threaded: each TLS module an allocator brings also
# makes every new thread's DTV 16 bytes larger.
. "$(dirname "$0")/lib.sh"

# figures LOG: "in use bytes blocks allocs frees bytes" of a summary.
figures() {
	heap_lines "$1" | tr -d ',' |
		sed -n 's/in use at exit: \([0-9]*\) bytes in \([0-9]*\) blocks/\1 \2/p; s/total heap usage: \([0-9]*\) allocs \([0-9]*\) frees \([0-9]*\) bytes allocated/\1 \2 \3/p' |
		tr '\n' ' '
}

# summary PROG UNDER: the figures of PROG with UNDER preloaded after the shim.
summary() {
	LD_PRELOAD="$LIB $2" ALLOCSPY_OUTPUT=none "$1" >/dev/null 2>"$TMP/err" </dev/null
	grep -a '^==[0-9]*==' "$TMP/err" >"$TMP/log"
	figures "$TMP/log"
}

# minus "A B C D E" "F G H I J": the difference, field by field.
minus() {
	set -- $1 $2
	echo "$(($1 - $6)) $(($2 - $7)) $(($3 - $8)) $(($4 - $9)) $((${5} - ${10}))"
}

printf 'int main(void) { return 0; }\n' >"$TMP/empty.c"
printf '#include <string>\nint main() { std::string s(100, 0); return (int)s[0]; }\n' >"$TMP/emptycc.cc"
cc -o "$TMP/empty" "$TMP/empty.c" && c++ -o "$TMP/emptycc" "$TMP/emptycc.cc" || {
	not_ok "the empty programs build"
	exit 0
}

for so in /usr/lib/x86_64-linux-gnu/libtcmalloc.so.4 /usr/lib/x86_64-linux-gnu/libjemalloc.so.2; do
	name=$(basename "$so")
	if [ ! -f "$so" ]; then
		ok "$name # SKIP not installed"
		continue
	fi
	base_c=$(minus "$(summary "$TMP/empty" "$so")" "$(summary "$TMP/empty" "")")
	base_cc=$(minus "$(summary "$TMP/emptycc" "$so")" "$(summary "$TMP/emptycc" "")")
	for p in par_basic par_realloc par_memalign par_strdup libc_stdio libc_qsort leak_chain; do
		check "$name: $p differs from its glibc run as an empty program does" "$base_c" \
			"$(minus "$(summary "$PROGS/$p" "$so")" "$(summary "$PROGS/$p" "")")"
	done
	for p in cxx_new cxx_containers cxx_smart cxx_exceptions; do
		# A program the allocator itself changes (jemalloc grants the
		# terabytes cxx_new asks for to see new fail) has other figures.
		if [ "$(LD_PRELOAD=$so "$PROGS/$p" 2>&1)" != "$("$PROGS/$p" 2>&1)" ]; then
			ok "$name: $p # SKIP its own output differs over $name, without the shim"
			continue
		fi
		check "$name: $p differs from its glibc run as an empty C++ program does" "$base_cc" \
			"$(minus "$(summary "$PROGS/$p" "$so")" "$(summary "$PROGS/$p" "")")"
	done
	# Same program output and status over the other allocator.
	LD_PRELOAD="$LIB $so" ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 "$PROGS/par_basic" >"$TMP/o1" 2>/dev/null
	s1=$?
	"$PROGS/par_basic" >"$TMP/o2" 2>/dev/null
	s2=$?
	check "$name: par_basic's output and status are unchanged" "$(cat "$TMP/o2"; echo $s2)" "$(cat "$TMP/o1"; echo $s1)"
done
