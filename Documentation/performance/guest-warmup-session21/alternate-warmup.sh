#!/usr/bin/env bash
# alternate-warmup.sh BUILD OUT: the guest variant (d) at 4 KB, 4+4, warm-up 3 then 1, two
# rounds, one build (the warm-up counterpart of guest-1k-session17/alternate.sh, which
# alternates builds).
set -u
[[ $# -eq 2 ]] || { echo "usage: alternate-warmup.sh BUILD OUT" >&2; exit 2; }
BUILD=$1 OUT=$2
[[ -x $BUILD/tools/alltoall/gp-alltoall ]] || { echo "alternate-warmup.sh: $BUILD is not a built tree" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
for r in 1 2; do
	for w in 3 1; do
		timeout 900 bash "$ROOT/tools/bench/system/bench-system.sh" --build "$BUILD" --topologies 4+4 \
			--guest-topologies 4+4 --sizes 4k --variants module-stock,module-gappaced --reps 1 --no-plot \
			--warmup "$w" --out "$OUT/w$w-$r" >"$OUT/w$w-$r.log" 2>&1
		grep "m=" "$OUT/w$w-$r.log" | sed "s/^/w$w-$r /"
	done
done
