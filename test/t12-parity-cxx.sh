#!/bin/sh
# t12-parity-cxx.sh - C++ under the shim against valgrind: operator new and
# delete in all their forms, the standard containers, smart pointers,
# std::thread with thread_local objects, and exceptions. HEAP SUMMARY lines,
# stdout and exit status equal (lib.sh parity); then a few of cxx_new's
# per-function counters from the dump; then no mangled name in any text
# the shim or allocspy-report prints about these programs.
. "$(dirname "$0")/lib.sh"

for p in cxx_new cxx_containers cxx_smart cxx_threads cxx_exceptions; do
	if [ -x "$PROGS/$p" ]; then
		parity "$p" "$PROGS/$p"
	else
		not_ok "$p: built" "missing $PROGS/$p: run make test-progs"
	fi
done

# cxx_new: the scalar and array forms are told apart, and libstdc++'s new
# calling malloc inside is one new, not a malloc too.
D=$TMP/cxx_new.json
SHIM_ENV="ALLOCSPY_OUTPUT=$D" run_shim "$TMP/cxx_new.dump" "$PROGS/cxx_new"
if [ -s "$D" ]; then
	# new: 100 ints, a Derived, a long. new[]: 100 char arrays, Obj[7],
	# char[33]. Over-aligned Line and Page go to the aligned operators.
	check "cxx_new: new, new[] calls" "(102, 102)" \
		"$(json_get "$D" '(d["functions"]["new"]["calls"], d["functions"]["new[]"]["calls"])' 2>&1)"
	check "cxx_new: nothrow new[] calls, failed" "(2, 1)" \
		"$(json_get "$D" '(d["functions"]["new[]_nothrow"]["calls"], d["functions"]["new[]_nothrow"]["failed"])' 2>&1)"
	# 229 = 102 + 102 + 2 nothrow new[] + 12 aligned new (11 Line, a Page)
	# + 10 aligned new[] + 1 aligned nothrow new, whatever its name.
	check "cxx_new: all operator new calls" 229 \
		"$(json_get "$D" 'sum(v["calls"] for k, v in d["functions"].items() if k.startswith("new"))' 2>&1)"
else
	not_ok "cxx_new: dump written" "no dump at $D"
fi

# --- names: demangled in every human-readable output --------------------------------------------
# Each C++ program under the shim with full leak records, by default (the
# caller only) and with 16-frame stacks; then every text command of
# allocspy-report on its dump, two programs compared (their sites), and
# the HTML pages. No _Z name anywhere.
R=$TMP/names
mkdir -p "$R"
for p in cxx_new cxx_containers cxx_smart cxx_threads cxx_exceptions leak_cxx; do
	[ -x "$PROGS/$p" ] || continue
	(cd "$R" && env ALLOCSPY_LEAK_CHECK=full ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" \
		"$PROGS/$p" >/dev/null 2>"$R/$p.exit1")
	(cd "$R" && env ALLOCSPY_LEAK_CHECK=full ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$R/$p.json" \
		LD_PRELOAD="$LIB" "$PROGS/$p" >/dev/null 2>"$R/$p.exit16")
	"$REPORT" "$R/$p.json" >"$R/$p.summary" 2>&1
	"$REPORT" leaks --show-leak-kinds=all "$R/$p.json" >"$R/$p.leaks" 2>&1
	"$REPORT" leaks --show-leak-kinds=all --gen-suppressions "$R/$p.json" >"$R/$p.gen" 2>&1
	"$REPORT" timeline "$R/$p.json" >"$R/$p.timeline" 2>&1
	"$REPORT" html -o "$R/$p.html" "$R/$p.json" 2>"$R/$p.html.err"
done
"$REPORT" compare "$R/cxx_containers.json" "$R/leak_cxx.json" >"$R/compare" 2>&1
"$REPORT" html -o "$R/two.html" "$R/cxx_containers.json" "$R/leak_cxx.json" 2>"$R/two.err"
check "the C++ outputs were all written (exit texts, summaries, leaks, timelines, compare, pages)" 44 \
	"$(cd "$R" && ls *.exit1 *.exit16 *.summary *.leaks *.gen *.timeline *.html compare | wc -l)"
check_match "... and they name C++ functions, demangled" "operator new\\(unsigned long\\)" "$(cat "$R/leak_cxx.leaks")"
check_match "... with the sites of compare among them" "^std::.*::allocate\\(unsigned long, void const\\*\\) \\(new_allocator\\.h:[0-9]+\\)$" \
	"$(cat "$R/compare")"
no_mangled "no mangled name in the exit texts (1 and 16 frames, full leak records)" "$R"/*.exit1 "$R"/*.exit16
no_mangled "no mangled name in allocspy-report's summary, leaks, timeline and compare" \
	"$R"/*.summary "$R"/*.leaks "$R"/*.timeline "$R/compare"
no_mangled "no mangled name in --gen-suppressions output but its fun: lines" "$R"/*.gen
no_mangled "no mangled name in the HTML pages" "$R"/*.html

# par_local_plugin: a C program dlopens C++ code without RTLD_GLOBAL, so
# libstdc++ is only in the plugin's scope, where the shim's dlsym does not
# look: 20 objects of alignas(128) from operator new keep their alignment
# (the shim gave malloc's 16 bytes before), and the heap summary equals
# valgrind's (the shim counted its own failed lookups before).
if [ -x "$PROGS/par_local_plugin" ]; then
	parity par_local_plugin "$PROGS/par_local_plugin"
	check "par_local_plugin: stdout under the shim" "misaligned objects: 0" \
		"$(cat "$d/asp.out")"
else
	not_ok "par_local_plugin: built" "missing $PROGS/par_local_plugin: run make test-progs"
fi

# par_new_plugin: a C program that dlopens C++ code whose operator new
# fails and throws std::bad_alloc (valgrind cannot throw: it aborts, so
# the reference is the native run). The program had no libgcc_s when it
# started, so the shim throws bad_alloc itself; the program must catch all
# 4 as natively, and the thread count on afterwards: the 3 blocks it then
# leaks are in the LEAK SUMMARY, and the dump counts 4 new[] calls (3
# failed) and 1 failed aligned new. In track mode and in count mode.
if [ -x "$PROGS/par_new_plugin" ]; then
	native=$("$PROGS/par_new_plugin"; echo "status $?")
	P=$TMP/new_plugin
	mkdir -p "$P"
	for mode in track count; do
		rm -f "$P/$mode.json"
		out=$(vg_env ALLOCSPY_MODE=$mode ALLOCSPY_OUTPUT="$P/$mode.json" LD_PRELOAD="$LIB" \
			"$PROGS/par_new_plugin" 2>"$P/$mode.err"; echo "status $?")
		check "par_new_plugin, $mode mode: stdout and status as without the shim" "$native" "$out"
		check "par_new_plugin, $mode mode: new[] calls and failures, aligned new's, the 3 blocks after them (4,097 to 8,192 bytes)" \
			"(4, 3, 1, 1, 3)" \
			"$(json_get "$P/$mode.json" '(d["functions"]["new[]"]["calls"], d["functions"]["new[]"]["failed"], d["functions"]["new_aligned"]["calls"], d["functions"]["new_aligned"]["failed"], sum(1 for h in d["histogram"] if h["le"] == 8192 for _ in range(h["count"])))' 2>&1)"
	done
	check "par_new_plugin: its 3 leaked blocks in the LEAK SUMMARY" \
		"definitely lost: 12,963 bytes in 3 blocks" \
		"$(grep -o 'definitely lost: .*' "$P/track.err")"
else
	not_ok "par_new_plugin: built" "missing $PROGS/par_new_plugin: run make test-progs"
fi
