#!/usr/bin/env python3
"""Per cell: each invocation's fraction of C, timeouts and first measured iteration (slowest
rank, ms), from the runs-*.jsonl files ab.sh's invocations wrote (copied here)."""
import glob
import json
import os
import statistics
import sys
from collections import defaultdict

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
cells = defaultdict(lambda: defaultdict(list))
for path in sorted(glob.glob(os.path.join(here, "runs-*.jsonl"))):
    build = path.rsplit("-", 1)[1].split(".")[0]  # runs-1-A.jsonl -> A
    for line in open(path):
        run = json.loads(line)
        res = run["result"]
        trace = res.get("iteration_trace") or {}
        first = trace.get("slowest_us", [0])[0] / 1000
        cells[(run["topology"], run["msg"])][build].append(
            (res["fraction_of_capacity"], res["tcp"]["TCPTimeouts"], first))
print("| cell | A: fraction of C (median), timeouts, first iteration ms | B: the same |")
print("| --- | --- | --- |")
for (topology, msg), builds in sorted(cells.items(), key=lambda kv: (kv[0][0], kv[0][1])):
    row = []
    for build in "AB":
        runs = builds[build]
        row.append("%s (%.2f), %d, %s" % (
            " / ".join("%.2f" % r[0] for r in runs), statistics.median(r[0] for r in runs),
            sum(r[1] for r in runs), " / ".join("%.0f" % r[2] for r in runs)))
    print("| %s, %d KB | %s | %s |" % (topology, msg // 1024, row[0], row[1]))
