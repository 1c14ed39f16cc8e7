#!/usr/bin/env bash
# bench-system's gappaced variants with the daemons' two pacers, alternated: socket, host,
# host, socket (A B B A), each one bench-system invocation.
#
#   pacer-ab.sh BUILD OUT TOPOLOGY SIZES VARIANTS REPS
#
# OUT/1-socket, OUT/2-host, OUT/3-host, OUT/4-socket hold each invocation's files; the last
# lines print every run's fraction of C and timeouts.
set -euo pipefail
BUILD=$(cd "$1" && pwd) OUT=$2 TOPO=$3 SIZES=$4 VARIANTS=$5 REPS=$6
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
mkdir -p "$OUT"
i=0
for pacer in socket host host socket; do
	i=$((i + 1))
	bash "$ROOT/tools/bench/system/bench-system.sh" --build "$BUILD" --topologies "$TOPO" --sizes "$SIZES" \
		--variants "$VARIANTS" --reps "$REPS" --no-plot --pacer "$pacer" --out "$OUT/$i-$pacer" 2>"$OUT/$i-$pacer.log" >/dev/null || true
done
for d in "$OUT"/[1-4]-socket "$OUT"/[1-4]-host; do
	jq -r --arg run "$(basename "$d")" '"\($run) \(.variant) \(.msg) rep \(.rep): \(.result.fraction_of_capacity * 1000 | round / 1000) of C, \(.result.tcp.TCPTimeouts) timeouts, \(.result.tcp.RetransSegs) retransmitted"' "$d/runs.jsonl"
done
