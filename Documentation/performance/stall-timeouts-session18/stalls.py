#!/usr/bin/env python3
# stalls.py DIR SIZE_BYTES: per host of one bench-system output dir, the paced-stall counts of the
# key (paced phases / stalled / stalled by timeouts) and its phases' plans (P paced, B paced with
# the floor, F floor alone, N nothing) with their times in ms, from the daemons' `daemon show`.
import glob, json, math, sys
d, size = sys.argv[1], int(sys.argv[2])
for f in sorted(glob.glob(f"{d}/daemon-*.json")):
    j = json.load(open(f))
    if not any(e.get("bytes_per_peer") == size for e in j["history"]):
        continue
    sc = int(math.log2(size))
    st = next((s for s in j["planner"]["paced_stalls"] if s["size_class"] == sc), {})
    seq = " ".join(("B" if e["rto_min_us"] and e["paced"] else "P" if e["paced"] else "F" if e["rto_min_us"] else "N")
                   + f"{e['duration_ns'] / 1e6:.0f}" for e in j["history"] if e.get("bytes_per_peer") == size and e.get("ended"))
    print(f"{f.rsplit('-', 1)[-1][:-5]:>4} {st.get('phases')}/{st.get('stalled')}/{st.get('by_timeouts')} {seq}")
