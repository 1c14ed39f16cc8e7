#!/usr/bin/env bash
# A/B, alternated on one cluster: gappaced (stock backend, models planner) with
# [pacing] pace_local_peers = true (A, the default) and false (B), gp-alltoall with per-iteration
# hints, pairwise order with all of an iteration's sends posted at once (hint algorithm "linear").
#   ab-local-peers.sh BUILD OUTDIR TOPOLOGY SIZES REPS     e.g. build out 4+4 64k,1m 3
set -uo pipefail
B=${1:?build} OUT=${2:?out} topo=${3:?topology} sizes=${4:?sizes} reps=${5:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/tests/cluster/lib.sh"
mkdir -p "$OUT"
nl=${topo%+*} nr=${topo#*+}
gp_cluster_up "$OUT/cluster-$topo.state" --left "$nl" --right "$nr" --rate 200mbit --queue 40 >/dev/null
trap 'gp_daemons_stop; gp__cluster_cleanup' EXIT
C=200000000
export GAPPACE_HINTS_SOCK=@gp-ablocal-hints GAPPACE_CONTROL_SOCK=@gp-ablocal-ctl
STATE_DIR=/dev/shm/gp-ablocal-$$
mkdir -p "$STATE_DIR"
LOCAL=true
cfg() { cat <<CONF
$(gp_daemon_toml "$STATE_DIR/${GPC_HOSTS[$1]}.json")
[pacing]
queue_packets = 40
frame_overhead = 66
pace_local_peers = $LOCAL
[planner]
model = "models"
$(gp_cluster_bottlenecks_toml)
CONF
}
bytes() { case $1 in *k) echo $((${1%k} * 1024)) ;; *m) echo $((${1%m} * 1048576)) ;; *) echo "$1" ;; esac; }
echo "# $(date -u +%FT%TZ) $topo sizes $sizes reps $reps, commit $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null), load $(cut -d' ' -f1-3 /proc/loadavg), cc $GPC_CC" | tee -a "$OUT/ab.txt"
for size in ${sizes//,/ }; do
	m=$(bytes "$size")
	vol=$(awk -v c=$C -v p=$((nl + nr)) -v xp=$((2 * nl * nr)) -v m=$m 'BEGIN { v = 2 * c / 8 * 2 * p * (p - 1) / xp; mn = p * (p - 1) * m; printf "%d", (v < mn ? mn : v) }')
	for rep in $(seq "$reps"); do
		order="true false"; ((${ABBA:-0} && rep % 2 == 0)) && order="false true" # ABBA=1: alternate which goes first
		for LOCAL in $order; do
			gp_daemons_start "$B" cfg "$OUT/daemons" >/dev/null || exit 1
			line=$("$GP_CLUSTER_DIR/alltoall.sh" --state "$GPC_STATE" -- --msg "$m" --volume "$vol" --pattern pairwise \
				--capacity $C --cc cubic --timeout 120 --sndbuf 8m --hints iteration 2>/dev/null)
			gp_daemons_stop
			jq -c --arg topo "$topo" --arg local "$LOCAL" --argjson rep "$rep" \
				'{topology: $topo, pace_local_peers: ($local == "true"), rep: $rep, msg, fraction_of_capacity, timeouts: .tcp.TCPTimeouts, retrans: .tcp.RetransSegs, p50_us: .iteration_us.p50, seconds}' \
				<<<"$line" | tee -a "$OUT/runs.jsonl"
		done
	done
done
rm -rf "$STATE_DIR"
