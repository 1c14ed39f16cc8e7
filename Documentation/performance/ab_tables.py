"""Side-by-side tables of bench-system invocations (the A/B experiments' show.py use it).

Each invocation's directory holds its runs.jsonl; a table has a row per cell (topology,
variant, message size) and a column per invocation, each run's fraction of C in it, and
optionally its host timeouts.
"""
import json


def cells_of(run_dir, timeouts=False, segments=False, drops=False):
    """{(topology, variant, msg): ["0.91", ...]} for one invocation, in run order. With
    `segments`, each run's segments sent (OutSegs, all hosts, thousands) follow its timeouts;
    with `drops`, the packets the bottleneck FIFO dropped (both directions; runs since session
    32 record them)."""
    cells = {}
    for line in (run_dir / "runs.jsonl").read_text().splitlines():
        r = json.loads(line)
        result = r.get("result") or {}
        frac = result.get("fraction_of_capacity")
        text = "–" if frac is None else f"{frac:.2f}"
        tcp = result.get("tcp") or {}
        if timeouts and frac is not None:
            if segments and tcp.get("OutSegs") is not None:
                text += f" ({tcp.get('TCPTimeouts')}, {tcp['OutSegs'] / 1000:.0f}k)"
            elif drops and (r.get("bottleneck") or {}).get("drops") is not None:
                text += f" ({tcp.get('TCPTimeouts')}, {r['bottleneck']['drops']} dropped)"
            else:
                text += f" ({tcp.get('TCPTimeouts')})"
        cells.setdefault((r["topology"], r["variant"], r["msg"]), []).append(text)
    return cells


def table(title, dirs, timeouts=False, segments=False, drops=False):
    """Prints one Markdown table: the invocations in `dirs`, side by side."""
    runs = {d.name: cells_of(d, timeouts, segments, drops) for d in dirs}
    keys = sorted({k for c in runs.values() for k in c})
    print(f"\n{title}\n")
    print("| cell | " + " | ".join(runs) + " |")
    print("|---|" + "---:|" * len(runs))
    for k in keys:
        label = f"{k[0]} {k[1]} {k[2] // 1024} KB"
        print(f"| {label} | " + " | ".join(" / ".join(runs[n].get(k, ["–"])) for n in runs) + " |")
