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

table("4+4 and 8+8, gappaced (both remedies, host pacer, loss check 32): "
      "A the floor as a host route per peer (stock_floor = \"route\"), B each socket's TCP_RTO_MIN_US",
      sorted(d for d in here.glob("[0-9][0-9]-*") if d.is_dir()), timeouts=True, drops=True)
table("The same at 1 and 4 KB, three repetitions per invocation",
      sorted(d for d in here.glob("small-*") if d.is_dir()), timeouts=True, drops=True)
table("Open MPI with the shim (mpi-gappaced) and its floor alone (mpi-gappaced-rto), 4+4",
      sorted(d for d in here.glob("mpi-*") if d.is_dir()), timeouts=True, drops=True)
