#!/bin/bash
# How a socket capped with SO_MAX_PACING_RATE sends its frames on this machine's kernel: two
# namespaces joined by a veth, offloads off, cubic, no qdisc limit; one iperf3 flow capped at
# 3 Mbit/s (--fq-rate) for 5 s; tcpdump's arrival times of its data frames at the receiver.
# Prints how many frames came back to back (under 0.1 ms apart) and the other gaps: at
# 3 Mbit/s a 1514-byte frame takes 4 ms.
#
#   bursts-host.sh [TCP_TSO_RTT_LOG (default 9)]
# Needs root, iproute2, ethtool, iperf3, tcpdump, python3. Uses namespaces bua and bub.
set -u
rtt_log=${1:-9}
out=$(mktemp)
. "$(dirname "$0")/pair.sh"
pair_up bua bub 10.223.0 "$rtt_log"
trap 'pair_down; rm -f "$out"' EXIT
ip netns exec bub timeout 15 iperf3 -s -1 >/dev/null 2>&1 &
server=$!
sleep 0.5
ip netns exec bub timeout 8 tcpdump -i eth0 -nn -tt -c 600 'tcp and src 10.223.0.1 and greater 1000' >"$out" 2>/dev/null &
capture=$!
ip netns exec bua timeout 12 iperf3 -c 10.223.0.2 -t 5 --fq-rate 3M >/dev/null 2>&1
wait "$capture" "$server"
python3 - "$out" "$rtt_log" <<'PY'
import sys
t = [float(line.split()[0]) for line in open(sys.argv[1]) if line.strip()]
gaps = [(b - a) * 1e3 for a, b in zip(t, t[1:])][50:]  # past slow start
together = sum(1 for g in gaps if g < 0.1)
apart = sorted(g for g in gaps if g >= 0.1)
median = apart[len(apart) // 2] if apart else 0
print(f"tcp_tso_rtt_log {sys.argv[2]}: {len(gaps)} gaps, {together} under 0.1 ms (back to back), "
      f"the others {median:.1f} ms (median); bursts of about {len(gaps) / max(len(apart), 1):.0f} frames")
PY
