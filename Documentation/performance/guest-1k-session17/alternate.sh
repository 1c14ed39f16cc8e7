#!/usr/bin/env bash
# alternate.sh BUILD_A BUILD_B OUT SIZE ROUNDS: the guest variant (d) of bench-system at one size,
# 4+4 at 5 Mbit/s, one repetition per invocation, alternating B (stock and gappaced) and A
# (gappaced only). Prints one line per result; each invocation's records (daemons included) in OUT.
set -euo pipefail
A=${1:?BUILD_A} B=${2:?BUILD_B} OUT=${3:?OUT} SIZE=${4:?SIZE} ROUNDS=${5:?ROUNDS}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
for r in $(seq "$ROUNDS"); do
	for b in b a; do
		build=$A variants=module-gappaced
		[[ $b == b ]] && build=$B variants=module-stock,module-gappaced
		bash "$ROOT/tools/bench/system/bench-system.sh" --build "$build" --topologies 4+4 \
			--guest-topologies 4+4 --sizes "$SIZE" --variants "$variants" --reps 1 --no-plot \
			--out "$OUT/$b-$r" >"$OUT/$b-$r.log" 2>&1
		grep "m=" "$OUT/$b-$r.log" | sed "s/^/$b-$r /"
	done
done
