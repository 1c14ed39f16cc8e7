#!/bin/sh
# clock — the qdisc's wire clock across configuration changes, on a veth: a device that never
# pushes back, so without a lookahead the clock runs ahead of real time by all it was handed.
#  1. the lookahead turned on after 2 MB at 1 Mbit/s, and
#  2. a link rate and lookahead given to a qdisc that ran without a rate,
#     must not hold the queue for the bytes sent before (16 s of them: the old module held a
#     datagram that long);
#  3. a rule raised from 2 kbit/s to 1 Mbit/s lets the frame that waits out the old rate's
#     interval (6 s) go at the new rate's (12 ms).
# Each datagram must leave the qdisc within 3 s: gp-traffic marker waits until the device has
# it (its socket's send queue is empty).
. "$GP_LIB"

gp_load_module gappace
gp_load_kmod veth
log=$(gp_result clock.txt)

ip link add veth0 type veth peer name veth1 || gp_die "veth"
ip link set veth0 up
ip link set veth1 up
ip addr add 10.9.0.1/24 dev veth0
# nobody answers on veth1: the datagrams only need to pass veth0's qdisc
ip neigh replace 10.9.0.2 lladdr "$(cat /sys/class/net/veth1/address)" dev veth0 nud permanent

blast() { # MB: UDP through veth0 at CPU speed (1472-byte payloads)
    gp-traffic udp-send --dst 10.9.0.2 --port 5000 --count $(($1 * 712)) --timeout 60 >>"$log" 2>&1 ||
        gp_fail "udp-send of $1 MB"
}
passes() { # WHAT: a datagram leaves the qdisc within 3 s
    if gp-traffic marker --dst 10.9.0.2 --name clock --timeout 3 >>"$log" 2>&1; then
        echo "$1: passed" >>"$log"
    else
        gp_fail "$1: a datagram still in the qdisc after 3 s: $(tc -s qdisc show dev veth0 | tr '\n' ' ')"
    fi
}

# --- 1. a link rate from the start, the lookahead later
gp_check "attach at 1 Mbit/s" gapctl qdisc attach dev veth0 linkrate 1mbit
blast 2
gp_check "lookahead on" gapctl qdisc change dev veth0 lookahead 2ms
passes "lookahead turned on after 2 MB"
gp_check "detach" gapctl qdisc detach dev veth0

# --- 2. no link rate (a software device reports none), then one, with the lookahead
gp_check "attach without a link rate" gapctl qdisc attach dev veth0
blast 2
gp_check "link rate and lookahead" gapctl qdisc change dev veth0 linkrate 1mbit lookahead 2ms
passes "link rate set after 2 MB"
gp_check "detach" gapctl qdisc detach dev veth0

# --- 3. a raised rate applies to the frame already waiting
gp_check "attach for the rule" gapctl qdisc attach dev veth0 linkrate 1mbit lookahead 2ms
gapctl pace add dev veth0 dst 10.9.0.2/32 rate 2kbit >>"$log" 2>&1 &
holder=$!
sleep 0.5
# two full frames: the first goes, the second waits 1538 byte times x 500 (6.2 s)
gp-traffic udp-send --dst 10.9.0.2 --port 5000 --count 2 --timeout 10 >>"$log" 2>&1 || gp_fail "udp-send of 2"
sleep 0.3
gapctl pace replace dev veth0 dst 10.9.0.2/32 rate 1mbit >>"$log" 2>&1 &
replacer=$!
sleep 0.3
passes "the rule raised to 1 Mbit/s while its second frame waited"
tc -s qdisc show dev veth0 >>"$log"
kill "$holder" "$replacer" 2>/dev/null
wait "$holder" "$replacer" 2>/dev/null
gp_check "detach" gapctl qdisc detach dev veth0
cat "$log"
