#!/bin/sh
# t51-report-hostile.sh - allocspy-report refuses bad dumps: every malformed
# file (broken track.json, heap-over-time and heap-error keys, the guarded
# blocks' errors and pool), given to the
# summary, to leaks, to errors, to compare and to html, gives exit status 2
# and exactly one line "allocspy-report: error: FILE: ..." on stderr, never
# a crash or a hang. Then the loader's fuzzer runs over 200,000 inputs
# from a fixed seed, when clang is here.
. "$(dirname "$0")/lib.sh"
G=$TOP/test/golden
H=$TMP/hostile
mkdir -p "$H"

if [ ! -x "$REPORT" ]; then
	not_ok "allocspy-report is built" "$REPORT is missing"
	exit 0
fi

# The cases: each is a file in $H and a line "NAME<tab>MESSAGE" in
# $H/index, MESSAGE being what follows "FILE: " in the error, or "*" when
# it is jansson's parse error (its wording is jansson's).
python3 - "$G/track.json" "$H" "$G/errors.json" "$G/guard.json" <<'EOF'
import copy, json, os, sys

base = json.load(open(sys.argv[1]))
errors = json.load(open(sys.argv[3]))
guard = json.load(open(sys.argv[4]))
out = sys.argv[2]
index = open(os.path.join(out, "index"), "w")

def raw(name, data, msg="*"):
    open(os.path.join(out, name + ".json"), "wb").write(data)
    index.write("%s\t%s\n" % (name, msg))

def mutate(name, change, msg, start=None):
    d = copy.deepcopy(start or base)
    change(d)
    raw(name, json.dumps(d).encode(), msg)

def text(name, old, new, msg):
    s = json.dumps(base)
    assert old in s, old
    raw(name, s.replace(old, new, 1).encode(), msg)

good = json.dumps(base).encode()
raw("empty", b"", "empty file")
raw("truncated", good[:len(good) // 2])
raw("not-json", b"==4095== HEAP SUMMARY:\n")
raw("json-array", b"[1, 2, 3]\n", "not an allocspy dump (the top level is an array, not an object)")
raw("json-string", b"\"allocspy-dump\"\n")
raw("trailing-garbage", good + b" }")
raw("nul-byte", good[:100] + b"\0" + good[100:])
raw("invalid-utf8", good.replace(b"worker-1", b"worker-\xff\xfe"))
raw("bom", b"\xef\xbb\xbf" + good)
raw("deep-nesting", good[:-1] + b", \"extra\": " + b"[" * 100000 + b"]" * 100000 + b"}")
raw("duplicate-key", good.replace(b"\"version\": 1", b"\"version\": 1, \"version\": 1"))
raw("escaped-nul", good.replace(b"worker-1", b"worker\\u0000"))
raw("too-big-integer", good.replace(b"\"allocs\": 7", b"\"allocs\": 99999999999999999999999"))

mutate("no-format", lambda d: d.pop("format"), "not an allocspy dump (no \"format\" key)")
mutate("other-format", lambda d: d.update(format="valgrind-xml"),
       "not an allocspy dump (format is \"valgrind-xml\", not \"allocspy-dump\")")
mutate("format-number", lambda d: d.update(format=1),
       "not an allocspy dump (format is an integer, not \"allocspy-dump\")")
mutate("version-2", lambda d: d.update(version=2),
       "version 2 is not supported (this allocspy-report reads version 1)")
mutate("version-0", lambda d: d.update(version=0),
       "version 0 is not supported (this allocspy-report reads version 1)")
mutate("version-string", lambda d: d.update(version="1"), "version: expected an integer, found a string")
mutate("version-real", lambda d: d.update(version=1.0), "version: expected an integer, found a real number")
mutate("no-version", lambda d: d.pop("version"), "version: missing")
mutate("no-heap", lambda d: d.pop("heap"), "heap: missing")
mutate("heap-array", lambda d: d.update(heap=[]), "heap: expected an object, found an array")
mutate("allocs-string", lambda d: d["heap"].update(allocs="7"), "heap.allocs: expected an integer, found a string")
mutate("allocs-negative", lambda d: d["heap"].update(allocs=-7), "heap.allocs: -7 is negative")
mutate("allocs-1e300", lambda d: d["heap"].update(allocs=1e300), "heap.allocs: expected an integer, found a real number")
mutate("allocs-too-big", lambda d: d["heap"].update(allocs=2**63), "*")
mutate("allocs-null", lambda d: d["heap"].update(allocs=None), "heap.allocs: expected an integer, found null")
mutate("in-use-null-track", lambda d: d["heap"].update(in_use_bytes=None),
       "heap.in_use_bytes: null in a track-mode dump")
mutate("no-in-use-bytes", lambda d: d["heap"].pop("in_use_bytes"), "heap.in_use_bytes: missing")
mutate("no-program", lambda d: d.pop("program"), "program: missing")
mutate("pid-zero", lambda d: d["program"].update(pid=0), "program.pid: 0 is out of range (at least 1)")
mutate("pid-huge", lambda d: d["program"].update(pid=2**40),
       "program.pid: 1099511627776 is out of range (at most 2147483647)")
mutate("argv-number", lambda d: d["program"]["argv"].append(3), "program.argv[3]: expected a string, found an integer")
mutate("huge-string", lambda d: d["program"].update(exe="/" + "x" * 100000),
       "program.exe: string of 100001 bytes is too long (at most 4096)")
mutate("mode-fast", lambda d: d["options"].update(mode="fast"),
       "options.mode: \"fast\" is neither \"track\" nor \"count\"")
mutate("leak-check-bad", lambda d: d["options"].update(leak_check="all"),
       "options.leak_check: \"all\" is not summary, full or no")
mutate("wall-string", lambda d: d["time"].update(wall_s="0.1"), "time.wall_s: expected a number, found a string")
mutate("wall-negative", lambda d: d["time"].update(wall_s=-1.5), "time.wall_s: -1.5 seconds is out of range")
mutate("wall-1e300", lambda d: d["time"].update(wall_s=1e300), "time.wall_s: 1e+300 seconds is out of range")
mutate("no-free", lambda d: d["functions"].pop("free"), "functions.free: missing")
mutate("fn-not-object", lambda d: d["functions"].update(malloc=5), "functions.malloc: expected an object, found an integer")
mutate("fn-calls-negative", lambda d: d["functions"]["malloc"].update(calls=-1), "functions.malloc.calls: -1 is negative")
mutate("fn-failed-above-calls", lambda d: d["functions"]["malloc"].update(failed=6),
       "functions.malloc: 6 failed calls out of 5")
mutate("fn-name-long", lambda d: d["functions"].update({"f" * 100: {"calls": 1}}),
       "functions: a name of 100 bytes is too long")
mutate("histogram-object", lambda d: d.update(histogram={}), "histogram: expected an array, found an object")
mutate("le-not-power", lambda d: d["histogram"][1].update(le=33), "histogram[1].le: 33 is not 0 or a power of two")
mutate("le-descending", lambda d: d["histogram"].reverse(), "histogram[1].le: 64 is not above the previous bucket's")
mutate("threads-object", lambda d: d.update(threads={}), "threads: expected an array, found an object")
mutate("thread-name-number", lambda d: d["threads"][1].update(name=5), "threads[1].name: expected a string, found an integer")
mutate("thread-tid-negative", lambda d: d["threads"][0].update(tid=-1), "threads[0].tid: -1 is negative")
mutate("threads-omitted-string", lambda d: d.update(threads_omitted="3"),
       "threads_omitted: expected an integer, found a string")
mutate("no-refs", lambda d: d.pop("refs"), "refs: missing")
mutate("refs-bool", lambda d: d["refs"].update(acquires=True), "refs.acquires: expected an integer, found a boolean")
mutate("leaks-missing-blocks", lambda d: d["leaks"]["definitely_lost"].pop("blocks"),
       "leaks.definitely_lost.blocks: missing")
mutate("record-kind", lambda d: d["loss_records"][0].update(kind="lost"), "loss_records[0].kind: \"lost\" is not a leak kind")
mutate("record-stack-range", lambda d: d["loss_records"][2].update(stack=5),
       "loss_records[2].stack: 5 is not an index into stacks (5 stacks)")
mutate("record-no-stacks", lambda d: d.pop("stacks"),
       "loss_records[0].stack: 0 is not an index into stacks (0 stacks)")
mutate("record-suppressed-string", lambda d: d["loss_records"][0].update(suppressed="no"),
       "loss_records[0].suppressed: expected a boolean, found a string")
mutate("stack-frame-negative", lambda d: d["stacks"][1].append(-4096), "stacks[1][2]: -4096 is negative")
mutate("stack-frame-real", lambda d: d["stacks"][0].append(1.5), "stacks[0][2]: expected an integer, found a real number")
mutate("stack-too-deep", lambda d: d["stacks"].append([4096] * 5000), "stacks[5]: 5000 frames is too many (at most 4096)")
mutate("module-base-string", lambda d: d["modules"][0].update(base="0x5555"),
       "modules[0].base: expected an integer, found a string")
mutate("module-end-below", lambda d: d["modules"][0].update(end=1), "modules[0].end: not above base")
mutate("module-build-id", lambda d: d["modules"][1].update(build_id="xyz"), "modules[1].build_id: not a hex string")

# The heap errors: errors.json (err_frees under the shim: contexts 0 to 4
# an invalid free of a freed block, inside a block, on the stack, of a
# global and of a wild pointer; 5 to 7 mismatched frees; 8 a realloc of a
# freed block; 9 a fishy size; 10 three frees inside a block), each broken
# in one way.
def emutate(name, change, msg):
    mutate(name, change, msg, errors)

def err(i, **kv):
    return lambda d: d["errors"][i].update(kv)

emutate("errors-object", lambda d: d.update(errors={}), "errors: expected an array, found an object")
emutate("error-number", lambda d: d["errors"].__setitem__(0, 5), "errors[0]: expected an object, found an integer")
emutate("error-kind", err(0, kind="double_free"),
        "errors[0].kind: \"double_free\" is not invalid_free, mismatched_free, fishy_value, "
        "invalid_read, invalid_write or overwritten")
emutate("error-no-kind", lambda d: d["errors"][1].pop("kind"), "errors[1].kind: missing")
emutate("error-count-zero", err(10, count=0), "errors[10].count: 0 is out of range (at least 1)")
emutate("error-count-string", err(10, count="3"), "errors[10].count: expected an integer, found a string")
emutate("error-no-function", lambda d: d["errors"][0].pop("function"), "errors[0].function: missing")
emutate("error-function-long", err(0, function="f" * 65),
        "errors[0].function: string of 65 bytes is too long (at most 64)")
emutate("error-stack-range", err(4, stack=19), "errors[4].stack: 19 is not an index into stacks (19 stacks)")
emutate("error-no-stack", lambda d: d["errors"][4].pop("stack"), "errors[4].stack: missing")
emutate("error-call-pc-negative", err(0, call_pc=-1), "errors[0].call_pc: -1 is negative")
emutate("error-call-frames-many", err(0, call_frames=["free"] * 5),
        "errors[0].call_frames: expected at most 4 names")
emutate("error-call-frames-number", err(0, call_frames=[1]), "errors[0].call_frames: expected at most 4 names")
emutate("error-call-frames-object", err(0, call_frames={}),
        "errors[0].call_frames: expected an array, found an object")
emutate("error-where", err(2, where="heap"),
        "errors[2].where: \"heap\" is not block, freed, stack, global, unknown, after or before")
emutate("error-no-where", lambda d: d["errors"][4].pop("where"), "errors[4].where: missing")
emutate("error-no-address", lambda d: d["errors"][4].pop("address"), "errors[4].address: missing")
emutate("error-address-real", err(4, address=4096.0), "errors[4].address: expected an integer, found a real number")
emutate("error-mismatch-unknown", err(5, where="unknown"),
        "errors[5].where: \"unknown\" for a mismatched free, whose address is a block's")
emutate("error-no-block", lambda d: d["errors"][1].pop("block"), "errors[1].block: missing")
emutate("error-block-array", err(1, block=[]), "errors[1].block: expected an object, found an array")
emutate("error-block-offset", lambda d: d["errors"][1]["block"].update(offset=3),
        "errors[1].block: address + offset is not the error's address")
emutate("error-block-size", lambda d: d["errors"][1]["block"].update(size=-20), "errors[1].block.size: -20 is negative")
emutate("error-block-function", lambda d: d["errors"][5]["block"].pop("function"), "errors[5].block.function: missing")
emutate("error-alloc-stack-range", lambda d: d["errors"][1]["block"].update(alloc_stack=50),
        "errors[1].block.alloc_stack: 50 is not an index into stacks (19 stacks)")
emutate("error-alloc-frames", lambda d: d["errors"][5]["block"].update(alloc_frames="_Znam"),
        "errors[5].block.alloc_frames: expected an array, found a string")
emutate("error-no-free-stack", lambda d: d["errors"][0]["block"].pop("free_stack"),
        "errors[0].block.free_stack: missing")
emutate("error-free-pc", lambda d: d["errors"][8]["block"].update(free_pc="free"),
        "errors[8].block.free_pc: expected an integer, found a string")
emutate("error-no-thread", lambda d: d["errors"][2].pop("thread"), "errors[2].thread: missing")
emutate("error-thread-zero", err(2, thread=0), "errors[2].thread: 0 is out of range (at least 1)")
emutate("error-no-symbol", lambda d: d["errors"][3].pop("symbol"), "errors[3].symbol: missing")
emutate("error-symbol-long", err(3, symbol="_Z" + "x" * 5000),
        "errors[3].symbol: string of 5002 bytes is too long (at most 4096)")
emutate("error-no-offset", lambda d: d["errors"][3].pop("offset"), "errors[3].offset: missing")
emutate("error-fishy-positive", err(9, value=5), "errors[9].value: 5 is not negative, and so not fishy")
emutate("error-fishy-no-value", lambda d: d["errors"][9].pop("value"), "errors[9].value: missing")
emutate("error-fishy-no-argument", lambda d: d["errors"][9].pop("argument"), "errors[9].argument: missing")
emutate("errors-above-summary", lambda d: d["error_summary"].update(errors=12),
        "errors: more errors than error_summary.errors (12)")
emutate("errors-count-huge", err(10, count=2**63 - 1), "errors: more errors than error_summary.errors (13)")
emutate("errors-contexts-above", lambda d: d["error_summary"].update(contexts=10),
        "errors: 11 contexts, more than error_summary.contexts (10)")
emutate("errors-no-summary", lambda d: d.pop("error_summary"), "error_summary: missing, with errors")
emutate("summary-no-errors", lambda d: d.pop("errors"), "errors: missing, with error_summary")
emutate("error-summary-string", lambda d: d["error_summary"].update(suppressed="0"),
        "error_summary.suppressed: expected an integer, found a string")
emutate("errors-count-mode", lambda d: d["options"].update(mode="count"), "errors: in a count-mode dump")
emutate("errors-no-stacks", lambda d: d.pop("stacks"), "errors[0].stack: 0 is not an index into stacks (0 stacks)")
emutate("error-free-after", err(1, where="after"),
        "errors[1].where: \"after\" is for a guarded block's errors, not an invalid free")

# The guarded blocks' errors: guard.json (test/guard/guarded.c several:
# 0 bytes written before a 20-byte block, 1 in the slack after a 13-byte
# one, both found at their frees; 2 a read of 8 bytes inside a freed
# 128-byte block), and its pool, each broken in one way.
def gmutate(name, change, msg):
    mutate(name, change, msg, guard)

def blk(i, **kv):
    return lambda d: d["errors"][i]["block"].update(kv)

def moved(i, off):
    def change(d):
        e = d["errors"][i]
        e["block"]["offset"] = off
        e["address"] = e["block"]["address"] + off
    return change

gmutate("guard-kind", err(2, kind="invalid_exec"),
        "errors[2].kind: \"invalid_exec\" is not invalid_free, mismatched_free, fishy_value, "
        "invalid_read, invalid_write or overwritten")
gmutate("guard-no-size", lambda d: d["errors"][2].pop("size"), "errors[2].size: missing")
gmutate("guard-size-string", err(2, size="8"), "errors[2].size: expected an integer, found a string")
gmutate("guard-size-negative", err(2, size=-8), "errors[2].size: -8 is negative")
gmutate("guard-size-huge", err(2, size=5000), "errors[2].size: 5000 is out of range (at most 4096)")
gmutate("guard-access-no-stack", lambda d: d["errors"][2].pop("stack"), "errors[2].stack: missing")
gmutate("guard-access-stack-range", err(2, stack=8), "errors[2].stack: 8 is not an index into stacks (8 stacks)")
gmutate("guard-where-bad", err(2, where="beyond"),
        "errors[2].where: \"beyond\" is not block, freed, stack, global, unknown, after or before")
gmutate("guard-read-block", err(2, where="block"),
        "errors[2].where: \"block\" is not after, before, freed or unknown, for an invalid read")
gmutate("guard-write-stack", err(2, kind="invalid_write", where="stack"),
        "errors[2].where: \"stack\" is not after, before, freed or unknown, for an invalid write")
gmutate("guard-overwritten-freed", err(0, where="freed"),
        "errors[0].where: \"freed\" is not after or before, for bytes written around a block")
gmutate("guard-overwritten-no-function", lambda d: d["errors"][0].pop("function"), "errors[0].function: missing")
gmutate("guard-overwritten-call-frames", err(0, call_frames="free"),
        "errors[0].call_frames: expected an array, found a string")
gmutate("guard-no-where", lambda d: d["errors"][1].pop("where"), "errors[1].where: missing")
gmutate("guard-no-block", lambda d: d["errors"][1].pop("block"), "errors[1].block: missing")
gmutate("guard-after-inside", moved(1, 5), "errors[1].block.offset: 5 is not after the block (size 13)")
gmutate("guard-before-inside", moved(0, 0), "errors[0].block.offset: 0 is not before the block")
gmutate("guard-offset-address", blk(0, offset=-3), "errors[0].block: address + offset is not the error's address")
gmutate("guard-offset-huge", blk(0, offset=-2**40),
        "errors[0].block.offset: -1099511627776 is out of range (-2147483647 to 2147483647)")
gmutate("guard-offset-string", blk(0, offset="-2"), "errors[0].block.offset: expected an integer, found a string")
gmutate("guard-block-size", blk(1, size=-13), "errors[1].block.size: -13 is negative")
gmutate("guard-no-free-stack", lambda d: d["errors"][2]["block"].pop("free_stack"),
        "errors[2].block.free_stack: missing")
gmutate("guard-alloc-stack-range", blk(2, alloc_stack=99),
        "errors[2].block.alloc_stack: 99 is not an index into stacks (8 stacks)")
gmutate("guard-array", lambda d: d.update(guard=[]), "guard: expected an object, found an array")
gmutate("guard-no-mean", lambda d: d["guard"].pop("mean"), "guard.mean: missing")
gmutate("guard-mean-zero", lambda d: d["guard"].update(mean=0), "guard.mean: 0 is out of range (at least 1)")
gmutate("guard-mean-huge", lambda d: (d["guard"].update(mean=2**41), d["options"].update(guard=2**41)),
        "guard.mean: 2199023255552 is out of range (at most 1099511627776)")
gmutate("guard-slots-zero", lambda d: d["guard"].update(slots=0), "guard.slots: 0 is out of range (at least 1)")
gmutate("guard-no-live", lambda d: d["guard"].pop("live"), "guard.live: missing")
gmutate("guard-live-string", lambda d: d["guard"].update(live="1"), "guard.live: expected an integer, found a string")
gmutate("guard-live-above-guarded", lambda d: d["guard"].update(live=5), "guard.live: 5 is above guard.guarded (4)")
gmutate("guard-live-above-slots", lambda d: d["guard"].update(guarded=5000, live=2000),
        "guard.live: 2000 is above guard.slots (1024)")
gmutate("guard-not-the-option", lambda d: d["options"].update(guard=5), "guard.mean: 1 is not options.guard (5)")
gmutate("guard-option-string", lambda d: d["options"].update(guard="1"),
        "options.guard: expected an integer, found a string")
gmutate("guard-count-mode", lambda d: (d.pop("errors"), d.pop("error_summary"), d["options"].update(mode="count")),
        "guard: in a count-mode dump")

# The keys of the heap over time: track.json with valid ones added, then
# each broken in one way.
def timed(d):
    d["dump"] = {"reason": "exit", "t_s": 0.123}
    d["heap"].update(peak_bytes_bound=0, peak_t_s=0.05, temporary=2)
    d["functions"]["malloc"]["temporary"] = 2
    d["stack_stats"] = [{"stack": 1, "allocs": 2, "bytes": 64, "in_use_blocks": 2,
                         "in_use_bytes": 64, "temporary": 0, "peak_bytes": 64, "peak_blocks": 2}]
    d["thread_stacks"] = [{"tid": 4095, "stack": 1, "allocs": 2, "bytes": 64}]
    d["snapshots"] = [
        {"t_s": 0.01, "bytes_allocated": 100, "bytes_freed": 0, "in_use_bytes": 100, "in_use_blocks": 1},
        {"t_s": 0.05, "bytes_allocated": 4100, "bytes_freed": 100, "in_use_bytes": 4000, "in_use_blocks": 2,
         "peak": True, "detail": [{"stack": 3, "bytes": 3936, "blocks": 1}, {"stack": 1, "bytes": 64, "blocks": 1}]},
        {"t_s": 0.12, "bytes_allocated": 4379, "bytes_freed": 4096, "in_use_bytes": 283, "in_use_blocks": 6}]
    d["snapshot_info"] = {"max": 100, "detail": "stacks"}

def tmutate(name, change, msg):
    mutate(name, lambda d: (timed(d), change(d)), msg)

tmutate("dump-array", lambda d: d.update(dump=[]), "dump: expected an object, found an array")
tmutate("dump-no-reason", lambda d: d["dump"].pop("reason"), "dump.reason: missing")
tmutate("dump-reason-bad", lambda d: d["dump"].update(reason="crash"),
        "dump.reason: \"crash\" is not exit, interval or signal")
tmutate("dump-t-negative", lambda d: d["dump"].update(t_s=-1), "dump.t_s: -1 seconds is out of range")
tmutate("dump-signal-missing", lambda d: d["dump"].update(reason="signal"), "dump.signal: missing")
tmutate("dump-signal-on-exit", lambda d: d["dump"].update(signal={"number": 11, "name": "SIGSEGV"}),
        "dump.signal: given, but the reason is \"exit\"")
tmutate("dump-signal-number", lambda d: d["dump"].update(reason="signal", signal={"number": 99, "name": "X"}),
        "dump.signal.number: 99 is out of range (at most 64)")
tmutate("dump-signal-name", lambda d: d["dump"].update(reason="signal", signal={"number": 11, "name": 11}),
        "dump.signal.name: expected a string, found an integer")
tmutate("peak-bound-negative", lambda d: d["heap"].update(peak_bytes_bound=-1),
        "heap.peak_bytes_bound: -1 is negative")
tmutate("peak-t-string", lambda d: d["heap"].update(peak_t_s="0.5"),
        "heap.peak_t_s: expected a number, found a string")
tmutate("temporary-above-allocs", lambda d: d["heap"].update(temporary=8),
        "heap.temporary: 8 is above heap.allocs (7)")
tmutate("fn-temporary-above-calls", lambda d: d["functions"]["malloc"].update(temporary=6),
        "functions.malloc.temporary: 6 is above its calls (5)")
tmutate("stack-stat-temporary", lambda d: d["stack_stats"][0].update(temporary=3),
        "stack_stats[0].temporary: 3 is above its allocs (2)")
tmutate("stack-stat-peak-above", lambda d: d["stack_stats"][0].update(peak_bytes=5000),
        "stack_stats[0].peak_bytes: 5000 is above heap.peak_bytes (4000)")
tmutate("stack-stat-peak-alone", lambda d: d["stack_stats"][0].pop("peak_blocks"),
        "stack_stats[0]: peak_bytes and peak_blocks come together")
tmutate("thread-stacks-object", lambda d: d.update(thread_stacks={}),
        "thread_stacks: expected an array, found an object")
tmutate("thread-stack-range", lambda d: d["thread_stacks"][0].update(stack=9),
        "thread_stacks[0].stack: 9 is not an index into stacks (5 stacks)")
tmutate("thread-stack-tid", lambda d: d["thread_stacks"][0].update(tid=-3),
        "thread_stacks[0].tid: -3 is negative")
tmutate("snapshots-object", lambda d: d.update(snapshots={}), "snapshots: expected an array, found an object")
tmutate("snapshot-number", lambda d: d["snapshots"].append(5), "snapshots[3]: expected an object, found an integer")
tmutate("snapshot-no-t", lambda d: d["snapshots"][0].pop("t_s"), "snapshots[0].t_s: missing")
tmutate("snapshot-t-backwards", lambda d: d["snapshots"][2].update(t_s=0.02),
        "snapshots[2].t_s: 0.02 is before the previous snapshot's")
tmutate("snapshot-allocated-backwards", lambda d: d["snapshots"][2].update(bytes_allocated=50),
        "snapshots[2].bytes_allocated: below the previous snapshot's")
tmutate("snapshot-freed-backwards", lambda d: d["snapshots"][0].update(bytes_freed=200),
        "snapshots[1].bytes_freed: below the previous snapshot's")
tmutate("snapshot-above-peak", lambda d: d["snapshots"][0].update(in_use_bytes=4001),
        "snapshots[0].in_use_bytes: 4001 is above heap.peak_bytes (4000)")
tmutate("snapshot-two-peaks", lambda d: d["snapshots"][2].update(peak=True),
        "snapshots[2].peak: a second peak snapshot")
tmutate("snapshot-no-peak", lambda d: d["snapshots"][1].pop("peak"), "snapshots: none is marked as the peak")
tmutate("snapshot-peak-string", lambda d: d["snapshots"][1].update(peak="yes"),
        "snapshots[1].peak: expected a boolean, found a string")
tmutate("detail-object", lambda d: d["snapshots"][1].update(detail={}),
        "snapshots[1].detail: expected an array, found an object")
tmutate("detail-stack-range", lambda d: d["snapshots"][1]["detail"][1].update(stack=5),
        "snapshots[1].detail[1].stack: 5 is not an index into stacks (5 stacks)")
tmutate("detail-too-many-bytes", lambda d: d["snapshots"][1]["detail"][1].update(bytes=65),
        "snapshots[1].detail: more bytes than the snapshot holds")
tmutate("detail-too-many-blocks", lambda d: d["snapshots"][1]["detail"][0].update(blocks=2),
        "snapshots[1].detail: more blocks than the snapshot holds")
tmutate("detail-huge", lambda d: d["snapshots"][1]["detail"].extend([{"stack": 0, "bytes": 2**63 - 1, "blocks": 1}] * 3),
        "snapshots[1].detail: more bytes than the snapshot holds")
tmutate("snapshots-count-mode", lambda d: d["options"].update(mode="count"),
        "snapshots: in a count-mode dump")
tmutate("snapshot-info-detail", lambda d: d["snapshot_info"].update(detail="frames"),
        "snapshot_info.detail: \"frames\" is neither \"stacks\" nor \"callers\"")
tmutate("snapshot-info-no-max", lambda d: d["snapshot_info"].pop("max"), "snapshot_info.max: missing")

# And the valid one, for the checks below.
d = copy.deepcopy(base)
timed(d)
open(os.path.join(out, "timed.json.ok"), "w").write(json.dumps(d))
EOF

# refused NAME FILE MESSAGE ARGS...: allocspy-report ARGS exits 2 within 30
# seconds and says "allocspy-report: error: FILE: MESSAGE" as its only line
# ("*": any message), with nothing on stdout.
refused() {
	name=$1 f=$2 msg=$3
	shift 3
	# shellcheck disable=SC2086 # $AS is a command prefix, or nothing
	timeout 30 ${AS:-} "$REPORT" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
	rc=$?
	lines=$(wc -l <"$TMP/err")
	first=$(head -n 1 "$TMP/err")
	want="allocspy-report: error: $f: "
	case $first in
	"$want"*) prefix=yes ;;
	*) prefix=no ;;
	esac
	if [ "$msg" != "*" ] && [ "$first" != "$want$msg" ]; then
		prefix="no: expected '$want$msg'"
	fi
	crash=no
	[ "$rc" -ge 128 ] && crash="yes ($rc)"
	check "$name: status 2, one error line, no crash, no output" \
		"status 2, 1 line, message yes, crash no, stdout ''" \
		"status $rc, $lines line, message $prefix, crash $crash, stdout '$(head -c 200 "$TMP/out")'"
	[ "$lines" -eq 1 ] || printf '#   stderr: %s\n' "$(head -c 300 "$TMP/err")"
}

# Every case against five commands: summary, leaks, errors, and compare and
# html with the bad dump second (a good one first must not hide it).
ncases=0
while IFS='	' read -r case msg; do
	f=$H/$case.json
	refused "$case (summary)" "$f" "$msg" "$f"
	refused "$case (leaks)" "$f" "$msg" leaks "$f"
	refused "$case (errors)" "$f" "$msg" errors "$f"
	refused "$case (compare)" "$f" "$msg" compare "$G/track.json" "$f"
	refused "$case (html)" "$f" "$msg" html "$G/track.json" "$f" -o "$TMP/page.html"
	ncases=$((ncases + 1))
done <"$H/index"
check "at least 100 malformed dumps were tried" yes "$([ "$ncases" -ge 100 ] && echo yes || echo "no, $ncases")"

# The valid dumps those cases broke load, for every command.
for args in "" leaks "compare $G/track.json" "html -o $TMP/page.html"; do
	# shellcheck disable=SC2086 # the words are the arguments
	"$REPORT" $args "$H/timed.json.ok" >/dev/null 2>"$TMP/err"
	check "the heap-over-time keys, valid: ${args:-summary} exits 0" "0|" "$?|$(grep error "$TMP/err")"
done
for f in errors guard; do
	for args in "" errors "errors --json --gen-suppressions" "compare $G/track.json" "html -o $TMP/page.html"; do
		# shellcheck disable=SC2086 # the words are the arguments
		"$REPORT" $args "$G/$f.json" >/dev/null 2>"$TMP/err"
		check "$f.json's heap errors, valid: ${args:-summary} exits 0" "0|" "$?|$(grep error "$TMP/err")"
	done
done

# Files that are not dumps at all.
refused "missing file" "$H/nonexistent.json" "No such file or directory" "$H/nonexistent.json"
refused "missing file (compare, first)" "$H/nonexistent.json" "No such file or directory" \
	compare "$H/nonexistent.json" "$G/track.json"
refused "a directory" "$H" "Is a directory" "$H"
refused "a directory (leaks)" "$H" "Is a directory" leaks "$H"
refused "a read error" /proc/self/mem "read error: Input/output error" /proc/self/mem
refused "/dev/null" /dev/null "empty file" /dev/null
refused "empty stdin" /dev/stdin "empty file" /dev/stdin

# A file it may not read: as root, through setpriv to nobody.
cp "$G/track.json" "$H/unreadable.json"
chmod 000 "$H/unreadable.json"
if [ "$(id -u)" != 0 ]; then
	refused "an unreadable file" "$H/unreadable.json" "Permission denied" "$H/unreadable.json"
elif command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups \
	test -x "$REPORT" 2>/dev/null; then
	chmod 755 "$TMP" "$H"
	AS="setpriv --reuid=65534 --regid=65534 --clear-groups"
	refused "an unreadable file" "$H/unreadable.json" "Permission denied" "$H/unreadable.json"
	AS=
else
	ok "an unreadable file # SKIP root, and no setpriv to drop it"
fi

# Only the first bad dump of a comparison is named.
refused "compare: two bad dumps, the first is named" "$H/empty.json" "empty file" \
	compare "$H/empty.json" "$H/version-2.json"

# A dump that is valid but odd is no error: huge, yet allowed, numbers.
python3 - "$G/track.json" "$TMP/big.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
big = 2 ** 60
for k in ("allocs", "frees", "bytes_allocated", "in_use_bytes", "in_use_blocks", "peak_bytes"):
    d["heap"][k] = big
for f in d["functions"].values():
    for k in f:
        f[k] = big if k != "failed" else 0
for t in d["threads"]:
    for k in ("allocs", "frees", "bytes_allocated", "ref_acquires", "ref_releases"):
        t[k] = big
d["refs"] = {k: big for k in d["refs"]}
d["histogram"] = [{"le": 2 ** 62, "count": big}]
d["loss_records"][0]["indirect_bytes"] = big
json.dump(d, open(sys.argv[2], "w"))
EOF
for args in "$TMP/big.json" "leaks --show-leak-kinds=all $TMP/big.json" \
	"compare $TMP/big.json $G/track.json" "--json $TMP/big.json" \
	"html -o $TMP/page.html $TMP/big.json $G/track.json"; do
	# shellcheck disable=SC2086 # the words are the arguments
	timeout 30 "$REPORT" $args >"$TMP/out" 2>"$TMP/err"
	check "the largest allowed numbers: $(echo "$args" | sed "s|$TMP/||g; s|$G/||g")" 0 "$?"
done
check "the largest allowed numbers: printed with separators" \
	"==4095==   total heap usage: 1,152,921,504,606,846,976 allocs, 1,152,921,504,606,846,976 frees, 1,152,921,504,606,846,976 bytes allocated" \
	"$("$REPORT" "$TMP/big.json" 2>/dev/null | sed -n 3p)"

# --- the fuzzer ----------------------------------------------------------------------

# Once per make check-full: in the full tier, and not again in the
# sanitizer build's run of this file (FUZZ=no, make check-asan); the fuzzer
# brings its own sanitizers.
if [ "$TIER" = quick ] || [ "${FUZZ:-yes}" = no ]; then
	:
elif command -v clang >/dev/null 2>&1; then
	# The same 200,000 inputs every time (seed 1): a failure here is
	# repeatable. test/fuzz/run.sh without FUZZ_SEED explores at random.
	if FUZZ_SEED=1 FUZZ_RUNS=200000 sh "$TOP/test/fuzz/run.sh" 120 >"$TMP/fuzz.log" 2>&1; then
		ok "fuzz_load: 200,000 inputs (seed 1) without a crash, a leak or a hang ($(grep -o 'Done [0-9]* runs' "$TMP/fuzz.log" | tail -n 1))"
	else
		not_ok "fuzz_load: 200,000 inputs (seed 1) without a crash, a leak or a hang" "$(tail -n 30 "$TMP/fuzz.log")"
	fi
else
	ok "fuzz_load # SKIP no clang"
fi
