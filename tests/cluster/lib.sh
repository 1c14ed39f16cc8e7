# shellcheck shell=bash
# Sourceable helpers for test scripts that use the namespace cluster (bash).
#
#   source tests/cluster/lib.sh
#   gp_cluster_up "$dir/cluster.state" --left 2 --right 2 --rate 200mbit --queue 40
#   gp_cluster_exec h1 ping -c 1 h3
#   gp_cluster_stats | jq .l2r.fifo.drops
#   gp_cluster_mpirun --mpi openmpi -- ./collectives-openmpi --size 64k
#   (teardown happens on exit, also on errors, Ctrl-C and SIGTERM)
#
# After gp_cluster_up the variables of the state file (GPC_HOSTS, GPC_HOST_NS, GPC_HOST_ADDR,
# GPC_SUBNET, ...) are set in the caller. Several clusters may be up at once; the helpers act on
# the one brought up last unless GPC_STATE is set to another state file.

GP_CLUSTER_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GP_CLUSTER_STATES=()
GP_CLUSTER_PREVIOUS_EXIT_TRAP=""
GP_CLUSTER_TRAP_SET=0

# gp_cluster_up STATE_FILE [cluster.sh up options]: brings a cluster up and loads its state.
gp_cluster_up() {
	local state=${1:?gp_cluster_up: state file path required}
	shift
	gp__cluster_install_trap
	# Registered before `up` runs: a half-built cluster is torn down too.
	GP_CLUSTER_STATES+=("$state")
	"$GP_CLUSTER_DIR/cluster.sh" up --state "$state" "$@" || return 1
	gp_cluster_load "$state"
}

# gp_cluster_load STATE_FILE: makes an existing cluster the current one (no teardown trap).
gp_cluster_load() {
	# shellcheck disable=SC1090
	source "${1:?gp_cluster_load: state file required}" || return 1
	GPC_STATE=$1
}

# gp_cluster_down [STATE_FILE]: tears down one cluster (default: the current one). Idempotent.
gp_cluster_down() {
	local state=${1:-${GPC_STATE:-}}
	[[ -n $state ]] || return 0
	"$GP_CLUSTER_DIR/cluster.sh" down --state "$state"
}

gp_cluster_exec() { "$GP_CLUSTER_DIR/cluster.sh" exec --state "${GPC_STATE:?no cluster up}" "$@"; }
gp_cluster_stats() { "$GP_CLUSTER_DIR/cluster.sh" stats --state "${GPC_STATE:?no cluster up}"; }
gp_cluster_mpirun() { "$GP_CLUSTER_DIR/mpirun.sh" --state "${GPC_STATE:?no cluster up}" "$@"; }

# gp_cluster_addr HOST: the address of h3 (or 3, or a namespace name).
gp_cluster_addr() {
	local i
	for i in "${!GPC_HOSTS[@]}"; do
		if [[ $1 == "${GPC_HOSTS[i]}" || $1 == "$((i + 1))" || $1 == "${GPC_HOST_NS[i]}" ]]; then
			echo "${GPC_HOST_ADDR[i]}"
			return 0
		fi
	done
	echo "gp_cluster_addr: no host '$1'" >&2
	return 1
}

# gp_cluster_bottlenecks_toml: gappaced's [[bottleneck]] tables for the current cluster, one per
# side: the link of rate GPC_RATE with a GPC_QUEUE-packet FIFO in front of that side's hosts.
gp_cluster_bottlenecks_toml() {
	local i side list
	for side in left right; do
		list=()
		for i in "${!GPC_HOSTS[@]}"; do
			[[ ${GPC_HOST_SIDE[$i]} == "$side" ]] && list+=("\"${GPC_HOST_ADDR[$i]}/32\"")
		done
		printf '[[bottleneck]]\nname = "%s"\ncapacity = "%s"\nqueue_packets = %s\nprefixes = [%s]\n' \
			"$side" "$GPC_RATE" "$GPC_QUEUE" "$(IFS=,; echo "${list[*]}")"
	done
}

# gp_daemon_toml STATE_FILE [KEY_LINE...]: the [daemon] table of every cluster script's gappaced:
# the stock backend, the sockets named by GAPPACE_HINTS_SOCK and GAPPACE_CONTROL_SOCK, STATE_FILE,
# a 30 s phase timeout, then each KEY_LINE ("history = 64", say) as a further key of the table.
# The caller's config function prints it first, then its own tables and
# gp_cluster_bottlenecks_toml.
gp_daemon_toml() {
	local state=${1:?gp_daemon_toml: state file} line
	shift
	printf '[daemon]\nbackend = "stock"\nhints_socket = "%s"\ncontrol_socket = "%s"\nstate_file = "%s"\nphase_timeout = "30s"\n' \
		"${GAPPACE_HINTS_SOCK:?gp_daemon_toml: GAPPACE_HINTS_SOCK is not set}" \
		"${GAPPACE_CONTROL_SOCK:?gp_daemon_toml: GAPPACE_CONTROL_SOCK is not set}" "$state"
	for line in "$@"; do printf '%s\n' "$line"; done
}

# gp_daemons_start BUILD CONFIG_FUNCTION DIR: one gappaced per host of the current cluster.
# CONFIG_FUNCTION INDEX prints host INDEX's config (0-based; GPC_HOSTS[INDEX] is its name); it
# is written to DIR/HOST.toml and the daemon's stderr to DIR/HOST.log. Returns when every daemon
# answers `gapctl daemon show` (5 s each at most); otherwise prints the late one's log and
# fails. The daemons' pids are in GP_DAEMON_PIDS; gp_daemons_stop ends them (the cluster's
# teardown would too, by killing what runs in its namespaces).
GP_DAEMON_PIDS=()
gp_daemons_start() {
	local build=${1:?gp_daemons_start: build dir} config=${2:?gp_daemons_start: config function}
	local dir=${3:?gp_daemons_start: dir} i h up
	mkdir -p "$dir" || return 1
	for i in "${!GPC_HOSTS[@]}"; do
		h=${GPC_HOSTS[$i]}
		"$config" "$i" >"$dir/$h.toml" || return 1
		ip netns exec "${GPC_HOST_NS[$i]}" "$build/daemon/gappaced" --config "$dir/$h.toml" 2>"$dir/$h.log" &
		GP_DAEMON_PIDS+=($!)
	done
	for i in "${!GPC_HOSTS[@]}"; do
		up=0
		for _ in $(seq 50); do
			if gp_daemon_show "$i" "$build" >/dev/null 2>&1; then up=1; break; fi
			sleep 0.1
		done
		((up)) || { echo "gappaced on ${GPC_HOSTS[$i]} did not start:" >&2; cat "$dir/${GPC_HOSTS[$i]}.log" >&2; return 1; }
	done
}

# gp_daemon_show INDEX BUILD: `gapctl -j daemon show` of host INDEX's daemon (the control socket
# from GAPPACE_CONTROL_SOCK, as the daemons were configured).
gp_daemon_show() { ip netns exec "${GPC_HOST_NS[$1]}" "$2/tools/gapctl/gapctl" -j daemon show; }

# gp_daemons_stop: SIGTERM (the daemons revert what they applied), then SIGKILL after 3 s.
gp_daemons_stop() {
	local p
	for p in "${GP_DAEMON_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${GP_DAEMON_PIDS[@]}"; do
		for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	GP_DAEMON_PIDS=()
}

# Pids of every process inside the current cluster's namespaces (hosts and switch).
gp_cluster_pids() {
	local ns
	for ns in "${GPC_HOST_NS[@]}" "$GPC_SWITCH_NS"; do
		[[ -e /run/netns/$ns ]] && ip netns pids "$ns"
	done
	return 0
}

gp__cluster_cleanup() {
	local rc=$? state
	trap - INT TERM
	for state in "${GP_CLUSTER_STATES[@]}"; do
		"$GP_CLUSTER_DIR/cluster.sh" down --state "$state" >/dev/null 2>&1 ||
			echo "lib.sh: teardown of $state failed" >&2
	done
	GP_CLUSTER_STATES=()
	if [[ -n $GP_CLUSTER_PREVIOUS_EXIT_TRAP ]]; then
		eval "$GP_CLUSTER_PREVIOUS_EXIT_TRAP"
	fi
	return "$rc"
}

gp__cluster_install_trap() {
	((GP_CLUSTER_TRAP_SET)) && return 0
	# Keep a trap the caller already had: run it after the teardown.
	local previous
	previous=$(trap -p EXIT)
	previous=${previous#trap -- \'}
	GP_CLUSTER_PREVIOUS_EXIT_TRAP=${previous%\' EXIT}
	trap gp__cluster_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
	GP_CLUSTER_TRAP_SET=1
}
