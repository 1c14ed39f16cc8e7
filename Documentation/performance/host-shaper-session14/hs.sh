#!/usr/bin/env bash
# Session 14's experiment: one shaper per host for all its cross-bottleneck traffic, against
# gappaced's per-socket pacing, alternated on one namespace cluster (200mbit bottleneck, FIFO of
# 40 packets, cubic) whose daemons stay up throughout.
#
#   hs.sh BUILD LEFT RIGHT SIZE ROUNDS MODE...
#
# A MODE joins parts with '+':
#   stock     nothing;
#   gappaced  gp-alltoall sends hints (--hints iteration): the daemons plan and pace per socket;
#   shapeF    an htb class on each host's interface, rate F * C / (hosts on its side), for the
#             packets to the other side's hosts (u32 filters on the destination); the rest
#             passes unshaped. ACKs without data (IP length < 128) skip the shaper unless
#             ACKS_BYPASS=0. SHAPE_BURST: the class's burst in bytes (default 1600);
#   htbtbfF   the same tree, but the class does not limit: a tbf under it at that rate does
#             (what gappaced's host pacer installs);
#   tbfF      a tbf as the root of each host's interface: all its traffic, ACKs included
#             (for PATTERN=half, where all traffic crosses);
#   pace      every socket capped by hand at C / (LEFT * RIGHT) (SO_MAX_PACING_RATE);
#   rto       a route with rto_min 5ms on every host.
# PATTERN: gp-alltoall's --pattern (default pairwise). PACER: the daemons' [pacing] pacer
# (default socket). CLASS_STATS=1 prints h1's shaped class after each run. Prints one line per run, preceded by
# the switch's cumulative FIFO drops (left/right), the hosts' qdisc drops and the machine's
# softnet (backlog) drops.
set -euo pipefail
BUILD=$(cd "$1" && pwd) L=$2 R=$3 MSG=$4 ROUNDS=$5
shift 5
MODES=("$@")
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
TMP=$(mktemp -d /tmp/gp-hs.XXXXXX)
STATE=$(mktemp -d /dev/shm/gp-hs.XXXXXX)
TAG=$RANDOM
export GAPPACE_HINTS_SOCK=@gp-hs-h-$TAG GAPPACE_CONTROL_SOCK=@gp-hs-c-$TAG
source "$ROOT/tests/cluster/lib.sh"
trap 'gp_daemons_stop; rm -rf "$TMP" "$STATE"' EXIT # lib.sh's teardown runs first
gp_cluster_up "$TMP/c.state" --left "$L" --right "$R" --rate 200mbit --queue 40 --cc cubic 2>/dev/null
daemon_config() {
	gp_daemon_toml "$STATE/${GPC_HOSTS[$1]}.json" 'history = 512' '[rto]' 'floor = "5ms"' '[pacing]' \
		'frame_overhead = 66' "pacer = \"${PACER:-socket}\"" '[planner]' 'model = "models"' "$(gp_cluster_bottlenecks_toml)"
}
gp_daemons_start "$BUILD" daemon_config "$TMP/daemons"
C=200000000 P=$((L + R)) X=$((2 * L * R))
volume=$(awk -v c=$C -v p=$P -v x=$X 'BEGIN { printf "%d", 2 * c / 8 * 2 * p * (p - 1) / x }')

shape() { # on|htbtbf|tbf FRACTION | off
	local i j ns side_hosts rate
	for i in "${!GPC_HOSTS[@]}"; do
		ns=${GPC_HOST_NS[i]}
		ip netns exec "$ns" tc qdisc del dev "$GPC_HOST_IFACE" root 2>/dev/null || true
		[[ $1 != off ]] || continue
		if [[ ${GPC_HOST_SIDE[i]} == left ]]; then side_hosts=$L; else side_hosts=$R; fi
		rate=$(awk -v c=$C -v n="$side_hosts" -v f="$2" 'BEGIN { printf "%d", c / n * f }')
		if [[ $1 == tbf ]]; then
			ip netns exec "$ns" tc qdisc add dev "$GPC_HOST_IFACE" root handle 1: tbf rate "${rate}bit" \
				burst "${SHAPE_BURST:-1600}" limit 10000000
			continue
		fi
		ip netns exec "$ns" sh -ec "
			tc qdisc add dev $GPC_HOST_IFACE root handle 1: htb default 1
			tc class add dev $GPC_HOST_IFACE parent 1: classid 1:1 htb rate 10gbit quantum 60000
			tc class add dev $GPC_HOST_IFACE parent 1: classid 1:2 htb rate ${rate}bit ceil ${rate}bit \
				burst ${SHAPE_BURST:-1600} cburst ${SHAPE_BURST:-1600} quantum 1514
			tc qdisc add dev $GPC_HOST_IFACE parent 1:2 handle 20: pfifo limit 10000" 2>/dev/null
		if [[ $1 == htbtbf ]]; then
			ip netns exec "$ns" sh -ec "
				tc class change dev $GPC_HOST_IFACE parent 1: classid 1:2 htb rate 10gbit quantum 60000
				tc qdisc del dev $GPC_HOST_IFACE parent 1:2 handle 20:
				tc qdisc add dev $GPC_HOST_IFACE parent 1:2 handle 30: tbf rate ${rate}bit burst ${SHAPE_BURST:-1600} limit 10000000" 2>/dev/null
		fi
		[[ ${ACKS_BYPASS:-1} == 1 ]] && ip netns exec "$ns" tc filter add dev "$GPC_HOST_IFACE" parent 1: protocol ip \
			prio 1 u32 match u16 0x0000 0xff80 at 2 flowid 1:1
		for j in "${!GPC_HOSTS[@]}"; do
			[[ ${GPC_HOST_SIDE[j]} != "${GPC_HOST_SIDE[i]}" ]] || continue
			ip netns exec "$ns" tc filter add dev "$GPC_HOST_IFACE" parent 1: protocol ip prio 2 u32 \
				match ip dst "${GPC_HOST_ADDR[j]}/32" flowid 1:2
		done
	done
}

for r in $(seq "$ROUNDS"); do
	for mode in "${MODES[@]}"; do
		rto=off shape_f="" how=on extra=()
		IFS=+ read -ra parts <<<"$mode"
		for p in "${parts[@]}"; do
			case $p in
			stock) ;;
			rto) rto=on ;;
			shape*) shape_f=${p#shape} how=on ;;
			htbtbf*) shape_f=${p#htbtbf} how=htbtbf ;;
			tbf*) shape_f=${p#tbf} how=tbf ;;
			pace) extra+=(--pacing-rate $((C / (L * R)))) ;;
			gappaced) extra+=(--hints iteration) ;;
			*) echo "hs.sh: unknown mode part '$p'" >&2; exit 2 ;;
			esac
		done
		for i in "${!GPC_HOSTS[@]}"; do
			if [[ $rto == on ]]; then
				ip -n "${GPC_HOST_NS[$i]}" route replace "$GPC_SUBNET" dev "$GPC_HOST_IFACE" rto_min 5ms
			else
				ip -n "${GPC_HOST_NS[$i]}" route replace "$GPC_SUBNET" dev "$GPC_HOST_IFACE"
			fi
		done
		if [[ -n $shape_f ]]; then shape "$how" "$shape_f"; else shape off; fi
		out=$("$ROOT/tests/cluster/alltoall.sh" --state "$GPC_STATE" -- --msg "$MSG" --volume "$volume" --capacity $C \
			--cc cubic --pattern "${PATTERN:-pairwise}" --sndbuf 8m --timeout 60 "${extra[@]}" 2>/dev/null || true)
		[[ -n ${CLASS_STATS:-} && -n $shape_f ]] && ip netns exec "${GPC_HOST_NS[0]}" tc -s class show dev "$GPC_HOST_IFACE" | grep -A3 "1:2 "
		sw_drops=$(for d in bnL bnR; do
			ip netns exec "$GPC_SWITCH_NS" tc -s qdisc show dev $d | awk '/dropped/ { gsub(",", ""); print $7; exit }'
		done | paste -sd/)
		host_drops=$(for i in "${!GPC_HOSTS[@]}"; do
			ip netns exec "${GPC_HOST_NS[i]}" tc -s qdisc show dev "$GPC_HOST_IFACE" | awk '/dropped/ { gsub(",", ""); s += $7 } END { print s + 0 }'
		done | paste -sd+ | bc)
		softnet=$(python3 -c 'print(sum(int(l.split()[1], 16) for l in open("/proc/net/softnet_stat")))')
		echo "   switch drops (cumulative) $sw_drops host qdisc drops $host_drops softnet drops $softnet"
		echo "$r $mode $(jq -c '{f: (.fraction_of_capacity * 1000 | round / 1000), p50: .iteration_us.p50, retr: .tcp.RetransSegs,
			to: .tcp.TCPTimeouts, tlp: .tcp.TCPLossProbes, stalled: .stalled_iterations, p90: .iteration_us.p90,
			p99: .iteration_us.p99, max: .iteration_us.max}' <<<"$out")"
	done
done
shape off
