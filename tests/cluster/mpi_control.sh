#!/usr/bin/env bash
# The whole control-plane chain with a real MPI job, on this host's kernel (stock backend):
# a 2+2 namespace cluster with a 200mbit/40-packet bottleneck; gappaced in every host; the
# collectives program launched one rank per host with the PMPI shim preloaded. Asserts:
#   * every host's daemon received alltoall and bcast phases of the job with the right kind,
#     bytes per peer, communicator size and TCP tuples of the rank's own connections;
#   * the settings were live during phases (sampled: `ss -ti` of the rank's sockets with a
#     pacing cap; the RTO floor as an RTO below Linux's 200 ms minimum on one of them where the
#     kernel has TCP_RTO_MIN_US (Linux 6.15+, the default [rto] stock_floor there), else as
#     `ip route show proto 167` with rto_min lock 5ms);
#   * nothing is left afterwards (no proto 167 route, unlimited pacing, empty state files).
#
# usage: mpi_control.sh BUILD_DIR [openmpi|mpich ...]     (root; bounded; cleans up)
set -euo pipefail
BUILD=$(cd "${1:?usage: mpi_control.sh BUILD_DIR [openmpi|mpich]}" && pwd)
shift
FLAVOURS=("${@:-openmpi}")
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

TMP=$(mktemp -d /tmp/gappace-mpi.XXXXXX)
TAG=$RANDOM$RANDOM
SAMPLER=""
finish() {
	set +e
	[[ -n $SAMPLER ]] && kill "$SAMPLER" 2>/dev/null
	gp_daemons_stop
	rm -rf "$TMP"
}
trap finish EXIT # lib.sh's teardown runs first, then this
# shellcheck source=checks.sh
source "$HERE/checks.sh"

gp_cluster_up "$TMP/cluster.state" --left 2 --right 2 --rate 200mbit --queue 40
echo "cluster: ${GPC_HOSTS[*]} (${GPC_HOST_ADDR[*]}), cc $GPC_CC"
export GAPPACE_HINTS_SOCK=@gappace-hints-$TAG GAPPACE_CONTROL_SOCK=@gappace-ctl-$TAG
daemon_config() { # HOST_INDEX
	cat <<CONF
$(gp_daemon_toml "$TMP/daemons/${GPC_HOSTS[$1]}.state.json" 'quiet_remedied = "0s"')
# This test checks the actuation chain: the simple rule (pace and floor every crossing phase) and
# rates taken literally, every phase at the daemon (no held advice: tests/host/stock_backend.sh
# tests that). The models' decisions are tested in daemon/tests and by bench-system.
[planner]
model = "default"
[pacing]
frame_overhead = 0
[rto]
floor = "5ms"
$(gp_cluster_bottlenecks_toml)
CONF
}
gp_daemons_start "$BUILD" daemon_config "$TMP/daemons" || exit 1
show() { ip netns exec "$1" "$BUILD/tools/gapctl/gapctl" -j daemon show; }

h1ns=${GPC_HOST_NS[0]}
for flavour in "${FLAVOURS[@]}"; do
	program=$BUILD/tests/mpi/collectives-$flavour
	shim=$BUILD/libctl/mpi/$flavour/libgapctl-mpi.so
	[[ -x $program && -f $shim ]] || { echo "SKIP $flavour: $program or $shim not built"; continue; }
	echo "== $flavour"
	declare -A before=()
	for i in "${!GPC_HOSTS[@]}"; do before[$i]=$(show "${GPC_HOST_NS[$i]}" | jq '.counters.phases_ended'); done
	# Sample host 1 while the job runs: routes and the rank's sockets.
	(
		for _ in $(seq 600); do
			ip -n "$h1ns" route show proto 167 | sed 's/^/route: /'
			ip netns exec "$h1ns" ss -tinH state established | tr -s ' \t' ' ' | paste - - | sed 's/^/ss: /'
			sleep 0.05
		done
	) >"$TMP/samples.$flavour" 2>/dev/null &
	SAMPLER=$!
	size=262144
	rc=0
	gp_cluster_mpirun --mpi "$flavour" --timeout 240 --env "LD_PRELOAD=$shim" -- \
		"$program" --size $size --iters 30 --kinds alltoall,bcast >"$TMP/job.$flavour" 2>&1 || rc=$?
	kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null || true; SAMPLER=""
	tail -n 3 "$TMP/job.$flavour"
	check "$flavour job finished with verified data" test "$rc" -eq 0
	for i in "${!GPC_HOSTS[@]}"; do
		ns=${GPC_HOST_NS[$i]} h=${GPC_HOSTS[$i]}
		show "$ns" >"$TMP/daemons/$h.show.$flavour.json"
		j="$TMP/daemons/$h.show.$flavour.json"
		check "$h: alltoall phases of $size B/peer, P=4, 3 peers" \
			jqt "$j" "[.history[] | select(.kind==\"alltoall\" and .bytes_per_peer==$size and .comm_size==4 and (.peers|length)>=3)] | length >= 30"
		check "$h: bcast phases of $size B, P=4" \
			jqt "$j" "[.history[] | select(.kind==\"bcast\" and .bytes_per_peer==$size and .comm_size==4)] | length >= 30"
		check "$h: alltoall peers carried as TCP tuples of the rank's sockets, and matched" \
			jqt "$j" '[.history[] | select(.kind=="alltoall" and .sockets>=3 and ([.peers[] | select(.local)] | length) >= 3)] | length >= 1'
		check "$h: alltoall across the bottleneck was paced, RTO floored" \
			jqt "$j" '[.history[] | select(.kind=="alltoall" and .paced>=1 and .rto>=1)] | length >= 1'
		check "$h: every phase ended by its END (no timeouts, no errors)" \
			jqt "$j" '.counters.phases_timed_out==0 and .counters.apply_errors==0 and .counters.phases_active==0'
		# Removed records leave the state file at the daemon's first tick a second after the
		# removal (a phase that follows soon finds them there and writes nothing): wait for that.
		check "$h: nothing left (no route, empty state)" \
			bash -c "for _ in \$(seq 40); do [[ -z \$(ip -n $ns route show proto 167) ]] && jq -e '(.routes|length)==0 and (.pacing|length)==0' $TMP/daemons/$h.state.json >/dev/null && exit 0; sleep 0.1; done; exit 1"
	done
	if ip netns exec "$h1ns" python3 -c 'import socket; socket.socket().getsockopt(socket.IPPROTO_TCP, 45)' 2>/dev/null; then
		# TCP_RTO_MIN_US there: the floor is the sockets' own; an RTO under 200 ms shows it.
		check "during phases: a rank socket with an RTO below 200 ms seen on h1 (the floor, TCP_RTO_MIN_US)" \
			grep -Eq "ss: .* rto:1?[0-9]?[0-9](\.[0-9]+)? " "$TMP/samples.$flavour"
		check "during phases: and no route" bash -c "! grep -q '^route: ' $TMP/samples.$flavour"
	else
		check "during phases: route with rto_min lock 5ms seen on h1" grep -q "route: .*rto_min lock 5ms" "$TMP/samples.$flavour"
	fi
	# ss -n prints "pacing_rate CURRENT/CAP" only while a cap is set.
	check "during phases: a rank socket with a pacing cap seen on h1" grep -Eq "ss: .*pacing_rate [0-9]+bps/[0-9]+bps" "$TMP/samples.$flavour"
	jq -c '.history[-1] | {kind, bytes_per_peer, comm_size, peers: (.peers|length), sockets, paced, rto, plan, apply_latency_ns}' \
		"$TMP/daemons/${GPC_HOSTS[0]}.show.$flavour.json"
done
for i in "${!GPC_HOSTS[@]}"; do
	echo "--- ${GPC_HOSTS[$i]} daemon log (last 3 lines)"; tail -n 3 "$TMP/daemons/${GPC_HOSTS[$i]}.log"
done
if ((FAILS)); then echo "mpi_control: $FAILS failed"; exit 1; fi
echo "mpi_control: all passed"
