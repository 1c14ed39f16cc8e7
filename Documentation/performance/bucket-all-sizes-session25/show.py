#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C / TCPTimeouts per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import functools
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table as ab_table  # noqa: E402

table = functools.partial(ab_table, timeouts=True)

for prefix in ("bkt-", "bkt2-", "big-"):
    table(f"{prefix[:-1]}: A main (bucket for m <= q' MTU only), B every length; fraction of C (timeouts)",
          sorted(d for d in here.glob(prefix + "*") if d.is_dir()))
for prefix, what in (("t35-", "3+5 hosts, 100 Mbit/s, 20 frames"), ("t35b-", "3+5 hosts, 100 Mbit/s, 20 frames"),
                     ("t66-", "6+6 hosts, 300 Mbit/s, 64 frames")):
    table(f"{what}: A main before the change (a63fb27), B every length",
          sorted(d for d in (here / "setups").glob(prefix + "*") if d.is_dir()))
table("always: A main, B a bucket even where the phase start fits the queue share (not taken)",
      sorted(d for d in (here / "always").glob("alw-*") if d.is_dir()))
