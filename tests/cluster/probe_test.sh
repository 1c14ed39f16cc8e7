#!/usr/bin/env bash
# `gapctl probe` across the namespace cluster's shaped link: a 1+1 cluster (cubic, 200mbit tbf,
# 40-packet FIFO), the responder on h2 (`--serve --once`), the prober on h1 (`--quick`). Asserts:
#   * the responder refuses garbage with an ERROR frame and keeps serving; bad options exit 2;
#   * the probe exits 0 within its bound and writes a parameter file that jq parses, with the
#     format string, strictly increasing points and a positive RTT mean;
#   * g(m) of the largest message implies 30 %..110 % of 200 Mbit/s (one TCP flow's goodput is
#     at most C * 1448/1514 = 95.6 % of C). The lower bound is loose on purpose: --quick times
#     three trains of two 1 MiB messages (84 ms each at C) through a drop-tail FIFO, and the
#     mean of three keeps any 200 ms timeout a train pays; CI once measured 66 Mbit/s (33 %)
#     on a loaded machine. A unit slip (bits for bytes, ms for us) still fails it;
#   * switch_queue.packets is 25..60 for the 40-packet FIFO. The probe takes the 90th percentile
#     of kernel-timed loaded RTTs as "the port full" (see tools/gapctl/README.md): one cubic
#     flow's queue is a sawtooth between about 0.7 Q and Q, and the emulated link empties now
#     and then when the 2-core machine starves the flow, so the estimate sits a little below Q
#     (measured 33..42, mostly 33..37). Below: a queue that never filled would read ~0, the sawtooth's mean
#     ~28; 25 leaves room for a busy machine. Above: 60 = 1.5 Q, the kernel timestamps take
#     process wake-ups out, but softirq delays of the veths remain in the samples;
#   * the FIFO really was full: the L->R FIFO dropped packets during the probe;
#   * the responder is gone afterwards (exit 0);
#   * an unreachable peer fails with exit 1 within its --timeout, a refused port with exit 1.
# Prints what was measured (L, S1, S2, RTT mean and sigma, q).
#
# usage: probe_test.sh BUILD_DIR     (root; about 15 s; cleans up)
set -euo pipefail
BUILD=$(cd "${1:?usage: probe_test.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }
command -v jq >/dev/null || { echo "SKIP: needs jq"; exit 77; }
GAPCTL=$BUILD/tools/gapctl/gapctl
[[ -x $GAPCTL ]] || { echo "FAIL: $GAPCTL is not built"; exit 1; }
# shellcheck source=lib.sh
source "$HERE/lib.sh"

TMP=$(mktemp -d /tmp/gappace-probe.XXXXXX)
SERVER=""
finish() {
	set +e
	[[ -n $SERVER ]] && kill "$SERVER" 2>/dev/null
	rm -rf "$TMP"
}
trap finish EXIT # gp_cluster_up keeps it: it runs after the cluster's teardown
# shellcheck source=checks.sh
source "$HERE/checks.sh"
params() { jqt "$TMP/params.json" "$1"; } # FILTER: true if it holds of the parameter file
now_ms() { echo $(($(date +%s%N) / 1000000)); }

gp_cluster_up "$TMP/cluster.state" --left 1 --right 1 --rate 200mbit --queue 40 --cc cubic
H2=$(gp_cluster_addr h2)
PORT=$((20000 + RANDOM % 20000))
echo "cluster: ${GPC_HOSTS[*]} (${GPC_HOST_ADDR[*]}), $GPC_RATE, queue $GPC_QUEUE, cc $GPC_CC, port $PORT"

# --- the responder, and what it does with garbage
gp_cluster_exec h2 "$GAPCTL" probe --serve --once --port "$PORT" --timeout 120 \
	>"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVER=$!
for _ in $(seq 50); do grep -q "listening on" "$TMP/serve.out" 2>/dev/null && break; sleep 0.1; done
check "responder listens" grep -q "listening on" "$TMP/serve.out"

gp_cluster_exec h1 timeout 5 bash -c 'exec 3<>"/dev/tcp/$0/$1"; printf "GET / HTTP/1.0\r\n\r\n" >&3; cat <&3' \
	"$H2" "$PORT" >"$TMP/garbage.out" 2>&1 || true
check "garbage gets an ERROR frame (bad magic)" grep -qa "bad magic" "$TMP/garbage.out"
check "the responder survives garbage" kill -0 "$SERVER"

set +e
gp_cluster_exec h1 "$GAPCTL" probe "$H2" --port "$PORT" --reps 1 >/dev/null 2>"$TMP/badopt.err"
rc=$?
set -e
check "bad option exits 2 with a message (rc $rc)" test "$rc" -eq 2
check "bad option message names it" grep -q "invalid --reps" "$TMP/badopt.err"

# --- the probe
drops_before=$(gp_cluster_stats | jq .l2r.fifo.drops)
t0=$(now_ms)
set +e
gp_cluster_exec h1 timeout 90 "$GAPCTL" probe "$H2" --port "$PORT" --quick --bottleneck-rate 200000000 \
	--out "$TMP/params.json" >"$TMP/probe.out" 2>"$TMP/probe.err"
rc=$?
set -e
took=$(($(now_ms) - t0))
drops_after=$(gp_cluster_stats | jq .l2r.fifo.drops)
cat "$TMP/probe.out" "$TMP/probe.err"
check "probe exits 0 (rc $rc, $took ms)" test "$rc" -eq 0
check "probe --quick takes under 30 s" test "$took" -lt 30000
check "the file parses" params "type == \"object\""
check "format gappace-params/1" params '.format == "gappace-params/1"'
check "points strictly increasing, from 0 to 1 MiB" \
	params '[.points[].bytes] as $b | ($b | length) >= 2 and $b[0] == 0 and $b[-1] == 1048576
	     and all(range(1; $b | length); $b[.] > $b[. - 1])'
check "rtt mean > 0" params '.rtt.mean_us > 0 and .rtt.samples > 0'
rate=$(jq '.points[-1] | .bytes * 8 / (.g_us * 1e-6)' "$TMP/params.json")
check "g of the largest message: $(printf %.0f "$rate") bit/s is 30..110 % of 200 Mbit/s" \
	params '.points[-1] | (.bytes * 8 / (.g_us * 1e-6)) as $r | $r >= 60e6 and $r <= 220e6'
check "switch queue $(jq .switch_queue.packets "$TMP/params.json") packets is 25..60 (FIFO of 40)" \
	params '.switch_queue.packets >= 25 and .switch_queue.packets <= 60'
check "the bottleneck FIFO dropped during the probe ($drops_before -> $drops_after)" \
	test "$drops_after" -gt "$drops_before"
check "every point has reps >= 3" params 'all(.points[]; .reps >= 3)'

status=""
for _ in $(seq 50); do kill -0 "$SERVER" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$SERVER" 2>/dev/null; then
	fail "the responder is still running after its --once session"
else
	set +e
	wait "$SERVER"
	status=$?
	set -e
	SERVER=""
	check "the responder exited 0 after one session (rc $status)" test "$status" -eq 0
fi
check "the responder logged the session" grep -q "done (" "$TMP/serve.err"

# --- failures: nobody listens any more; an address nobody has
set +e
gp_cluster_exec h1 timeout 20 "$GAPCTL" probe "$H2" --port "$PORT" --timeout 5 >/dev/null 2>"$TMP/refused.err"
rc=$?
set -e
check "refused port exits 1 (rc $rc): $(cat "$TMP/refused.err")" test "$rc" -eq 1
check "refused message" grep -q "refused" "$TMP/refused.err"
nobody=${GPC_SUBNET%.0/24}.250
t0=$(now_ms)
set +e
gp_cluster_exec h1 timeout 20 "$GAPCTL" probe "$nobody" --port "$PORT" --timeout 3 >/dev/null 2>"$TMP/unreach.err"
rc=$?
set -e
took=$(($(now_ms) - t0))
check "unreachable peer exits 1 (rc $rc) in $took ms: $(cat "$TMP/unreach.err")" test "$rc" -eq 1
check "unreachable peer gives up within its --timeout (3 s + 2 s)" test "$took" -lt 5000

jq -r '"measured: L \(.latency_us) us, S1 \(.oneway.S_us) us, S2 \(.twoway.S_us) us, RTT \(.rtt.mean_us) us sigma \(.rtt.sigma_us) us (\(.rtt.samples)), q \(.switch_queue.bytes) B = \(.switch_queue.packets) packets (delay \(.switch_queue.delay_empty_us) -> \(.switch_queue.delay_full_us) us), link \(.link_bps) bit/s"' \
	"$TMP/params.json" 2>/dev/null || true
if ((FAILS)); then
	echo "probe_test: $FAILS failed"
	exit 1
fi
echo "probe_test: all passed"
