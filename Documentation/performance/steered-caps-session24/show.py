#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import json
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)


def fractions(run_dir):
    cells = {}
    for line in (run_dir / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        result = r.get("result") or {}
        frac = result.get("fraction_of_capacity")
        key = (r["topology"], r["variant"], r["msg"])
        cells.setdefault(key, []).append("–" if frac is None else f"{frac:.2f}")
    return cells


def table(title, dirs):
    runs = {d.name: fractions(d) for d in dirs}
    keys = sorted({k for c in runs.values() for k in c}, key=lambda k: (k[0], k[1], k[2]))
    print(f"\n{title}\n")
    print("| cell | " + " | ".join(runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for k in keys:
        label = f"{k[0]} {k[1]} {k[2] // 1024} KB"
        print(f"| {label} | " + " | ".join(" / ".join(runs[n].get(k, ["–"])) for n in runs) + " |")


table("The change (A: 6e20f55, caps at the planned rate; B: caps at the bucket's rate)",
      sorted(d for d in here.glob("ab5-*") if d.is_dir()))
table("Before the change, a factor on the steered caps (f1: none, f2: twice, f8: eight times)",
      [here / "factor" / n for n in ("ab3-f1-1", "ab3-f2-1", "ab3-f1-2", "ab3-f2-2", "ab3-f1-3", "ab3-f2-3")])
table("", [here / "factor" / n for n in ("ab4-f2-1", "ab4-f8-1", "ab4-f2-2", "ab4-f8-2", "ab4-f2-3", "ab4-f8-3")])
table("Delayed ACKs: quickack 1 on every host's subnet route (qa) against none (base)",
      sorted(d for d in (here / "quickack").glob("ab*") if d.is_dir()))
