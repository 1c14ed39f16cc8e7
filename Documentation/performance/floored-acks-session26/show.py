#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
Each run directory's floors.txt says, per daemon, how many of its last phases (at most 64, so
mostly the second run's) were floored / paced / recorded.
"""
import functools
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table as ab_table  # noqa: E402

table = functools.partial(ab_table, timeouts=True)


def dirs(prefix, under=here):
    return sorted(d for d in under.glob(prefix + "*") if d.is_dir())


ab = "A main (d035561), B floored plans leave room for an ACK per segment"
table(f"3+5 hosts, 100 Mbit/s, 20 frames, 64 KB: {ab}", dirs("t35-") + dirs("t35b-"))
table(f"3+5 hosts, 100 Mbit/s, 20 frames: {ab}", dirs("s35-"))
table(f"4+4 and 8+8 hosts, 200 Mbit/s, 40 frames: {ab}", dirs("full-"))
table(f"8+8 hosts: {ab}", dirs("e88-"))
table(f"8+8 hosts, Open MPI with the PMPI shim: {ab}", dirs("mpi-"))
explore = here / "explore"
table("explore, 3+5 64 KB, main: m = main, l = pace_local_peers = false",
      [explore / n for n in ("m1", "l1", "m2", "l2", "m3")])
table("explore, 3+5 64 KB, experiment build (main with switches): o = session 24's bucket rule, "
      "s/u/v/w = every bucket at 1.05/0.97/0.94/0.979 of its share, p = --remedies pacing (no floor)",
      [explore / n for n in ("o1", "s1", "m4", "o2", "s2", "u1", "v1", "m5", "u2", "v2", "w1", "m6", "w2", "p1", "p2")])
