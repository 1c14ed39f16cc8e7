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

table("4+4 and 8+8, gappaced (both remedies, host pacer, loss check 32), the adopted rule: "
      "A every remedied phase hinted (quiet_remedied = \"0s\"), B held advice (100 ms)",
      sorted(d for d in here.glob("[0-9][0-9]-*") if d.is_dir()), timeouts=True, drops=True)
table("The first version, which also held a lossy key's paced phases (not adopted): A, B as above",
      sorted(d for d in here.glob("v1-[0-9][0-9]-*") if d.is_dir()), timeouts=True, drops=True)
table("The first version, 4+4 at 4 KB, three repetitions per invocation",
      sorted(d for d in here.glob("v1-4k-*") if d.is_dir()), timeouts=True, drops=True)
table("The first version, Open MPI with the shim (mpi-gappaced)",
      sorted(d for d in here.glob("v1-mpi-*") if d.is_dir()), timeouts=True, drops=True)
