#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts, packets dropped at the
bottleneck) per cell and run.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("4+4 and 8+8, gappaced (both remedies, host pacer, loss check 32): A paces at the rate "
      "bound (4b0e879), B at the flow's share of C",
      sorted(d for d in here.glob("[0-9]-*") if d.is_dir()), timeouts=True, drops=True)
