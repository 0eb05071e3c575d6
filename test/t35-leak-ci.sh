#!/bin/sh
# t35-leak-ci.sh - leak triage in CI: ALLOCSPY_ERROR_EXITCODE as valgrind's
# --error-exitcode, ALLOCSPY_ERRORS_FOR_LEAK_KINDS, valgrind .supp and LSan
# suppressions moving leaks to "suppressed:", ALLOCSPY_LEAK_CHECK=full's
# loss records against valgrind's, and 16-frame stacks in the leaks report.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/leaky.c" <<'SRC'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node { struct node *next; char name[24]; };
static struct node *kept;

static struct node *make_pair(void)
{
	struct node *n = malloc(sizeof *n);
	n->next = malloc(sizeof *n->next);
	return n;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "reachable") == 0) {
		kept = calloc(1, sizeof *kept);
		printf("only reachable\n");
		return 7;
	}
	struct node *lost = make_pair();
	lost = NULL;
	kept = calloc(1, sizeof *kept);
	char *s = strdup("a lost copy");
	s = NULL;
	printf("leaky\n");
	return 7;
}
SRC
cc -g -O0 -o "$TMP/leaky" "$TMP/leaky.c" || { not_ok "leaky builds"; exit 0; }
run() { env ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$@" >"$TMP/out" 2>"$TMP/err"; echo $?; }

# --- exit codes, as valgrind's --error-exitcode ---------------------------------------------
check "no ALLOCSPY_ERROR_EXITCODE: the program's own status" 7 "$(run "$TMP/leaky")"
check "ALLOCSPY_ERROR_EXITCODE=42 with definite leaks: 42" 42 \
	"$(ALLOCSPY_ERROR_EXITCODE=42 run "$TMP/leaky")"
check "ALLOCSPY_ERROR_EXITCODE=42 with only reachable blocks: the program's status" 7 \
	"$(ALLOCSPY_ERROR_EXITCODE=42 run "$TMP/leaky" reachable)"
check "ALLOCSPY_ERRORS_FOR_LEAK_KINDS=reachable: reachable blocks count" 42 \
	"$(ALLOCSPY_ERROR_EXITCODE=42 ALLOCSPY_ERRORS_FOR_LEAK_KINDS=reachable run "$TMP/leaky" reachable)"
check "ALLOCSPY_ERRORS_FOR_LEAK_KINDS=possible: definite leaks do not" 7 \
	"$(ALLOCSPY_ERROR_EXITCODE=42 ALLOCSPY_ERRORS_FOR_LEAK_KINDS=possible run "$TMP/leaky")"
check "the program's output is unchanged by the exit code" "leaky" "$(cat "$TMP/out")"

# --- suppressions ----------------------------------------------------------------------------------
cat >"$TMP/pair.supp" <<'SUPP'
# the pair that make_pair leaks
{
   make_pair
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   fun:make_pair
}
{
   the copy main makes
   Memcheck:Leak
   match-leak-kinds: definite,possible
   fun:malloc
   fun:strdup
   fun:main
}
SUPP
cat >"$TMP/main.supp" <<'SUPP'
{
   from main, any depth
   Memcheck:Leak
   match-leak-kinds: definite
   fun:malloc
   ...
   fun:main
}
SUPP
printf '# LSan\nleak:strdup\n' >"$TMP/lsan.supp"
leaks() { grep -aE '(definitely|indirectly|possibly) lost:|still reachable:|suppressed: [0-9,]+ bytes' "$TMP/err" | sed 's/^==[0-9]*== *//'; }

run "$TMP/leaky" >/dev/null
check "without suppressions" \
"definitely lost: 44 bytes in 2 blocks
indirectly lost: 32 bytes in 1 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 32 bytes in 1 blocks
suppressed: 0 bytes in 0 blocks" "$(leaks)"
ALLOCSPY_SUPPRESSIONS="$TMP/pair.supp" run "$TMP/leaky" >/dev/null
check "valgrind .supp entries (fun:malloc, fun:make_pair; fun:malloc, fun:strdup, fun:main) move both leaks to suppressed" \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 32 bytes in 1 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 32 bytes in 1 blocks
suppressed: 44 bytes in 2 blocks" "$(leaks)"
printf '{\n   pair\n   Memcheck:Leak\n   match-leak-kinds: possible\n   fun:malloc\n   fun:make_pair\n}\n' >"$TMP/possible.supp"
ALLOCSPY_SUPPRESSIONS="$TMP/possible.supp" run "$TMP/leaky" >/dev/null
check "match-leak-kinds: possible does not suppress a definite leak" \
	"suppressed: 0 bytes in 0 blocks" "$(leaks | grep suppressed)"
printf '{\n   pair\n   Memcheck:Leak\n   fun:malloc\n   fun:make_pair\n}\n' >"$TMP/pair-only.supp"
ALLOCSPY_SUPPRESSIONS="$TMP/lsan.supp:$TMP/pair-only.supp" run "$TMP/leaky" >/dev/null
check "an LSan leak: line, and a .supp entry with no match-leak-kinds (all kinds: the indirect child too)" \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 32 bytes in 1 blocks
suppressed: 76 bytes in 3 blocks" "$(leaks)"
check "everything suppressed: ALLOCSPY_ERROR_EXITCODE does not apply" 7 \
	"$(ALLOCSPY_ERROR_EXITCODE=42 ALLOCSPY_SUPPRESSIONS="$TMP/pair.supp" run "$TMP/leaky")"
ALLOCSPY_BACKTRACE=8 ALLOCSPY_SUPPRESSIONS="$TMP/main.supp" run "$TMP/leaky" >/dev/null
check "the ... wildcard matches the frames between malloc and main (8-frame stacks)" \
	"suppressed: 44 bytes in 2 blocks" "$(leaks | grep suppressed)"
ALLOCSPY_SUPPRESSIONS="$TMP/nonexistent.supp" run "$TMP/leaky" >/dev/null
check "an unreadable suppression file: one warning" \
	"allocspy: warning: ALLOCSPY_SUPPRESSIONS: $TMP/nonexistent.supp: cannot be read" \
	"$(grep -a '^allocspy: warning' "$TMP/err")"

# --- the dump records them -----------------------------------------------------------------------
env ALLOCSPY_OUTPUT="$TMP/supp.json" ALLOCSPY_SUPPRESSIONS="$TMP/pair.supp" LD_PRELOAD="$LIB" \
	"$TMP/leaky" >/dev/null 2>&1
check "the dump: suppressed bytes and blocks, and the entries' names" "{'bytes': 44, 'blocks': 2} ['make_pair', 'the copy main makes']" \
	"$(json_get "$TMP/supp.json" 'str(d["leaks"]["suppressed"]) + " " + str(sorted(r["suppression"] for r in d["loss_records"] if r["suppressed"]))')"

# --- full leak check: valgrind's loss records ----------------------------------------------------------
d=$TMP/full
mkdir -p "$d"
(cd "$d" && env -i HOME="$HOME" PATH=/usr/bin:/bin valgrind \
	--leak-check=full --log-file="$d/vg" "$TMP/leaky" >/dev/null 2>&1)
(cd "$d" && env ALLOCSPY_LEAK_CHECK=full ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/leaky" >/dev/null 2>"$d/asp")
records() { grep -a ' in loss record ' "$1" | sed 's/^==[0-9]*== //'; }
check "ALLOCSPY_LEAK_CHECK=full: the same loss records as valgrind --leak-check=full" \
	"$(records "$d/vg")" "$(records "$d/asp")"

# --- 16-frame stacks, symbolized ---------------------------------------------------------------------------
env ALLOCSPY_BACKTRACE=16 ALLOCSPY_OUTPUT="$TMP/bt.json" LD_PRELOAD="$LIB" "$TMP/leaky" >/dev/null 2>&1
"$REPORT" leaks "$TMP/bt.json" >"$TMP/leaks.txt" 2>&1
check_match "leaks: the pair's record names its allocating line and main's" \
	"by 0x[0-9A-F]+: make_pair \\(leaky.c:10\\)" "$(cat "$TMP/leaks.txt")"
check_match "leaks: ... and main's frame" \
	"by 0x[0-9A-F]+: main \\(leaky.c:22\\)" "$(cat "$TMP/leaks.txt")"
check_match "leaks: a valgrind-style record line" \
	"^==[0-9]+== 64 \\(32 direct, 32 indirect\\) bytes in 1 blocks are definitely lost in loss record [0-9]+ of [0-9]+$" \
	"$(cat "$TMP/leaks.txt")"

# --- per-stack totals with backtraces ---------------------------------------------------------
check "stack_stats: what each stack allocated (stdout's buffer too, freed by freeres), and what is still in use" \
	"[(1, 4096, 0, 0), (1, 32, 1, 32), (1, 32, 1, 32), (1, 32, 1, 32), (1, 12, 1, 12)]" \
	"$(json_get "$TMP/bt.json" 'sorted([(s["allocs"], s["bytes"], s["in_use_blocks"], s["in_use_bytes"]) for s in d["stack_stats"]], key=lambda x: -x[1])')"
check "stack_stats: each names a stack of the dump" True \
	"$(json_get "$TMP/bt.json" 'all(0 <= s["stack"] < len(d["stacks"]) for s in d["stack_stats"])')"

# --- the plainest entry: fun:malloc, fun:main ----------------------------------------------------
printf '#include <stdlib.h>\nstatic void *keep;\nint main(void) { keep = malloc(5); keep = malloc(7); return 0; }\n' >"$TMP/inmain.c"
cc -O0 -o "$TMP/inmain" "$TMP/inmain.c"
printf '{\n   main leak\n   Memcheck:Leak\n   match-leak-kinds: definite\n   fun:malloc\n   fun:main\n}\n' >"$TMP/main-only.supp"
env ALLOCSPY_OUTPUT=none LD_PRELOAD="$LIB" "$TMP/inmain" 2>"$TMP/err"
check "a leak in main: definitely lost without suppressions" "definitely lost: 5 bytes in 1 blocks" \
	"$(leaks | grep definitely)"
env ALLOCSPY_OUTPUT=none ALLOCSPY_ERROR_EXITCODE=42 ALLOCSPY_SUPPRESSIONS="$TMP/main-only.supp" LD_PRELOAD="$LIB" \
	"$TMP/inmain" 2>"$TMP/err"
status=$?
check "fun:malloc / fun:main, match-leak-kinds: definite: the leak moves to suppressed, the status stays 0" \
	"definitely lost: 0 bytes in 0 blocks suppressed: 5 bytes in 1 blocks 0" \
	"$(leaks | grep -E 'definitely|suppressed' | tr '\n' ' ')$status"
"$REPORT" "$TMP/bt.json" >"$TMP/summary.txt" 2>&1
check_match "the summary of a backtrace dump lists its stacks, symbolized" \
	"^ +32 +1 +32  make_pair \\(leaky.c:11\\) < main \\(leaky.c:22\\)$" "$(cat "$TMP/summary.txt")"
