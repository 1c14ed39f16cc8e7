#!/bin/sh
# smoke — the harness itself works: wire up, 20 pings eth0 -> peer.
# Host side (run-smoke.sh) asserts the eth0 capture holds exactly the 20 echo
# requests and nothing else (no replies, no ARP, no IPv6).
. "$GP_LIB"

gp_wire_up
ip neigh show dev eth0 >"$(gp_result neigh-eth0.txt)"
gp_peer ip neigh show dev eth1 >"$(gp_result neigh-eth1.txt)"

# -W bounds the wait for late replies; the watchdog bounds everything else.
if ! ping -c 20 -i 0.05 -W 5 10.0.0.2 >"$(gp_result ping.txt)" 2>&1; then
    gp_fail "ping 10.0.0.2 failed"
fi
cat "$(gp_result ping.txt)"
grep -q '20 packets transmitted, 20 packets received' "$(gp_result ping.txt)" \
    || gp_fail "not all 20 pings answered"
ip -s link show dev eth0 >"$(gp_result eth0-stats.txt)"
