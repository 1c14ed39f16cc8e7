#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts, segments sent) per cell and run.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("4+4, the hand route (rto_min 5ms on the cluster's subnet) and gappaced with the floor "
      "alone: A without quickack on the hand route, B with it",
      sorted(d for d in here.glob("hand-*") if d.is_dir()), timeouts=True, segments=True)
table("4+4, gappaced with the floor alone (--remedies rto) and the hand route: A the daemon's "
      "route with quickack 1 (until session 30), B without",
      sorted(d for d in here.glob("floor-*") if d.is_dir()), timeouts=True, segments=True)
table("4+4 and 8+8, gappaced with both remedies (the default) and the best hand remedy: A the "
      "daemon's route with quickack 1, B without",
      sorted(d for d in here.glob("default-*") if d.is_dir()), timeouts=True, segments=True)
