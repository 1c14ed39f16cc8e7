#!/usr/bin/env python3
"""Each run of runs-*.jsonl: fraction of C, timeouts, and per iteration the slowest rank's
time in ms (*N: segments retransmitted during it; /R: the slowest rank)."""
import glob
import json
import os
import sys

here = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
for path in sorted(glob.glob(os.path.join(here, "runs-*.jsonl")),
                   key=lambda p: int(os.path.basename(p).split("-")[1])):
    for line in open(path):
        run = json.loads(line)
        res = run["result"]
        trace = res["iteration_trace"]
        print("%s rep %d: %.2f of C, %d timeouts, pacing %s" % (
            os.path.basename(path), run["rep"], res["fraction_of_capacity"],
            res["tcp"]["TCPTimeouts"], res.get("pacing_rate_bps")))
        print("   " + " ".join(
            "%.0f%s/%d" % (us / 1000, "*%d" % n if n else "", rank)
            for us, n, rank in zip(trace["slowest_us"], trace["retrans_per_iteration"],
                                   trace["slowest_rank"])))
