#!/usr/bin/env bash
# ABBA of two builds through bench-system itself (so the daemons are kept over a cell's
# repetitions, as in `make bench-system`), and the loss check's stage of every host's key at
# the end of each invocation (size class:stage:times floored).
#   abba-bench.sh BUILD_A BUILD_B OUT TOPOLOGY SIZES VARIANTS REPS
# e.g. abba-bench.sh /tmp/old/build $PWD/build /tmp/abba 8+8 1k stock,rto,gappaced 3
set -uo pipefail
A=${1:?build A} B=${2:?build B} OUT=${3:?out} topo=${4:?topology} sizes=${5:?sizes} variants=${6:?variants} reps=${7:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
n=0
for which in A B B A; do
	n=$((n + 1))
	build=$A; [[ $which == B ]] && build=$B
	timeout 1200 bash "$ROOT/tools/bench/system/bench-system.sh" --build "$build" --topologies "$topo" --sizes "$sizes" \
		--variants "$variants" --reps "$reps" --no-plot --out "$OUT/$n-$which" >"$OUT/$n-$which.log" 2>&1
	echo "== $n $which ($build)"
	cut -d, -f1-3,6-11 "$OUT/$n-$which/cells.csv" | tail -n +2
	for f in "$OUT/$n-$which"/daemon-*gappaced-h*.json; do
		[[ -e $f ]] && jq -r '[.planner.loss_check.keys[]? | "\(.size_class):\(.stage):f\(.floored // 0)"] | join(",")' "$f"
	done | sort | uniq -c | tr '\n' ' '
	echo
done
