#!/bin/sh
# t12-parity-cxx.sh - C++ under the shim against valgrind: operator new and
# delete in all their forms, the standard containers, smart pointers,
# std::thread with thread_local objects, and exceptions. HEAP SUMMARY lines,
# stdout and exit status equal (lib.sh parity); then a few of cxx_new's
# per-function counters from the dump.
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
