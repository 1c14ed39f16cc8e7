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

table("4+4 and 8+8, gappaced (both remedies, host pacer, loss check 32): A audits a new "
      "lossless verdict a quiet period (1 s) apart (4b0e879), B every 100 ms until its first "
      "judgment",
      sorted(d for d in here.glob("[0-9][0-9]-*") if d.is_dir()), timeouts=True, drops=True)
table("4+4, gappaced at 4b0e879: A with the loss check (--loss-check 32, the default), B without "
      "it (--loss-check 0)",
      sorted(d for d in here.glob("check-*") if d.is_dir()), timeouts=True, drops=True)
table("4+4 and 8+8, gappaced: B settling (95689d9), C the same and the settling verdict's first "
      "judgment weighs its losses against the loss budget too (not adopted)",
      sorted(d for d in here.glob("first-judgment-*") if d.is_dir()), timeouts=True, drops=True)
table("4+4 and 8+8, gappaced: B settling (95689d9), D as C, with pacing's cost measured per key "
      "(paced phases against floored ones) in the budget (not adopted)",
      sorted(d for d in here.glob("measured-slack-*") if d.is_dir()), timeouts=True, drops=True)
