#!/usr/bin/env bash
# Guest variant (d) of two builds side by side: for each size, PAIRS guest boots per build in
# alternated order (A B, B A, ...). Each boot runs the 4+4 guest all-to-all once stock and once
# with gappaced (module backend), as bench-system's (d) does (5 Mbit/s, 16-packet FIFO, about
# 4 s of wire time), with this checkout's guest scripts and each build's binaries. Everything
# the guest writes is kept (alltoall.json, every daemon's `gapctl -j daemon show`).
#   ab.sh BUILD_A BUILD_B OUT [SIZES (default 1k,4k,16k,64k)] [PAIRS (default 2)] [KVER]
set -uo pipefail
A=${1:?build A} B=${2:?build B} OUT=${3:?out} SIZES=${4:-1k,4k,16k,64k} PAIRS=${5:-2}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
KVER=${6:-$("$ROOT/tests/vm/kernels.sh" list | tail -n 1)}
mkdir -p "$OUT"
bytes() { local s=${1,,}; case $s in *k) echo $((${s%k} * 1024)) ;; *m) echo $((${s%m} * 1048576)) ;; *) echo "$s" ;; esac; }
IFS=, read -ra sizes <<<"$SIZES"
for size in "${sizes[@]}"; do
	m=$(bytes "$size")
	it=$(((5000000 / 8 * 4 + 16 * m - 1) / (16 * m)))
	((it >= 3)) || it=3
	((it <= 200)) || it=200
	for pair in $(seq "$PAIRS"); do
		order="A B"; ((pair % 2)) || order="B A"
		for which in $order; do
			build=$A; [[ $which == B ]] && build=$B
			run=$OUT/$size-$pair-$which
			timeout 900 "$ROOT/tests/vm/gcluster/run.sh" --kver "$KVER" --build "$build" --out "$run" --timeout 600 -- \
				gcluster-alltoall --left 4 --right 4 --rate 5mbit --bottleneck 5mbit --queue 16 --mode both -- \
				--msg "$m" --iterations "$it" >"$run.log" 2>&1
			for mode in baseline gappaced; do
				jq -r --arg r "$size $pair $which $mode" \
					'"\($r) \(.fraction_of_capacity * 1000 | round / 1000) timeouts=\(.tcp.TCPTimeouts // "?")"' \
					"$run/results/alltoall/$mode/alltoall.json" 2>/dev/null || echo "$size $pair $which $mode no result"
			done
		done
	done
done | tee "$OUT/summary.txt"
