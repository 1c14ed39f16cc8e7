#!/usr/bin/env python3
"""One line per runs.jsonl: topology, variant, size, fraction of C / TCPTimeouts / bottleneck drops.

Usage: show.py FILE_OR_DIR...  (a directory stands for its runs.jsonl)
"""
import json
import os
import sys


def cells(path):
    if os.path.isdir(path):
        path = os.path.join(path, "runs.jsonl")
    for line in open(path):
        run = json.loads(line)
        result = run["result"]
        tcp = result.get("tcp", {})
        drops = run.get("bottleneck", {}).get("drops", "-")
        yield (f"{run['topology']} {run['variant']} {run['msg'] // 1024}k "
               f"{result['fraction_of_capacity']:.3f}/{tcp.get('TCPTimeouts', '-')}/{drops}")


for arg in sys.argv[1:]:
    print(f"{arg}: " + " | ".join(cells(arg)))
