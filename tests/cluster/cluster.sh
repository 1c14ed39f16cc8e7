#!/usr/bin/env bash
# gappace host-side test cluster: network namespaces as hosts, two switch bridges joined by one
# shaped link (the bottleneck). See tests/cluster/README.md for the topology and every knob.
#
#   cluster.sh up [--left N] [--right M] [--rate C] [--queue Q] [--mtu B] [--burst B]
#                 [--delay D] [--cc NAME] [--shaper tbf|htb] --state FILE
#   cluster.sh down --state FILE
#   cluster.sh exec --state FILE HOST CMD [ARGS...]
#   cluster.sh stats --state FILE
#   cluster.sh hosts --state FILE
#
# Exit codes: 0 done, 1 runtime failure, 2 usage error.
set -euo pipefail

GPC_TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Per-cluster runtime files (hosts file, copy of the state) live here, keyed by the cluster's
# prefix, so that netns-rsh can find them from a host name alone.
GPC_RUNROOT=${GPC_RUNROOT:-/run/gpc}
GPC_HOST_IFACE=eth0
readonly GPC_MAX_HOSTS=250

usage() {
	sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
usage_error() {
	echo "cluster.sh: $*" >&2
	exit 2
}
fail() {
	echo "cluster.sh: $*" >&2
	exit 1
}
log() { echo "cluster.sh: $*" >&2; }
# Every option takes a value: complain clearly when it is missing.
need_value() { [[ $# -ge 2 && -n $2 && $2 != --* ]] || usage_error "option $1 needs a value"; }

now_ns() { date +%s%N; }
elapsed_s() { awk -v a="$1" -v b="$(now_ns)" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

# tc rate (bit, kbit, mbit, gbit, tbit; decimal multiples as tc uses them) -> bytes per second.
rate_to_bytes_per_s() {
	local rate=$1 number unit
	[[ $rate =~ ^([0-9]+(\.[0-9]+)?)([kmgt]?bit)$ ]] || return 1
	number=${BASH_REMATCH[1]}
	unit=${BASH_REMATCH[3]}
	awk -v n="$number" -v u="$unit" 'BEGIN {
		m = 1; if (u == "kbit") m = 1e3; else if (u == "mbit") m = 1e6;
		else if (u == "gbit") m = 1e9; else if (u == "tbit") m = 1e12;
		printf "%.0f", n * m / 8 }'
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]] && ((10#$1 <= 1000000000)); }

random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }

# ---------------------------------------------------------------------------------------------
# State file: sourceable bash. Written before anything is created (so that `down` can remove a
# half-built cluster) and rewritten with GPC_COMPLETE=1 once everything is up.
write_state() {
	local file=$1 tmp
	tmp=$(mktemp "${file}.XXXXXX")
	{
		echo "# gappace test cluster state (cluster.sh); sourceable bash"
		declare -p GPC_ID GPC_PREFIX GPC_RUNDIR GPC_SWITCH_NS GPC_LEFT GPC_RIGHT GPC_HOSTS \
			GPC_HOST_NS GPC_HOST_ADDR GPC_HOST_SIDE GPC_HOST_IFACE GPC_SWITCH_PORTS GPC_SUBNET \
			GPC_RATE GPC_RATE_BYTES_PER_S GPC_QUEUE GPC_MTU GPC_BURST GPC_DELAY GPC_CC GPC_SHAPER \
			GPC_BOTTLENECK_L2R_DEV GPC_BOTTLENECK_R2L_DEV GPC_HOSTS_FILE GPC_STATE_FILE \
			GPC_TOOLS_DIR GPC_COMPLETE GPC_UP_SECONDS
	} | sed 's/^declare -[-aAirx]* //' >"$tmp"
	mv -f "$tmp" "$file"
}

load_state() {
	local file=$1
	[[ -f $file ]] || return 1
	# shellcheck disable=SC1090
	source "$file"
	[[ -n ${GPC_PREFIX:-} && ${GPC_PREFIX} == gpc-* ]] || fail "$file is not a cluster state file"
}

# Host argument of exec: logical name (h3), index (3), namespace name or address.
resolve_host_index() {
	local want=$1 i
	for i in "${!GPC_HOSTS[@]}"; do
		if [[ $want == "${GPC_HOSTS[i]}" || $want == "$((i + 1))" || $want == "${GPC_HOST_NS[i]}" ||
			$want == "${GPC_HOST_ADDR[i]}" ]]; then
			echo "$i"
			return 0
		fi
	done
	return 1
}

# ---------------------------------------------------------------------------------------------
# up
cmd_up() {
	local left=2 right=2 rate=200mbit queue=40 mtu=1500 burst="" delay="" cc=cubic shaper=tbf
	local state=""
	while (($#)); do
		case $1 in
		--left) need_value "$@"; left=$2; shift 2 ;;
		--right) need_value "$@"; right=$2; shift 2 ;;
		--rate) need_value "$@"; rate=$2; shift 2 ;;
		--queue) need_value "$@"; queue=$2; shift 2 ;;
		--mtu) need_value "$@"; mtu=$2; shift 2 ;;
		--burst) need_value "$@"; burst=$2; shift 2 ;;
		--delay) need_value "$@"; delay=$2; shift 2 ;;
		--cc) need_value "$@"; cc=$2; shift 2 ;;
		--shaper) need_value "$@"; shaper=$2; shift 2 ;;
		--state) need_value "$@"; state=$2; shift 2 ;;
		-h | --help) usage ;;
		*) usage_error "up: unknown option '$1'" ;;
		esac
	done
	[[ -n $state ]] || usage_error "up: --state FILE is required"
	[[ ! -e $state ]] || usage_error "up: state file $state exists (run 'down' first or pick another)"
	is_uint "$left" && ((left >= 1)) || usage_error "--left must be a positive integer, got '$left'"
	is_uint "$right" && ((right >= 1)) || usage_error "--right must be a positive integer, got '$right'"
	((left + right <= GPC_MAX_HOSTS)) || usage_error "at most $GPC_MAX_HOSTS hosts in a /24, got $((left + right))"
	is_uint "$queue" && ((queue >= 1 && queue <= 100000)) ||
		usage_error "--queue must be 1..100000 packets, got '$queue'"
	is_uint "$mtu" && ((mtu >= 576 && mtu <= 65535)) || usage_error "--mtu must be 576..65535, got '$mtu'"
	local rate_bps
	rate_bps=$(rate_to_bytes_per_s "$rate") && ((rate_bps >= 1000)) ||
		usage_error "--rate must look like 200mbit (bit|kbit|mbit|gbit|tbit, >= 8kbit), got '$rate'"
	local frame=$((mtu + 14))
	if [[ -z $burst ]]; then
		# One millisecond at line rate, at least 4 frames: the shaper then keeps the rate even when
		# softirq wakeups come late on a loaded machine, and the idle-link burst stays small.
		burst=$((rate_bps / 1000))
		((burst >= 4 * frame)) || burst=$((4 * frame))
	fi
	is_uint "$burst" && ((burst >= frame)) ||
		usage_error "--burst must be at least one frame (mtu + 14 = $frame bytes), got '$burst'"
	[[ $shaper == tbf || $shaper == htb ]] || usage_error "--shaper must be tbf or htb, got '$shaper'"
	[[ -z $delay || $delay =~ ^[0-9]+(\.[0-9]+)?(s|ms|us)$ ]] ||
		usage_error "--delay must look like 2ms or 500us, got '$delay'"
	[[ $cc =~ ^[a-z0-9_]+$ ]] || usage_error "--cc must be a congestion control name, got '$cc'"
	grep -qw -- "$cc" /proc/sys/net/ipv4/tcp_available_congestion_control ||
		fail "congestion control '$cc' is not available (have: $(cat /proc/sys/net/ipv4/tcp_available_congestion_control); no module loading here)"
	command -v ethtool >/dev/null || fail "ethtool is missing (bash tests/deps.sh)"
	# A namespace may only pick a default congestion control from the machine-wide allowed list
	# (EPERM otherwise), which holds just reno and the root default on many machines. Adding one
	# to it changes nothing for existing sockets.
	local allowed_file=/proc/sys/net/ipv4/tcp_allowed_congestion_control allowed
	allowed=$(cat "$allowed_file")
	if ! grep -qw -- "$cc" <<<"$allowed"; then
		echo "$allowed $cc" >"$allowed_file" || fail "cannot add '$cc' to $allowed_file"
		log "added '$cc' to net.ipv4.tcp_allowed_congestion_control (was: $allowed)"
	fi

	local t0
	t0=$(now_ns)
	# Names and addresses are random so that clusters of parallel tests never meet.
	GPC_ID=$(random_hex 3)
	GPC_PREFIX=gpc-$GPC_ID
	GPC_RUNDIR=$GPC_RUNROOT/$GPC_PREFIX
	GPC_SWITCH_NS=$GPC_PREFIX-sw
	GPC_LEFT=$left
	GPC_RIGHT=$right
	local net_a net_b
	net_a=$((16#$(random_hex 1) % 254 + 1))
	net_b=$((16#$(random_hex 1) % 256))
	GPC_SUBNET=10.$net_a.$net_b.0/24
	GPC_HOSTS=() GPC_HOST_NS=() GPC_HOST_ADDR=() GPC_HOST_SIDE=() GPC_SWITCH_PORTS=()
	local i
	for ((i = 1; i <= left + right; i++)); do
		GPC_HOSTS+=("h$i")
		GPC_HOST_NS+=("$GPC_PREFIX-h$i")
		GPC_HOST_ADDR+=("10.$net_a.$net_b.$i")
		GPC_SWITCH_PORTS+=("p$i")
		if ((i <= left)); then GPC_HOST_SIDE+=(left); else GPC_HOST_SIDE+=(right); fi
	done
	GPC_RATE=$rate
	GPC_RATE_BYTES_PER_S=$rate_bps
	GPC_QUEUE=$queue
	GPC_MTU=$mtu
	GPC_BURST=$burst
	GPC_DELAY=$delay
	GPC_CC=$cc
	GPC_SHAPER=$shaper
	# Egress of bnL carries left->right traffic (it arrives on bnR, a port of the right switch).
	GPC_BOTTLENECK_L2R_DEV=bnL
	GPC_BOTTLENECK_R2L_DEV=bnR
	GPC_HOSTS_FILE=$GPC_RUNDIR/hosts
	GPC_STATE_FILE=$(realpath -m "$state")
	GPC_COMPLETE=0
	GPC_UP_SECONDS=""

	write_state "$state"
	# Any failure from here on tears down what exists; the caller gets a clean machine and exit 1.
	trap 'rc=$?; if ((rc)); then log "up failed, tearing down"; cmd_down --state "$GPC_STATE_FILE" >/dev/null 2>&1 || true; fi' EXIT

	mkdir -p "$GPC_RUNDIR"
	{
		echo "127.0.0.1 localhost"
		for i in "${!GPC_HOSTS[@]}"; do
			echo "${GPC_HOST_ADDR[i]} ${GPC_HOST_NS[i]} ${GPC_HOSTS[i]}"
		done
	} >"$GPC_HOSTS_FILE"

	local sw=$GPC_SWITCH_NS
	ip netns add "$sw"
	# No IPv6 anywhere: router solicitations and MLD reports would otherwise cross the bottleneck.
	ip netns exec "$sw" sh -c 'echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
		echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6'
	# A switch forwards frames without a firewall. A kernel with br_netfilter starts every
	# namespace with bridge-nf-call-* at 1, and each bridged frame then takes three netfilter
	# hooks (GPC_BRIDGE_NF=1 keeps that, for comparison).
	local bridge_nf=${GPC_BRIDGE_NF:-0}
	[[ $bridge_nf == [01] ]] || fail "GPC_BRIDGE_NF must be 0 or 1, not '$bridge_nf'"
	# Per namespace since Linux 5.3; before, only the initial namespace has them.
	ip netns exec "$sw" sh -c "[ ! -e /proc/sys/net/bridge/bridge-nf-call-iptables ] ||
		for f in /proc/sys/net/bridge/bridge-nf-call-*; do echo $bridge_nf >\$f || exit 1; done" ||
		fail "cannot set net.bridge.bridge-nf-call-* in $sw"
	ip -n "$sw" -batch - <<-EOF
		link set lo up
		link add brL type bridge stp_state 0 mcast_snooping 0
		link add brR type bridge stp_state 0 mcast_snooping 0
		link add bnL mtu $mtu type veth peer name bnR mtu $mtu
		link set bnL master brL
		link set bnR master brR
	EOF

	local ns bridge
	for i in "${!GPC_HOSTS[@]}"; do
		ns=${GPC_HOST_NS[i]}
		ip netns add "$ns"
		ip netns exec "$ns" sh -c "
			echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6 &&
			echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6 &&
			echo $cc >/proc/sys/net/ipv4/tcp_congestion_control &&
			echo 1 >/proc/sys/net/ipv4/tcp_no_metrics_save" ||
			fail "cannot configure sysctls in $ns (congestion control '$cc'?)"
		# Both ends are created directly in their namespaces: no name clash in the root netns.
		ip link add "$GPC_HOST_IFACE" netns "$ns" mtu "$mtu" type veth \
			peer name "${GPC_SWITCH_PORTS[i]}" netns "$sw" mtu "$mtu"
		if [[ ${GPC_HOST_SIDE[i]} == left ]]; then bridge=brL; else bridge=brR; fi
		ip -n "$ns" -batch - <<-EOF
			link set lo up
			addr add ${GPC_HOST_ADDR[i]}/24 dev $GPC_HOST_IFACE
			link set $GPC_HOST_IFACE up
		EOF
		ip -n "$sw" link set "${GPC_SWITCH_PORTS[i]}" master "$bridge" up
		# Offloads off: every packet on the wire is one MTU-sized frame, as on a real link, and the
		# bottleneck FIFO counts real packets instead of 64 KB GSO super-packets.
		ip netns exec "$ns" ethtool -K "$GPC_HOST_IFACE" tso off gso off gro off
	done

	local -a offload_cmds=()
	local dev
	for dev in bnL bnR "${GPC_SWITCH_PORTS[@]}"; do
		offload_cmds+=("ethtool -K $dev tso off gso off gro off")
	done
	ip netns exec "$sw" sh -ec "$(printf '%s\n' "${offload_cmds[@]}")"

	# The bottleneck: in each direction a shaper at C whose only queue is a FIFO of Q packets.
	for dev in bnL bnR; do
		if [[ $shaper == tbf ]]; then
			# tbf's own latency/limit are irrelevant: its queue is replaced by the pfifo child.
			ip netns exec "$sw" tc qdisc add dev "$dev" root handle 1: tbf rate "$rate" burst "$burst" limit "$((queue * frame))"
		else
			ip netns exec "$sw" tc qdisc add dev "$dev" root handle 1: htb default 1
			ip netns exec "$sw" tc class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
				burst "$burst" cburst "$burst" quantum "$frame"
		fi
		ip netns exec "$sw" tc qdisc add dev "$dev" parent 1:1 handle 10: pfifo limit "$queue"
	done

	if [[ -n $delay ]]; then
		# Delay on the switch ports towards the hosts (every path crosses two of them: RTT + 2*D),
		# leaving the hosts' own eth0 free for the qdisc under test.
		for dev in "${GPC_SWITCH_PORTS[@]}"; do
			ip netns exec "$sw" tc qdisc add dev "$dev" root netem delay "$delay" limit 100000 2>/dev/null ||
				fail "--delay needs the netem qdisc, which this kernel does not have (no module loading)"
		done
	fi

	ip -n "$sw" -batch - <<-EOF
		link set bnL up
		link set bnR up
		link set brL up
		link set brR up
	EOF

	wait_links_up || fail "links did not come up within 5 s"

	GPC_COMPLETE=1
	GPC_UP_SECONDS=$(elapsed_s "$t0")
	write_state "$state"
	cp "$state" "$GPC_RUNDIR/state"
	trap - EXIT
	log "up: $GPC_PREFIX, $left+$right hosts on $GPC_SUBNET, bottleneck $rate q=$queue mtu=$mtu cc=$cc${delay:+ delay=$delay} in ${GPC_UP_SECONDS}s"
}

# Bounded wait until every host link and bridge port forwards (no STP, so this is quick).
wait_links_up() {
	local deadline=$((SECONDS + 5)) ns i down
	while ((SECONDS <= deadline)); do
		down=0
		for i in "${!GPC_HOST_NS[@]}"; do
			ns=${GPC_HOST_NS[i]}
			[[ $(ip -n "$ns" -br link show dev "$GPC_HOST_IFACE") == *" UP "* ]] || down=1
		done
		[[ $(ip -n "$GPC_SWITCH_NS" -br link show type bridge_slave | grep -vc ' UP ') == 0 ]] || down=1
		((down)) || return 0
		sleep 0.05
	done
	return 1
}

# ---------------------------------------------------------------------------------------------
# down: kill every process in the cluster's namespaces, delete them, remove the runtime files.
# Idempotent: a missing state file or already-deleted namespaces are fine.
cmd_down() {
	local state=""
	while (($#)); do
		case $1 in
		--state) need_value "$@"; state=$2; shift 2 ;;
		-h | --help) usage ;;
		*) usage_error "down: unknown option '$1'" ;;
		esac
	done
	[[ -n $state ]] || usage_error "down: --state FILE is required"
	if [[ ! -f $state ]]; then
		log "down: no state file $state, nothing to tear down"
		return 0
	fi
	load_state "$state"
	local t0
	t0=$(now_ns)
	local -a namespaces=("${GPC_HOST_NS[@]}" "$GPC_SWITCH_NS") present=() pids=()
	local ns
	for ns in "${namespaces[@]}"; do
		[[ -e /run/netns/$ns ]] && present+=("$ns")
	done
	collect_pids() {
		pids=()
		local n p
		for n in "${present[@]}"; do
			for p in $(ip netns pids "$n" 2>/dev/null); do pids+=("$p"); done
		done
	}
	# TERM first (MPI daemons clean their session directories), KILL after 2 s; bounded.
	local round
	for ((round = 0; round < 40; round++)); do
		collect_pids
		((${#pids[@]})) || break
		if ((round == 0)); then
			kill -TERM "${pids[@]}" 2>/dev/null || true
		elif ((round >= 20)); then
			kill -KILL "${pids[@]}" 2>/dev/null || true
		fi
		sleep 0.1
	done
	collect_pids
	((${#pids[@]} == 0)) || fail "down: processes survive SIGKILL in the cluster: ${pids[*]}"
	for ns in "${present[@]}"; do
		ip netns del "$ns" 2>/dev/null || [[ ! -e /run/netns/$ns ]] || fail "down: cannot delete namespace $ns"
	done
	[[ -n $GPC_RUNDIR && $GPC_RUNDIR == */gpc-* ]] && rm -rf -- "$GPC_RUNDIR"
	rm -f -- "$state"
	log "down: $GPC_PREFIX removed (${#present[@]} namespaces) in $(elapsed_s "$t0")s"
}

# ---------------------------------------------------------------------------------------------
cmd_exec() {
	[[ ${1:-} == --state ]] || usage_error "exec: usage: exec --state FILE HOST CMD..."
	need_value "$@"
	local state=$2
	shift 2
	(($# >= 2)) || usage_error "exec: HOST and a command are required"
	load_state "$state" || fail "exec: no state file $state"
	local idx
	idx=$(resolve_host_index "$1") || usage_error "exec: no host '$1' in the cluster (have ${GPC_HOSTS[*]})"
	shift
	exec "$GPC_TOOLS_DIR/netns-enter" "${GPC_HOST_NS[idx]}" "$@"
}

# Bottleneck queue statistics as one JSON object: shaper and FIFO of each direction.
cmd_stats() {
	local state=""
	while (($#)); do
		case $1 in
		--state) need_value "$@"; state=$2; shift 2 ;;
		*) usage_error "stats: unknown option '$1'" ;;
		esac
	done
	[[ -n $state ]] || usage_error "stats: --state FILE is required"
	load_state "$state" || fail "stats: no state file $state"
	local l2r r2l
	l2r=$(ip netns exec "$GPC_SWITCH_NS" tc -s -j qdisc show dev "$GPC_BOTTLENECK_L2R_DEV") || fail "stats: tc failed"
	r2l=$(ip netns exec "$GPC_SWITCH_NS" tc -s -j qdisc show dev "$GPC_BOTTLENECK_R2L_DEV") || fail "stats: tc failed"
	jq -cn --argjson l2r "$l2r" --argjson r2l "$r2l" \
		--arg prefix "$GPC_PREFIX" --arg rate "$GPC_RATE" --argjson queue "$GPC_QUEUE" \
		--arg l2r_dev "$GPC_BOTTLENECK_L2R_DEV" --arg r2l_dev "$GPC_BOTTLENECK_R2L_DEV" '
		def pick: {kind, bytes, packets, drops, overlimits, requeues, backlog, qlen};
		def direction($dev; $q): {
			dev: $dev,
			shaper: ($q[] | select(.root == true) | pick),
			fifo: ($q[] | select(.kind == "pfifo") | pick + {limit: .options.limit})
		};
		{cluster: $prefix, rate: $rate, queue: $queue,
		 l2r: direction($l2r_dev; $l2r), r2l: direction($r2l_dev; $r2l)}'
}

cmd_hosts() {
	local state=${2:-}
	[[ ${1:-} == --state && -n $state ]] || usage_error "hosts: --state FILE is required"
	load_state "$state" || fail "hosts: no state file $state"
	local i
	for i in "${!GPC_HOSTS[@]}"; do
		printf '%s %s %s %s\n' "${GPC_HOSTS[i]}" "${GPC_HOST_NS[i]}" "${GPC_HOST_ADDR[i]}" "${GPC_HOST_SIDE[i]}"
	done
}

main() {
	(($#)) || usage
	local cmd=$1
	shift
	[[ $(id -u) == 0 ]] || fail "needs root (network namespaces)"
	case $cmd in
	up) cmd_up "$@" ;;
	down) cmd_down "$@" ;;
	exec) cmd_exec "$@" ;;
	stats) cmd_stats "$@" ;;
	hosts) cmd_hosts "$@" ;;
	-h | --help | help) usage ;;
	*) usage_error "unknown command '$cmd'" ;;
	esac
}

main "$@"
