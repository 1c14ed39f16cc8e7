#!/usr/bin/env python3
"""Per cell and bucket burst (frames): each run's fraction of C, (timeouts, median iteration of
the slowest rank in ms), in the order the invocations ran (runs-N-SERIES-FRAMES.jsonl)."""
import glob
import json
import os
import sys
from collections import defaultdict

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
cells = defaultdict(list)
for path in sorted(glob.glob(os.path.join(here, "runs-*.jsonl")),
                   key=lambda p: int(os.path.basename(p).split("-")[1])):
    _, _, series, frames = os.path.basename(path)[:-len(".jsonl")].split("-")
    for line in open(path):
        run = json.loads(line)
        res = run["result"]
        slowest = sorted(res["iteration_trace"]["slowest_us"])
        cells[(series, run["topology"], run["msg"], frames)].append(
            "%.2f (%d, %.0f)" % (res["fraction_of_capacity"], res["tcp"]["TCPTimeouts"],
                                slowest[len(slowest) // 2] / 1000))
for (series, topology, msg, frames), runs in sorted(cells.items()):
    print("%s %s %5d B, %s frame(s): %s" % (series, topology, msg, frames, "  ".join(runs)))
