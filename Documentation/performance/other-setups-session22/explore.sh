#!/usr/bin/env bash
# explore.sh BUILD OUT [VARIANTS]: four operating points away from the published one, each its
# own bench-system invocation of 2 repetitions. This directory's data: VARIANTS stock,gappaced
# first (q200, q10, 2p2, 1p7), then rto+pace in a second pass (hand-*).
set -u
[[ $# -ge 2 ]] || { echo "usage: explore.sh BUILD OUT [VARIANTS]" >&2; exit 2; }
BUILD=$1 OUT=$2 VARIANTS=${3:-stock,gappaced}
[[ -x $BUILD/daemon/gappaced ]] || { echo "explore.sh: $BUILD is not a built tree" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
run() {
	local name=$1
	shift
	timeout 1500 bash "$ROOT/tools/bench/system/bench-system.sh" --build "$BUILD" --reps 2 --no-plot \
		--variants "$VARIANTS" "$@" --out "$OUT/$name" >"$OUT/$name.log" 2>&1
	echo "== $name: exit $?"
	grep "m=" "$OUT/$name.log"
}
mkdir -p "$OUT"
run q200 --topologies 4+4 --queue 200 --sizes 4k,16k,64k,256k,1m
run q10 --topologies 4+4 --queue 10 --sizes 4k,16k,64k,256k,1m
run 2p2 --topologies 2+2 --sizes 4k,16k,64k,256k,1m
run 1p7 --topologies 1+7 --sizes 4k,16k,64k,256k
