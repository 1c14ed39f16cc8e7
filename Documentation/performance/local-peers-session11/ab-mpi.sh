#!/usr/bin/env bash
# A/B for Open MPI MPI_Alltoall with the PMPI shim: gappaced with pace_local_peers true / false,
# alternated per run. ab-mpi.sh BUILD OUT TOPOLOGY SIZES REPS
set -uo pipefail
B=${1:?build} OUT=${2:?out} topo=${3:?topology} sizes=${4:?sizes} reps=${5:-3}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/tests/cluster/lib.sh"
mkdir -p "$OUT"
nl=${topo%+*} nr=${topo#*+}
gp_cluster_up "$OUT/cluster-$topo.state" --left "$nl" --right "$nr" --rate 200mbit --queue 40 >/dev/null
trap 'gp_daemons_stop; gp__cluster_cleanup' EXIT
C=200000000
export GAPPACE_HINTS_SOCK=@gp-abmpi-hints GAPPACE_CONTROL_SOCK=@gp-abmpi-ctl
STATE_DIR=/dev/shm/gp-abmpi-$$
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
echo "# $(date -u +%FT%TZ) Open MPI $topo sizes $sizes reps $reps, load $(cut -d' ' -f1-3 /proc/loadavg), cc $GPC_CC" | tee -a "$OUT/ab-mpi.txt"
x=$((2 * nl * nr))
for size in ${sizes//,/ }; do
	m=$(bytes "$size")
	iters=$(awk -v c=$C -v x=$x -v m=$m 'BEGIN { n = int(2 * c / 8 * 2 / (x * m)); if (n < 4) n = 4; print n }')
	for rep in $(seq "$reps"); do
		for LOCAL in true false; do
			gp_daemons_start "$B" cfg "$OUT/daemons" >/dev/null || exit 1
			out=$(gp_cluster_mpirun --mpi openmpi --timeout 120 --env "LD_PRELOAD=$B/libctl/mpi/openmpi/libgapctl-mpi.so" \
				--env "GAPPACE_HINTS_SOCK=$GAPPACE_HINTS_SOCK" -- "$B/tests/mpi/collectives-openmpi" --size "$m" --iters "$iters" \
				--warmup 1 --kinds alltoall 2>/dev/null | grep -m1 '^{"program":"collectives"')
			gp_daemons_stop
			jq -c --arg topo "$topo" --arg local "$LOCAL" --argjson rep "$rep" --argjson c $C --argjson x $x \
				'(.results | map(select(.kind == "alltoall")) | .[0]) as $a
				 | {topology: $topo, pace_local_peers: ($local == "true"), rep: $rep, msg: .size, iters,
				    fraction_of_capacity: ((.iters * $x * .size * 8) / ($a.total_s * 2 * $c)), p50_us: $a.p50_us}' \
				<<<"$out" | tee -a "$OUT/runs-mpi.jsonl"
		done
	done
done
rm -rf "$STATE_DIR"
