#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C (host timeouts) per cell and run.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402

table("4+4, gappaced (both remedies, host pacer) and the best hand remedy: A a bucket where "
      "k·f > q' (4418e57), B where k·f·min(segments, 2) > q' (first-skb.patch)",
      sorted(d for d in here.glob("[0-9]-*") if d.is_dir()), timeouts=True)
table("4+4 and 8+8, gappaced at 4418e57: A [planner] queue_share 0.5 (the default), B 0.3 "
      "(--queue-share 0.3: 12 packets, so 4+4 phases go into a bucket too)",
      sorted(d for d in here.glob("share-*") if d.is_dir()), timeouts=True)
