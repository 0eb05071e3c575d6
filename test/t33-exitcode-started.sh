#!/bin/sh
# t33-exitcode-started.sh - ALLOCSPY_ERROR_EXITCODE changes the status of
# the process the user started, not of the children it runs under the shim
# (valgrind's --error-exitcode, whose children run untraced by default),
# unless ALLOCSPY_ERROR_EXITCODE_CHILDREN=1 asks for them too. gcc -O2 -c,
# whose cc1 has a block possibly lost: with the default kinds the driver's
# own definite leaks give 7 under both tools, with possible alone 0, and
# the object is written in every case; with the children asked for, cc1
# fails and the driver stops (7, no object). A shell that runs a leaky
# child (leak_definite) and prints its status: 0 under both tools; a
# forked child without exec keeps its status too; a program exec'd in
# place of the one started (the same process) is the started one.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIB" ] || [ ! -x "$PROGS/leak_definite" ]; then
	not_ok "the shim and the test programs are built" "run make && make test-progs"
	exit 0
fi

printf 'int twice(int x) { return 2 * x; }\n' >"$TMP/t.c"

# gcc_run TOOL KINDS [ENV...]: gcc -O2 -c under TOOL (vg or asp); prints
# "STATUS object" or "STATUS none".
gcc_run() {
	tool=$1 kinds=$2
	shift 2
	rm -f "$TMP/t.o"
	if [ "$tool" = vg ]; then
		(cd "$TMP" && timeout -k 5 120 valgrind -q --leak-check=full --errors-for-leak-kinds="$kinds" \
			--error-exitcode=7 gcc -O2 -c t.c -o t.o >/dev/null 2>&1)
	else
		(cd "$TMP" && timeout -k 5 120 env ALLOCSPY_ERRORS_FOR_LEAK_KINDS="$kinds" ALLOCSPY_ERROR_EXITCODE=7 \
			ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 "$@" LD_PRELOAD="$LIB" gcc -O2 -c t.c -o t.o >/dev/null 2>&1)
	fi
	echo "$? $([ -s "$TMP/t.o" ] && echo object || echo none)"
}

if command -v gcc >/dev/null 2>&1 && command -v valgrind >/dev/null 2>&1; then
	check "gcc -c, definite and possible leaks (the default): 7 as valgrind, the object written" \
		"7 object|7 object" "$(gcc_run vg definite,possible)|$(gcc_run asp definite,possible)"
	check "gcc -c, possible leaks only (none in the driver): 0 as valgrind, the object written" \
		"0 object|0 object" "$(gcc_run vg possible)|$(gcc_run asp possible)"
	check "gcc -c with ALLOCSPY_ERROR_EXITCODE_CHILDREN=1: cc1 exits 7 for its possible leak, the driver stops (1), no object" \
		"1 none" "$(gcc_run asp possible ALLOCSPY_ERROR_EXITCODE_CHILDREN=1)"
else
	not_ok "gcc and valgrind are installed"
fi

# A shell (the process started) runs a leaky program as its child.
sh_line="$PROGS/leak_definite >/dev/null; echo \$?"
vg=$(valgrind -q --leak-check=full --error-exitcode=97 sh -c "$sh_line" 2>/dev/null; echo "status $?")
asp=$(ALLOCSPY_ERROR_EXITCODE=97 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" sh -c "$sh_line" 2>/dev/null; echo "status $?")
check "sh runs leak_definite: the child's status is its own (0), the shell's 0, as under valgrind" \
	"0
status 0" "$vg"
check "... and the same under the shim" "$vg" "$asp"
asp=$(ALLOCSPY_ERROR_EXITCODE_CHILDREN=1 ALLOCSPY_ERROR_EXITCODE=97 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
	LD_PRELOAD="$LIB" sh -c "$sh_line" 2>/dev/null; echo "status $?")
check "... with ALLOCSPY_ERROR_EXITCODE_CHILDREN=1, the child's leaks give it 97" "97
status 0" "$asp"

# The same program exec'd in place of the shell: the same process, the one
# the user started.
ALLOCSPY_ERROR_EXITCODE=97 ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" \
	sh -c "exec $PROGS/leak_definite" >/dev/null 2>&1
check "sh -c 'exec leak_definite': the program in the started process's place gets 97" 97 "$?"

# A forked child (no exec) keeps its status: python3 forks, the child
# ends by os._exit(0) (the shim's report, its blocks still reachable), the
# parent prints the child's status and ends with blocks still reachable.
# (python3 itself, not a wrapper script that may stand for it on PATH.)
PY=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -x "$PY" ]; then
	py='import os
pid = os.fork()
if pid == 0:
    os._exit(0)
print("child", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))'
	for children in 0 1; do
		out=$(ALLOCSPY_ERROR_EXITCODE_CHILDREN=$children ALLOCSPY_ERROR_EXITCODE=97 \
			ALLOCSPY_ERRORS_FOR_LEAK_KINDS=reachable ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 \
			LD_PRELOAD="$LIB" "$PY" -c "$py" 2>/dev/null; echo "status $?")
		want=0
		[ $children = 1 ] && want=97
		check "python3 forks (ALLOCSPY_ERROR_EXITCODE_CHILDREN=$children): the child's status $want, the parent's 97" \
			"child $want
status 97" "$out"
	done
fi
