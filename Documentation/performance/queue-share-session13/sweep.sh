#!/usr/bin/env bash
# gappaced at several [planner] queue_share values, one bench-system invocation each, in the
# order given and then reversed (A B C C B A), on one topology; prints each run's cells.
#   sweep.sh BUILD OUT TOPOLOGY SIZES REPS SHARE...
# e.g. sweep.sh $PWD/build /tmp/qsh 8+8 4k,16k 3 0.5 0.2 0.05
set -uo pipefail
BUILD=${1:?build} OUT=${2:?out} topo=${3:?topology} sizes=${4:?sizes} reps=${5:?reps}
shift 5
shares=("$@")
order=("${shares[@]}")
for ((i = ${#shares[@]} - 1; i >= 0; i--)); do order+=("${shares[$i]}"); done
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
n=0
for share in "${order[@]}"; do
	n=$((n + 1))
	timeout 1800 bash "$ROOT/tools/bench/system/bench-system.sh" --build "$BUILD" --topologies "$topo" --sizes "$sizes" \
		--variants gappaced --reps "$reps" --no-plot --queue-share "$share" --out "$OUT/$n-$share" >"$OUT/$n-$share.log" 2>&1
	echo "== $n queue_share $share"
	cut -d, -f1-3,6-11 "$OUT/$n-$share/cells.csv" | tail -n +2
done
