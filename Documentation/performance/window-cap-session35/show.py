#!/usr/bin/env python3
"""The table of this directory's runs: fraction of C (host timeouts, packets the bottleneck
dropped) per cell and invocation.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("4+4, stock Linux (gp-alltoall and Open MPI), each connection's window limited by hand",
      sorted(d for d in here.glob("[0-9]-*") if d.is_dir()), timeouts=True, drops=True)
