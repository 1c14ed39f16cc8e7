#!/usr/bin/env bash
# config.sh BUILD OUT EXTRA.toml [MODE]: one guest all-to-all (4+4 at 5 Mbit/s, 16-packet FIFO,
# 1 KB, 153 iterations) with EXTRA.toml appended to every host's gappaced.toml; MODE both
# (default) runs stock first in the same guest. Prints fraction of C, timeouts, loss probes and
# segments sent (all hosts) per mode.
set -euo pipefail
BUILD=${1:?BUILD} OUT=${2:?OUT} EXTRA=${3:?EXTRA.toml} MODE=${4:-both}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
KVER=${KVER:-$("$ROOT/tests/vm/kernels.sh" list | tail -n 1)}
timeout 900 "$ROOT/tests/vm/gcluster/run.sh" --kver "$KVER" --build "$BUILD" --out "$OUT" --timeout 600 \
	--file "$EXTRA:/etc/gappaced-extra.toml" -- gcluster-alltoall --left 4 --right 4 --rate 5mbit \
	--bottleneck 5mbit --queue 16 --mode "$MODE" -- --msg 1024 --iterations 153 >"$OUT.log" 2>&1 || true
for m in baseline gappaced; do
	f=$OUT/results/alltoall/$m/alltoall.json
	[[ -f $f ]] && echo "$m $(jq -c '[.fraction_of_capacity, .tcp.TCPTimeouts, .tcp.TCPLossProbes, .tcp.OutSegs]' "$f")"
done
