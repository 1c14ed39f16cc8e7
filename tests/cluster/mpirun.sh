#!/usr/bin/env bash
# Runs an MPI job on the namespace cluster, one rank per host, over TCP on the cluster interface.
#
#   mpirun.sh --state FILE --mpi openmpi|mpich [--np N] [--hosts h1,h3,...] [--env K=V]...
#             [--timeout SECONDS] [--mpich-finalize-fix PATH|none] [--print-command]
#             -- PROGRAM [ARGS...]
#
# Ranks go to the listed hosts in order (default: all, h1 first), wrapping around when N exceeds
# the host count; mpirun/mpiexec itself runs in the first host's namespace, where rank 0 lives.
# Every GAPPACE_* variable of the caller's environment and every --env reaches every rank
# (Open MPI -x, MPICH -genv); LD_PRELOAD belongs in --env, so that it reaches the ranks and not
# mpirun itself. MPICH ranks also get mpich-finalize-fix.so preloaded (default: the one next to
# PROGRAM, as tests/mpi builds it). Exit status: the launcher's; 124 when --timeout (default
# 600 s) expired, 2 usage error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

usage() {
	sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
usage_error() {
	echo "mpirun.sh: $*" >&2
	exit 2
}
need_value() { [[ $# -ge 2 && -n $2 ]] || usage_error "option $1 needs a value"; }

state="" mpi="" np="" hosts_arg="" timeout_s=600 print_command=0 finalize_fix=auto
env_pairs=()
while (($#)); do
	case $1 in
	--state) need_value "$@"; state=$2; shift 2 ;;
	--mpi) need_value "$@"; mpi=$2; shift 2 ;;
	--np) need_value "$@"; np=$2; shift 2 ;;
	--hosts) need_value "$@"; hosts_arg=$2; shift 2 ;;
	--env) need_value "$@"; env_pairs+=("$2"); shift 2 ;;
	--timeout) need_value "$@"; timeout_s=$2; shift 2 ;;
	--mpich-finalize-fix) need_value "$@"; finalize_fix=$2; shift 2 ;;
	--print-command) print_command=1; shift ;;
	--) shift; break ;;
	-h | --help) usage ;;
	*) usage_error "unknown option '$1' (the program comes after --)" ;;
	esac
done
(($#)) || usage_error "no program given (after --)"
[[ -n $state ]] || usage_error "--state FILE is required"
[[ -f $state ]] || usage_error "no state file $state (is the cluster up?)"
[[ $mpi == openmpi || $mpi == mpich ]] || usage_error "--mpi must be openmpi or mpich, got '$mpi'"
[[ $timeout_s =~ ^[0-9]+$ ]] && ((timeout_s >= 1)) || usage_error "--timeout must be whole seconds >= 1"
for pair in "${env_pairs[@]}"; do
	[[ $pair =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || usage_error "--env takes NAME=VALUE, got '$pair'"
done

# shellcheck disable=SC1090
source "$state"
[[ ${GPC_COMPLETE:-0} == 1 ]] || usage_error "cluster of $state is not completely up"

# Hosts, as namespace names (which are also their hostnames inside the cluster).
hosts=()
if [[ -n $hosts_arg ]]; then
	IFS=, read -ra wanted <<<"$hosts_arg"
	for want in "${wanted[@]}"; do
		found=""
		for i in "${!GPC_HOSTS[@]}"; do
			if [[ $want == "${GPC_HOSTS[i]}" || $want == "$((i + 1))" || $want == "${GPC_HOST_NS[i]}" ]]; then
				found=${GPC_HOST_NS[i]}
			fi
		done
		[[ -n $found ]] || usage_error "--hosts: no host '$want' in the cluster (have ${GPC_HOSTS[*]})"
		hosts+=("$found")
	done
else
	hosts=("${GPC_HOST_NS[@]}")
fi
np=${np:-${#hosts[@]}}
[[ $np =~ ^[0-9]+$ ]] && ((np >= 1 && np <= 4096)) || usage_error "--np must be 1..4096, got '$np'"
launch_ns=${hosts[0]}

# The caller's GAPPACE_* variables travel along without being named.
while IFS= read -r name; do
	env_pairs+=("$name=${!name}")
done < <(compgen -e | grep '^GAPPACE_' || true)

hostfile=$(mktemp "$GPC_RUNDIR/hostfile.$mpi.XXXXXX")
trap 'rm -f "$hostfile"' EXIT

cmd=()
case $mpi in
openmpi)
	command -v mpirun.openmpi >/dev/null || { echo "mpirun.sh: mpirun.openmpi missing (openmpi-bin)" >&2; exit 1; }
	printf '%s slots=1\n' "${hosts[@]}" >"$hostfile"
	cmd=(mpirun.openmpi --allow-run-as-root --oversubscribe
		--np "$np" --hostfile "$hostfile" --map-by node
		# Each "node" sees all CPUs of the machine: binding would pin every rank to core 0.
		--bind-to none
		# Daemons start through netns-rsh, one by one from mpirun (a tree spawn would start
		# them from inside other hosts, which works too but spreads the launch over the cluster).
		--mca plm_rsh_agent "$here/netns-rsh" --mca plm_rsh_no_tree_spawn 1
		# TCP between ranks on the cluster subnet, nothing else: the ob1 PML (the UCX PML would
		# otherwise win and bypass the BTLs) with the tcp BTL; runtime traffic on the subnet too.
		--mca pml ob1 --mca btl tcp,self
		--mca btl_tcp_if_include "$GPC_SUBNET" --mca oob_tcp_if_include "$GPC_SUBNET"
		--mca osc ^ucx)
	# Every rank spins while it waits, and the whole cluster shares the machine's few CPUs:
	# yielding when idle lets the rank that has work run (much shorter, steadier collectives).
	# --env OMPI_MCA_mpi_yield_when_idle=0 restores spinning.
	[[ " ${env_pairs[*]} " == *" OMPI_MCA_mpi_yield_when_idle="* ]] || cmd+=(--mca mpi_yield_when_idle 1)
	for pair in "${env_pairs[@]}"; do cmd+=(-x "$pair"); done
	;;
mpich)
	command -v mpiexec.mpich >/dev/null || { echo "mpirun.sh: mpiexec.mpich missing (mpich)" >&2; exit 1; }
	printf '%s:1\n' "${hosts[@]}" >"$hostfile"
	cmd=(mpiexec.mpich -launcher ssh -launcher-exec "$here/netns-rsh" -f "$hostfile" -n "$np"
		# Debian's MPICH is ch4:ucx: UCX over TCP on the cluster interface only.
		-genv UCX_TLS tcp,self -genv UCX_NET_DEVICES "$GPC_HOST_IFACE")
	# MPICH 4.0 + UCX 1.13 deadlock in MPI_Finalize now and then (tests/mpi/mpich_finalize_fix.c);
	# the fix is preloaded into the ranks, ahead of any LD_PRELOAD given with --env.
	if [[ $finalize_fix == auto ]]; then
		finalize_fix=$(dirname "$(command -v "$1" || echo "$1")")/mpich-finalize-fix.so
		[[ -f $finalize_fix ]] || {
			echo "mpirun.sh: warning: no mpich-finalize-fix.so next to $1; MPI_Finalize may hang" >&2
			finalize_fix=none
		}
	fi
	[[ $finalize_fix == none || -f $finalize_fix ]] || usage_error "--mpich-finalize-fix: no file $finalize_fix"
	preload=""
	[[ $finalize_fix == none ]] || preload=$(realpath "$finalize_fix")
	for pair in "${env_pairs[@]}"; do
		if [[ ${pair%%=*} == LD_PRELOAD ]]; then
			preload="${preload:+$preload }${pair#*=}"
		else
			cmd+=(-genv "${pair%%=*}" "${pair#*=}")
		fi
	done
	[[ -z $preload ]] || cmd+=(-genv LD_PRELOAD "$preload")
	;;
esac
cmd+=("$@")

if ((print_command)); then
	printf '%q ' "$here/netns-enter" "$launch_ns" "${cmd[@]}"
	echo
fi
rc=0
timeout -k 10 "$timeout_s" "$here/netns-enter" "$launch_ns" "${cmd[@]}" || rc=$?
((rc != 124)) || echo "mpirun.sh: job did not finish within ${timeout_s}s" >&2
exit "$rc"
