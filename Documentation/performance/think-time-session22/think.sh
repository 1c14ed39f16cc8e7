#!/usr/bin/env bash
# think.sh BUILD OUT: gp-alltoall with 100 ms of "computation" between iterations
# (--think-ms 100): (a) stock, the hand remedy and gappaced with its default 50 ms linger;
# (b) gappaced with linger 500 ms; (c) gappaced without pauses. 4+4 and 8+8 hosts, 16 and
# 64 KB, 2 repetitions, --seconds 0.5 (a quarter of the published runs' iterations).
set -u
[[ $# -eq 2 ]] || { echo "usage: think.sh BUILD OUT" >&2; exit 2; }
BUILD=$1 OUT=$2
[[ -x $BUILD/tools/alltoall/gp-alltoall ]] || { echo "think.sh: $BUILD is not a built tree" >&2; exit 2; }
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
common=(--build "$BUILD" --topologies 4+4,8+8 --sizes 16k,64k --reps 2 --seconds 0.5 --no-plot)
bench() { timeout 2400 bash "$ROOT/tools/bench/system/bench-system.sh" "${common[@]}" "$@"; }
GP_BENCH_ALLTOALL_ARGS="--think-ms 100" bench --variants stock,rto+pace,gappaced --out "$OUT/a" >"$OUT/a.log" 2>&1
GP_BENCH_DAEMON_TOML='linger = "500ms"' GP_BENCH_ALLTOALL_ARGS="--think-ms 100" bench --variants gappaced \
	--out "$OUT/b" >"$OUT/b.log" 2>&1
GP_BENCH_ALLTOALL_ARGS="--think-ms 0" bench --variants gappaced --out "$OUT/c" >"$OUT/c.log" 2>&1
grep -h "m=" "$OUT"/a.log "$OUT"/b.log "$OUT"/c.log
