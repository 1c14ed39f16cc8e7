#!/usr/bin/env bash
# Alternates runs with and without gappace's hints on one namespace cluster whose daemons stay
# up throughout, so that each pair is measured seconds apart (session 10's side runs).
#
#   alternate.sh BUILD LEFT RIGHT SIZE ROUNDS alltoall|mpi [MODES]
#
# alltoall: gp-alltoall for 2 s of wire time at C, modes "stock hints" (--hints iteration).
# mpi: Open MPI collectives (300 MPI_Alltoall), modes from: stock (no shim), shim (the PMPI
# shim, GAPPACE_SHIM_STATS=1), shimoff (the shim loaded with GAPPACE_SHIM=0), shimnopeers
# (GAPPACE_SHIM_PEERS=0: no endpoint exchange), shiminline (GAPPACE_SHIM_SEND=inline: no sender thread). 200mbit bottleneck, FIFO of 40 packets, cubic.
# EXTRA_TOML: more config tables for the daemons. Prints one line per run; the daemons' `gapctl -j daemon show` go to OUT (default .).
set -euo pipefail
BUILD=$(cd "$1" && pwd) L=$2 R=$3 MSG=$4 ROUNDS=$5 WHAT=$6
MODES=${7:-$([[ $WHAT == mpi ]] && echo "stock shim" || echo "stock hints")}
OUT=${OUT:-.}
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
TMP=$(mktemp -d /tmp/gp-alternate.XXXXXX)
STATE=$(mktemp -d /dev/shm/gp-alternate.XXXXXX)
TAG=$RANDOM
export GAPPACE_HINTS_SOCK=@gp-alt-h-$TAG GAPPACE_CONTROL_SOCK=@gp-alt-c-$TAG
source "$ROOT/tests/cluster/lib.sh"
trap 'gp_daemons_stop; rm -rf "$TMP" "$STATE"' EXIT # lib.sh's teardown runs first
gp_cluster_up "$TMP/c.state" --left "$L" --right "$R" --rate 200mbit --queue 40 --cc cubic 2>/dev/null
daemon_config() { # HOST_INDEX
	cat <<CONF
[daemon]
backend = "stock"
hints_socket = "$GAPPACE_HINTS_SOCK"
control_socket = "$GAPPACE_CONTROL_SOCK"
state_file = "$STATE/${GPC_HOSTS[$1]}.json"
history = 512
${EXTRA_TOML:-}
[rto]
floor = "5ms"
[pacing]
frame_overhead = 66
[planner]
model = "models"
$(gp_cluster_bottlenecks_toml)
CONF
}
gp_daemons_start "$BUILD" daemon_config "$TMP/daemons"
C=200000000 P=$((L + R)) X=$((2 * L * R))
volume=$(awk -v c=$C -v p=$P -v x=$X 'BEGIN { printf "%d", 2 * c / 8 * 2 * p * (p - 1) / x }')
shim=$BUILD/libctl/mpi/openmpi/libgapctl-mpi.so
for r in $(seq "$ROUNDS"); do
	for mode in $MODES; do
		if [[ $WHAT == mpi ]]; then
			env=()
			[[ $mode == shim* ]] && env=(--env "LD_PRELOAD=$shim" --env "GAPPACE_HINTS_SOCK=${SHIM_HINTS_SOCK:-$GAPPACE_HINTS_SOCK}" --env GAPPACE_SHIM_STATS=1)
			[[ $mode == shimoff ]] && env+=(--env GAPPACE_SHIM=0)
			[[ $mode == shimnopeers ]] && env+=(--env GAPPACE_SHIM_PEERS=0)
			[[ $mode == shiminline ]] && env+=(--env GAPPACE_SHIM_SEND=inline)
			out=$(gp_cluster_mpirun --mpi openmpi --timeout 120 "${env[@]}" -- "$BUILD/tests/mpi/collectives-openmpi" \
				--size "$MSG" --iters 300 --warmup 1 --kinds alltoall 2>"$OUT/mpi-$r-$mode.err" || true)
			echo "$r $mode $(grep -m1 '^{"program"' <<<"$out" | jq -c '.results[0] | {total_s, p50_us, p99_us, max_us}')"
		else
			extra=()
			[[ $mode == hints ]] && extra=(--hints iteration)
			out=$("$ROOT/tests/cluster/alltoall.sh" --state "$GPC_STATE" -- --msg "$MSG" --volume "$volume" --capacity $C \
				--cc cubic --sndbuf 8m --timeout 60 "${extra[@]}" 2>/dev/null || true)
			echo "$r $mode $(jq -c '{fraction_of_capacity, p50_us: .iteration_us.p50, retransmitted: .tcp.RetransSegs, timeouts: .tcp.TCPTimeouts}' <<<"$out")"
		fi
	done
done
for i in "${!GPC_HOSTS[@]}"; do gp_daemon_show "$i" "$BUILD" >"$OUT/daemon-${GPC_HOSTS[$i]}.json" || true; done
