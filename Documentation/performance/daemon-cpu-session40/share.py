#!/usr/bin/env python3
"""What share of the machine's CPU samples each command took while the all-to-all ran, and
where gappaced's samples went (inclusive, per function: a sample counts once for every
function on its stack).

    share.py PERF_DATA

PERF_DATA: `perf record -a -g` of one bench-system invocation, with gappaced built with frame
pointers (-fno-omit-frame-pointer -mno-omit-leaf-frame-pointer). The window is the seconds in
which gp-alltoall took more than 3000 samples.
"""
import collections
import subprocess
import sys


def script(data, *args):
    return subprocess.run(['perf', 'script', '-i', data, *args], capture_output=True, text=True).stdout


def main(data):
    lines = [l.split() for l in script(data, '-F', 'comm,time').splitlines()]
    lines = [(p[0], int(float(p[-1].rstrip(':')))) for p in lines if len(p) >= 2]
    per_second = collections.Counter(t for comm, t in lines if comm == 'gp-alltoall')
    busy = [t for t, n in per_second.items() if n > 3000]
    lo, hi = min(busy), max(busy)
    share = collections.Counter(comm for comm, t in lines if lo <= t <= hi)
    total = sum(share.values())
    print(f'window {hi - lo + 1} s, {total} samples')
    for comm, n in share.most_common(5):
        print(f'  {comm:16} {100 * n / total:5.1f} %')
    functions = collections.Counter()
    samples = 0
    for block in script(data, '--comms', 'gappaced', '-F', 'time,ip,sym').split('\n\n'):
        rows = [r for r in block.strip().split('\n') if r.strip()]
        if len(rows) < 2 or not lo <= int(float(rows[0].strip().rstrip(':'))) <= hi:
            continue
        samples += 1
        frames = {r.split(None, 1)[1].split('+')[0][:100] for r in rows[1:] if len(r.split(None, 1)) > 1}
        for f in frames:
            if f.startswith('gp::') or f in ('handle_softirqs', 'epoll_wait'):
                functions[f] += 1
    print(f'gappaced: {samples} samples; inclusive share of them')
    for f, n in functions.most_common(25):
        print(f'  {100 * n / samples:5.1f} % {f}')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
