#!/usr/bin/env python3
# readme-check.py README WORKDIR [--show]: runs the examples of README.md
# and compares their output with the README's. An example is a fenced
# block whose lines start with "$ " (a command; a line ending in "\"
# continues on the next), each followed by the output it shows. The
# commands run one after another in WORKDIR, where build/ and test/ are the
# project's (the caller links them), with sh, stdout and stderr together;
# "$ cat FILE" first writes FILE from the lines the README shows for it.
#
# What differs from run to run is masked in both before they are compared:
# pids (==PID== and the numbers the output gives as pids), addresses,
# build-ids, times (seconds with three decimals, pprof's Duration),
# directories (a path is its last component), the chart of the heap over
# time (its rows, not what is drawn in them), and the resident sizes the
# machine decides in allocspy-report rss (the whole, stacks, the shim's
# own, other anonymous memory, files) with every row's share of it. A README line "..."
# (alone, or before a comment) stands for any number of lines.
#
# Prints one TAP line per block, "ok - README example N: FIRST COMMAND" or
# "not ok - ..." with the differences; exit status 1 when one differs. With
# --show, prints each block's output as run, for the README.
import os, re, subprocess, sys

SKIP = {
    # make demo's output: benchmark timings (t54 checks its table apart).
    "allocspy-report compare strdup-8.json refcount-8.json mutex-8.json":
        "make demo's timings (t54 checks its table)",
    # a screen that needs a terminal, refreshed every second
    "ALLOCSPY_QUIET=1 build/allocspy build/test/progs/live_ramp 10 &":
        "allocspy top's screen needs a terminal (t48 checks it under tmux)",
}


def blocks(text):
    """Each example as [(command, lines shown)], or a list of commands
    without output ("build/allocspy-report ..." lines) as (command, None)."""
    for m in re.finditer(r"```[a-z]*\n(.*?)```", text, re.S):
        lines = m.group(1).split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        if not any(l.startswith("$ ") for l in lines):
            cmds = [(l, None) for l in lines if l.startswith("build/allocspy-report ")]
            if cmds:
                yield cmds
            continue
        steps, i = [], 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            cmd = lines[i][2:]
            while cmd.endswith("\\") and i + 1 < len(lines):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            i += 1
            out = []
            while i < len(lines) and not lines[i].startswith("$ "):
                out.append(lines[i])
                i += 1
            steps.append((cmd, out))
        yield steps


def mask(lines, pids):
    out = []
    for l in lines:
        l = re.sub(r"==\d+==", "==PID==", l)
        for p in pids:
            l = re.sub(r"\b%s\b" % p, "PID", l)
        l = re.sub(r"PID +", "PID ", l)	# a column as wide as the pid
        l = re.sub(r"0x[0-9a-fA-F]{5,}", "0xADDR", l)
        l = re.sub(r"\b[0-9a-f]{40}\b", "BUILDID", l)
        l = re.sub(r"Duration: [^,]*", "Duration: D", l)
        l = re.sub(r"\b\d+\.\d{3}\b", "T", l)
        # The resident memory the machine decides: the process's whole,
        # its stacks' pages touched, the shim's, the loader's and the
        # files' (allocspy-report rss).
        l = re.sub(r"^((?:Resident memory at exit|Peak resident memory).*): [\d,]+ bytes$",
                   r"\1: N bytes", l)
        l = re.sub(r"^(  (?:thread stacks|allocspy's own memory|other anonymous memory|file mappings)"
                   r"\s+)[\d,]+\s+[\d.]+%$", r"\1N", l)
        # and so every row's share of the whole
        l = re.sub(r"^(  (?:heap in use|slack in live|in use but not|free inside|large blocks'|unexplained)"
                   r".*\s)[\d.]+%$", r"\1N%", l)
        # Which snapshots are detailed depends on when the peak's is taken.
        l = re.sub(r"\b\d+ detailed \(@\)", "N detailed (@)", l)
        l = re.sub(r"(?<![\w.])/(?:[^\s:()/]+/)*([^\s:()/]+)", r".../\1", l)
        # The chart's rows: the frame, not what is drawn.
        m = re.match(r"^(\s*[\w.]*[|^])", l)
        if m and re.match(r"^\s*(T|\d+(\.\d)?)?[|^]", l):
            l = m.group(1)
        out.append(l.rstrip())
    return out


def pids_of(lines):
    found = set()
    for l in lines:
        found.update(re.findall(r"==(\d+)==", l))
        found.update(re.findall(r"\bpid (\d+)", l))
        found.update(re.findall(r"allocspy\.\w+\.(\d+)\.json", l))
    return found


def matches(want, got):
    """want may hold "..." lines, each standing for any lines of got."""
    def ellipsis(l):
        return l == "..." or l.startswith("... ")
    memo = {}

    def at(i, j):
        if (i, j) in memo:
            return memo[i, j]
        if i == len(want):
            r = j == len(got)
        elif ellipsis(want[i]):
            r = any(at(i + 1, k) for k in range(j, len(got) + 1))
        else:
            r = j < len(got) and want[i] == got[j] and at(i + 1, j + 1)
        memo[i, j] = r
        return r
    return at(0, 0)


def main():
    readme, work = sys.argv[1], sys.argv[2]
    show = "--show" in sys.argv[3:]
    bad = 0
    # Lists of commands without output run last, on the dumps the
    # examples wrote.
    every = list(blocks(open(readme).read()))
    every = [b for b in every if b[0][1] is not None] + [b for b in every if b[0][1] is None]
    for n, steps in enumerate(every, 1):
        if steps[0][0] in SKIP:
            print("ok - README example %d: %s # SKIP %s" % (n, steps[0][0], SKIP[steps[0][0]]))
            continue
        want, got = [], []
        for cmd, out in steps:
            # A dump named by the pid the README's run had, or by PID: the
            # one this run wrote.
            for name in set(re.findall(r"allocspy\.\w+\.(?:\d+|PID)\.json", cmd)):
                prog = name.split(".")[1]
                have = sorted(f for f in os.listdir(work)
                              if re.fullmatch(r"allocspy\.%s\.\d+\.json" % re.escape(prog), f))
                if have:
                    cmd = cmd.replace(name, have[-1])
            m = re.match(r"cat (\S+)$", cmd)
            if m:
                with open(os.path.join(work, m.group(1)), "w") as f:
                    f.write("\n".join(out) + "\n")
            r = subprocess.run(["sh", "-c", cmd], cwd=work, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=300)
            text = r.stdout.decode(errors="replace")
            lines = text.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            if show:
                print("$ " + cmd)
                print("\n".join(lines))
            if out is None:
                # A list of commands: each runs, and exits 0.
                out, lines = [], ["(exit status %d)" % r.returncode] if r.returncode else []
            want += ["$ " + cmd] + out
            got += ["$ " + cmd] + lines
            if r.returncode != 0 and out:
                got.append("(exit status %d)" % r.returncode)
        pids = pids_of(want) | pids_of(got)
        w, g = mask(want, pids), mask(got, pids)
        if matches(w, g):
            print("ok - README example %d: %s" % (n, steps[0][0]))
        else:
            bad += 1
            print("not ok - README example %d: %s" % (n, steps[0][0]))
            import difflib
            for l in difflib.unified_diff(w, g, "README", "run", lineterm="", n=1):
                print("#   " + l)
    sys.exit(1 if bad else 0)


main()
