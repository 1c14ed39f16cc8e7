#!/usr/bin/env python3
"""Print each daemon's last phase of a bench-system output directory: its plan text, measured
time, and (with [planner] learn) the learner's measured plans. Usage: plans.py OUT_DIR"""
import glob
import json
import os
import sys

for path in sorted(glob.glob(os.path.join(sys.argv[1], 'daemon-*.json'))):
    with open(path) as f:
        d = json.load(f)
    if not d.get('history'):
        continue
    last = d['history'][-1]
    print(os.path.basename(path), f"{last['duration_ns'] / 1e6:.1f} ms measured,",
          f"{last['predicted_us'] / 1e3:.1f} ms predicted, floor {last.get('rto_min_us', 0)} us")
    print('   ', last['plan'])
    for key in d.get('planner', {}).get('measured_plans', []):
        print('    measured:', {k: v for k, v in key.items() if isinstance(v, dict) and v.get('samples')})
