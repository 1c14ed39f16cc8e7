#!/usr/bin/env bash
# Runs one gp-alltoall job on the namespace cluster: one rank per host (or K with
# --ranks-per-host), each in its host's namespace, and prints rank 0's JSON.
#
#   alltoall.sh --state FILE [--ranks-per-host K] [--port P] [--program PATH] [--wait SECONDS]
#               -- [gp-alltoall options except --rank/--ranks/--rendezvous/--bind/--side]
#
# Ranks follow the host order h1..hN (K consecutive ranks per host), so the left side holds the
# low ranks; each rank gets --side from its host and binds to its host's address. Rank 0 (on h1)
# listens for the rendezvous on h1's address, port P (default: a random free one). Without
# --capacity the cluster's bottleneck rate is passed. The program defaults to $GP_ALLTOALL, then
# build/tools/alltoall/gp-alltoall of this checkout, then gp-alltoall on PATH.
# Waits at most --wait seconds (default: the job's --timeout + --setup-timeout + 30); ranks
# still running then, or when this script is interrupted, are killed (by pid).
# Exit status: rank 0's (2 for usage errors of this script, 124 if rank 0 had to be killed).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
	sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
usage_error() {
	echo "alltoall.sh: $*" >&2
	exit 2
}
need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "option $1 needs a value"; }
is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

state="" per_host=1 port="" program=${GP_ALLTOALL:-} wait_s=""
while (($#)); do
	case $1 in
	--state) need_value "$@"; state=$2; shift 2 ;;
	--ranks-per-host) need_value "$@"; per_host=$2; shift 2 ;;
	--port) need_value "$@"; port=$2; shift 2 ;;
	--program) need_value "$@"; program=$2; shift 2 ;;
	--wait) need_value "$@"; wait_s=$2; shift 2 ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) usage_error "unknown option '$1' (gp-alltoall's options come after --)" ;;
	esac
done
job_args=("$@")
[[ -n $state ]] || usage_error "--state FILE is required"
[[ -f $state ]] || usage_error "no state file $state (is the cluster up?)"
is_uint "$per_host" && ((per_host >= 1 && per_host <= 64)) || usage_error "--ranks-per-host must be 1..64"
[[ -z $port ]] || { is_uint "$port" && ((port >= 1 && port <= 65535)); } || usage_error "--port must be 1..65535"
[[ -z $wait_s ]] || { is_uint "$wait_s" && ((wait_s >= 1)); } || usage_error "--wait must be whole seconds >= 1"

# The launcher owns the placement: these come from the cluster, not from the caller.
job_timeout=120 job_setup=30 have_capacity=0
for ((i = 0; i < ${#job_args[@]}; i++)); do
	case ${job_args[i]} in
	--rank | --ranks | --rendezvous | --bind | --side | --rank=* | --ranks=* | --rendezvous=* | --bind=* | --side=*)
		usage_error "${job_args[i]%%=*} is set by the launcher" ;;
	--timeout) job_timeout=${job_args[i + 1]:-120} ;;
	--setup-timeout) job_setup=${job_args[i + 1]:-30} ;;
	--capacity | --capacity=*) have_capacity=1 ;;
	esac
done

if [[ -z $program ]]; then
	program=$here/../../build/tools/alltoall/gp-alltoall
	[[ -x $program ]] || program=$(command -v gp-alltoall || true)
fi
[[ -n $program && -x $program ]] || usage_error "gp-alltoall not found (--program PATH or GP_ALLTOALL)"
program=$(cd "$(dirname "$program")" && pwd)/$(basename "$program")

# shellcheck disable=SC1090
source "$state"
[[ ${GPC_COMPLETE:-0} == 1 ]] || usage_error "cluster of $state is not completely up"
hosts=() addrs=() sides=()
while read -r name _ns addr side; do
	hosts+=("$name") addrs+=("$addr") sides+=("$side")
done < <("$here/cluster.sh" hosts --state "$state")
((${#hosts[@]} >= 1)) || { echo "alltoall.sh: the cluster has no hosts" >&2; exit 1; }
ranks=$((${#hosts[@]} * per_host))
((ranks >= 2)) || usage_error "one host with one rank: use --ranks-per-host 2 or more"
((have_capacity)) || job_args+=(--capacity "$((GPC_RATE_BYTES_PER_S * 8))")

# A free port on h1: nothing in the cluster's hosts but our own jobs listens, but other jobs may.
# Below the ephemeral range (32768-60999), and unused in any state: a previous run's connection
# that still holds the port as its ephemeral one makes bind fail even with SO_REUSEADDR (seen:
# "rendezvous listener: bind ...:32945: Address already in use").
if [[ -z $port ]]; then
	for _ in $(seq 20); do
		candidate=$((10000 + RANDOM % 22000))
		if [[ -z $(ip netns exec "${GPC_HOST_NS[0]}" ss -Htan "sport = :$candidate" 2>/dev/null) ]]; then
			port=$candidate
			break
		fi
	done
	[[ -n $port ]] || { echo "alltoall.sh: no free port found on ${hosts[0]}" >&2; exit 1; }
fi
rendezvous=${addrs[0]}:$port

if [[ -z $wait_s ]]; then
	wait_s=$(awk -v t="$job_timeout" -v s="$job_setup" 'BEGIN { printf "%d", t + s + 30 + 0.999 }')
fi

pids=() reaped=()
# Kills the ranks that still run (TERM, then KILL after 2 s). Only pids this script started and
# has not reaped yet: a reaped pid may already belong to someone else.
kill_ranks() {
	local r alive round
	for round in $(seq 0 40); do
		alive=()
		for r in "${!pids[@]}"; do
			[[ ${reaped[r]} == 1 ]] && continue
			if rank_running "${pids[r]}"; then alive+=("${pids[r]}"); else wait "${pids[r]}" 2>/dev/null || true; reaped[r]=1; fi
		done
		((${#alive[@]})) || return 0
		if ((round == 0)); then kill -TERM "${alive[@]}" 2>/dev/null || true
		elif ((round == 20)); then kill -KILL "${alive[@]}" 2>/dev/null || true; fi
		sleep 0.1
	done
}
# Running = exists and not a zombie (a zombie answers kill -0 until it is reaped).
# Read with the builtin: no fork (see the reaping loop below).
rank_running() {
	local stat
	{ read -r stat <"/proc/$1/stat"; } 2>/dev/null || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}
cleanup() {
	trap - INT TERM
	kill_ranks
	[[ -z ${watchdog:-} ]] || kill -KILL "$watchdog" 2>/dev/null || true	# not reaped yet: still ours
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

for i in "${!hosts[@]}"; do
	for ((k = 0; k < per_host; k++)); do
		rank=$((i * per_host + k))
		args=(--rank "$rank" --ranks "$ranks" --rendezvous "$rendezvous" --bind "${addrs[i]}")
		[[ ${sides[i]} == left || ${sides[i]} == right ]] && args+=(--side "${sides[i]}")
		# Only rank 0 speaks on stdout (the JSON); anything else would corrupt it.
		if ((rank == 0)); then
			"$here/cluster.sh" exec --state "$state" "${hosts[i]}" "$program" "${args[@]}" "${job_args[@]}" &
		else
			"$here/cluster.sh" exec --state "$state" "${hosts[i]}" "$program" "${args[@]}" "${job_args[@]}" >&2 &
		fi
		pids[rank]=$!
		reaped[rank]=0
	done
done

# Reap ranks as they end; after rank 0, the others get a moment (they follow it within ms).
# The script sleeps in `wait -n` until a rank or its watchdog (a sleep of the time left) ends:
# it forks nothing while the job runs. A loop that polled /proc every 50 ms forked 20 subshells
# and cats per rank and second, and took a third of this 2-CPU machine from the ranks it
# measured (perf, 4+4 at 1 KB).
statuses=()
watchdog="" why=""
stop_watchdog() {
	[[ -n $watchdog ]] || return 0
	# KILL: a TERM that reaches the forked child before it has exec'ed sleep would run this
	# script's traps there (exit 143, then cleanup and kill_ranks in a copy of the script).
	kill -KILL "$watchdog" 2>/dev/null || true	# it may have ended already
	wait "$watchdog" 2>/dev/null || true
	watchdog=""
}
start_watchdog() { # SECONDS REASON
	stop_watchdog
	# Not on the launcher's stdout: callers read it to its end, $(alltoall.sh ...).
	sleep "$1" </dev/null >/dev/null 2>&1 &
	watchdog=$! why=$2
}
record_status() { # RANK STATUS
	statuses[$1]=$2
	reaped[$1]=1
	# Rank 0 ended: the others follow within milliseconds, or are killed after 10 s.
	if (($1 == 0)); then start_watchdog 10 "10 s after rank 0 ended"; fi
}
# Every rank that has ended, whether or not wait -n returned it: bash marks background jobs
# killed by a signal as notified when it reports another, and wait -n skips those. wait PID
# still finds such a rank's status.
reap_ended() {
	local r rc
	for r in "${!pids[@]}"; do
		[[ ${reaped[r]} != 1 ]] && ! rank_running "${pids[r]}" || continue
		rc=0
		wait "${pids[r]}" 2>/dev/null || rc=$?
		record_status "$r" "$rc"
	done
}
start_watchdog "$wait_s" "--wait ${wait_s} s"
fired=0
while :; do
	reap_ended
	live=()
	for r in "${!pids[@]}"; do [[ ${reaped[r]} == 1 ]] || live+=("${pids[r]}"); done
	((${#live[@]})) || break
	if ((fired)); then
		echo "alltoall.sh: ranks still running $why, killing them" >&2
		kill_ranks
		break
	fi
	ended="" rc=0
	wait -n -p ended "${live[@]}" "$watchdog" 2>/dev/null || rc=$?
	if [[ $ended == "$watchdog" ]]; then
		watchdog="" fired=1
	elif [[ -n $ended ]]; then
		for r in "${!pids[@]}"; do
			if [[ ${pids[r]} == "$ended" && ${reaped[r]} != 1 ]]; then record_status "$r" "$rc"; fi
		done
	else
		sleep 0.1	# wait -n had nothing of ours to wait for (never seen): poll rather than spin
	fi
done
stop_watchdog
rc0=${statuses[0]:-124}
for r in "${!statuses[@]}"; do
	((r == 0 || statuses[r] == 0 || statuses[r] == rc0)) ||
		echo "alltoall.sh: rank $r exited with ${statuses[r]} (rank 0: $rc0)" >&2
done
exit "$rc0"
