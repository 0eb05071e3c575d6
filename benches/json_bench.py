"""json_bench - build COUNT small objects and serialise them with json.dumps.

usage: python3 json_bench.py [COUNT [parse]]   (default 200000)

The allocation-heavy interpreter workload of the benches: many small dicts,
lists and strings, then one large output string; with "parse", that string
is read back with json.loads while the objects are still held, so that a
second copy of them lives at the peak. Standard library only.
"""
import json
import sys


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    objs = [{"id": i, "name": "item-%d" % i, "ok": i % 3 == 0,
             "tags": ["a", "b%d" % (i % 7)], "score": i * 0.25}
            for i in range(count)]
    text = json.dumps(objs)
    back = json.loads(text) if sys.argv[2:3] == ["parse"] else objs
    # Print only the lengths: the work must happen, the output stays small.
    print(len(text), len(back))


if __name__ == "__main__":
    main()
