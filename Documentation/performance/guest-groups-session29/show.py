#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("4+4 guest (6.12, one vCPU), 2 Mbit/s, 16-packet FIFO: A --pacer host (the module backend's "
      "rule group per host), B --pacer socket (a rule per destination)",
      sorted(d for d in here.glob("pacer-*") if d.is_dir()), timeouts=True)
