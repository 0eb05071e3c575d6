#!/bin/sh
# t70-launcher.sh - build/allocspy: options, environment, LD_PRELOAD, the
# refusal of static programs and the exit statuses (125 its own error, 126
# cannot run or trace, 127 not found, else the program's own).
. "$(dirname "$0")/lib.sh"

# launch ARGS...: runs them; stdout, stderr and status in $TMP/out, err, rc.
launch() {
	"$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	echo $? >"$TMP/rc"
}
out() { cat "$TMP/out"; }
err() { cat "$TMP/err"; }
rc() { cat "$TMP/rc"; }

# refused NAME STATUS MESSAGE ARGS...: allocspy ARGS exits with STATUS,
# prints nothing on stdout and exactly MESSAGE on stderr.
refused() {
	name=$1 status=$2 msg=$3; shift 3
	launch "$L" "$@"
	check "$name" "$status|$msg|" "$(rc)|$(err)|$(out)"
}

if [ ! -x "$LAUNCH" ]; then
	not_ok "launcher built" "$LAUNCH is missing; run make"
	exit 0
fi

VERSION=$(sed -n 's/^VERSION *:= *//p' "$TOP/Makefile")
CC=${CC:-cc}

# A stand-in for the shim, so that these tests do not depend on it: a
# shared object whose malloc is glibc's (the launcher checks that what it
# preloads exports malloc). "dir" holds a copy of the launcher beside one.
mkdir -p "$TMP/dir" "$TMP/other"
printf '#include <stddef.h>\nextern void *__libc_malloc(size_t);\nvoid *malloc(size_t n) { return __libc_malloc(n); }\n' >"$TMP/stub.c"
$CC -shared -fPIC -o "$TMP/dir/liballocspy.so" "$TMP/stub.c"
$CC -shared -fPIC -o "$TMP/other/libother.so" "$TMP/stub.c"
cp "$LAUNCH" "$TMP/dir/allocspy"
REAL=$(cd "$TMP" && pwd -P)
STUB=$REAL/dir/liballocspy.so
L="$TMP/dir/allocspy"
unset ALLOCSPY_LIB ALLOCSPY_MODE ALLOCSPY_OUTPUT ALLOCSPY_BACKTRACE ALLOCSPY_UNWIND \
	ALLOCSPY_LEAK_CHECK ALLOCSPY_LOG_FILE ALLOCSPY_QUIET ALLOCSPY_SUPPRESSIONS \
	ALLOCSPY_FOLLOW_CHILDREN ALLOCSPY_TRACE_CHILDREN_SKIP ALLOCSPY_ERROR_EXITCODE \
	ALLOCSPY_ERROR_EXITCODE_CHILDREN ALLOCSPY_ERRORS_FOR_LEAK_KINDS ALLOCSPY_SNAPSHOTS \
	ALLOCSPY_SAMPLE ALLOCSPY_SAMPLE_SEED ALLOCSPY_INTERVAL_MS ALLOCSPY_DUMP_ON_SIGNAL \
	ALLOCSPY_REF_CROSS LD_PRELOAD

# --- --help and --version ---------------------------------------------------------

launch "$LAUNCH" --help
check "--help exits 0 with nothing on stderr" "0|" "$(rc)|$(err)"
check_match "--help prints the usage first" '^usage: allocspy \[options\] \[--\] program' "$(out | head -n 1)"
help_opts=$(out | grep -oE '^ +--[a-z-]+' | tr -d ' ' | sort)

launch "$LAUNCH" --version
check "--version prints the Makefile's version" "0|allocspy $VERSION|" "$(rc)|$(out)|$(err)"
check "allocspy(1) gives the same version" "1" \
	"$(grep -c "^\.Ql allocspy $VERSION\$" "$TOP/man/allocspy.1")"

# The option lists of --help, of the man page's option list and synopsis,
# and of the launcher's own table are the same.
man_opts=$(sed -n 's/^\.It Fl \(-[a-z][a-z-]*\).*/-\1/p' "$TOP/man/allocspy.1" | sort)
syn_opts=$(sed -n '/^\.Sh SYNOPSIS/,/^\.Sh DESCRIPTION/p' "$TOP/man/allocspy.1" |
	grep -oE '(Fl|\|) -[a-z][a-z-]*' | sed 's/^.* /-/' | sort)
src_opts=$(grep -oE '^	\{ "[a-z-]+", OPT_' "$TOP/launcher/allocspy.c" |
	sed 's/^	{ "\([a-z-]*\)".*/--\1/' | sort)
check "--help lists 25 options" "25" "$(printf '%s\n' "$help_opts" | grep -c .)"
launch "$LAUNCH" -h
check "-h prints the same usage" "0|$(sed -n 1p "$TMP/out")|" "$(rc)|$(out | head -n 1)|$(err)"
check "--help and allocspy(1) OPTIONS list the same options" "$help_opts" "$man_opts"
check "--help and allocspy(1) SYNOPSIS list the same options" "$help_opts" "$syn_opts"
check "--help and the launcher's option table agree" "$help_opts" "$src_opts"

launch sh -c "'$LAUNCH' --version >/dev/full"
check "--version to a full disk exits 125" \
	"125|allocspy: error: standard output: No space left on device" "$(rc)|$(err)"

# --- usage errors: one line, status 125 ---------------------------------------------

refused "an unknown option" 125 "allocspy: error: unknown option '--bogus' (try --help)" --bogus true
refused "an unknown option with a value" 125 "allocspy: error: unknown option '--bogus' (try --help)" --bogus=1 true
refused "a short option" 125 "allocspy: error: unknown option '-q' (try --help)" -q true
refused "a prefix of an option is not it, but it is suggested" 125 \
	"allocspy: error: unknown option '--mod' (did you mean --mode?)" --mod=track true
refused "a misspelled option: the closest is suggested" 125 \
	"allocspy: error: unknown option '--leak-chek' (did you mean --leak-check?)" --leak-chek=full true
refused "another" 125 \
	"allocspy: error: unknown option '--trace-childs' (did you mean --trace-children?)" --trace-childs=no true
refused "a misspelled choice: the closest is suggested" 125 \
	"allocspy: error: --leak-check: 'ful' is not summary, full or no (did you mean full?)" --leak-check=ful true
refused "a bad --num-callers" 125 "allocspy: error: --num-callers: '65' is not a number from 0 to 64" \
	--num-callers=65 true
refused "a bad --error-exitcode" 125 "allocspy: error: --error-exitcode: '256' is not a number from 0 to 255" \
	--error-exitcode=256 true
refused "a bad --sample" 125 \
	"allocspy: error: --sample: '1099511627777' is not a number from 0 to 1099511627776" \
	--sample=1099511627777 true
refused "a bad --trace-children" 125 "allocspy: error: --trace-children: 'maybe' is not yes or no" \
	--trace-children=maybe true
refused "a missing --suppressions file" 125 \
	"allocspy: error: --suppressions: $TMP/none.supp: No such file or directory" --suppressions="$TMP/none.supp" true
refused "a bad --mode" 125 "allocspy: error: --mode: 'fast' is not track or count" --mode=fast true
refused "a bad --unwind" 125 "allocspy: error: --unwind: 'dwarf' is not libunwind or fp" --unwind=dwarf true
refused "a bad --leak-check" 125 "allocspy: error: --leak-check: 'yes' is not summary, full or no" --leak-check=yes true
refused "a bad --backtrace" 125 "allocspy: error: --backtrace: '4x' is not a number from 0 to 64" --backtrace=4x true
refused "a negative --backtrace" 125 "allocspy: error: --backtrace: '-1' is not a number from 0 to 64" --backtrace=-1 true
refused "a --backtrace too large" 125 "allocspy: error: --backtrace: '65' is not a number from 0 to 64" --backtrace=65 true
refused "an empty --backtrace" 125 "allocspy: error: --backtrace: '' is not a number from 0 to 64" --backtrace= true
refused "an empty --output" 125 "allocspy: error: --output: the value is empty" --output= true
refused "a value for --quiet" 125 "allocspy: error: --quiet takes no value" --quiet=1 true
refused "--log-file with no value" 125 "allocspy: error: --log-file needs a value" --log-file
refused "no program" 125 "allocspy: error: no program to run (try --help)" --quiet
refused "no program after --" 125 "allocspy: error: no program to run (try --help)" --

# --- not found (127) and cannot run (126) --------------------------------------------

refused "a program not in PATH" 127 "allocspy: error: allocspy-no-such-program: command not found" \
	allocspy-no-such-program
refused "a path that does not exist" 127 "allocspy: error: ./no/such/prog: No such file or directory" \
	./no/such/prog
refused "a directory" 126 "allocspy: error: $TMP: is a directory" "$TMP"
printf '#!/bin/sh\nexit 0\n' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
refused "a file that is not executable" 126 "allocspy: error: $TMP/noexec: Permission denied" "$TMP/noexec"
mkdir -p "$TMP/p1"
cp "$TMP/noexec" "$TMP/p1/asp-noexec"
launch env PATH="$TMP/p1" "$L" asp-noexec
check "a program in PATH that is not executable" \
	"126|allocspy: error: asp-noexec: Permission denied" "$(rc)|$(err)"

# --- statically linked programs (126) --------------------------------------------------

echo 'int main(void) { return 0; }' >"$TMP/st.c"
if $CC -static -o "$TMP/static" "$TMP/st.c" 2>/dev/null; then
	refused "a static program is refused" 126 \
		"allocspy: error: $TMP/static: statically linked; LD_PRELOAD cannot trace it" "$TMP/static"
	mkdir -p "$TMP/p2"
	cp "$TMP/static" "$TMP/p2/asp-static"
	launch env PATH="$TMP/p2" "$L" -- asp-static
	check "a static program found in PATH is refused under the name given" \
		"126|allocspy: error: asp-static: statically linked; LD_PRELOAD cannot trace it" "$(rc)|$(err)"
	printf '#!%s -x\necho hi\n' "$TMP/static" >"$TMP/static-script"
	chmod 755 "$TMP/static-script"
	refused "a script with a static interpreter is refused" 126 \
		"allocspy: error: $TMP/static-script: its interpreter $TMP/static is statically linked; LD_PRELOAD cannot trace it" \
		"$TMP/static-script"
else
	ok "a static program is refused # SKIP no static libc"
fi
if $CC -static-pie -o "$TMP/static-pie" "$TMP/st.c" 2>/dev/null; then
	refused "a static-pie program is refused" 126 \
		"allocspy: error: $TMP/static-pie: statically linked; LD_PRELOAD cannot trace it" "$TMP/static-pie"
else
	ok "a static-pie program is refused # SKIP no static-pie libc"
fi

# Hand-made ELF files: the header reader, for both classes, both byte
# orders and the extended program header count (PN_XNUM). The dynamic ones
# are not real programs: they only must not be called static.
python3 - "$TMP" <<'EOF'
import struct, sys, os
d = sys.argv[1]
PT_LOAD, PT_INTERP, PT_NOTE = 1, 3, 4

def elf(name, is64, msb, types, xnum=False, etype=2, machine=0xbeef):
    e = '>' if msb else '<'
    ehsize, phsize, shsize = (64, 56, 64) if is64 else (52, 32, 40)
    phoff = ehsize
    shoff = phoff + phsize * len(types) if xnum else 0
    phnum = 0xffff if xnum else len(types)
    ident = b'\x7fELF' + bytes([2 if is64 else 1, 2 if msb else 1, 1]) + bytes(9)
    fmt = e + ('HHIQQQIHHHHHH' if is64 else 'HHIIIIIHHHHHH')
    hdr = ident + struct.pack(fmt, etype, machine, 1, 0, phoff, shoff, 0,
                              ehsize, phsize, phnum, shsize, 1 if xnum else 0, 0)
    body = b''
    for t in types:
        if is64:
            body += struct.pack(e + 'IIQQQQQQ', t, 4, 0, 0, 0, 0, 0, 8)
        else:
            body += struct.pack(e + 'IIIIIIII', t, 0, 0, 0, 0, 0, 4, 4)
    if xnum:
        if is64:
            body += struct.pack(e + 'IIQQQQIIQQ', 0, 0, 0, 0, 0, 0, 0, len(types), 0, 0)
        else:
            body += struct.pack(e + 'IIIIIIIIII', 0, 0, 0, 0, 0, 0, 0, len(types), 0, 0)
    p = os.path.join(d, name)
    with open(p, 'wb') as f:
        f.write(hdr + body)
    os.chmod(p, 0o755)

elf('elf32-static', False, False, [PT_LOAD, PT_NOTE])
elf('elf32-dynamic', False, False, [PT_LOAD, PT_INTERP])
elf('elf64be-static', True, True, [PT_LOAD])
elf('elf64be-dynamic', True, True, [PT_NOTE, PT_LOAD, PT_INTERP])
elf('elf32be-static', False, True, [PT_LOAD])
elf('elf64-xnum-static', True, False, [PT_LOAD] * 3, xnum=True)
elf('elf64-xnum-dynamic', True, False, [PT_LOAD] * 3 + [PT_INTERP], xnum=True)
elf('elf64-nophdr', True, False, [])
elf('elf64-relocatable', True, False, [], etype=1)
EOF
for f in elf32-static elf64be-static elf32be-static elf64-xnum-static elf64-nophdr; do
	refused "ELF: $f is refused" 126 \
		"allocspy: error: $TMP/$f: statically linked; LD_PRELOAD cannot trace it" "$TMP/$f"
done
for f in elf32-dynamic elf64be-dynamic elf64-xnum-dynamic elf64-relocatable; do
	launch "$L" "$TMP/$f"
	check "ELF: $f is not called static" "0" "$(grep -c 'statically linked' "$TMP/err")"
done

if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp /bin/true "$TMP/setuid"
	chown nobody "$TMP/setuid" && chmod 4755 "$TMP/setuid"
	refused "a set-user-ID program of another user is refused" 126 \
		"allocspy: error: $TMP/setuid: set-user-ID or set-group-ID; LD_PRELOAD cannot trace it" \
		"$TMP/setuid"
	cp /bin/true "$TMP/setuid-own"
	chmod 4755 "$TMP/setuid-own"
	launch "$L" "$TMP/setuid-own"
	check "a set-user-ID program of one's own user runs" "0|" "$(rc)|$(err)"
else
	ok "a set-user-ID program is refused # SKIP not root"
fi

# --- the program's status ----------------------------------------------------------------

launch "$L" true
check "true exits 0" "0||" "$(rc)|$(out)|$(err)"
launch "$L" false
check "false exits 1" "1||" "$(rc)|$(out)|$(err)"
launch "$L" -- sh -c 'exit 3'
check "a program exiting 3 exits 3" "3||" "$(rc)|$(out)|$(err)"
launch "$L" -- sh -c 'kill -TERM $$'
check "a program killed by SIGTERM is killed the same way" "143" "$(rc)"
launch "$L" sh -c 'printf "%s|" "$0" "$@"' zero --mode=count -- x
check "options after the program are the program's" "0|zero|--mode=count|--|x|" "$(rc)|$(out)"
printf 'echo "no #! line: $1"\nexit 4\n' >"$TMP/plain-script"
chmod 755 "$TMP/plain-script"
launch "$L" "$TMP/plain-script" arg
check "a script without #! is run by /bin/sh" "4|no #! line: arg" "$(rc)|$(out)"
mkdir -p "$TMP/p3"
printf '#!/bin/sh\necho p3 "$@"\n' >"$TMP/p3/asp-prog"
chmod 755 "$TMP/p3/asp-prog"
launch env PATH="$TMP/p1:$TMP/p3:/usr/bin:/bin" "$L" asp-noexec
check "PATH: an unexecutable match alone exits 126" "126" "$(rc)"
cp "$TMP/p3/asp-prog" "$TMP/p3/asp-noexec"
launch env PATH="$TMP/p1:$TMP/p3:/usr/bin:/bin" "$L" asp-noexec a b
check "PATH: the executable one runs" "0|p3 a b" "$(rc)|$(out)"
launch env PATH=":/usr/bin:/bin" sh -c "cd '$TMP/p3' && '$L' asp-prog c"
check "PATH: an empty entry is the current directory" "0|p3 c" "$(rc)|$(out)"

# --- the environment the program sees -------------------------------------------------------

launch "$L" -- sh -c 'echo "$LD_PRELOAD"'
check "LD_PRELOAD is the library beside the launcher, absolute" "0|$STUB" "$(rc)|$(out)"
launch env LD_PRELOAD="$REAL/other/libother.so" "$L" -- sh -c 'echo "$LD_PRELOAD"'
check "an existing LD_PRELOAD is kept after it" "0|$STUB:$REAL/other/libother.so" "$(rc)|$(out)"
launch sh -c "cd '$TMP/other' && ALLOCSPY_LIB=libother.so '$L' sh -c 'echo \"\$LD_PRELOAD\"'"
check "a relative ALLOCSPY_LIB is made absolute" "0|$REAL/other/libother.so" "$(rc)|$(out)"
launch env ALLOCSPY_LIB="$TMP/none.so" "$L" true
check "a missing ALLOCSPY_LIB exits 125" \
	"125|allocspy: error: $TMP/none.so: No such file or directory|" "$(rc)|$(err)|$(out)"
launch env ALLOCSPY_LIB=/etc/passwd "$L" true
check "ALLOCSPY_LIB=/etc/passwd: an error, not an untraced run" \
	"125|allocspy: error: /etc/passwd: not an ELF file, so not liballocspy.so (ALLOCSPY_LIB)|" "$(rc)|$(err)|$(out)"
echo 'int no_malloc_here;' >"$TMP/nomalloc.c"
$CC -shared -fPIC -o "$TMP/other/libnomalloc.so" "$TMP/nomalloc.c"
launch env ALLOCSPY_LIB="$TMP/other/libnomalloc.so" "$L" true
check "ALLOCSPY_LIB naming a shared object without malloc: an error" \
	"125|allocspy: error: $REAL/other/libnomalloc.so: exports no malloc, so not liballocspy.so (ALLOCSPY_LIB)|" \
	"$(rc)|$(err)|$(out)"
launch env ALLOCSPY_LIB="$TMP" "$L" true
check "ALLOCSPY_LIB naming a directory: an error" \
	"125|allocspy: error: $REAL: not a regular file, so not liballocspy.so (ALLOCSPY_LIB)|" "$(rc)|$(err)|$(out)"
cp "$LAUNCH" "$TMP/alone"
launch "$TMP/alone" true
check "no library beside the launcher exits 125" \
	"125|allocspy: error: $REAL/liballocspy.so: No such file or directory" "$(rc)|$(err)"
mkdir -p "$TMP/sp ace"
cp "$TMP/dir/liballocspy.so" "$TMP/sp ace/"
launch env ALLOCSPY_LIB="$TMP/sp ace/liballocspy.so" "$L" true
check "a library path with a space exits 125" \
	"125|allocspy: error: $REAL/sp ace/liballocspy.so: LD_PRELOAD cannot hold a path with a colon or a space" \
	"$(rc)|$(err)"

vars='echo "$ALLOCSPY_MODE|$ALLOCSPY_OUTPUT|$ALLOCSPY_BACKTRACE|$ALLOCSPY_UNWIND|$ALLOCSPY_LEAK_CHECK|$ALLOCSPY_LOG_FILE|$ALLOCSPY_QUIET"'
launch "$L" --mode=count --output=o.%p.json --backtrace=8 --unwind=fp \
	--leak-check=full --log-file=log.%e --quiet -- sh -c "$vars"
check "each option sets its variable" "0|count|o.%p.json|8|fp|full|log.%e|1" "$(rc)|$(out)"
launch "$L" --mode track --output x.json --backtrace 0 --unwind libunwind \
	--leak-check no --log-file y sh -c "$vars"
check "values may be separate arguments" "0|track|x.json|0|libunwind|no|y|" "$(rc)|$(out)"
launch "$L" --mode=count --mode=track sh -c "$vars"
check "the last of a repeated option counts" "0|track||||||" "$(rc)|$(out)"
launch env ALLOCSPY_MODE=count ALLOCSPY_QUIET=1 "$L" --backtrace=2 sh -c "$vars"
check "variables with no option given are inherited" "0|count||2||||1" "$(rc)|$(out)"

# valgrind's spellings, and the other settings of the library.
printf '{\n}\n' >"$TMP/a.supp"
printf '{\n}\n' >"$TMP/other/b.supp"
launch sh -c "cd '$TMP/other' && '$L' --suppressions=../a.supp --suppressions b.supp sh -c 'echo \"\$ALLOCSPY_SUPPRESSIONS\"'"
check "--suppressions, twice: both files, made absolute, in ALLOCSPY_SUPPRESSIONS" \
	"0|$REAL/a.supp:$REAL/other/b.supp" "$(rc)|$(out)"
vars2='echo "$ALLOCSPY_BACKTRACE|$ALLOCSPY_FOLLOW_CHILDREN|$ALLOCSPY_TRACE_CHILDREN_SKIP|$ALLOCSPY_ERROR_EXITCODE|$ALLOCSPY_ERROR_EXITCODE_CHILDREN|$ALLOCSPY_ERRORS_FOR_LEAK_KINDS|$ALLOCSPY_SNAPSHOTS|$ALLOCSPY_SAMPLE|$ALLOCSPY_SAMPLE_SEED|$ALLOCSPY_INTERVAL_MS|$ALLOCSPY_DUMP_ON_SIGNAL|$ALLOCSPY_REF_CROSS"'
launch "$L" --num-callers=12 --trace-children=no --trace-children-skip='*/sh,make' --error-exitcode=7 \
	--error-exitcode-children=yes --errors-for-leak-kinds=all --snapshots=20 --sample=4096 \
	--sample-seed=5 --interval-ms=100 --dump-on-signal=no --ref-cross=yes -- sh -c "$vars2"
check "the other options set their variables" "0|12|no|*/sh,make|7|yes|all|20|4096|5|100|no|yes" "$(rc)|$(out)"

# valgrind's --run-libc-freeres and --run-cxx-freeres set ALLOCSPY_FREERES.
freeres() { launch env "$@" sh -c 'echo "$ALLOCSPY_FREERES"'; echo "$(rc)|$(out)|$(err)"; }
check "--run-libc-freeres=no --run-cxx-freeres=no: ALLOCSPY_FREERES=no" "0|no|" \
	"$(freeres "$L" --run-libc-freeres=no --run-cxx-freeres=no)"
check "--run-libc-freeres=no: libstdc++'s only" "0|cxx|" "$(freeres "$L" --run-libc-freeres=no)"
check "--run-cxx-freeres no: glibc's only" "0|libc|" "$(freeres "$L" --run-cxx-freeres no)"
check "--run-libc-freeres=yes over ALLOCSPY_FREERES=cxx: both" "0|yes|" \
	"$(freeres ALLOCSPY_FREERES=cxx "$L" --run-libc-freeres=yes)"
check "no freeres option: ALLOCSPY_FREERES is left as it is" "0|libc|" \
	"$(freeres ALLOCSPY_FREERES=libc "$L")"
refused "--run-cxx-freeres=maybe" 125 "allocspy: error: --run-cxx-freeres: 'maybe' is not yes or no" \
	--run-cxx-freeres=maybe true

# An installed launcher preloads ASP_LIBDIR/liballocspy.so.
mkdir -p "$TMP/inst/lib"
cp "$TMP/dir/liballocspy.so" "$TMP/inst/lib/"
if $CC -std=gnu11 -D_GNU_SOURCE -DASP_VERSION="\"$VERSION\"" -DASP_INSTALLED \
	-DASP_LIBDIR="\"$TMP/inst/lib\"" -I"$TOP/common" $(pkg-config --cflags libdw 2>/dev/null) \
	-o "$TMP/inst/allocspy" "$TOP/launcher/allocspy.c" "$TOP/launcher/top.c" "$TOP/common/dwsym.c" -ldl; then
	launch "$TMP/inst/allocspy" sh -c 'echo "$LD_PRELOAD"'
	check "an installed launcher preloads from ASP_LIBDIR" "0|$REAL/inst/lib/liballocspy.so" "$(rc)|$(out)"
	launch env ALLOCSPY_LIB="$STUB" "$TMP/inst/allocspy" sh -c 'echo "$LD_PRELOAD"'
	check "ALLOCSPY_LIB overrides ASP_LIBDIR" "0|$STUB" "$(rc)|$(out)"
else
	not_ok "an installed launcher builds"
fi

# --- with the real shim -------------------------------------------------------------------------

if [ ! -f "$LIB" ]; then
	ok "the shim writes the summary and the dump # SKIP $LIB not built"
	exit 0
fi
cd "$TMP" || exit 1
# A hung shim fails these checks (status 124) instead of hanging the run.
launch timeout -k 5 60 "$LAUNCH" --output="$TMP/d.%p.json" -- true
pid=$(sed -n 's/^==\([0-9]*\)== HEAP SUMMARY:$/\1/p' "$TMP/err")
check "true under the shim exits 0" "0" "$(rc)"
check_match "the HEAP SUMMARY is on stderr" '^[0-9]+$' "$pid"
if [ -f "$TMP/d.$pid.json" ]; then
	check "--output: the dump is written there" "allocspy-dump|$pid|track|$TMP/d.%p.json" \
		"$(json_get "$TMP/d.$pid.json" '"|".join(str(x) for x in (d["format"], d["program"]["pid"], d["options"]["mode"], d["options"]["output"]))')"
else
	not_ok "--output: the dump is written there" "no $TMP/d.$pid.json" "$(ls "$TMP" | grep json)"
fi

launch timeout -k 5 60 "$LAUNCH" --mode=count --backtrace=3 --unwind=fp --leak-check=full \
	--output="$TMP/c.json" -- true
check "count mode: in use at exit is ?" "0|1" "$(rc)|$(grep -c '^==[0-9]*==     in use at exit: ? bytes in [0-9,]* blocks$' "$TMP/err")"
check "count mode: the total heap usage, then a line saying leaks and heap errors need track mode" \
	"==P==   total heap usage: N allocs, N frees, N bytes allocated
==P== 
==P== Leaks and heap errors are not looked for in count mode: rerun with ALLOCSPY_MODE=track" \
	"$(tail -n 3 "$TMP/err" | sed 's/^==[0-9]*==/==P==/; s/[0-9][0-9,]*/N/g')"
if [ -f "$TMP/c.json" ]; then
	check "the options reach the dump" "count|3|fp|full" \
		"$(json_get "$TMP/c.json" '"|".join(str(d["options"][k]) for k in ("mode", "backtrace", "unwind", "leak_check"))')"
else
	not_ok "the options reach the dump" "no $TMP/c.json"
fi

rm -f "$TMP"/q.json
launch timeout -k 5 60 "$LAUNCH" --quiet --output="$TMP/q.json" -- true
check "--quiet: nothing on stderr, the dump is written" "0||yes" \
	"$(rc)|$(err)|$([ -f "$TMP/q.json" ] && echo yes)"
# A misspelled variable: the library warns once, naming the close match,
# and the program runs as usual.
launch timeout -k 5 60 env ALLOCSPY_BACKTRACES=16 ALLOCSPY_BACKTRACE=2 "$LAUNCH" --quiet --output=none -- \
	sh -c 'exit 5'
check "ALLOCSPY_BACKTRACES: one warning naming ALLOCSPY_BACKTRACE, and the program runs" \
	"5|allocspy: warning: ALLOCSPY_BACKTRACES: not an allocspy variable; did you mean ALLOCSPY_BACKTRACE?|" \
	"$(rc)|$(err)|$(out)"
launch timeout -k 5 60 env ALLOCSPY_NOTHING_LIKE_IT=1 "$LAUNCH" --quiet --output=none -- true
check "an unknown variable far from any name: a warning without a guess" \
	"0|allocspy: warning: ALLOCSPY_NOTHING_LIKE_IT: not an allocspy variable" "$(rc)|$(err)"
launch timeout -k 5 60 env ALLOCSPY_LEAKCHECK=full ALLOCSPY_OUTPT=x.json "$LAUNCH" --quiet --output=none -- true
check "two misspelled variables: one warning each" \
"0|allocspy: warning: ALLOCSPY_LEAKCHECK: not an allocspy variable; did you mean ALLOCSPY_LEAK_CHECK?
allocspy: warning: ALLOCSPY_OUTPT: not an allocspy variable; did you mean ALLOCSPY_OUTPUT?" \
	"$(rc)|$(err | sort)"
launch timeout -k 5 60 env ALLOCSPY_BACKTRACE=99 "$LAUNCH" --quiet --output=none -- true
check "a bad value from the environment: the library's warning gives the range and the default" \
	"0|allocspy: warning: ALLOCSPY_BACKTRACE=99: not an integer from 0 to 64; the default, 1, is used" "$(rc)|$(err)"

launch timeout -k 5 60 "$LAUNCH" --output=none --log-file="$TMP/log.%p" -- sh -c 'echo $$'
check "--log-file: the summary goes to the file, not stderr" "0||1" \
	"$(rc)|$(err)|$(grep -c '^==[0-9]*== HEAP SUMMARY:$' "$TMP/log.$(out)" 2>/dev/null)"
launch timeout -k 5 60 "$LAUNCH" --output=none --log-file="$TMP/one.log" -- sh -c 'echo $$'
first=$(out)
launch timeout -k 5 60 "$LAUNCH" --output=none --log-file="$TMP/one.log" -- sh -c 'echo $$'
check "--log-file without %p: a second run appends its summary after the first's" \
	"==$first== HEAP SUMMARY:|==$(out)== HEAP SUMMARY:" \
	"$(grep 'HEAP SUMMARY:$' "$TMP/one.log" | tr '\n' '|' | sed 's/|$//')"
check "--output=none: no dump" "" "$(ls "$TMP" | grep '^allocspy\..*\.json$')"

# --trace-children-skip: a wrapper script whose shell runs two programs;
# the shell (its #! names /bin/sh, whatever that is) skipped, or the
# programs, or both; a skipped process still passes the shim on.
if [ -x "$PROGS/par_basic" ]; then
	printf '#!/bin/sh
"%s" >/dev/null
"%s" >/dev/null
exit 0
' "$PROGS/par_basic" "$PROGS/par_basic" \
		>"$TMP/wrapper"
	chmod 755 "$TMP/wrapper"
	for skip in "" "*/sh" "par_*" "*/sh,*/par_basic"; do
		rm -rf "$TMP/sk" && mkdir "$TMP/sk"
		launch timeout -k 5 60 "$LAUNCH" --output="$TMP/sk/%e.%p.json" ${skip:+--trace-children-skip=$skip} \
			-- "$TMP/wrapper"
		printf '%s|%s|%s\n' "$(rc)" "$(grep -c 'HEAP SUMMARY' "$TMP/err")" \
			"$(ls "$TMP/sk" | sed 's/\.[0-9]*\.json$//' | sort | paste -sd' ')"
	done >"$TMP/skip.res"
	check "--trace-children-skip: none, the shell, the programs, all" \
		"0|3|$(basename "$(readlink -f /bin/sh)") par_basic par_basic
0|2|par_basic par_basic
0|1|$(basename "$(readlink -f /bin/sh)")
0|0|" "$(cat "$TMP/skip.res")"
fi
