#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C / TCPTimeouts per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import json
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)


def cells_of(run_dir):
    cells = {}
    for line in (run_dir / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        result = r.get("result") or {}
        frac = result.get("fraction_of_capacity")
        timeouts = (result.get("tcp") or {}).get("TCPTimeouts")
        text = "–" if frac is None else f"{frac:.2f} ({timeouts})"
        cells.setdefault((r["topology"], r["variant"], r["msg"]), []).append(text)
    return cells


def table(title, dirs):
    runs = {d.name: cells_of(d) for d in dirs}
    keys = sorted({k for c in runs.values() for k in c})
    print(f"\n{title}\n")
    print("| cell | " + " | ".join(runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for k in keys:
        label = f"{k[0]} {k[1]} {k[2] // 1024} KB"
        print(f"| {label} | " + " | ".join(" / ".join(runs[n].get(k, ["–"])) for n in runs) + " |")


for prefix in ("bkt-", "bkt2-", "big-"):
    table(f"{prefix[:-1]}: A main (bucket for m <= q' MTU only), B every length; fraction of C (timeouts)",
          sorted(d for d in here.glob(prefix + "*") if d.is_dir()))
for prefix, what in (("t35-", "3+5 hosts, 100 Mbit/s, 20 frames"), ("t35b-", "3+5 hosts, 100 Mbit/s, 20 frames"),
                     ("t66-", "6+6 hosts, 300 Mbit/s, 64 frames")):
    table(f"{what}: A main before the change (a63fb27), B every length",
          sorted(d for d in (here / "setups").glob(prefix + "*") if d.is_dir()))
table("always: A main, B a bucket even where the phase start fits the queue share (not taken)",
      sorted(d for d in (here / "always").glob("alw-*") if d.is_dir()))
