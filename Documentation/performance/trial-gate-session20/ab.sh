#!/usr/bin/env bash
# Side by side: two builds of gappaced (A: before the trial gate, B: with it), each as its own
# bench-system invocation, in the order A B B A, with --trace-iterations.
#   ab.sh BUILD_A BUILD_B OUT [bench-system options...]
set -euo pipefail
A=${1:?BUILD_A} B=${2:?BUILD_B} OUT=${3:?OUT}
shift 3
HERE=$(cd "$(dirname "$0")" && pwd)
BENCH=$HERE/../../../tools/bench/system/bench-system.sh
mkdir -p "$OUT"
i=0
for pick in A B B A; do
	i=$((i + 1))
	build=$A
	[[ $pick == B ]] && build=$B
	GP_BENCH_ALLTOALL_ARGS=--trace-iterations bash "$BENCH" --build "$build" --no-plot \
		--out "$OUT/$i-$pick" "$@" >"$OUT/$i-$pick.log" 2>&1
	grep -E " rep [0-9]+: " "$OUT/$i-$pick.log" | sed "s/^/$i $pick: /"
done
