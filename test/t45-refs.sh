#!/bin/sh
# t45-refs.sh - reference counts: include/allocspy.h with and without the
# shim (exact counts, per thread), GLib's refcount API and g_strdup counted
# exactly in a GLib program built two ways, and compare putting them side
# by side.
. "$(dirname "$0")/lib.sh"

# dump_of FILE EXPR: a value of a dump.
v() { json_get "$1" "$2"; }

# --- include/allocspy.h ------------------------------------------------------------
# Built here with no link flag at all: the header needs none.
if cc -O2 -I"$TOP/include" -o "$TMP/asp_refs" "$TOP/test/progs/asp_refs.c" 2>"$TMP/cc.err"; then
	ok "a program using only allocspy.h builds with no link flag"
else
	not_ok "a program using only allocspy.h builds with no link flag" "$(cat "$TMP/cc.err")"
fi
out=$("$TMP/asp_refs" 3 20000 50)
check "allocspy.h without the shim: right counts, status 0" \
	"count=1 last=1 own_destroyed=150 0" "$out $?"

env ALLOCSPY_OUTPUT="$TMP/refs.json" LD_PRELOAD="$LIB" "$TMP/asp_refs" 3 20000 50 \
	>"$TMP/refs.out" 2>"$TMP/refs.err"
st=$?
check "allocspy.h under the shim: same output and status" \
	"count=1 last=1 own_destroyed=150 0" "$(cat "$TMP/refs.out") $st"
# 3 threads x (20,000 shared gets + 50 objects: init, acquire, 2 releases),
# and main's init of the shared object and its last release.
check "allocspy.h under the shim: refs" \
	"{'acquires': 60150, 'releases': 60301, 'objects_created': 151, 'objects_destroyed': 151}" \
	"$(v "$TMP/refs.json" '{k: d["refs"][k] for k in ("acquires", "releases", "objects_created", "objects_destroyed")}')"
check "allocspy.h under the shim: per thread, main first" \
	"[(0, 1), (20050, 20100), (20050, 20100), (20050, 20100)]" \
	"$(v "$TMP/refs.json" '[(t["ref_acquires"], t["ref_releases"]) for t in d["threads"]]')"
pid=$(v "$TMP/refs.json" 'd["program"]["pid"]')
check "allocspy.h under the shim: REF SUMMARY" \
"==$pid== REF SUMMARY:
==$pid==     ref operations: 60,150 acquires, 60,301 releases
==$pid==            objects: 151 created, 151 destroyed" \
	"$(grep -a -A3 'REF SUMMARY' "$TMP/refs.err" | head -n 3)"
check "allocspy.h under the shim: cross-thread handoffs not counted by default" \
	"None" "$(v "$TMP/refs.json" 'd["refs"]["cross_thread"]')$(grep -a 'cross-thread' "$TMP/refs.err")"

env ALLOCSPY_REF_CROSS=1 ALLOCSPY_OUTPUT="$TMP/cross.json" LD_PRELOAD="$LIB" "$TMP/asp_refs" 3 20000 50 \
	>/dev/null 2>"$TMP/cross.err"
pid=$(v "$TMP/cross.json" 'd["program"]["pid"]')
check_match "ALLOCSPY_REF_CROSS=1: cross-thread operations counted" \
	"^==$pid==       cross-thread: [0-9,]+ operations$" "$(grep -a 'cross-thread' "$TMP/cross.err")"
check "ALLOCSPY_REF_CROSS=1: the dump's cross_thread is the text's" \
	"$(grep -a 'cross-thread' "$TMP/cross.err" | sed 's/^==[0-9]*==//' | tr -dc '0-9')" \
	"$(v "$TMP/cross.json" 'd["refs"]["cross_thread"]')"
check "ALLOCSPY_REF_CROSS=1: the other counts are the same" \
	"$(v "$TMP/refs.json" '[d["refs"][k] for k in ("acquires", "releases", "objects_created", "objects_destroyed")]')" \
	"$(v "$TMP/cross.json" '[d["refs"][k] for k in ("acquires", "releases", "objects_created", "objects_destroyed")]')"

# --- GLib, one program built two ways ----------------------------------------------------
GLIB=$(pkg-config --cflags --libs glib-2.0 2>/dev/null)
mkdir -p "$TMP/strdup" "$TMP/refcount"
if cc -O0 -o "$TMP/strdup/glib_two" "$TOP/test/progs/glib_two.c" $GLIB 2>"$TMP/cc.err" &&
	cc -O0 -DREFCOUNT -o "$TMP/refcount/glib_two" "$TOP/test/progs/glib_two.c" $GLIB 2>>"$TMP/cc.err"; then
	for b in strdup refcount; do
		env ALLOCSPY_OUTPUT="$TMP/$b.json" LD_PRELOAD="$LIB" "$TMP/$b/glib_two" \
			>"$TMP/$b.out" 2>/dev/null
		check "glib $b build: status 0 under the shim" 0 "$?"
	done
	check "glib strdup build: 40,000 g_strdup calls of 7 bytes" "(40000, 280000)" \
		"$(v "$TMP/strdup.json" '(d["functions"]["g_strdup"]["calls"], d["functions"]["g_strdup"]["bytes"])')"
	check "glib strdup build: no ref operation" "0 0 0 0" \
		"$(v "$TMP/strdup.json" '" ".join(str(d["refs"][k]) for k in ("acquires", "releases", "objects_created", "objects_destroyed"))')"
	check "glib refcount build: acquires and releases (init's reference is one more release)" \
		"40000 40001 1 1" \
		"$(v "$TMP/refcount.json" '" ".join(str(d["refs"][k]) for k in ("acquires", "releases", "objects_created", "objects_destroyed"))')"
	check "glib refcount build: no g_strdup" "False" \
		"$(v "$TMP/refcount.json" '"g_strdup" in d["functions"]')"
	check "glib refcount build: 10,000 of each per worker thread" \
		"[(10000, 10000), (10000, 10000), (10000, 10000), (10000, 10000)]" \
		"$(v "$TMP/refcount.json" '[(t["ref_acquires"], t["ref_releases"]) for t in d["threads"] if t["name"] == "worker"]')"

	"$REPORT" compare "$TMP/strdup.json" "$TMP/refcount.json" >"$TMP/cmp.out" 2>"$TMP/cmp.err"
	check "compare: status 0, nothing on stderr" "0" "$?$(cat "$TMP/cmp.err")"
	row() { grep -a "^$1 " "$TMP/cmp.out" | sed "s/^$1 *//" | tr -s ' '; }
	check "compare: strdup calls side by side" "40,000 0 x0.00" "$(row 'strdup calls')"
	check "compare: ref acquires side by side" "0 40,000 -" "$(row 'ref acquires')"
	check "compare: ref releases side by side" "0 40,001 -" "$(row 'ref releases')"
	check "compare: one program, so no note" "" "$(grep -a '^note:' "$TMP/cmp.out")"
	check_match "compare: columns named by the dumps' files, not the one program's command line" \
		"^ +strdup +refcount +ratio$" "$(sed -n 1p "$TMP/cmp.out")"
else
	not_ok "the GLib program builds two ways" "$(cat "$TMP/cc.err")"
fi

# --- GLib's rc boxes and ref strings ------------------------------------------------------
env ALLOCSPY_OUTPUT="$TMP/box.json" LD_PRELOAD="$LIB" "$PROGS/glib_rcbox" >"$TMP/box.out" 2>/dev/null
st=$?
check "glib rc boxes: output and status" "cleared=1 0" "$(cat "$TMP/box.out") $st"
# 3 objects made; 3 + 3 + 1 acquires; 4 + 4 + 2 releases; the last of each
# object's releases destroys it.
check "glib rc boxes: created, acquires, releases, destroyed" "3 7 10 3" \
	"$(v "$TMP/box.json" '" ".join(str(d["refs"][k]) for k in ("objects_created", "acquires", "releases", "objects_destroyed"))')"
