#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("host cluster, 200 Mbit/s, 40-packet FIFO, cubic: A the daemons read the socket table by "
      "sock_diag dumps (fa56954), B by exact lookups of the phases' tuples (session 30)",
      sorted(d for d in here.glob("lookup-*") if d.is_dir()), timeouts=True)
