#!/usr/bin/env bash
# alternate.sh NEW_BUILD OLD_BUILD OUT ROUNDS SIZES VARIANTS TOPOLOGY REPS: bench-system invocations
# alternated between two builds (cmake build dirs), NEW first in each round; one line per result,
# each invocation's records (daemons included) in OUT/{new,old}-ROUND.
set -euo pipefail
NEW=${1:?NEW_BUILD} OLD=${2:?OLD_BUILD} OUT=${3:?OUT} ROUNDS=${4:?ROUNDS} SIZES=${5:?SIZES}
VARIANTS=${6:?VARIANTS} TOPO=${7:?TOPOLOGY} REPS=${8:?REPS}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
for r in $(seq "$ROUNDS"); do
	for b in new old; do
		build=$NEW
		[[ $b == old ]] && build=$OLD
		bash "$ROOT/tools/bench/system/bench-system.sh" --build "$build" --topologies "$TOPO" \
			--sizes "$SIZES" --variants "$VARIANTS" --reps "$REPS" --no-plot \
			--out "$OUT/$b-$r" >"$OUT/$b-$r.log" 2>&1 || echo "$b-$r failed"
		grep "m=" "$OUT/$b-$r.log" | sed "s/^/$b-$r /"
	done
done
