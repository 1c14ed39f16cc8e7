#!/usr/bin/env bash
# A/B on one cluster, alternated: static pacing of every socket at the daemon's payload rate
# (x=0.98 of C*1448/1514/(k f)), gappaced alone (hints), gappaced + static pacing of every socket;
# with INTRA_ONLY=1 also gappaced + static pacing of the same side's sockets only (README.md).
#   B=BUILD OUT=DIR diagnose-static-vs-daemon.sh [TOPOLOGY [BYTES [REPS]]]   (state on /dev/shm)
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/tests/cluster/lib.sh"
B=${B:-$ROOT/build} OUT=${OUT:-.}
topo=${1:-4+4} m=${2:-1048576} reps=${3:-2}
nl=${topo%+*}; nr=${topo#*+}
gp_cluster_up "$OUT/cluster-$topo.state" --left $nl --right $nr --rate 200mbit --queue 40 >/dev/null
trap 'gp_daemons_stop; gp__cluster_cleanup' EXIT
C=200000000
export GAPPACE_HINTS_SOCK=@gp-ab-hints GAPPACE_CONTROL_SOCK=@gp-ab-ctl
STATE_DIR=/dev/shm/gp-ab-$$; mkdir -p $STATE_DIR
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
rate=$(awk -v c=$C -v k=$nl -v f=$nr 'BEGIN{printf "%d", c*1448/1514/(k*f)*0.98}')
vol=$(awk -v c=$C -v p=$((nl+nr)) -v xp=$((2*nl*nr)) -v m=$m 'BEGIN{v=2*c/8*2*p*(p-1)/xp; mn=p*(p-1)*m; printf "%d",(v<mn?mn:v)}')
run() { "$GP_CLUSTER_DIR/alltoall.sh" --state $GPC_STATE -- --msg $m --volume $vol --pattern pairwise --capacity $C --cc cubic --timeout 120 --sndbuf 8m "$@" 2>/dev/null |
  jq -r '"frac=\(.fraction_of_capacity|.*1000|round/1000) to=\(.tcp.TCPTimeouts) retr=\(.tcp.RetransSegs) p50=\(.iteration_us.p50/1000|round)ms"'; }
for rep in $(seq $reps); do
  echo "$topo $m rep$rep static       $(run --pacing-rate $rate)"
  gp_daemons_start $B cfg "$OUT/daemons" >/dev/null
  echo "$topo $m rep$rep daemon       $(run --hints iteration)"
  gp_daemons_stop; gp_daemons_start $B cfg "$OUT/daemons" >/dev/null
  echo "$topo $m rep$rep daemon+static $(run --hints iteration --pacing-rate $rate)"
  gp_daemons_stop
  if [[ -n ${INTRA_ONLY:-} ]]; then # needs the temporary gp-alltoall patch in README.md
    gp_daemons_start $B cfg "$OUT/daemons" >/dev/null
    echo "$topo $m rep$rep daemon+intra $(GP_EXP_UNPACE_CROSS=1 run --hints iteration --pacing-rate $rate)"
    gp_daemons_stop
  fi
done
