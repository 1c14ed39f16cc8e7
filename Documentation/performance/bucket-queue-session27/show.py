#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import functools
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table as ab_table  # noqa: E402

table = functools.partial(ab_table, timeouts=True)


def dirs(prefix):
    return sorted(d for d in here.glob(prefix + "-*") if d.is_dir())


table("8+8 hosts, 4 MB: A the bucket's 4 MB queue, B a queue of 10 ms of its rate", dirs("limit10"))
table("8+8 hosts, 4 MB: A the bucket's 4 MB queue, B a queue of 50 ms of its rate", dirs("limit50"))
table("8+8 hosts: A main, B tcp_tso_rtt_log 0 while any bucket is installed", dirs("every"))
table("8+8 hosts: A main, B tcp_tso_rtt_log 0 while a phase of messages over 128 KB is steered (the change)",
      dirs("long"))
table("8+8 hosts, Open MPI with the shim: A as main (rendezvous phases floored), "
      "B GP_BENCH_MPI_ENV=GAPPACE_SHIM_EAGER_LIMIT=0 (no phase flagged rendezvous: paced)", dirs("mpi"))
table("8+8 hosts, --pacer socket: A main, B tcp_tso_rtt_log 0 in every host (an experiment's cluster; "
      "pace = the hand cap C/k)", dirs("sock"))
