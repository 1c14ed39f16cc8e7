#!/usr/bin/env bash
# MPI on the namespace cluster (needs root): on a 2+2 cluster, for Open MPI and for MPICH
# (each skipped with a note when its launcher or its build of collectives is missing):
#   - collectives runs one rank per host (the hosts the ranks report are the 4 cluster hosts),
#     every rank sees the GAPPACE_* variable and the --env variable, all received data is right;
#   - during a longer run, each rank's TCP connections, as `ss -tnp` shows them inside its host,
#     go from the host's cluster address to the other hosts' cluster addresses, and the job's
#     bytes cross the bottleneck in both directions;
# then after `down` no namespace is left and no process seen in the cluster survives.
#
#   tests/mpi/cluster-selftest.sh [--build BUILD_DIR]     (default: build/, as `make` builds it)
# Prints "ok"/"FAIL"/"skip" lines and a JSON summary; exit 1 if any check failed, 77 (skip) when
# not root or when no MPI is installed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
build=$top/build
while (($#)); do
	case $1 in
	--build) [[ $# -ge 2 ]] || { echo "cluster-selftest: --build needs a directory" >&2; exit 2; }; build=$2; shift 2 ;;
	*) echo "usage: cluster-selftest.sh [--build BUILD_DIR]" >&2; exit 2 ;;
	esac
done
bin=$build/tests/mpi
# 77: skipped (ctest SKIP_RETURN_CODE), when this machine cannot run it at all.
[[ $(id -u) == 0 ]] || { echo "cluster-selftest: skipped, needs root (network namespaces)" >&2; exit 77; }
if ! command -v mpirun.openmpi >/dev/null && ! command -v mpiexec.mpich >/dev/null; then
	echo "cluster-selftest: skipped, neither Open MPI nor MPICH is installed" >&2
	exit 77
fi
command -v jq >/dev/null || { echo "cluster-selftest: jq missing" >&2; exit 1; }

work=$(mktemp -d /tmp/gpc-mpitest.XXXXXX)
trap 'rm -rf "$work"' EXIT
# shellcheck source=../cluster/lib.sh
source "$top/tests/cluster/lib.sh"

failures=0 flavours_run=0
check() {
	local what=$1
	shift
	if "$@"; then
		echo "ok   $what"
	else
		echo "FAIL $what"
		failures=$((failures + 1))
	fi
}

gp_cluster_up "$work/cluster.state" --left 2 --right 2 --rate 200mbit --queue 40
state=$GPC_STATE
token=gp$RANDOM$RANDOM
seen_pids=()
summary='{}'

# The rank processes of a flavour's run, per host, as "pid local peer" lines of ss.
rank_connections() {
	local host=$1 program=$2
	# ss shows at most 15 characters of the command name.
	gp_cluster_exec "$host" ss -Htnp state established |
		awk -v prog="${program:0:15}" 'index($0, "\"" prog "\"") {
			match($0, /pid=[0-9]+/); print substr($0, RSTART + 4, RLENGTH - 4), $3, $4 }'
}

# Every rank talks TCP from its host's cluster address to all other hosts' cluster addresses.
# Loopback connections stay inside a host (Open MPI ranks reach their local daemon that way).
connections_cross_cluster() {
	local program=$1 i j lines local_ok peers missing
	for i in "${!GPC_HOSTS[@]}"; do
		lines=$(awk '!($2 ~ /^127\./ && $3 ~ /^127\./)' "$work/conn.${GPC_HOSTS[i]}")
		[[ -n $lines ]] || { echo "  ${GPC_HOSTS[i]}: no established connection of $program"; return 1; }
		local_ok=$(awk -v a="${GPC_HOST_ADDR[i]}" '{ split($2, l, ":"); if (l[1] != a) bad++ } END { print bad + 0 }' <<<"$lines")
		((local_ok == 0)) || { echo "  ${GPC_HOSTS[i]}: connections from other than ${GPC_HOST_ADDR[i]}:"; echo "$lines"; return 1; }
		peers=$(awk '{ split($3, p, ":"); print p[1] }' <<<"$lines" | sort -u)
		missing=""
		for j in "${!GPC_HOSTS[@]}"; do
			((i != j)) || continue
			grep -qxF "${GPC_HOST_ADDR[j]}" <<<"$peers" || missing+=" ${GPC_HOSTS[j]}"
		done
		[[ -z $missing ]] || { echo "  ${GPC_HOSTS[i]}: no connection to$missing"; return 1; }
	done
}

loop_at_least() { # SECONDS REPORT: the report's first kind took at least SECONDS
	jq -e --argjson need "$1" '.results[0].loop_s >= $need' "$2" >/dev/null 2>&1
}

run_flavour() {
	local mpi=$1 launcher=$2 program=$bin/collectives-$1 out rc=0
	if ! command -v "$launcher" >/dev/null; then
		echo "skip $mpi: $launcher not installed"
		return 0
	fi
	if [[ ! -x $program ]]; then
		echo "skip $mpi: $program not built"
		return 0
	fi
	flavours_run=$((flavours_run + 1))

	# Short run: placement, environment, data.
	out=$work/$mpi.short.json
	GAPPACE_SELFTEST=$token gp_cluster_mpirun --mpi "$mpi" --timeout 120 --env GP_SELFTEST_ENV=forwarded -- \
		"$program" --size 64k --iters 5 --kinds alltoall,bcast,allgather \
		--env GAPPACE_SELFTEST --env GP_SELFTEST_ENV >"$out" 2>"$work/$mpi.short.err" || rc=$?
	check "$mpi: collectives exits 0 (rc $rc)" test "$rc" -eq 0
	((rc == 0)) || { sed 's/^/  /' "$work/$mpi.short.err" | tail -20; return 0; }
	check "$mpi: one rank on each of the 4 hosts, in order" \
		test "$(jq -c '.hosts' "$out")" == "$(printf '%s\n' "${GPC_HOST_NS[@]}" | jq -Rsc 'split("\n")[:-1]')"
	check "$mpi: GAPPACE_SELFTEST and --env reach every rank" \
		test "$(jq -c '[.env.GAPPACE_SELFTEST, .env.GP_SELFTEST_ENV] | map(unique)' "$out")" == "[[\"$token\"],[\"forwarded\"]]"
	check "$mpi: alltoall, bcast and allgather delivered the right bytes" \
		test "$(jq -c '[.results[] | select(.verified) | .kind]' "$out")" == '["alltoall","bcast","allgather"]'

	# Back to back (no barrier between the collectives): the loop's time is the measurement
	# bench-system divides by, so it must be at least what the link needs for the bytes that
	# crossed it (each direction carries 2 x 2 x size per all-to-all at 200 Mbit/s), and the
	# last collective's data is checked.
	local b2b_size=4096 b2b_iters=300
	out=$work/$mpi.b2b.json
	rc=0
	gp_cluster_mpirun --mpi "$mpi" --timeout 120 -- "$program" --size "$b2b_size" --iters "$b2b_iters" \
		--kinds alltoall --no-barrier >"$out" 2>"$work/$mpi.b2b.err" || rc=$?
	check "$mpi: back to back, collectives exits 0 (rc $rc)" test "$rc" -eq 0
	check "$mpi: back to back, the last all-to-all delivered the right bytes" \
		test "$(jq -c '[.results[] | select(.verified) | .kind]' "$out" 2>/dev/null)" == '["alltoall"]'
	local need_s
	need_s=$(awk -v n="$b2b_iters" -v m="$b2b_size" 'BEGIN { printf "%.6f", n * 4 * m * 8 / 200e6 }')
	check "$mpi: back to back, the loop took no less than the link needs (loop_s $(jq '.results[0].loop_s' "$out" 2>/dev/null) >= $need_s)" \
		loop_at_least "$need_s" "$out"

	# Longer run: look at the ranks' sockets from inside the hosts while it runs.
	# 60 all-to-alls: about 4 s for Open MPI on 2+2 hosts at 200 Mbit/s, time for several looks
	# on a loaded machine (with 30, one clean-clone run in session 41 ended before any look saw
	# host h1's connections).
	local before after size=262144 iters=60
	before=$(gp_cluster_stats)
	out=$work/$mpi.long.json
	gp_cluster_mpirun --mpi "$mpi" --timeout 300 -- "$program" --size "$size" --iters "$iters" \
		--kinds alltoall >"$out" 2>"$work/$mpi.long.err" &
	local job=$! deadline=$((SECONDS + 60)) h complete
	# Every look adds to what the earlier ones saw: the job may end between two looks on a fast
	# (or a busy) machine. A host counts once it has a connection off loopback (its rank's
	# connection to the local Open MPI daemon comes first and says nothing about the job).
	look() {
		for h in "${GPC_HOSTS[@]}"; do
			rank_connections "$h" "collectives-$mpi" >>"$work/conn.$h" || true
			sort -u -o "$work/conn.$h" "$work/conn.$h"
		done
	}
	for h in "${GPC_HOSTS[@]}"; do : >"$work/conn.$h"; done
	while ((SECONDS < deadline)); do
		look
		complete=1
		for h in "${GPC_HOSTS[@]}"; do
			awk '!($2 ~ /^127\./ && $3 ~ /^127\./) { found = 1 } END { exit !found }' "$work/conn.$h" || complete=0
		done
		if ((complete)); then
			# Connections are made on first use: give the first alltoall time to open all.
			sleep 1
			look
			break
		fi
		kill -0 "$job" 2>/dev/null || break
		sleep 0.2
	done
	for h in "${GPC_HOSTS[@]}"; do
		while read -r pid _; do seen_pids+=("$pid"); done <"$work/conn.$h"
	done
	check "$mpi: rank connections go between cluster addresses, to every other host" \
		connections_cross_cluster "collectives-$mpi"
	rc=0
	wait "$job" || rc=$?
	check "$mpi: the longer run exits 0 (rc $rc)" test "$rc" -eq 0
	after=$(gp_cluster_stats)
	# Each alltoall moves size bytes from each left rank to each right rank and back.
	local crossed
	crossed=$(jq -n --argjson b "$before" --argjson a "$after" \
		'[($a.l2r.shaper.bytes - $b.l2r.shaper.bytes), ($a.r2l.shaper.bytes - $b.r2l.shaper.bytes)] | min')
	check "$mpi: the job's bytes crossed the bottleneck both ways ($crossed >= $((4 * size * iters)))" \
		test "$crossed" -ge $((4 * size * iters))
	if ((rc == 0)); then
		summary=$(jq -c --arg mpi "$mpi" --slurpfile s "$work/$mpi.short.json" --slurpfile l "$out" \
			'. + {($mpi): {version: $s[0].mpi, short: $s[0].results, alltoall_256k: $l[0].results[0]}}' <<<"$summary")
	fi
}

run_flavour openmpi mpirun.openmpi
run_flavour mpich mpiexec.mpich

namespaces=("${GPC_HOST_NS[@]}" "$GPC_SWITCH_NS")
gp_cluster_down "$state"
left_ns=$(ip netns list | awk '{print $1}' | grep -Fx -f <(printf '%s\n' "${namespaces[@]}") || true)
check "down removed all ${#namespaces[@]} namespaces" test -z "$left_ns"
survivors=""
for pid in "${seen_pids[@]}"; do [[ ! -e /proc/$pid ]] || survivors+=" $pid"; done
check "no rank seen in the cluster survives down (${#seen_pids[@]} seen)" test -z "$survivors"
check "at least one MPI flavour ran" test "$flavours_run" -gt 0

jq -c --argjson failures "$failures" '. + {selftest: "mpi-cluster", failures: $failures}' <<<"$summary"
((failures == 0))
