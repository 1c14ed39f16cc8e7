#!/usr/bin/env python3
"""Per bench-system output directory (abba-bench.sh's N-A, N-B): for each (topology, variant,
size), the daemons' calibrated prediction (median over their logged phases, a quiet summary
weighing the phases it stands for, as report.py does) against three measurements: the median of
what the daemons saw, weighted alike (bench-system's "measured"), and the benchmark's own median iteration time over all ranks and phases
(iteration_us.p50, the median over the cell's repetitions) and its mean phase time (the run's
seconds over its iterations: every rank runs them all), with the fraction of C.
    compare.py DIR [DIR...]"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../tools/bench/system"))
from report import wmedian  # noqa: E402  the same weighted median as the published tables




def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


for d in sys.argv[1:]:
    preds, runs = {}, {}
    for r in load(f"{d}/predictions.jsonl"):
        key = (r["topology"], r["variant"], int(r["msg"]))
        for p in r.get("phases", []):
            if p.get("measured_us") and p.get("predicted_us"):
                preds.setdefault(key, []).append(p)
    for r in load(f"{d}/runs.jsonl"):
        res = r.get("result") or {}
        key = (r["topology"], r["variant"], int(r["msg"]))
        it = (res.get("iteration_us") or {}).get("p50")
        mean = res["seconds"] * 1e6 / res["iterations_completed"] if res.get("seconds") and res.get("iterations_completed") else None
        if it:
            runs.setdefault(key, []).append((it, res.get("fraction_of_capacity"), mean))
    print(f"== {d}")
    print("topology variant size: entries (summaries) | calibrated | daemons' median, error | iteration p50, error | mean, error | fraction")
    for key in sorted(preds):
        ps = preds[key]
        cal = wmedian((p.get("calibrated_us") or p["predicted_us"], int(p.get("quiet_phases") or 1)) for p in ps)
        seen = wmedian((p["measured_us"], int(p.get("quiet_phases") or 1)) for p in ps)
        summaries = sum(1 for p in ps if p.get("quiet_phases"))
        line = f"{key[0]} {key[1]} {key[2]}: {len(ps)} ({summaries}) | {cal:.0f} us | {seen:.0f} us, {(cal - seen) / seen * 100:+.0f} %"
        if key in runs:
            it = statistics.median(x[0] for x in runs[key])
            frac = statistics.median(x[1] for x in runs[key] if x[1] is not None)
            means = [x[2] for x in runs[key] if x[2]]
            line += f" | {it:.0f} us, {(cal - it) / it * 100:+.0f} %"
            if means:
                mean = statistics.median(means)
                line += f" | {mean:.0f} us, {(cal - mean) / mean * 100:+.0f} %"
            line += f" | {frac:.2f}"
        print(line)
