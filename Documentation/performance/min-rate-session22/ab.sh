#!/usr/bin/env bash
# ab.sh BUILD OUT: 8+8 hosts into 50 Mbit/s, 16 and 64 KB, gappaced with the old default
# minimum rate (1 Mbit/s, A) and the new one (64 kbit/s, B), alternated A B A B, each its own
# bench-system invocation of 2 repetitions.
set -u
[[ $# -eq 2 ]] || { echo "usage: ab.sh BUILD OUT" >&2; exit 2; }
BUILD=$1 OUT=$2
[[ -x $BUILD/daemon/gappaced ]] || { echo "ab.sh: $BUILD is not a built tree" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
for r in 1 2; do
	for v in A B; do
		toml='min_rate = "1mbit"'
		[[ $v == B ]] && toml='min_rate = "64kbit"'
		GP_BENCH_PACING_TOML="$toml" GP_BENCH_ALLTOALL_ARGS="--trace-iterations" timeout 900 \
			bash "$ROOT/tools/bench/system/bench-system.sh" --build "$BUILD" --topologies 8+8 \
			--sizes 16k,64k --variants gappaced --rate 50mbit --reps 2 --no-plot \
			--out "$OUT/$r-$v" >"$OUT/$r-$v.log" 2>&1
		echo "$r $v ($toml): exit $?"
		grep "m=" "$OUT/$r-$v.log"
	done
done
