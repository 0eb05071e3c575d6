#!/usr/bin/env python3
# markup.py IN OUT: IN (a valid dump) with markup in every string a page of
# allocspy-report html shows: the program, its arguments, a thread's name,
# a module's path, a loss record's allocator, the signal's name and a
# function's name. Each must be shown as text, never taken for markup or
# run. The strings, one a line, go to standard output.
import json, sys

d = json.load(open(sys.argv[1]))
marks = {
    "exe": "/tmp/<script>alert(1)</script>/prog",
    "arg": "</script><img src=x onerror=alert(2)>",
    "quotes": "a&amp;b \"q\" 'r'",
    "thread": "<svg onload=alert(3)>",
    "module": "/x/<img src=y onerror=alert(4)>.so",
    "alloc_fn": "<iframe onload=alert(5)>",
    "signal": "<b onclick=x>",
    "function": "<script>alert(7)</script>",
}
d["program"]["exe"] = marks["exe"]
d["program"]["argv"] = ["./prog", marks["arg"], marks["quotes"]]
d["threads"][1]["name"] = marks["thread"]
d["modules"][0]["path"] = marks["module"]
d["loss_records"][0]["alloc_fn"] = marks["alloc_fn"]
d["dump"] = {"reason": "signal", "t_s": 0.1, "signal": {"number": 11, "name": marks["signal"]}}
d["functions"][marks["function"]] = {"calls": 1}
json.dump(d, open(sys.argv[2], "w"))
print("\n".join(marks.values()))
