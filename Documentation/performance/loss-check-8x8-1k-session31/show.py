#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("8+8 at 1 KB, gappaced and the floor by hand (rto), two repetitions per invocation: "
      "A with the loss check (32 trial phases, the default), B without (--loss-check 0)",
      sorted(d for d in here.glob("[0-9]-*") if d.is_dir()), timeouts=True)
