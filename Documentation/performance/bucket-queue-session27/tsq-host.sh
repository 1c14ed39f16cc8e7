#!/bin/bash
# How many frames one paced TCP socket keeps queued in a local tbf, on this machine's kernel:
# two namespaces joined by a veth, offloads off, cubic, a 3 Mbit/s tbf with a 4 MB queue on
# the sender's side, one iperf3 flow capped with SO_MAX_PACING_RATE (--fq-rate) for 6 s; at
# 4 s, the tbf's backlog and the socket's skmem (t: bytes below the socket), RTT and rate.
#
#   tsq-host.sh [CAP (iperf3 --fq-rate, e.g. 24M; none)] [TCP_TSO_RTT_LOG (default 9)]
# Needs root, iproute2, ethtool and iperf3. Uses the namespaces tsqa and tsqb and removes them.
set -u
cap=${1:-none} rtt_log=${2:-9}
. "$(dirname "$0")/pair.sh"
pair_up tsqa tsqb 10.222.0 "$rtt_log"
ip netns exec tsqa tc qdisc add dev eth0 root tbf rate 3mbit burst 3200 limit 4000000
ip netns exec tsqb timeout 20 iperf3 -s -1 >/dev/null 2>&1 &
server=$!
sleep 0.5
args=()
[[ $cap == none ]] || args=(--fq-rate "$cap")
ip netns exec tsqa timeout 15 iperf3 -c 10.222.0.2 -t 6 "${args[@]}" >/dev/null 2>&1 &
client=$!
sleep 4
echo "cap $cap, tcp_tso_rtt_log $rtt_log: tbf $(ip netns exec tsqa tc -s qdisc show dev eth0 | grep -o 'backlog [^ ]* [^ ]*')"
# The data connection is the one with bytes below it; iperf3's control connection has none.
ip netns exec tsqa ss -tinm dst 10.222.0.2 | paste - - |
	grep -o 'skmem:([^)]*)\|rtt:[0-9.]*/[0-9.]*\|pacing_rate [^ ]*\|cwnd:[0-9]*' | paste -sd ' ' |
	sed 's/skmem/\n  skmem/g' | grep skmem | grep -v 't0,'
wait "$client" "$server"
