#!/usr/bin/env bash
# The models' loss verdict checked on real TCP (Documentation/models.md, "Checking the loss
# verdict"): 2+2 namespace hosts, a 200mbit bottleneck, cubic, gappaced (stock backend, models
# planner) in every host, gp-alltoall sending a hint per iteration. Two clusters:
#   * refuted: the real FIFO holds 1000 packets, but the daemons are told 16, so the models
#     predict that the 4 flows x 8 KiB crossing each way (32 KiB, 1.4 times the 24 KB they
#     believe) overflow and would pace. (A burst of more than twice the queue is not tried at
#     all: models/loss_check.hpp, 1.) Every host's trial (32 phases unpaced with
#     the floor) sees no loss (or its retry at phase 256 does, after a stray retransmission): the
#     key becomes lossless, its phases run as sent, and the daemons advise the senders to skip
#     its hints (quiet advice counted, phases no longer paced); the skipped phases' count and
#     time come back with the next phase sent (quiet summary). Then the FIFO is shrunk to 3
#     packets under the running daemons: unpaced bursts lose segments, and every host's audit
#     ends its verdict, on its lost share (lossy: paced) or, if its timeouts come first, on
#     them (floored: unpaced with the floor), which the test checks where it happens;
#   * confirmed: the real FIFO holds 4 packets, the daemons are told 100 (150 KB), and bursts
#     of 4 flows x 64 KiB (1.7 times that, 44 times the real queue) overflow it. Every host's trial
#     fails on the host's own counters (a lost segment or a timeout) within a few phases, and the
#     key's later phases are paced.
#
# usage: loss_check_test.sh BUILD_DIR      (root, else exit 77 = skip; about 20 s)
set -euo pipefail
BUILD=$(cd "${1:?usage: loss_check_test.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
for tool in jq ip; do command -v $tool >/dev/null || { echo "SKIP: $tool missing (tests/deps.sh)"; exit 77; }; done
PROGRAM=$BUILD/tools/alltoall/gp-alltoall
for f in "$PROGRAM" "$BUILD/daemon/gappaced" "$BUILD/tools/gapctl/gapctl"; do
	[[ -x $f ]] || { echo "FAIL: $f is not built"; exit 1; }
done

TMP=$(mktemp -d /tmp/gappace-losscheck.XXXXXX)
TAG=$RANDOM$RANDOM
export GAPPACE_HINTS_SOCK=@gappace-hints-$TAG GAPPACE_CONTROL_SOCK=@gappace-ctl-$TAG
finish() {
	set +e
	gp_daemons_stop
	rm -rf "$TMP"
}
trap finish EXIT # lib.sh's teardown runs first, then this
# shellcheck source=lib.sh
source "$HERE/lib.sh"
# shellcheck source=checks.sh
source "$HERE/checks.sh"
show() { ip netns exec "$1" "$BUILD/tools/gapctl/gapctl" -j daemon show; }

daemon_config() { # HOST_INDEX; BELIEVED_QUEUE_PACKETS: what the daemons are told the FIFO holds
	local h=${GPC_HOSTS[$1]}
	cat <<CONF
$(gp_daemon_toml "$TMP/daemons/$h.state.json" "history = 512" 'quiet = "100ms"')
[rto]
floor = "5ms"
[pacing]
frame_overhead = 66
[planner]
model = "models"
loss_check_phases = 32
$(gp_cluster_bottlenecks_toml | sed "s/^queue_packets = .*/queue_packets = $BELIEVED_QUEUE_PACKETS/")
CONF
}
start_daemons() { # BELIEVED_QUEUE_PACKETS
	BELIEVED_QUEUE_PACKETS=$1
	gp_daemons_start "$BUILD" daemon_config "$TMP/daemons" || exit 1
}

run_job() { # NAME MSG ITERATIONS
	local rc=0
	"$HERE/alltoall.sh" --state "$GPC_STATE" --program "$PROGRAM" -- --msg "$2" --iterations "$3" \
		--hints iteration --cc cubic --timeout 60 >"$TMP/$1.json" 2>"$TMP/$1.err" || rc=$?
	echo "-- $1: exit $rc, $(jq -r '"\(.fraction_of_capacity * 100 | round) % of C, \(.tcp.RetransSegs) retransmitted, \(.tcp.TCPTimeouts) timeouts"' "$TMP/$1.json" 2>/dev/null)"
	[[ $rc -eq 0 ]] || sed -n '1,5s/^/   stderr: /p' "$TMP/$1.err" # not | head: SIGPIPE under pipefail
	return 0
}

# ---- refuted: a 1000-packet FIFO the daemons believe holds 16
gp_cluster_up "$TMP/refuted.state" --left 2 --right 2 --rate 200mbit --queue 1000 --cc cubic 2>/dev/null
echo "cluster: ${GPC_HOSTS[*]}, FIFO 1000 packets (the daemons are told 16), cc $GPC_CC"
start_daemons 16
run_job refuted 8k 400
check "refuted: the job completed" jqt "$TMP/refuted.json" '.complete == true and .verified == true'
check "refuted: the real queue lost nothing" jqt "$TMP/refuted.json" '.tcp.TCPTimeouts == 0'
gp_cluster_stats >"$TMP/refuted-stats.json"
check "refuted: the bottleneck's FIFO dropped nothing" jqt "$TMP/refuted-stats.json" '.l2r.fifo.drops == 0 and .r2l.fifo.drops == 0'
for i in "${!GPC_HOSTS[@]}"; do
	h=${GPC_HOSTS[$i]} j=$TMP/daemons/${GPC_HOSTS[$i]}.refuted-show.json
	show "${GPC_HOST_NS[$i]}" >"$j"
	key='.planner.loss_check.keys[] | select(.kind == "alltoall" and .size_class == 13)'
	# The trial is strict (no segment lost), and the host's counters can see retransmissions the
	# FIFO did not cause (a 5 ms floor firing while a receiver is descheduled, say, with a DSACK
	# after the trial's last reading). In session 11 one host failed its first trial with no
	# timeout anywhere, once in CI and once in about 20 local runs; the cause was not found. So
	# a host may fail one trial here; it must then retry at phase 256 (the next multiple of
	# 256), end lossless, and pace only in between.
	check "$h: lossless after one trial of 32 phases (or two, the first failed)" \
		jqt "$j" "[$key | select(.stage == \"lossless\" and .failures <= 1 and .trials == .failures + 1 and .trial_phases == 32 and .trial_sent > 0)] | length == 1"
	jqt "$j" "[$key | select(.failures == 1)] | length == 1" && echo "note $h: one trial failed on the host's counters although the FIFO dropped nothing"
	check "$h: the trial's phases ran unpaced with the floor" \
		jqt "$j" '[.history[] | select(.bytes_per_peer == 8192 and (.plan | test("loss check: trial")) and .rto >= 1 and .paced == 0)] | length >= 16'
	check "$h: after it, the phases run as sent and the sender was advised to skip them" \
		jqt "$j" '([.history[] | select(.bytes_per_peer == 8192 and (.plan | test("loss check: lossless")) and .rto == 0 and .paced == 0)] | length >= 1) and .counters.advice_sent >= 1'
	check "$h: the phases skipped on advice came back summed up with a later phase, for calibration" \
		jqt "$j" '.counters.quiet_phases_reported >= 1 and ([.history[] | select(.bytes_per_peer == 8192 and .quiet_phases >= 1 and .quiet_ns > 0 and .quiet_predicted_us > 0)] | length >= 1)'
	check "$h: no 8 KiB phase was paced, except between a failed trial and its retry" \
		jqt "$j" "([$key][0].failures) as \$f | [.history[] | select(.bytes_per_peer == 8192 and .paced > 0)] | length as \$n | (\$f == 0 and \$n == 0) or (\$f == 1 and \$n < 256)"
done
check "refuted: the senders skipped hints on advice (fewer phases than iterations reached each daemon)" \
	jqt "$TMP/daemons/${GPC_HOSTS[0]}.refuted-show.json" '.counters.phases_begun < 300'

# ---- floored: the same cluster, daemons and lossless verdicts, the FIFO shrunk to 3 packets.
# Unpaced 8 KiB bursts now lose segments; each host's audit ends its lossless verdict.
for dev in "$GPC_BOTTLENECK_L2R_DEV" "$GPC_BOTTLENECK_R2L_DEV"; do
	ip netns exec "$GPC_SWITCH_NS" tc qdisc change dev "$dev" parent 1:1 handle 10: pfifo limit 3
done
run_job floored 8k 300
check "floored: the job completed" jqt "$TMP/floored.json" '.complete == true and .verified == true'
gp_cluster_stats >"$TMP/floored-stats.json"
check "floored: the shrunk FIFO dropped" jqt "$TMP/floored-stats.json" '.l2r.fifo.drops + .r2l.fifo.drops > 0'
floored_hosts=0
key='.planner.loss_check.keys[] | select(.kind == "alltoall" and .size_class == 13)'
for i in "${!GPC_HOSTS[@]}"; do
	h=${GPC_HOSTS[$i]} j=$TMP/daemons/${GPC_HOSTS[$i]}.floored-show.json
	show "${GPC_HOST_NS[$i]}" >"$j"
	# Every verdict ends: each ending counts a failure (a retry is scheduled), whether the
	# audit saw timeouts first (floored) or a lost share above 1 % first (lossy: paced).
	before=$(jq "[$key | .failures][0] // 0" "$TMP/daemons/$h.refuted-show.json")
	check "$h: the lossless verdict ended under the 3-packet FIFO ($before failures before)" \
		jqt "$j" "[$key | select(.failures > $before)] | length == 1"
	jqt "$j" "[$key | select(.floored >= 1)] | length == 1" || continue
	floored_hosts=$((floored_hosts + 1))
	check "$h: floored phases ran unpaced with the floor" \
		jqt "$j" '[.history[] | select(.bytes_per_peer == 8192 and (.plan | test("loss check: floored")) and .rto >= 1 and .paced == 0)] | length >= 1'
	check "$h: floored after a passed trial and a lossless verdict" \
		jqt "$j" '[.history[] | select(.bytes_per_peer == 8192 and (.plan | test("loss check: lossless")))] | length >= 1'
done
# Which comes first is a race the FIFO decides, and the losses usually win: an audit judges
# the lost share once 1000 segments went out (tens of milliseconds here), while a burst's
# lost tail costs its timeout 200 ms later, and a tail loss probe often recovers it with no
# timeout at all. Session 15 counted 0, 0, 0 and 1 of 4 hosts floored in four runs (lossy,
# i.e. paced, is the models' answer to a FIFO this small); session 14's CI once failed on 0.
# The floored path is unit-tested (loss_check_test.cpp); here it is reported, and its
# history checked on the hosts where it happens.
echo "floored: $floored_hosts of ${#GPC_HOSTS[@]} hosts ended their lossless verdict on timeouts (the rest on losses)"
gp_daemons_stop
gp_cluster_down

# ---- confirmed: a 4-packet FIFO (the daemons are told 100) that 64 KiB bursts overflow
gp_cluster_up "$TMP/confirmed.state" --left 2 --right 2 --rate 200mbit --queue 4 --cc cubic 2>/dev/null
echo "cluster: ${GPC_HOSTS[*]}, FIFO 4 packets (the daemons are told 100), cc $GPC_CC"
start_daemons 100
run_job confirmed 64k 60
check "confirmed: the job completed" jqt "$TMP/confirmed.json" '.complete == true and .verified == true'
for i in "${!GPC_HOSTS[@]}"; do
	h=${GPC_HOSTS[$i]} j=$TMP/daemons/${GPC_HOSTS[$i]}.confirmed-show.json
	show "${GPC_HOST_NS[$i]}" >"$j"
	key='.planner.loss_check.keys[] | select(.kind == "alltoall" and .size_class == 16)'
	check "$h: the trial failed on the host's counters within a few phases" \
		jqt "$j" "[$key | select(.stage == \"lossy\" and .failures >= 1 and .trial_phases <= 8 and (.last_failure == \"losses\" or .last_failure == \"timeouts\"))] | length == 1"
	check "$h: the key's later phases were paced" \
		jqt "$j" '[.history[] | select(.bytes_per_peer == 65536 and .paced > 0)] | length >= 40'
done

if ((FAILS)); then
	for h in "${GPC_HOSTS[@]}"; do
		echo "== $h"; jq -c '.planner.loss_check' "$TMP/daemons/$h.confirmed-show.json" "$TMP/daemons/$h.refuted-show.json" 2>/dev/null
	done
	echo "FAILED: $FAILS check(s)"
	exit 1
fi
echo "all checks passed"
