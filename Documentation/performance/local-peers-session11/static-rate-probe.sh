#!/usr/bin/env bash
# Fixed per-socket pacing of every socket at multiples x of C*1448/1514/(k f) (the payload share
# of one connection), no daemon: what the link gives at, below and above the rate bound.
#   B=BUILD OUT=DIR static-rate-probe.sh TOPOLOGY BYTES X...
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
source "$ROOT/tests/cluster/lib.sh"
B=${B:-$ROOT/build} OUT=${OUT:-.}
topo=${1:-4+4} m=${2:-1048576}; shift 2; mults=${*:-1.0 1.1 1.2}
nl=${topo%+*}; nr=${topo#*+}
gp_cluster_up "$OUT/cluster-$topo.state" --left $nl --right $nr --rate 200mbit --queue 40 >/dev/null
C=200000000
for rep in 1 2; do
for x in $mults; do
  rate=$(awk -v c=$C -v k=$nl -v f=$nr -v x=$x 'BEGIN{printf "%d", c*1448/1514/(k*f)*x}')
  vol=$(awk -v c=$C -v p=$((nl+nr)) -v xp=$((2*nl*nr)) -v m=$m 'BEGIN{v=2*c/8*2*p*(p-1)/xp; mn=p*(p-1)*m; printf "%d",(v<mn?mn:v)}')
  out=$("$GP_CLUSTER_DIR/alltoall.sh" --state $GPC_STATE -- --msg $m --volume $vol --pattern pairwise --capacity $C --cc cubic --timeout 60 --sndbuf 8m --pacing-rate $rate 2>/dev/null)
  echo "$topo m=$m x=$x rate=$rate $(jq -r '"frac=\(.fraction_of_capacity|.*1000|round/1000) to=\(.tcp.TCPTimeouts) retr=\(.tcp.RetransSegs) out=\(.tcp.OutSegs) p50=\(.iteration_us.p50|round)"' <<<"$out")"
done
done
