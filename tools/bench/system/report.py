#!/usr/bin/env python3
"""Turns bench-system's runs.jsonl into cells.csv, results.md and one PNG per topology.

Every figure in results.md is computed here from the runs file: Documentation/performance.md
includes results.md as generated, so the document and what `make bench-system` prints agree.
A cell is (topology, variant, message size); its figures are the median over repetitions with
the minimum and maximum next to it.
"""
import argparse
import csv
import json
import os
import shutil
import statistics
import re
import subprocess
import sys

VARIANT_ORDER = ["stock", "rto", "pace", "rto+pace", "gappaced", "module-stock", "module-gappaced",
                 "mpi-stock", "mpi-gappaced", "mpi-gappaced-rto"]
VARIANT_TITLE = {
    "stock": "(a) stock",
    "rto": "(b) rto_min 5ms",
    "pace": "(b) pace C/k",
    "rto+pace": "(b) both",
    "gappaced": "(c) gappaced",
    "module-stock": "(d) guest stock",
    "module-gappaced": "(d) guest gappaced",
    "mpi-stock": "(e) MPI stock",
    "mpi-gappaced": "(e) MPI gappaced",
    "mpi-gappaced-rto": "(e) MPI gappaced, floor only",
}
HAND = ["rto", "pace", "rto+pace"]


def size_name(m):
    for unit, div in (("M", 1 << 20), ("K", 1 << 10)):
        if m >= div and m % div == 0:
            return f"{m // div} {unit}B"
    return f"{m} B"


def load(path):
    runs = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                runs.append(json.loads(line))
            except json.JSONDecodeError as e:
                sys.exit(f"report: {path}:{number}: not JSON: {e}")
    return runs


def cells_of(runs):
    cells = {}
    for r in runs:
        key = (r["topology"], r["variant"], int(r["msg"]))
        cells.setdefault(key, []).append(r)
    out = {}
    for key, rs in cells.items():
        fr = [x["result"]["fraction_of_capacity"] for x in rs
              if isinstance(x.get("result"), dict) and isinstance(x["result"].get("fraction_of_capacity"), (int, float))]
        to = [x["result"].get("tcp", {}).get("TCPTimeouts") for x in rs if isinstance(x.get("result"), dict)]
        to = [t for t in to if isinstance(t, (int, float))]
        st = [x["result"].get("stalled_iterations") for x in rs if isinstance(x.get("result"), dict)]
        st = [s for s in st if isinstance(s, (int, float))]
        p99 = [x["result"].get("iteration_us", {}).get("p99") for x in rs if isinstance(x.get("result"), dict)]
        p99 = [p for p in p99 if isinstance(p, (int, float))]
        p50 = [x["result"].get("iteration_us", {}).get("p50") for x in rs if isinstance(x.get("result"), dict)]
        p50 = [p for p in p50 if isinstance(p, (int, float))]
        dr = [(x.get("bottleneck") or {}).get("drops") for x in rs if isinstance(x.get("result"), dict)]
        dr = [d for d in dr if isinstance(d, (int, float))]
        timed_out = sum(1 for x in rs if isinstance(x.get("result"), dict) and x["result"].get("timed_out"))
        out[key] = {
            "timed_out": timed_out,
            # Runs that moved more than the link can carry: the measurement is wrong, not the link
            # fast (session 40's Open MPI 1 KB cells read 1.19 of C from per-rank iteration times).
            "above_capacity": sum(1 for f in fr if f > 1.0),
            "runs": len(rs),
            "ok": len(fr),
            "fraction_median": statistics.median(fr) if fr else None,
            "fraction_min": min(fr) if fr else None,
            "fraction_max": max(fr) if fr else None,
            "timeouts_median": statistics.median(to) if to else None,
            "timeouts_total": sum(to) if to else None,
            "stalled_median": statistics.median(st) if st else None,
            "p99_us_median": statistics.median(p99) if p99 else None,
            "p50_us_median": statistics.median(p50) if p50 else None,
            # Packets the bottleneck FIFO dropped, both directions (runs since session 32; none
            # for the guest, whose bottleneck is inside the emulated machine).
            "drops_median": statistics.median(dr) if dr else None,
        }
    return out


def fmt_fraction(c):
    if not c or c["fraction_median"] is None:
        return "–"
    mark = (" †" if c.get("timed_out") else "") + (" ‼" if c.get("above_capacity") else "")
    if c["ok"] == 1:
        return f"{c['fraction_median']:.2f}{mark}"
    return f"{c['fraction_median']:.2f} ({c['fraction_min']:.2f}–{c['fraction_max']:.2f}){mark}"


def fmt_num(v):
    if v is None:
        return "–"
    return f"{v:g}" if isinstance(v, float) and not v.is_integer() else f"{int(v)}"


def write_csv(cells, path):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["topology", "variant", "msg_bytes", "runs", "ok", "fraction_median", "fraction_min",
                    "fraction_max", "timeouts_median", "timeouts_total", "stalled_median", "p99_us_median",
                    "drops_median"])
        for (topo, variant, m), c in sorted(cells.items(), key=lambda kv: (kv[0][0], order(kv[0][1]), kv[0][2])):
            w.writerow([topo, variant, m, c["runs"], c["ok"], c["fraction_median"], c["fraction_min"],
                        c["fraction_max"], c["timeouts_median"], c["timeouts_total"], c["stalled_median"],
                        c["p99_us_median"], c["drops_median"]])


def order(variant):
    return VARIANT_ORDER.index(variant) if variant in VARIANT_ORDER else len(VARIANT_ORDER)


def fmt_apart(a, b):
    """a and b with two decimals, or as many more (up to four) as it takes to tell them apart:
    a median of 0.9251 below one of 0.9268 must not read "0.93 < 0.93"."""
    digits = 2
    while digits < 4 and round(a, digits) == round(b, digits):
        digits += 1
    return f"{a:.{digits}f}", f"{b:.{digits}f}"


def acceptance(cells, topo, sizes, variants):
    """Lines saying, per automatic variant, where it stands against the issue's criteria."""
    lines = []
    for auto in ("gappaced", "module-gappaced"):
        if auto not in variants:
            continue
        below, lost_to_hand, timeouts = [], [], []
        for m in sizes:
            c = cells.get((topo, auto, m))
            if not c or c["fraction_median"] is None:
                below.append(size_name(m))
                continue
            if c.get("above_capacity"):
                below.append(f"{size_name(m)} (a run above C: not a measurement)")
            elif c["fraction_median"] < 0.90:
                below.append(f"{size_name(m)} ({fmt_apart(c['fraction_median'], 0.90)[0]})")
            if c["timeouts_total"]:
                timeouts.append(f"{size_name(m)} ({fmt_num(c['timeouts_total'])})")
            best_hand = max((cells[(topo, h, m)]["fraction_median"] for h in HAND
                             if (topo, h, m) in cells and cells[(topo, h, m)]["fraction_median"] is not None),
                            default=None)
            if best_hand is not None and c["fraction_median"] < best_hand:
                ours, hand = fmt_apart(c["fraction_median"], best_hand)
                lost_to_hand.append(f"{size_name(m)} ({ours} < {hand})")
        title = VARIANT_TITLE.get(auto, auto)
        lines.append(f"- {title}: ≥ 0.90 of C at every size: "
                     + ("yes" if not below else "no, below at " + ", ".join(below)))
        lines.append(f"- {title}: zero retransmission timeouts: "
                     + ("yes" if not timeouts else "no, at " + ", ".join(timeouts)))
        if not any(h in variants for h in HAND):
            lines.append(f"- {title}: no hand remedy (b) was measured on this topology to compare with")
        else:
            lines.append(f"- {title}: at least the best hand remedy (median) at every size: "
                         + ("yes" if not lost_to_hand else "no, at " + ", ".join(lost_to_hand)))
    return lines


def plot(cells, topo, sizes, variants, out_dir, machine):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        print("report: gnuplot not found: no plot (apt-get install gnuplot-nox)", file=sys.stderr)
        return None
    slug = re.sub(r"[^0-9A-Za-z+]+", "-", topo).strip("-")  # "4+4 (guest)" -> "4+4-guest"
    data = os.path.join(out_dir, f"plot-{slug}.dat")
    with open(data, "w") as f:
        for v in variants:
            f.write(f'# "{VARIANT_TITLE.get(v, v)}"\n')
            for m in sizes:
                c = cells.get((topo, v, m))
                if c and c["fraction_median"] is not None:
                    f.write(f"{m} {c['fraction_median']} {c['fraction_min']} {c['fraction_max']}\n")
            f.write("\n\n")
    png = os.path.join(out_dir, f"alltoall-{slug}.png")
    script = [
        "set terminal pngcairo size 1000,560 font ',10'",
        f"set output '{png}'",
        f"set title 'TCP all-to-all, {topo} hosts, bottleneck {machine.get('rate', 'C')} with a {machine.get('queue', 'q')}-packet FIFO (median, min-max)'",
        "set logscale x 2",
        "set xlabel 'message size per peer (bytes)'",
        "set ylabel 'cross-bottleneck bandwidth / capacity'",
        "set yrange [0:1.1]",
        "set grid",
        "set key outside right top",
        "set termoption noenhanced",
        "set xtics (" + ", ".join(f"'{size_name(m)}' {m}" for m in sizes) + ")",
        f"set xrange [{sizes[0] / 1.5}:{sizes[-1] * 1.5}]",
    ]
    plots = []
    for i, v in enumerate(variants):
        t = VARIANT_TITLE.get(v, v)
        plots.append(f"'{data}' index {i} using 1:2:3:4 with yerrorlines title '{t}'")
    script.append("plot " + ", ".join(plots))
    subprocess.run([gnuplot], input="\n".join(script), text=True, check=True)
    return png


def prediction_rows(path):
    """Per (topology, variant, size): how far the models' phase-time predictions were from the
    measured phase times, raw and after calibration (each phase judged with the correction the
    daemon had learned before it began)."""
    rows = {}
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            key = (r["topology"], r["variant"], int(r["msg"]))
            for p in r.get("phases", []):
                measured = p.get("measured_us") or 0
                if measured <= 0 or not p.get("predicted_us"):
                    continue
                rows.setdefault(key, []).append((p["predicted_us"], p.get("calibrated_us") or p["predicted_us"],
                                                 measured, p.get("plan", ""), int(p.get("quiet_phases") or 1)))
    return rows


def wmedian(pairs):
    """The median of (value, weight) pairs by weight: a quiet summary weighs the phases it
    stands for, each taken at their mean (as the daemon's calibration takes it)."""
    pairs = sorted(pairs)
    total = sum(w for _, w in pairs)
    below = 0
    for i, (v, w) in enumerate(pairs):
        below += w
        if 2 * below > total:
            return v
        if 2 * below == total:
            return (v + pairs[i + 1][0]) / 2
    return pairs[-1][0]


# Where the benchmark's own median phase time is the same quantity as a hint's duration: gp-alltoall
# times every iteration of every rank, one phase each (iteration_us). The MPI program times the
# slowest rank of each call, a different quantity, so its cells are judged on the daemons' phases.
PER_RANK_PHASES = ("gappaced",)


def benchmark_p50(cells, key):
    c = cells.get(key) if key[1] in PER_RANK_PHASES else None
    return c.get("p50_us_median") if c else None


def prediction_table(rows, topo, cells):
    keys = sorted(k for k in rows if k[0] == topo)
    if not keys:
        return []
    md = ["Models planner: predicted vs measured phase time (median over the daemons' last phases of each "
          "size, where a sender's quiet summary stands for the phases it skipped on quiet advice, each at "
          "their mean; relative error |measured − predicted| / measured). The daemons see the phases their "
          "senders hint, one per quiet period where the plan changes nothing; the last column holds the "
          "calibrated median against the benchmark's own median over every phase of every rank "
          "(gp-alltoall only):", "",
          "| variant | message | phases | measured | predicted | error | calibrated | error | within ±15 % "
          "| calibrated vs measured, medians | all phases: median, calibrated vs it |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in keys:
        ps = rows[k]
        measured = wmedian((p[2], p[4]) for p in ps)
        predicted = wmedian((p[0], p[4]) for p in ps)
        calibrated = wmedian((p[1], p[4]) for p in ps)
        err_raw = wmedian((abs(p[2] - p[0]) / p[2], p[4]) for p in ps)
        err_cal = wmedian((abs(p[2] - p[1]) / p[2], p[4]) for p in ps)
        phases = sum(p[4] for p in ps)
        within = sum(p[4] for p in ps if abs(p[2] - p[1]) / p[2] <= 0.15) / phases
        cell_error = (calibrated - measured) / measured
        p50 = benchmark_p50(cells, k)
        all_phases = f"{p50 / 1000:.2f} ms, {(calibrated - p50) / p50 * 100:+.0f} %" if p50 else "–"
        md.append(f"| {VARIANT_TITLE.get(k[1], k[1])} | {size_name(k[2])} | {phases} | {measured / 1000:.2f} ms | "
                  f"{predicted / 1000:.2f} ms | {err_raw * 100:.0f} % | {calibrated / 1000:.2f} ms | "
                  f"{err_cal * 100:.0f} % | {within * 100:.0f} % | {cell_error * 100:+.0f} % | {all_phases} |")
    md.append("")
    return md


def applied_plans(run_dir, topo, variant, m):
    """What the daemons of one cell applied to its all-to-all phases, from the records bench-system
    keeps next to runs.jsonl (daemon-TOPO-SIZE-VARIANT-hN.json, each host's last phases):
    (phases, paced, floored), or None without records."""
    if not run_dir or not os.path.isdir(run_dir):
        return None
    pattern = re.compile(r"^daemon-" + re.escape(topo) + r"-[0-9]+[kmgKMG]?-" + re.escape(variant) + r"-h[0-9]+\.json$")
    phases = paced = floored = 0
    for name in sorted(os.listdir(run_dir)):
        if not pattern.match(name):
            continue
        try:
            with open(os.path.join(run_dir, name)) as f:
                history = json.load(f).get("history", [])
        except (OSError, ValueError):
            continue
        for h in history:
            if h.get("kind") != "alltoall" or h.get("bytes_per_peer") != m:
                continue
            phases += 1
            paced += 1 if h.get("paced", 0) > 0 else 0
            floored += 1 if h.get("rto", 0) > 0 else 0
    return (phases, paced, floored) if phases else None


def same_plan(a, b):
    """Two cells' daemons applied one plan: neither paced a phase, and either both put the floor
    on every phase or neither on any."""
    if not a or not b or a[1] or b[1]:
        return False
    return (a[2] == a[0] and b[2] == b[0]) or (a[2] == 0 and b[2] == 0)


def planner_verdicts(rows, cells, topo, sizes, run_dir=None):
    """Issue 5's two criteria for one topology: the calibrated prediction of a cell's median
    phase time within ±15 % of the measured median (the benchmark's, over every phase of every
    rank, where it measures phases as the hints do; else the daemons'); the plan the daemon chose (measured as
    (c)) within 5 % of the best plan measured in the same run (nothing = (a), the hand
    remedies of (b), and (c) itself), by bandwidth."""
    lines = []
    for variant, rivals in (("gappaced", ("stock", "rto", "pace", "rto+pace", "gappaced")),
                            ("mpi-gappaced", ("mpi-stock", "mpi-gappaced", "mpi-gappaced-rto"))):
        off, judged = [], 0
        for m in sizes:
            ps = rows.get((topo, variant, m))
            if not ps:
                continue
            judged += 1
            measured = benchmark_p50(cells, (topo, variant, m)) or wmedian((p[2], p[4]) for p in ps)
            calibrated = wmedian((p[1], p[4]) for p in ps)
            if abs(calibrated - measured) / measured > 0.15:
                off.append(f"{size_name(m)} ({(calibrated - measured) / measured * 100:+.0f} %)")
        title = VARIANT_TITLE.get(variant, variant)
        if judged:
            basis = "every phase's" if variant in PER_RANK_PHASES else "the daemons' phases'"
            lines.append(f"- {title}: calibrated prediction within ±15 % of the measured median phase time ({basis}) in "
                         f"{judged - len(off)} of {judged} sizes" + (": off at " + ", ".join(off) if off else ""))
        close, total, far, alike = 0, 0, [], []
        for m in sizes:
            own = cells.get((topo, variant, m))
            measured = {v: cells[(topo, v, m)]["fraction_median"] for v in rivals
                        if (topo, v, m) in cells and cells[(topo, v, m)]["fraction_median"] is not None}
            if not own or own["fraction_median"] is None or len(measured) < 2:
                continue
            total += 1
            best_variant = max(measured, key=measured.get)
            best = measured[best_variant]
            if own["fraction_median"] >= 0.95 * best:
                close += 1
                continue
            far.append(f"{size_name(m)} ({own['fraction_median']:.2f} vs {best:.2f})")
            # A rival whose daemons applied the very plan this cell's did: the gap is the spread
            # between runs of one plan, not a choice (said, not discounted).
            if best_variant != variant and same_plan(applied_plans(run_dir, topo, variant, m),
                                                     applied_plans(run_dir, topo, best_variant, m)):
                alike.append(f"{size_name(m)} ({VARIANT_TITLE.get(best_variant, best_variant)})")
        if total:
            lines.append(f"- {title}: chosen plan within 5 % of the best measured plan in {close} of {total} "
                         f"sizes ({close / total * 100:.0f} %)" + (": not at " + ", ".join(far) if far else ""))
        if alike:
            lines.append(f"  - of these, the best variant's daemons applied the same plan as {title}'s on every "
                         f"phase they kept (no pacing; the floor on all or none): " + ", ".join(alike))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--machine", default=None)
    ap.add_argument("--no-plot", action="store_true", help="skip the PNGs (no gnuplot needed)")
    ap.add_argument("--publish-models", default=None,
                    help="a Markdown file whose section between <!-- planner:begin --> and "
                         "<!-- planner:end --> is replaced by the planner's prediction tables and verdicts")
    ap.add_argument("--publish", default=None,
                    help="a Markdown file whose section between <!-- results:begin --> and "
                         "<!-- results:end --> is replaced by the results; PNGs go next to it "
                         "in a directory named like the file without .md")
    a = ap.parse_args()
    runs = load(a.runs)
    if not runs:
        sys.exit("report: no runs")
    cells = cells_of(runs)
    predictions = prediction_rows(os.path.join(os.path.dirname(os.path.abspath(a.runs)), "predictions.jsonl"))
    write_csv(cells, os.path.join(a.out, "cells.csv"))
    machine_text = open(a.machine).read().strip() if a.machine and os.path.exists(a.machine) else ""
    # Per topology: the guest variant (d) runs on its own scaled-down link.
    metas = {}
    for r in runs:
        metas.setdefault(r["topology"], {"rate": r.get("rate"), "queue": r.get("queue"), "cc": r.get("cc")})

    md = ["<!-- generated by tools/bench/system/report.py from runs.jsonl: do not edit -->", ""]
    if machine_text:
        md += ["```", machine_text, "```", ""]
    planner_md = ["<!-- generated by tools/bench/system/report.py from predictions.jsonl and runs.jsonl: "
                  "do not edit -->", ""]
    topologies = sorted({k[0] for k in cells}, key=lambda t: ([int(x) for x in re.findall(r"\d+", t)], t))
    for topo in topologies:
        meta = metas[topo]
        variants = sorted({k[1] for k in cells if k[0] == topo}, key=order)
        sizes = sorted({k[2] for k in cells if k[0] == topo})
        md.append(f"### {topo} hosts: bottleneck {meta['rate']}, FIFO {meta['queue']} packets, {meta['cc']}")
        md.append("")
        md.append("Cross-bottleneck bandwidth as a fraction of capacity (both directions summed), median (min–max):")
        md.append("")
        md.append("| message | " + " | ".join(VARIANT_TITLE.get(v, v) for v in variants) + " |")
        md.append("|---:|" + "---:|" * len(variants))
        for m in sizes:
            md.append(f"| {size_name(m)} | " + " | ".join(fmt_fraction(cells.get((topo, v, m))) for v in variants) + " |")
        if any(cells.get((topo, v, m), {}).get("timed_out") for v in variants for m in sizes):
            md.append("")
            md.append("† a run of this cell reached the time bound (`--cell-timeout`) before its volume was "
                      "through: its figure is the part that ran (tools that count written bytes overstate it).")
        if any(cells.get((topo, v, m), {}).get("above_capacity") for v in variants for m in sizes):
            md.append("")
            md.append("‼ a run of this cell measured more than the link can carry: its timing or byte count is "
                      "wrong, so the cell is not a measurement.")
        md.append("")
        with_drops = any(cells.get((topo, v, m), {}).get("drops_median") is not None for v in variants for m in sizes)
        md.append("Retransmission timeouts (TCPTimeouts, all hosts, median per run) / stalled iterations (median)" +
                  (" / packets the bottleneck dropped (both directions, median per run):" if with_drops else ":"))
        md.append("")
        md.append("| message | " + " | ".join(VARIANT_TITLE.get(v, v) for v in variants) + " |")
        md.append("|---:|" + "---:|" * len(variants))
        for m in sizes:
            row = []
            for v in variants:
                c = cells.get((topo, v, m))
                text = "–" if not c else f"{fmt_num(c['timeouts_median'])} / {fmt_num(c['stalled_median'])}"
                if c and with_drops:
                    text += f" / {fmt_num(c['drops_median'])}"
                row.append(text)
            md.append(f"| {size_name(m)} | " + " | ".join(row) + " |")
        md.append("")
        md += acceptance(cells, topo, sizes, variants)
        md.append("")
        planner_part = prediction_table(predictions, topo, cells)
        verdicts = planner_verdicts(predictions, cells, topo, sizes, os.path.dirname(os.path.abspath(a.runs)))
        if verdicts:
            planner_part += verdicts + [""]
        md += planner_part
        if planner_part:
            planner_md += [f"### {topo} hosts: bottleneck {meta['rate']}, FIFO {meta['queue']} packets, {meta['cc']}",
                           ""] + planner_part
        png = None if a.no_plot else plot(cells, topo, sizes, variants, a.out, meta)
        if png:
            md.append(f"![{topo}]({os.path.basename(png)})")
            md.append("")
    with open(os.path.join(a.out, "results.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    if a.publish:
        publish(a.publish, md, a.out)
    if a.publish_models:
        replace_section(a.publish_models, "<!-- planner:begin -->", "<!-- planner:end -->", planner_md)
    print("\n".join(md))


def replace_section(doc, begin, end, lines):
    text = open(doc).read()
    if begin not in text or end not in text:
        sys.exit(f"report: {doc} has no {begin} ... {end} section")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


def publish(doc, md, out_dir):
    begin, end = "<!-- results:begin -->", "<!-- results:end -->"
    text = open(doc).read()
    if begin not in text or end not in text:
        sys.exit(f"report: {doc} has no {begin} ... {end} section")
    assets = os.path.splitext(doc)[0]
    os.makedirs(assets, exist_ok=True)
    rel = os.path.basename(assets)
    lines = []
    for line in md:
        if line.startswith("![") and "](" in line:
            name = line[line.index("](") + 2:-1]
            shutil.copy(os.path.join(out_dir, name), os.path.join(assets, name))
            line = line.replace("](" + name + ")", "](" + rel + "/" + name + ")")
        lines.append(line)
    shutil.copy(os.path.join(out_dir, "cells.csv"), os.path.join(assets, "cells.csv"))
    shutil.copy(os.path.join(out_dir, "runs.jsonl"), os.path.join(assets, "runs.jsonl"))
    if os.path.exists(os.path.join(out_dir, "predictions.jsonl")):
        shutil.copy(os.path.join(out_dir, "predictions.jsonl"), os.path.join(assets, "predictions.jsonl"))
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    with open(doc, "w") as f:
        f.write(head + begin + "\n" + "\n".join(lines) + "\n" + end + tail)


if __name__ == "__main__":
    main()
