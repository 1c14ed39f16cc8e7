#!/usr/bin/env bash
# A/B of two gappaced builds, alternated per run on one cluster (gp-alltoall with per-iteration
# hints, default daemon config as bench-system's (c)). Each run's line also counts the hosts per loss
# check stage of its key at the end (added in session 12).
#   ab-builds.sh BUILD_A BUILD_B OUT TOPOLOGY SIZES REPS
set -uo pipefail
A=${1:?build A} Bb=${2:?build B} OUT=${3:?out} topo=${4:?topology} sizes=${5:?sizes} reps=${6:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/tests/cluster/lib.sh"
mkdir -p "$OUT"
nl=${topo%+*} nr=${topo#*+}
gp_cluster_up "$OUT/cluster-$topo.state" --left "$nl" --right "$nr" --rate 200mbit --queue 40 >/dev/null
trap 'gp_daemons_stop; gp__cluster_cleanup' EXIT
C=200000000
export GAPPACE_HINTS_SOCK=@gp-abb-hints GAPPACE_CONTROL_SOCK=@gp-abb-ctl
STATE_DIR=/dev/shm/gp-abb-$$
mkdir -p "$STATE_DIR"
cfg() { cat <<CONF
$(gp_daemon_toml "$STATE_DIR/${GPC_HOSTS[$1]}.json")
[pacing]
queue_packets = 40
frame_overhead = 66
[planner]
model = "models"
$(gp_cluster_bottlenecks_toml)
CONF
}
bytes() { case $1 in *k) echo $((${1%k} * 1024)) ;; *m) echo $((${1%m} * 1048576)) ;; *) echo "$1" ;; esac; }
echo "# $(date -u +%FT%TZ) $topo sizes $sizes reps $reps, A=$A ($(git -C "$A/.." rev-parse --short HEAD 2>/dev/null)), B=$Bb ($(git -C "$Bb/.." rev-parse --short HEAD 2>/dev/null)), load $(cut -d' ' -f1-3 /proc/loadavg), cc $GPC_CC" | tee -a "$OUT/ab.txt"
for size in ${sizes//,/ }; do
	m=$(bytes "$size")
	vol=$(awk -v c=$C -v p=$((nl + nr)) -v xp=$((2 * nl * nr)) -v m=$m 'BEGIN { v = 2 * c / 8 * 2 * p * (p - 1) / xp; mn = p * (p - 1) * m; printf "%d", (v < mn ? mn : v) }')
	for rep in $(seq "$reps"); do
		order="A B"; ((rep % 2 == 0)) && order="B A" # ABBA: neither build always runs first
		for which in $order; do
			b=$A; [[ $which == B ]] && b=$Bb
			gp_daemons_start "$b" cfg "$OUT/daemons" >/dev/null || exit 1
			line=$("$GP_CLUSTER_DIR/alltoall.sh" --state "$GPC_STATE" -- --msg "$m" --volume "$vol" --pattern pairwise \
				--capacity $C --cc cubic --timeout 120 --sndbuf 8m --hints iteration 2>/dev/null)
			stalls=$(for i in "${!GPC_HOSTS[@]}"; do gp_daemon_show "$i" "$b" 2>/dev/null | jq -c '[.planner.paced_stalls[]? | .stalled] | add // 0'; done | jq -s 'add')
			# The loss check's stage of every host's key at the end of the run (the key of m).
			stages=$(for i in "${!GPC_HOSTS[@]}"; do gp_daemon_show "$i" "$b" 2>/dev/null | jq -c --argjson m "$m" '[.planner.loss_check.keys[]? | select(.size_class == ($m | log2 | floor)) | .stage][0] // "none"'; done | jq -s 'group_by(.) | map({(.[0]): length}) | add')
			gp_daemons_stop
			jq -c --arg topo "$topo" --arg which "$which" --argjson rep "$rep" --argjson stalls "${stalls:-null}" --argjson stages "${stages:-null}" \
				'{topology: $topo, build: $which, rep: $rep, msg, fraction_of_capacity, timeouts: .tcp.TCPTimeouts, retrans: .tcp.RetransSegs, p50_us: .iteration_us.p50, seconds, stalls_counted: $stalls, stages: $stages}' \
				<<<"$line" | tee -a "$OUT/runs.jsonl"
		done
	done
done
rm -rf "$STATE_DIR"
