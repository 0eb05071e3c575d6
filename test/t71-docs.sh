#!/bin/sh
# t71-docs.sh - the man pages and the README agree with the code: mandoc
# lint is clean, every ALLOCSPY_* variable of the shim is documented and
# every documented one exists, every dump key is described, the header's
# example compiles and runs, the README's make targets exist, and every
# path the READMEs name is in the repository.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1
CC=${CC:-cc}

PAGES="man/allocspy.1 man/allocspy-report.1 man/allocspy.h.3 man/liballocspy.7"

# --- the pages ---------------------------------------------------------------------

for p in $PAGES; do
	if [ -f "$p" ]; then ok "$p exists"; else not_ok "$p exists"; fi
done

# All pages are linted together from man/, where mandoc finds the pages
# they cross-reference (it looks for NAME.SECTION in the current directory).
# mandoc also warns on stderr that the system has no mandoc.db for pages
# such as execvp(3); that is the machine, not a page.
(cd man && mandoc -Tlint -Wstyle *.1 *.3 *.7) >"$TMP/lint" 2>&1
grep -v 'outdated mandoc.db lacks' "$TMP/lint" >"$TMP/lint.pages"
for p in man/*.1 man/*.3 man/*.7; do
	check "mandoc -Tlint -Wstyle: $p is clean" "" "$(grep -F "mandoc: ${p#man/}:" "$TMP/lint.pages")"
done
check "mandoc -Tlint -Wstyle: nothing else" "" "$(grep -vE '^mandoc: [^ /]+\.[137]:' "$TMP/lint.pages")"

for p in $PAGES; do
	[ -f "$p" ] || continue
	base=${p#man/}
	want=$(echo "${base%.*} ${base##*.}" | tr 'a-z' 'A-Z')
	check "$p: .Dt names the page" ".Dt $want" "$(grep '^\.Dt ' "$p")"
done

# --- ALLOCSPY_* variables ---------------------------------------------------------------

# vars FILE...: the ALLOCSPY_* names in the files, sorted; a bare prefix
# such as "ALLOCSPY_*" in prose is not a name.
vars() {
	cat "$@" 2>/dev/null | grep -oE 'ALLOCSPY_[A-Z0-9_]*[A-Z0-9]' | sort -u
}
# missing A B: the lines of A that are not in B.
missing() {
	printf '%s\n' "$2" >"$TMP/set"
	printf '%s\n' "$1" | grep . | grep -vxF -f "$TMP/set"
}

# envcheck.c lists the valid names (and a misspelling in a comment); the
# variables the shim reads are in the other files.
shim=$(vars $(ls shim/*.c | grep -v '/envcheck\.c$'))
# The launcher's list of valid names (for its misspelling warning) and the
# man page's example of that warning name no variable that is set.
launcher=$(sed '/^static const char \*const env_names/,/^};/d' launcher/allocspy.c | vars)
man7=$(vars man/liballocspy.7)
man1=$(grep -v 'not an allocspy variable' man/allocspy.1 | vars)
readme=$(vars README.md)
known=$(printf '%s\n%s\n' "$shim" "$launcher" | grep . | sort -u)

if [ -z "$shim" ]; then
	not_ok "the shim reads ALLOCSPY_* variables" "none named in shim/*.c"
fi
check "every variable of the shim is in liballocspy(7)" "" "$(missing "$shim" "$man7")"
check "every variable of the shim is in README.md" "" "$(missing "$shim" "$readme")"
check "every variable in liballocspy(7) exists in the shim" "" "$(missing "$man7" "$shim")"
check "every variable in README.md exists in the shim or the launcher" "" "$(missing "$readme" "$known")"
check "every variable in allocspy(1) exists in the shim or the launcher" "" "$(missing "$man1" "$known")"
check "every variable the launcher sets is read by the shim" "" \
	"$(missing "$(printf '%s\n' "$launcher" | grep -vx ALLOCSPY_LIB)" "$shim")"
check "the launcher's own variable is in allocspy(1)" "ALLOCSPY_LIB" \
	"$(printf '%s\n' "$man1" | grep -x ALLOCSPY_LIB)"

# Each option of allocspy(1) says which variable it sets, and the launcher
# sets that one: ".It Fl -mode ..." then "Sets" then ".Ev ALLOCSPY_MODE".
man_pairs=$(awk '/^\.It Fl -[a-z]/ { o = $3 } /^Sets$/ { s = o } \
	/^\.Ev ALLOCSPY_/ && s != "" { print "-" s, $2; s = "" }' man/allocspy.1 | sort)
src_pairs=$(sed -n 's/^	{ "\([a-z-]*\)", OPT_[A-Z]*, "\(ALLOCSPY_[A-Z_]*\)".*/--\1 \2/p' \
	launcher/allocspy.c | sort)
check "allocspy(1) and the launcher map the options to the same variables" "$src_pairs" "$man_pairs"

# The deepest backtrace: the shim's limit, the launcher's and the pages'.
max=$(sed -n 's/^#define ASP_MAX_BACKTRACE \([0-9]*\).*/\1/p' shim/*.h)
check "the launcher's --backtrace limit is the shim's" "$max" \
	"$(sed -n 's/^#define BACKTRACE_MAX \([0-9]*\).*/\1/p' launcher/allocspy.c)"
check "allocspy(1) gives the shim's backtrace limit" "1" \
	"$(grep -c "allocation, from 0 to ${max:-?}:\$" man/allocspy.1)"
check "liballocspy(7) gives the shim's backtrace limit" "1" \
	"$(grep -c "^frames, at most ${max:-?}\.\$" man/liballocspy.7)"

# --- the dump keys ------------------------------------------------------------------------

# The names liballocspy(7) describes: the tags of its lists and the quoted
# function names.
sed -n 's/^\.It Sy //p' man/liballocspy.7 | tr -d ' ' | tr ',' '\n' >"$TMP/keys"
sed -n 's/^\.Qq \([^ ]*\).*/\1/p' man/liballocspy.7 >>"$TMP/keys"
sort -u "$TMP/keys" -o "$TMP/keys"

# The schema's keys (the internal spec, version 1); the shim may add more.
spec_keys="format version program pid ppid exe argv time wall_s user_s sys_s start_unix
options mode backtrace unwind leak_check output heap allocs frees bytes_allocated
in_use_bytes in_use_blocks peak_bytes failed untracked_frees functions calls bytes null
histogram le count threads tid name ref_acquires ref_releases exited threads_omitted
refs acquires releases objects_created objects_destroyed cross_thread leaks
definitely_lost indirectly_lost possibly_lost still_reachable suppressed blocks
loss_records kind indirect_bytes indirect_blocks stack suppression stacks modules path
base end build_id malloc calloc realloc reallocarray posix_memalign aligned_alloc
memalign valloc pvalloc strdup strndup wcsdup new new[] new_nothrow new[]_nothrow
new_aligned new[]_aligned g_strdup g_strndup g_memdup2 free delete delete[]
delete_sized delete[]_sized delete_aligned delete[]_aligned malloc_usable_size
dump reason t_s signal number peak_bytes_bound peak_t_s temporary stack_stats
peak_blocks thread_stacks snapshots bytes_freed peak detail snapshot_info max"
check "liballocspy(7) describes every key of the dump schema" "" \
	"$(missing "$(printf '%s\n' $spec_keys)" "$(cat "$TMP/keys")")"

# --- the example of allocspy.h(3) ------------------------------------------------------------

awk '/^\.Sh EXAMPLES/ { e = 1 } e && /^\.Bd -literal/ { f = 1; next } f && /^\.Ed/ { exit } f' \
	man/allocspy.h.3 | sed 's/\\e/\\/g' >"$TMP/shared.c"
if $CC -std=c11 -Wall -Wextra -Werror -pedantic -Iinclude -o "$TMP/shared" "$TMP/shared.c" \
	2>"$TMP/cc.err"; then
	"$TMP/shared"
	check "allocspy.h(3): the example compiles and exits 0" "0" "$?"
else
	not_ok "allocspy.h(3): the example compiles and exits 0" "$(cat "$TMP/cc.err")"
fi

# --- the README ---------------------------------------------------------------------------------

# Every `make TARGET` the README names is a target of the Makefile.
targets=$(grep -oE 'make [a-z][a-z-]*' README.md | sed 's/make //' | sort -u)
for t in $targets; do
	if grep -qE "^$t:" Makefile; then ok "README.md: make $t exists"; else
		not_ok "README.md: make $t exists" "no '$t:' rule in the Makefile"
	fi
done
check "README.md names make demo and make check" "check demo" \
	"$(printf '%s\n' $targets | grep -xE 'demo|check' | tr '\n' ' ' | sed 's/ $//')"

# Every path the READMEs name inside the repository (a word that begins
# with one of its top-level directories, or a Markdown link) is there;
# build/ is made by make, and words with placeholders (NAME, *, %p) are
# patterns, not paths.
python3 - README.md test/README.md benches/README.md >"$TMP/refs" <<'PY'
import os, re, sys
dirs = "test|man|shim|analyzer|include|launcher|common|scripts|doc|benches"
for md in sys.argv[1:]:
    text = open(md).read()
    refs = set(re.findall(r"\]\(([^)\s#]+)\)", text))
    refs |= set(re.findall(r"(?<![\w/.$-])((?:%s)/[\w./+*%%<>-]*)" % dirs, text))
    for r in sorted(refs):
        r = r.rstrip(".,;:")
        if r.startswith(("http:", "https:", "mailto:")) or re.search(r"[*%<>]|NAME|\bN\b", r):
            continue
        if not any(os.path.exists(p) for p in (r, os.path.join(os.path.dirname(md), r))):
            print("%s: %s" % (md, r))
PY
check "README.md, test/README.md, benches/README.md: every path they name is in the repository" \
	"" "$(cat "$TMP/refs")"

# --- with the shim: every key of a real dump is described ------------------------------------------

if [ ! -f "$LIB" ]; then
	ok "the keys of a real dump are described # SKIP $LIB not built"
	exit 0
fi
cat >"$TMP/keys.c" <<'EOF'
#include <allocspy.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static void *lost;

static void *worker(void *arg)
{
	asp_ref_acquire(arg);
	asp_ref_release(arg);
	free(strdup("thread"));
	return NULL;
}

int main(void)
{
	asp_ref_t *r = malloc(sizeof *r);
	pthread_t t;
	void **chain = malloc(2 * sizeof *chain);

	asp_ref_init(r);
	pthread_create(&t, NULL, worker, r);
	pthread_join(t, NULL);
	asp_ref_release(r);
	free(r);
	chain[0] = malloc(32);		/* indirectly lost */
	chain = NULL;			/* definitely lost */
	lost = malloc(10);		/* still reachable */
	free(NULL);
	free(realloc(calloc(2, 8), 100));
	return 0;
}
EOF
if $CC -O0 -g -pthread -Iinclude -o "$TMP/keysprog" "$TMP/keys.c" 2>"$TMP/cc.err"; then
	(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_OUTPUT="$TMP/keys.json" ALLOCSPY_LEAK_CHECK=full \
		ALLOCSPY_BACKTRACE=4 LD_PRELOAD="$LIB" ./keysprog >/dev/null 2>&1)
	if [ -f "$TMP/keys.json" ]; then
		python3 - "$TMP/keys.json" >"$TMP/dump.keys" <<'EOF'
import json, sys
seen = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            seen.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(json.load(open(sys.argv[1])))
print("\n".join(sorted(seen)))
EOF
		check "liballocspy(7) describes every key of a real dump" "" \
			"$(missing "$(cat "$TMP/dump.keys")" "$(cat "$TMP/keys")")"
		if [ -x "$REPORT" ] && "$REPORT" merge -o "$TMP/merged.json" "$TMP/keys.json" \
			"$TMP/keys.json" 2>"$TMP/merge.err"; then
			python3 - "$TMP/merged.json" >"$TMP/merged.keys" <<'EOF'
import json, sys
seen = set()
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            seen.add(k)
            walk(x)
    elif isinstance(v, list):
        for x in v:
            walk(x)
walk(json.load(open(sys.argv[1])))
print("\n".join(sorted(seen)))
EOF
			check "liballocspy(7) describes every key of a merged dump" "" \
				"$(missing "$(cat "$TMP/merged.keys")" "$(cat "$TMP/keys")")"
		else
			not_ok "liballocspy(7) describes every key of a merged dump" "$(cat "$TMP/merge.err")"
		fi
	else
		not_ok "liballocspy(7) describes every key of a real dump" "no dump written"
	fi
else
	not_ok "the key test program builds" "$(cat "$TMP/cc.err")"
fi

# The header's example under the shim: one object, created and destroyed,
# 100,000 releases that are not the last and the last one.
(cd "$TMP" && timeout -k 5 60 env ALLOCSPY_OUTPUT="$TMP/shared.json" LD_PRELOAD="$LIB" ./shared >/dev/null 2>&1)
if [ -f "$TMP/shared.json" ]; then
	check "allocspy.h(3): the example's refs are counted" "1 1 100001" \
		"$(json_get "$TMP/shared.json" '" ".join(str(d["refs"][k]) for k in ("objects_created", "objects_destroyed", "releases"))')"
else
	not_ok "allocspy.h(3): the example's refs are counted" "no dump written"
fi

# test/run.sh on a build directory without the test programs says what to run.
out=$(B="$TMP/empty-build" TESTS=t20 sh "$TOP/test/run.sh" 2>&1)
check "run.sh without a build: what to run first, and a failed count" \
"not ok - the build in $TMP/empty-build is complete
#   run first: make B=$TMP/empty-build && make B=$TMP/empty-build test-progs
0 passed, 1 failed" "$(printf '%s\n' "$out" | grep -v '^#   missing')"

# make install writes the real paths into the man pages.
if make -s -C "$TOP" B="$B" install PREFIX=/opt/x DESTDIR="$TMP/inst" >"$TMP/install.log" 2>&1; then
	check "make install PREFIX=/opt/x: no man page names /usr/local" "" \
		"$(grep -rl /usr/local "$TMP/inst/opt/x/share/man")"
	check "... liballocspy(7) names the installed library" \
		".Ev LD_PRELOAD Ns = Ns Pa /opt/x/lib/liballocspy.so" \
		"$(sed -n 8p "$TMP/inst/opt/x/share/man/man7/liballocspy.7")"
	check "... allocspy.h(3) names the installed header" ".It Pa /opt/x/include/allocspy.h" \
		"$(grep -F '.It Pa /opt/x/include' "$TMP/inst/opt/x/share/man/man3/allocspy.h.3")"
else
	not_ok "make install PREFIX=/opt/x DESTDIR=..." "$(tail -n 20 "$TMP/install.log")"
fi

# --- allocspy-report: --help and the man page ------------------------------------------------------

if [ -x "$REPORT" ]; then
	"$REPORT" --help >"$TMP/help"
	for cmd in leaks compare timeline export merge html; do
		check "allocspy-report --help and allocspy-report(1) name the $cmd command" "1 1" \
			"$(grep -c "^       allocspy-report \(\[--json\] \)\?$cmd \|^usage: allocspy-report \(\[--json\] \)\?$cmd " "$TMP/help") $(grep -c "^\.Cm $cmd\$" man/allocspy-report.1 | sed 's/^[1-9][0-9]*$/1/')"
	done
	for opt in svg format weight; do
		check "allocspy-report --help and allocspy-report(1) describe --$opt" "yes yes" \
			"$(grep -q -- "--$opt" "$TMP/help" && echo yes) $(grep -q "^\.It Fl -$opt" man/allocspy-report.1 && echo yes)"
	done
	check "allocspy-report --help and allocspy-report(1) give -o to export, merge and html" "yes yes" \
		"$(grep -q -- '-o FILE  *export, merge, html:' "$TMP/help" && echo yes) $(sed -n '/^\.It Fl o Ar file/,/^\.It Fl -help/p' man/allocspy-report.1 | tr '\n' ' ' | grep -q 'Cm export , .Cm merge and .Cm html :' && echo yes)"
	for f in pprof gperftools massif callgrind heaptrack folded speedscope; do
		check "allocspy-report(1) describes the $f export, --help names it" "yes yes" \
			"$(grep -q "^\.It Cm $f\$" man/allocspy-report.1 && echo yes) $(grep -q "$f" "$TMP/help" && echo yes)"
	done
fi

# --- allocspy-report html: the page's limits, in the man page and the README ---------------

# limit NAME: the value of #define NAME in analyzer/html.h or flame.h.
limit() { sed -n "s/^#define $1 \([0-9]*\).*/\1/p" analyzer/html.h analyzer/flame.h; }
man_text=$(mandoc -Tutf8 man/allocspy-report.1 2>/dev/null | col -b | tr '\t\n' '  ' | tr -s ' ')
for want in "Of more than $(limit ASP_HTML_SNAPSHOTS) snapshots, $(limit ASP_HTML_SNAPSHOTS) are drawn" \
	"Of more than $(limit ASP_HTML_RECORDS) loss records, the $(limit ASP_HTML_RECORDS) largest are listed" \
	"of a stack, its first $(limit ASP_HTML_FRAMES) frames" \
	"the command line (its first $(limit ASP_HTML_CMDLINE) bytes)" \
	"the threads (the $(limit ASP_HTML_THREADS) that allocated most)" \
	"the $(limit ASP_HTML_PEAK_STACKS) stacks that held most at the peak" \
	"those that grew and those that shrank, at most $(limit ASP_HTML_SITES)" \
	"less than $(awk "BEGIN { print 100 / $(limit ASP_FLAME_MIN_FRACTION) }")% of the graph's total"; do
	check "allocspy-report(1) gives the page's limit: $want" yes \
		"$(printf '%s' "$man_text" | grep -qF -- "$want" && echo yes)"
done
check "README.md gives the page's limits" "yes yes yes" \
	"$(grep -q "frames below $(awk "BEGIN { print 100 / $(limit ASP_FLAME_MIN_FRACTION) }")% of the total" README.md && echo yes) $(tr '\n' ' ' <README.md | grep -q "draws at most $(limit ASP_HTML_SNAPSHOTS | sed 's/^\(.\)\(...\)$/\1,\2/') snapshots" && echo yes) $(tr '\n' ' ' <README.md | grep -q "lists at most $(limit ASP_HTML_RECORDS | sed 's/^\(.\)\(...\)$/\1,\2/') loss records" && echo yes)"
for w in alloc_bytes allocs inuse_bytes peak_bytes temporary; do
	check "allocspy-report --help and allocspy-report(1) name the folded weight $w" "yes yes" \
		"$(grep -q "$w" "$TMP/help" && echo yes) $(grep -q "^\.Cm $w" man/allocspy-report.1 && echo yes)"
done
check "README.md's picture of the page: a PNG under 300 KB" "doc/report.png PNG True" \
	"$(grep -o '(doc/report.png)' README.md | tr -d '()') $(head -c 4 doc/report.png | tail -c 3) $([ "$(wc -c <doc/report.png)" -lt 307200 ] && echo True)"
