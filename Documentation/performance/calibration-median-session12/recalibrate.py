#!/usr/bin/env python3
"""Replays the calibration of published runs offline: for every daemon's recorded phases
(predictions.jsonl of make bench-system: the raw prediction and the measured time of each phase,
in order), it recomputes the calibrated prediction each phase would have had under

  ewma     r <- r + 0.2 (measured / predicted - r), the first sample sets r (the daemon until
           session 12; its replay reproduces the recorded calibrated values)
  medianN  the median of the last N ratios (session 12: N = 9)

with the factor clamp(r, 0.5, 3) taken before the phase, and judges each (topology, variant,
size) cell as report.py does: the median calibrated prediction within +-15 % of the median
measured phase time. Decisions are taken as recorded: where calibration would have changed a
plan (the trial bound, the stall test), the replay cannot say what that plan would have measured.

usage: recalibrate.py PREDICTIONS.jsonl [N ...]     (default N: 5 9 16)
"""
import collections
import json
import statistics
import sys


def clamp(r):
    return min(3.0, max(0.5, r))


def replay_ewma(phases, alpha=0.2):
    r, out = None, []
    for p in phases:
        out.append(p["predicted_us"] * (1.0 if r is None else clamp(r)))
        x = p["measured_us"] / p["predicted_us"]
        r = x if r is None else r + alpha * (x - r)
    return out


def replay_median(phases, n):
    window, out = [], []
    for p in phases:
        out.append(p["predicted_us"] * (1.0 if not window else clamp(statistics.median(window))))
        window = (window + [p["measured_us"] / p["predicted_us"]])[-n:]
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    windows = [int(a) for a in sys.argv[2:]] or [5, 9, 16]
    methods = {"recorded": None, "ewma": replay_ewma}
    methods.update({f"median{n}": (lambda ph, n=n: replay_median(ph, n)) for n in windows})
    cells = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(sys.argv[1]) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            phases = [p for p in r.get("phases", []) if (p.get("measured_us") or 0) > 0 and p.get("predicted_us")]
            if not phases:
                continue
            c = cells[(r["topology"], r["variant"], int(r["msg"]))]
            c["measured"] += [p["measured_us"] for p in phases]
            c["recorded"] += [p.get("calibrated_us") or p["predicted_us"] for p in phases]
            for name, fn in methods.items():
                if fn:
                    c[name] += fn(phases)
    within = collections.Counter()
    print("| topology | variant | size | " + " | ".join(methods) + " |")
    print("|---|---|---:|" + "---:|" * len(methods))
    for key in sorted(cells):
        c = cells[key]
        measured = statistics.median(c["measured"])
        row = []
        for name in methods:
            err = (statistics.median(c[name]) - measured) / measured
            within[name] += abs(err) <= 0.15
            row.append(f"{err * 100:+.0f} %" + ("" if abs(err) <= 0.15 else " ✗"))
        print(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(row) + " |")
    print()
    print("cells within ±15 %: " + ", ".join(f"{n} {within[n]}" for n in methods) + f" (of {len(cells)})")


if __name__ == "__main__":
    main()
