#!/bin/sh
# t30-leaks.sh - the leak check against valgrind's: for each leak_* program
# the HEAP SUMMARY and the LEAK SUMMARY under the shim equal valgrind's
# (lib.sh leak_parity). The C programs run twice: returning from main, and
# calling exit() from main (main's frame is then live, and its locals are
# roots). Each program's header comment says what it builds and how
# valgrind classifies it.
. "$(dirname "$0")/lib.sh"

for p in leak_definite leak_chain leak_cycle leak_interior leak_tail leak_roots \
	leak_threads leak_mmap leak_freed leak_stale leak_cxx; do
	if [ ! -x "$PROGS/$p" ]; then
		not_ok "$p: built" "missing $PROGS/$p: run make test-progs"
		continue
	fi
	leak_parity "$p" "$PROGS/$p"
	case $p in
	leak_cxx) ;;
	*) leak_parity "$p exit" "$PROGS/$p" exit ;;
	esac
done
