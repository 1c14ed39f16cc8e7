#!/usr/bin/env python3
"""Tables of this directory's runs: fraction of C per cell and run, side by side.

usage: show.py [DIR]   (DIR: this directory by default)
"""
import pathlib
import sys

here = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent)
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))
from ab_tables import table  # noqa: E402


table("The change (A: 6e20f55, caps at the planned rate; B: caps at the bucket's rate)",
      sorted(d for d in here.glob("ab5-*") if d.is_dir()))
table("Before the change, a factor on the steered caps (f1: none, f2: twice, f8: eight times)",
      [here / "factor" / n for n in ("ab3-f1-1", "ab3-f2-1", "ab3-f1-2", "ab3-f2-2", "ab3-f1-3", "ab3-f2-3")])
table("", [here / "factor" / n for n in ("ab4-f2-1", "ab4-f8-1", "ab4-f2-2", "ab4-f8-2", "ab4-f2-3", "ab4-f8-3")])
table("Delayed ACKs: quickack 1 on every host's subnet route (qa) against none (base)",
      sorted(d for d in (here / "quickack").glob("ab*") if d.is_dir()))
