#!/bin/bash
# Two builds of gappace alternated on one bench-system cell, A B B A per round, so that drift of
# this shared machine falls on both alike. Each invocation runs --reps 2 with one daemon per
# host; the second repetition is the steady state of the loss check.
#
#   ab.sh BASE_BUILD NEW_BUILD OUT TOPOLOGY SIZE VARIANT ROUNDS
#   e.g. ab.sh /tmp/build-base $PWD/build /tmp/ab 4+4 4k gappaced 3
set -euo pipefail
if [ $# -ne 7 ]; then
	echo "usage: $0 BASE_BUILD NEW_BUILD OUT TOPOLOGY SIZE VARIANT ROUNDS" >&2
	exit 2
fi
base=$1 new=$2 out=$3 topo=$4 size=$5 variant=$6 rounds=$7
here=$(cd "$(dirname "$0")" && pwd)
bench=$here/../../../tools/bench/system/bench-system.sh
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
	for which in base new new base; do
		build=$new
		[ "$which" = base ] && build=$base
		dir=$out/$topo-$size-$variant-$which-r$r-$(date +%s%N)
		bash "$bench" --build "$build" --topologies "$topo" --sizes "$size" --variants "$variant" \
			--reps 2 --no-plot --out "$dir" >"$dir.log" 2>&1 || true
		echo "$which $(grep -o 'rep [0-9]: [0-9.]* of C, [0-9]* timeouts' "$dir.log" | tr '\n' ' ')"
	done
done
