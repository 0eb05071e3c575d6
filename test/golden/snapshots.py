#!/usr/bin/env python3
"""snapshots.py - adds the heap-over-time keys to a real dump of heapprog.

    python3 snapshots.py DUMP LOG OUT

DUMP is what liballocspy.so wrote for heapprog with ALLOCSPY_BACKTRACE=16;
LOG is heapprog's stdout, a line for every allocation and free it made.
The log is replayed, one event every 0.5 ms, into the keys a tracking run
writes: "dump", heap.peak_bytes / peak_bytes_bound / peak_t_s / temporary,
functions.*.temporary, stack_stats[].temporary / peak_bytes / peak_blocks,
"thread_stacks", "snapshots" (one every 20 events, the peak and the state at
exit; "detail" on the peak and on every 10th) and "snapshot_info". The
program's sites are matched with the dump's stacks by their number of
blocks and bytes, which heapprog makes distinct. Stacks the log does not
know (ld.so's calloc of a thread's DTV) are allocated where the thread
starts and, when freed, freed where it is joined. The process and thread
IDs and the times become fixed numbers, so that the reports are the same on
every run. The figures are checked against the dump's own: blocks and
bytes allocated, and in use at exit.
"""
import json
import sys

STEP = 0.0005          # seconds between two events
EVERY = 20             # events between two snapshots
DETAIL_EVERY = 10      # every 10th snapshot has its detail
PID = 4242


def main():
    dump = json.load(open(sys.argv[1]))
    log = open(sys.argv[2]).read().split("\n")
    stats = dump["stack_stats"]

    # The sites' totals, to find their stacks.
    site_total = {}
    for line in log:
        w = line.split()
        if w and w[0] == "a":
            n, b = site_total.get(w[2], (0, 0))
            site_total[w[2]] = (n + 1, b + int(w[4]))
    site_stack = {}
    for site, tot in site_total.items():
        hits = [s["stack"] for s in stats if (s["allocs"], s["bytes"]) == tot]
        if len(hits) != 1:
            sys.exit("snapshots.py: site %s (%d blocks, %d bytes) matches %d stacks"
                     % (site, tot[0], tot[1], len(hits)))
        site_stack[site] = hits[0]
    foreign = [s for s in stats if s["stack"] not in site_stack.values()]

    # The replay: events are (kind, id, stack, fn, size, thread).
    events = []
    fid = -1
    for line in log:
        w = line.split()
        if not w:
            continue
        if w[0] == "a":
            events.append(("a", int(w[1]), site_stack[w[2]], w[3], int(w[4]), int(w[5])))
        elif w[0] == "f":
            events.append(("f", int(w[1]), None, None, 0, int(w[2])))
        elif w[0] in "TJ":
            for s in foreign:
                size = s["bytes"] // s["allocs"]
                for k in range(s["allocs"]):
                    held = k < s["in_use_blocks"]
                    if w[0] == "T":
                        events.append(("a", fid - k, s["stack"], "calloc", size, 1))
                    elif not held:
                        events.append(("f", fid - k, None, None, 0, 1))
                fid -= s["allocs"] if w[0] == "J" else 0

    live = {}                   # id -> (stack, size, fn, thread)
    last = {}                   # thread -> the id of its last allocation
    temp_stack, temp_fn = {}, {}
    ts = {}                     # (thread, stack) -> [allocs, bytes]
    allocated = freed = 0
    peak = (-1, 0)              # (bytes, event index)
    states = []                 # after each event: (t, allocated, freed, live copy or None)
    for i, (kind, eid, stack, fn, size, th) in enumerate(events):
        if kind == "a":
            live[eid] = (stack, size, fn, th)
            last[th] = eid
            allocated += size
            t = ts.setdefault((th, stack), [0, 0])
            t[0] += 1
            t[1] += size
        else:
            stack, size, fn, _ = live.pop(eid)
            freed += size
            if last.get(th) == eid:
                temp_stack[stack] = temp_stack.get(stack, 0) + 1
                temp_fn[fn] = temp_fn.get(fn, 0) + 1
            last.pop(th, None) if last.get(th) == eid else None
        in_use = allocated - freed
        if in_use > peak[0]:
            peak = (in_use, i)
        states.append((round((i + 1) * STEP, 6), allocated, freed, in_use, len(live), dict(live)))

    def detail(live_now):
        by = {}
        for stack, size, _, _ in live_now.values():
            b = by.setdefault(stack, [0, 0])
            b[0] += size
            b[1] += 1
        return [{"stack": s, "bytes": b, "blocks": n}
                for s, (b, n) in sorted(by.items(), key=lambda x: (-x[1][0], x[0]))]

    picks = sorted(set(list(range(EVERY - 1, len(states), EVERY)) + [peak[1], len(states) - 1]))
    snaps = []
    for n, i in enumerate(picks):
        t, a, f, b, blocks, live_now = states[i]
        s = {"t_s": t, "bytes_allocated": a, "bytes_freed": f,
             "in_use_bytes": b, "in_use_blocks": blocks}
        if i == peak[1]:
            s["peak"] = True
        if i == peak[1] or n % DETAIL_EVERY == 0:
            s["detail"] = detail(live_now)
        snaps.append(s)

    # The replay must give the dump's own figures.
    end = states[-1]
    heap = dump["heap"]
    fn_allocs = sum(1 for e in events if e[0] == "a")
    got = (fn_allocs, end[1], end[3], end[4])
    want = (heap["allocs"], heap["bytes_allocated"], heap["in_use_bytes"], heap["in_use_blocks"])
    if got != want:
        sys.exit("snapshots.py: the replay gives %s, the dump says %s" % (got, want))

    t_end = round(end[0] + STEP, 6)
    peak_live = states[peak[1]][5]
    at_peak = {d["stack"]: d for d in detail(peak_live)}
    tids = {}
    for k, t in enumerate(dump["threads"]):
        tids[t["tid"]] = PID + k
        t["tid"] = PID + k
    dump["program"]["pid"] = PID
    dump["program"]["ppid"] = PID - 1
    dump["time"] = {"wall_s": t_end, "user_s": 0.004, "sys_s": 0.002,
                    "start_unix": 1764500000.25}
    dump["dump"] = {"reason": "exit", "t_s": t_end}
    heap.update(peak_bytes=peak[0], peak_bytes_bound=0,
                peak_t_s=states[peak[1]][0], temporary=sum(temp_fn.values()))
    for name, f in dump["functions"].items():
        if "bytes" in f:
            f["temporary"] = temp_fn.get(name, 0)
    for s in stats:
        s["temporary"] = temp_stack.get(s["stack"], 0)
        p = at_peak.get(s["stack"], {"bytes": 0, "blocks": 0})
        s["peak_bytes"] = p["bytes"]
        s["peak_blocks"] = p["blocks"]
    dump["thread_stacks"] = [{"tid": PID + th, "stack": st, "allocs": v[0], "bytes": v[1]}
                             for (th, st), v in sorted(ts.items(), key=lambda x: (-x[1][1], x[0]))]
    dump["snapshots"] = snaps
    dump["snapshot_info"] = {"max": 100, "detail": "stacks"}
    json.dump(dump, open(sys.argv[3], "w"), indent=1)


main()
