#!/bin/sh
# t11-parity-libc.sh - libc functions that allocate on the program's behalf
# (stdio, scandir, qsort, getaddrinfo, time zones, regex, environment, NSS,
# dlopen and iconv) under the shim against valgrind: HEAP SUMMARY lines,
# stdout and exit status equal (lib.sh parity).
. "$(dirname "$0")/lib.sh"

for p in libc_stdio libc_scandir libc_qsort libc_netdb libc_time libc_regex \
	libc_misc libc_dlopen; do
	if [ -x "$PROGS/$p" ]; then
		parity "$p" "$PROGS/$p"
	else
		not_ok "$p: built" "missing $PROGS/$p: run make test-progs"
	fi
done
