#!/bin/sh
# t30-leaks.sh - the leak check against valgrind's: for each leak_* program
# the HEAP SUMMARY and the LEAK SUMMARY under the shim equal valgrind's
# (lib.sh leak_parity), with the four heuristics' lines (leak_heuristics). The C programs run twice: returning from main, and
# calling exit() from main (main's frame is then live, and its locals are
# roots). Each program's header comment says what it builds and how
# valgrind classifies it. The quick tier (make check) runs the exit() form
# of leak_roots and leak_threads alone.
. "$(dirname "$0")/lib.sh"

for p in leak_definite leak_chain leak_lists leak_cycle leak_interior leak_random leak_tail leak_roots \
	leak_threads leak_mmap leak_freed leak_stale leak_cxx leak_heuristics; do
	if [ ! -x "$PROGS/$p" ]; then
		not_ok "$p: built" "missing $PROGS/$p: run make test-progs"
		continue
	fi
	leak_parity "$p" "$PROGS/$p"
	case $p in
	leak_cxx | leak_heuristics) ;;
	*) in_tier "$p" leak_roots leak_threads && leak_parity "$p exit" "$PROGS/$p" exit ;;
	esac
done

# leak_exit_regs: main's only pointer to a block is in rbx when it calls
# exit, which saves rbx in its frame: still reachable, as valgrind finds
# it there (definitely lost when the scan took exit's frames for dead).
if [ -x "$PROGS/leak_exit_regs" ]; then
	leak_parity leak_exit_regs "$PROGS/leak_exit_regs"
	SHIM_ENV=ALLOCSPY_BACKTRACE=16 leak_parity "leak_exit_regs (16 frames)" "$PROGS/leak_exit_regs"
	SHIM_ENV=
else
	not_ok "leak_exit_regs: built" "missing $PROGS/leak_exit_regs: run make test-progs"
fi

# par_pending: threads that keep hundreds of blocks at once and free each
# other's; with stacks too.
if [ -x "$PROGS/par_pending" ]; then
	leak_parity par_pending "$PROGS/par_pending"
	SHIM_ENV=ALLOCSPY_BACKTRACE=16 leak_parity "par_pending (16 frames)" "$PROGS/par_pending"
else
	not_ok "par_pending: built" "missing $PROGS/par_pending: run make test-progs"
fi

# leak_lists: in the dump, each lost list's head record counts the nodes
# behind it (indirect_blocks), as valgrind's record counts their bytes.
if [ -x "$PROGS/leak_lists" ]; then
	mkdir -p "$TMP/lists"
	(cd "$TMP/lists" && env ALLOCSPY_LEAK_CHECK=full LD_PRELOAD="$LIB" "$PROGS/leak_lists" >/dev/null 2>&1)
	check "leak_lists: the definitely lost records' direct and indirect blocks and bytes in the dump" \
"1 48 29999 1439952
1 32 19999 639968
1 64 9999 639936" \
		"$(python3 -c 'import json, glob, sys
d = json.load(open(glob.glob(sys.argv[1] + "/allocspy.*.json")[0]))
for r in sorted((r for r in d["loss_records"] if r["kind"] == "definite"), key=lambda r: -r["indirect_blocks"]):
    print(r["blocks"], r["bytes"], r["indirect_blocks"], r["indirect_bytes"])' "$TMP/lists" 2>&1)"
fi

# leak_graph SEED: random graphs of 3,000 blocks from four sites. Every
# loss record, of every kind, equals valgrind's (--show-leak-kinds=all
# against the report's leaks --show-leak-kinds=all): which leader each
# indirectly lost block counts for, as well as the totals. Seed 1 in the
# quick tier.
if [ -x "$PROGS/leak_graph" ]; then
	for seed in 1 2 3; do
		in_tier "$seed" 1 || continue
		gd=$TMP/graph-$seed
		rm -rf "$gd" && mkdir -p "$gd"
		(cd "$gd" && env -i HOME="${HOME:-/root}" PATH=/usr/local/bin:/usr/bin:/bin LANG=C \
			timeout -k 5 600 valgrind --leak-check=full --show-leak-kinds=all \
			"$PROGS/leak_graph" "$seed" >/dev/null 2>"$gd/vg.err")
		(cd "$gd" && env ALLOCSPY_LEAK_CHECK=full LD_PRELOAD="$LIB" \
			"$PROGS/leak_graph" "$seed" >/dev/null 2>"$gd/asp.err")
		"$REPORT" leaks --show-leak-kinds=all "$gd"/allocspy.*.json >"$gd/leaks.txt" 2>&1
		vg_records=$(grep -a ' in loss record ' "$gd/vg.err" | sed 's/^==[0-9]*== //; s/ in loss record .*//' | sort)
		check "leak_graph $seed: valgrind found records of every kind" \
			"definitely indirectly possibly still" \
			"$(for k in definitely indirectly possibly still; do echo "$vg_records" | grep -q " $k " && printf '%s ' "$k"; done | sed 's/ $//')"
		check "leak_graph $seed: every loss record equals valgrind's" "$vg_records" \
			"$(grep -a ' in loss record ' "$gd/leaks.txt" | sed 's/^==[0-9]*== //; s/ in loss record .*//' | sort)"
	done
else
	not_ok "leak_graph: built" "missing $PROGS/leak_graph: run make test-progs"
fi

# The three shapes on which the shim and valgrind differ by design
# (liballocspy(7), "Differences from valgrind"): each program's figures
# under both tools are known from its source; with its argument the cause
# is taken away and the two agree; and over test/vgalloc.c (glibc's
# allocator with valgrind's always-moving realloc, new blocks without old
# bytes) the shim agrees with valgrind on the first two as they are.
# known_difference PROG ARG VALGRIND SHIM: PROG's LEAK SUMMARY is VALGRIND
# under valgrind and SHIM under the shim; with ARG, the same under both;
# over test/vgalloc.c, the same under both too (not with KD_NO_VGALLOC
# set: vgalloc.c takes away two of the three causes, not the third).
known_difference() {
	kprog=$1 karg=$2 kvg=$3 kasp=$4
	if [ ! -x "$PROGS/$kprog" ]; then
		not_ok "$kprog: built" "missing $PROGS/$kprog: run make test-progs"
		return 0
	fi
	kd=$TMP/known-$kprog
	both_runs "$kd" "$PROGS/$kprog"
	check "$kprog: valgrind's leak summary" "$kvg" "$(leak_lines "$kd/vg")"
	check "$kprog: the shim's, which differs as liballocspy(7) says" "$kasp" "$(leak_lines "$kd/asp")"
	check "$kprog: same stdout and status" "$(cat "$kd/vg.out" "$kd/vg.rc")" "$(cat "$kd/asp.out" "$kd/asp.rc")"
	leak_parity "$kprog $karg" "$PROGS/$kprog" "$karg"
	[ -z "${KD_NO_VGALLOC:-}" ] || return 0
	(cd "$kd/run" && SHIM_PRELOAD=$(vgalloc_preload) run_shim "$kd/vgalloc" "$PROGS/$kprog")
	check "$kprog over vgalloc.so: heap and leak summaries equal valgrind's" \
		"$(heap_lines "$kd/vg"; leak_lines "$kd/vg")" "$(heap_lines "$kd/vgalloc"; leak_lines "$kd/vgalloc")"
}
# valgrind's realloc always moves a block; glibc's shrinks it in place, so
# a stale copy of the old address still points at the block's start.
known_difference leak_realloc_stale clear \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 216 bytes in 1 blocks
still reachable: 0 bytes in 0 blocks
suppressed: 0 bytes in 0 blocks" \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 216 bytes in 1 blocks
suppressed: 0 bytes in 0 blocks"
# valgrind keeps freed memory out of use for a while; glibc hands it out
# again at once, and a dangling pointer then points at the new block.
KD_NO_VGALLOC=1 known_difference leak_dangling clear \
"definitely lost: 64 bytes in 1 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 0 bytes in 0 blocks
suppressed: 0 bytes in 0 blocks" \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 64 bytes in 1 blocks
suppressed: 0 bytes in 0 blocks"
# valgrind scans only bytes the program wrote; a reused block still holds
# its previous owner's pointer where the program has not written.
known_difference leak_unwritten write \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 40 bytes in 1 blocks
still reachable: 256 bytes in 1 blocks
suppressed: 0 bytes in 0 blocks" \
"definitely lost: 0 bytes in 0 blocks
indirectly lost: 0 bytes in 0 blocks
possibly lost: 0 bytes in 0 blocks
still reachable: 296 bytes in 2 blocks
suppressed: 0 bytes in 0 blocks"

# The scan reads the roots it listed from /proc/self/maps, asking mincore
# which of their pages are resident. The buffer the listing was read into
# is listed there and unmapped before the scan: left in, each of its 256
# pages was asked about alone, and failed (ENOMEM).
for m in "" ALLOCSPY_BACKTRACE=16; do
	if command -v strace >/dev/null 2>&1; then
		env $m ALLOCSPY_OUTPUT=none ALLOCSPY_QUIET=1 LD_PRELOAD="$LIB" \
			strace -f -e trace=mincore -o "$TMP/mincore" "$PROGS/leak_definite" >/dev/null 2>&1
		rc=$?
		check "leak_definite${m:+ ($m)}: mincore asked about no unmapped page, status 0" \
			"0 status 0" "$(grep -c ENOMEM "$TMP/mincore") status $rc"
	else
		ok "# SKIP strace is not installed"
	fi
done
