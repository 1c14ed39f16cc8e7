#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("host cluster, 200 Mbit/s, 40-packet FIFO, cubic: A session 25's code (936666f, with its own "
      "bench-system), B the code of session 29's full run (8e571c2)",
      sorted(d for d in here.glob("code-*") if d.is_dir()), timeouts=True)
table("4+4, the same machine: A gappaced with both remedies, B with the floor alone (--remedies rto)",
      sorted(d for d in here.glob("remedies-*") if d.is_dir()), timeouts=True)
