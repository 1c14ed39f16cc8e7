#!/usr/bin/env bash
# gp-alltoall on the namespace cluster, through tests/cluster/alltoall.sh: 2+2 hosts, 200mbit,
# a 40-packet FIFO, cubic. Asserts, from the tool's JSON and the bottleneck's counters:
#   * pairwise 64 KiB over 4 MiB: exit 0; the iteration count follows from --volume; every byte
#     counted (P(P-1)·m·iterations in total, 2·L·R·m·iterations across, per direction too) and
#     verified; the cross bytes really went through the shaped link; a fraction of capacity in
#     (0, 1.05]; the namespace TCP counters present, each namespace counted once (also with two
#     ranks per host);
#   * ring and half: their own byte totals (half: cross traffic only); hints per iteration are
#     queued (and dropped: no daemon) but never rejected;
#   * --think-ms: the pauses between iterations counted apart from the exchange's time and
#     from every iteration's;
#   * bad input: exit 2 with a message (the tool's and the launcher's);
#   * a timeout: exit 1, timed_out true, quickly, and no process left in the cluster;
#   * a rank killed mid-run: every rank ends with exit 1 and names the dead rank;
#   * the launcher's bounds: ranks still running 10 s after rank 0, or at --wait, are killed.
#
# usage: alltoall_test.sh BUILD_DIR      (root, else exit 77 = skip; about 30 s)
set -euo pipefail
BUILD=$(cd "${1:?usage: alltoall_test.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
PROGRAM=$BUILD/tools/alltoall/gp-alltoall
[[ -x $PROGRAM ]] || { echo "FAIL: $PROGRAM is not built"; exit 1; }
for tool in jq ip; do command -v $tool >/dev/null || { echo "SKIP: $tool missing (tests/deps.sh)"; exit 77; }; done

TMP=$(mktemp -d /tmp/gappace-alltoall.XXXXXX)
BACKGROUND=""
finish() {
	[[ -n $BACKGROUND ]] && kill "$BACKGROUND" 2>/dev/null
	rm -rf "$TMP"
}
trap finish EXIT # lib.sh's teardown runs first, then this
# shellcheck source=lib.sh
source "$HERE/lib.sh"

# shellcheck source=checks.sh
source "$HERE/checks.sh"

# run NAME [launcher options] -- [gp-alltoall options]: NAME.json, NAME.err, NAME.rc, NAME.seconds
run() {
	local name=$1 rc=0 start
	shift
	start=$(date +%s%N)
	"$HERE/alltoall.sh" --state "$GPC_STATE" --program "$PROGRAM" "$@" >"$TMP/$name.json" 2>"$TMP/$name.err" || rc=$?
	echo "$rc" >"$TMP/$name.rc"
	awk -v a="$start" -v b="$(date +%s%N)" 'BEGIN { printf "%.2f\n", (b - a) / 1e9 }' >"$TMP/$name.seconds"
	echo "-- $name: exit $rc in $(cat "$TMP/$name.seconds") s"
	# sed alone, not sed | head: under pipefail head's early exit can fail the pipeline (SIGPIPE)
	if [[ $rc -ne 0 ]]; then sed -n '1,5s/^/   stderr: /p' "$TMP/$name.err"; fi
}
rc_is() { [[ $(cat "$TMP/$1.rc") == "$2" ]]; }
fifo_bytes() { gp_cluster_stats | jq ".$1.fifo.bytes"; }
no_process_left() { [[ -z $(gp_cluster_pids) ]]; }

gp_cluster_up "$TMP/cluster.state" --left 2 --right 2 --rate 200mbit --queue 40 --cc cubic 2>/dev/null
echo "cluster: ${GPC_HOSTS[*]} (${GPC_HOST_ADDR[*]} sides ${GPC_HOST_SIDE[*]}), cc $GPC_CC"

# (1) pairwise, 64 KiB per pair, 4 MiB in all: ceil(4 MiB / (12 pairs x 64 KiB)) = 6 iterations
m=65536
l2r0=$(fifo_bytes l2r) r2l0=$(fifo_bytes r2l)
run pairwise -- --msg 64k --volume 4m --timeout 60
l2r=$(($(fifo_bytes l2r) - l2r0)) r2l=$(($(fifo_bytes r2l) - r2l0))
j=$TMP/pairwise.json
check "pairwise: exit 0, complete, every byte verified" \
	jqt "$j" '.complete == true and .timed_out == false and .verified == true and .pattern == "pairwise"'
rc_is pairwise 0 || fail "pairwise: exit status $(cat "$TMP/pairwise.rc")"
check "pairwise: iterations from --volume (6)" jqt "$j" '.iterations == 6 and .iterations_completed == 6'
check "pairwise: bytes_total = P(P-1)·m·iterations" jqt "$j" ".bytes_total == 4 * 3 * $m * .iterations"
check "pairwise: bytes_cross = 2·L·R·m·iterations, half each way" \
	jqt "$j" ".bytes_cross == 8 * $m * .iterations and .bytes_cross_l2r == 4 * $m * .iterations and .bytes_cross_r2l == .bytes_cross_l2r and .cross_directions == 2"
check "pairwise: every rank sent and received 3·m per iteration" \
	jqt "$j" "[.per_rank[] | select(.bytes_sent == 3 * $m * 6 and .bytes_received == 3 * $m * 6 and .iterations_done == 6)] | length == 4"
check "pairwise: the cross bytes went through the bottleneck FIFO (l2r $l2r B, r2l $r2l B)" \
	jqt "$j" ".bytes_cross_l2r <= $l2r and .bytes_cross_r2l <= $r2l"
check "pairwise: fraction_of_capacity in (0, 1.05] ($(jq .fraction_of_capacity "$j"))" \
	jqt "$j" '.capacity_bps == 200000000 and .fraction_of_capacity > 0 and .fraction_of_capacity <= 1.05'
check "pairwise: TCP counters of 4 namespaces, all present, segments sent" \
	jqt "$j" '.tcp.namespaces == 4 and ([.tcp.TCPTimeouts, .tcp.TCPLossProbes, .tcp.TCPLossProbeRecovery, .tcp.TCPSpuriousRTOs, .tcp.TCPFastRetrans, .tcp.TCPSlowStartRetrans, .tcp.RetransSegs] | all(type == "number")) and .tcp.OutSegs > 0'
check "pairwise: 24 iteration samples, ordered percentiles" \
	jqt "$j" '.iteration_us.samples == 24 and .iteration_us.p50 > 0 and .iteration_us.p50 <= .iteration_us.p99 and .iteration_us.p99 <= .iteration_us.max'
check "pairwise: cc cubic on the data sockets" jqt "$j" '.cc == "cubic"'

# (2) ring, half, two ranks per host
# Hints go to an abstract socket nobody listens on (a path socket would reach any gappaced of
# this machine, whatever the namespace): queued, then dropped.
GAPPACE_HINTS_SOCK=@gp-alltoall-test-$$ run ring -- --msg 16k --iterations 5 --pattern ring --hints iteration --timeout 60
j=$TMP/ring.json
check "ring: exit 0, bytes_total = 12·16 KiB·5" jqt "$j" '.complete and .pattern == "ring" and .bytes_total == 12 * 16384 * 5'
rc_is ring 0 || fail "ring: exit status $(cat "$TMP/ring.rc")"
check "ring: a BEGIN and an END hint per rank and iteration (the warm-up one too), none rejected" \
	jqt "$j" '.warmup == 1 and .hints.mode == "iteration" and .hints.ranks_with_handle == 4 and .hints.queued == 2 * (5 + 1) * 4 and .hints.rejected == 0 and .hints.sent + .hints.dropped == .hints.queued'

run half -- --msg 32k --iterations 5 --pattern half --timeout 60
j=$TMP/half.json
check "half: exit 0, only cross traffic: bytes_total = bytes_cross = 2·L·R·32 KiB·5" \
	jqt "$j" '.complete and .pattern == "half" and .bytes_total == 8 * 32768 * 5 and .bytes_cross == .bytes_total'
check "half: every rank sent to the 2 ranks across only" \
	jqt "$j" '[.per_rank[] | select(.bytes_sent == 2 * 32768 * 5 and .bytes_cross_sent == .bytes_sent)] | length == 4'
rc_is half 0 || fail "half: exit status $(cat "$TMP/half.rc")"

run shared --ranks-per-host 2 -- --msg 8k --iterations 3 --timeout 60
j=$TMP/shared.json
check "two ranks per host: 8 ranks, P(P-1)·m·3 bytes, 4 namespaces counted once each" \
	jqt "$j" '.complete and .ranks == 8 and .bytes_total == 8 * 7 * 8192 * 3 and .tcp.namespaces == 4 and ([.per_rank[].netns] | unique | length) == 4'

# (2b) think time: 4 iterations, 300 ms idle between them (3 pauses), hints per iteration; 4 KB
# messages fit the FIFO, so no iteration waits on a timeout
GAPPACE_HINTS_SOCK=@gp-alltoall-test-$$ run think -- --msg 4k --iterations 4 --think-ms 300 --hints iteration --timeout 60
j=$TMP/think.json
check "think: exit 0, 3 pauses of 300 ms left out of the exchange's time ($(jq -c '[.seconds, .wall_seconds, .think_seconds]' "$j"))" \
	jqt "$j" '.complete and .think_ms == 300 and .think_seconds == 0.9 and .wall_seconds >= 0.9 and (.seconds - (.wall_seconds - 0.9) | fabs) < 1e-6'
check "think: no iteration counts a pause (median $(jq .iteration_us.p50 "$j") us)" \
	jqt "$j" '.iteration_us.samples == 16 and .iteration_us.p50 < 300000'
check "think: a BEGIN and an END per iteration, none open at the end" \
	jqt "$j" '.hints.queued == 2 * (4 + 1) * 4 and .hints.rejected == 0'
rc_is think 0 || fail "think: exit status $(cat "$TMP/think.rc")"

# (3) bad input
run bad_msg -- --msg 0 --iterations 1
check "bad input: --msg 0 exits 2 with a message" \
	bash -c "[[ \$(cat '$TMP/bad_msg.rc') == 2 ]] && grep -q -- '--msg wants' '$TMP/bad_msg.err'"
run bad_rank -- --rank 1 --msg 1k --iterations 1
check "bad input: the launcher refuses --rank (exit 2)" \
	bash -c "[[ \$(cat '$TMP/bad_rank.rc') == 2 ]] && grep -q 'set by the launcher' '$TMP/bad_rank.err'"
rc=0
"$PROGRAM" --rank 0 --ranks 2 --rendezvous 10.0.0.1:1 --bind 10.0.0.1 --msg 1k --iterations 1 --pattern half \
	>/dev/null 2>"$TMP/bad_half.err" || rc=$?
check "bad input: --pattern half without --side exits 2 with a message" \
	bash -c "[[ $rc == 2 ]] && grep -q 'needs --side' '$TMP/bad_half.err'"
check "bad input: nothing left running" no_process_left

# (4) a timeout: 0.5 s of a run that would take hours
run timeout -- --msg 1m --volume 1000g --timeout 0.5
j=$TMP/timeout.json
check "timeout: exit 1, timed_out true, partial counts" \
	bash -c "[[ \$(cat '$TMP/timeout.rc') == 1 ]] && jq -e '.timed_out == true and .complete == false and .bytes_total > 0 and .seconds < 2' '$j' >/dev/null"
check "timeout: over within 15 s ($(cat "$TMP/timeout.seconds") s)" \
	awk -v s="$(cat "$TMP/timeout.seconds")" 'BEGIN { exit !(s < 15) }'
check "timeout: no process left in the cluster" no_process_left

# kill_mid_run NAME HOST_INDEX...: starts a long job (stderr in NAME.err), waits until each
# listed host runs its rank, kills those ranks at once with SIGKILL and waits for the job.
# Sets VICTIMS (the pids killed; fewer than the hosts if not all were found, and then nothing
# is killed but the launcher), KILLED_RC (the launcher's exit status) and KILLED_SECONDS.
kill_mid_run() {
	local name=$1 h p start
	shift
	"$HERE/alltoall.sh" --state "$GPC_STATE" --program "$PROGRAM" -- --msg 1m --volume 1000g --timeout 60 \
		>/dev/null 2>"$TMP/$name.err" &
	BACKGROUND=$!
	for _ in $(seq 100); do
		VICTIMS=()
		for h in "$@"; do
			p=$(ip netns pids "${GPC_HOST_NS[h]}" | sed -n 1p)
			[[ -n $p && $(cat "/proc/$p/comm" 2>/dev/null) == gp-alltoall ]] && VICTIMS+=("$p")
		done
		((${#VICTIMS[@]} == $#)) && break
		sleep 0.05
	done
	sleep 0.5
	start=$SECONDS KILLED_RC=0
	if ((${#VICTIMS[@]} == $#)); then
		kill -KILL "${VICTIMS[@]}"
		wait "$BACKGROUND" || KILLED_RC=$?
	else
		kill "$BACKGROUND"; wait "$BACKGROUND" || true
	fi
	BACKGROUND=""
	KILLED_SECONDS=$((SECONDS - start))
}

# (5) a rank killed mid-run
kill_mid_run killed 2
rc=$KILLED_RC
check "killed rank: found rank 2's process on ${GPC_HOSTS[2]}" test "${#VICTIMS[@]}" -eq 1
check "killed rank: the job ends with exit 1 within 15 s ($KILLED_SECONDS s)" \
	bash -c "[[ $rc == 1 && $KILLED_SECONDS -le 15 ]]"
check "killed rank: rank 0 names rank 2" grep -q 'gp-alltoall rank 0: .*rank 2' "$TMP/killed.err"
check "killed rank: no process left in the cluster" no_process_left

# (5b) two ranks killed at once. bash reports one of them to wait -n and marks the other as
# notified, which wait -n then skips: the launcher must still see both end, at once, and not
# wait out its 10 s after rank 0.
kill_mid_run killed2 2 3
rc=$KILLED_RC
check "two ranks killed: found ranks 2 and 3 (${VICTIMS[*]})" test "${#VICTIMS[@]}" -eq 2
check "two ranks killed: the job ends with exit 1 within 5 s, no rank waited out ($rc, $KILLED_SECONDS s)" \
	bash -c "[[ $rc == 1 && $KILLED_SECONDS -le 5 ]] && ! grep -q 'still running' '$TMP/killed2.err'"
check "two ranks killed: both reported killed (137)" \
	bash -c "grep -q 'rank 2 exited with 137' '$TMP/killed2.err' && grep -q 'rank 3 exited with 137' '$TMP/killed2.err'"
check "two ranks killed: no process left in the cluster" no_process_left

# (6) the launcher's own bounds, with a stand-in for gp-alltoall (fault injection: ranks that
# hang): rank 0 ends at once and the others would sleep for 10 minutes; then every rank hangs
# and --wait expires. The launcher sleeps in wait -n between events; these are its two timers.
cat >"$TMP/hang.sh" <<'HANG'
#!/bin/bash
# --rank N as the launcher passes it; rank 0 returns unless every rank is told to hang.
while (($#)); do [[ $1 == --rank ]] && rank=$2; shift; done
[[ $rank == 0 && -z ${HANG_ALL:-} ]] && exit 0
exec sleep 600
HANG
chmod +x "$TMP/hang.sh"
start=$SECONDS rc=0
"$HERE/alltoall.sh" --state "$GPC_STATE" --program "$TMP/hang.sh" -- --msg 1k >/dev/null 2>"$TMP/hang0.err" || rc=$?
check "hanging ranks: killed 10 s after rank 0 ended, its exit status kept ($rc, $((SECONDS - start)) s)" \
	bash -c "[[ $rc == 0 && $((SECONDS - start)) -ge 9 && $((SECONDS - start)) -le 15 ]] && grep -q '10 s after rank 0 ended' '$TMP/hang0.err'"
check "hanging ranks: no process left in the cluster" no_process_left
start=$SECONDS rc=0
HANG_ALL=1 "$HERE/alltoall.sh" --state "$GPC_STATE" --program "$TMP/hang.sh" --wait 2 -- --msg 1k >/dev/null 2>"$TMP/hangall.err" || rc=$?
check "every rank hangs: killed when --wait 2 expires, exit 124 ($rc, $((SECONDS - start)) s)" \
	bash -c "[[ $rc == 124 && $((SECONDS - start)) -le 6 ]] && grep -q 'still running --wait 2 s' '$TMP/hangall.err'"
check "every rank hangs: no process left in the cluster" no_process_left

if ((FAILS)); then
	echo "FAILED: $FAILS check(s)"
	exit 1
fi
echo "all checks passed"
