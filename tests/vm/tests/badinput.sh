#!/bin/sh
# badinput — every bad request is refused with an errno and an extack message,
# and gapctl prints the kernel's text and exits non-zero. Nothing is changed by
# a refused request.
. "$GP_LIB"

gp_load_module gappace
gp_load_kmod veth
gp_load_kmod sch_prio
gp_wire_up
log=$(gp_result badinput.txt)

gp_check "attach" gapctl qdisc attach dev eth0 linkrate 1mbit

# raw malformed and unprivileged requests, generic netlink and rtnetlink
gp-nlprobe -j --dev eth0 --plain-dev lo >"$(gp_result nlprobe.json)" || gp_fail "gp-nlprobe: some bad request was not refused properly"
gp-nlprobe --dev eth0 --plain-dev lo >>"$log" 2>&1

# through gapctl: the kernel's text reaches the user
gp_expect_error "$log" "exceeds the link rate" gapctl pace add dev eth0 dst 10.0.1.1 rate 2mbit
gp_expect_error "$log" "no rule for this prefix" gapctl pace del dev eth0 dst 10.9.9.9
# rules are leases: each gapctl holds its rule until it is stopped
gapctl pace add dev eth0 dst 10.0.1.1 rate 100kbit >/dev/null &
first=$!
sleep 0.5
gp_expect_error "$log" "exists" gapctl pace add dev eth0 dst 10.0.1.1 rate 200kbit
# replace takes the lease over: the rule outlives the first holder
gapctl pace replace dev eth0 dst 10.0.1.1 rate 200kbit >/dev/null &
replacer=$!
sleep 0.5
kill "$first"
wait "$first" 2>/dev/null
sleep 0.5
case $(gapctl -j pace show dev eth0) in *'"rate":200000,'*) ;; *) gp_fail "replace did not set the rate, or its lease" ;; esac
gp_expect_error "$log" "not gappace" gapctl pace add dev lo dst 10.0.1.1 rate 100kbit
gp_expect_error "$log" "Ethernet" gapctl qdisc attach dev lo
gp_expect_error "$log" "Cannot find device" gapctl stats dev nosuchdev
gp_expect_error "$log" "" gapctl qdisc change dev eth0 ifg 5
gp_expect_error "$log" "" gapctl pace add dev eth0 dst 10.0.1.1/33 rate 1mbit
gp_expect_error "$log" "" gapctl pace add dev eth0 dst 10.0.1.1 rate 10furlongs

# a software device has no wire speed: pacing needs a declared link rate
ip link add veth0 type veth peer name veth1 || gp_die "veth"
ip link set veth0 up
ip link set veth1 up
gp_expect_error "$log" "link speed" gapctl qdisc attach dev veth0 ifg 100
gp_expect_error "$log" "link speed" gapctl qdisc attach dev veth0 lookahead 1ms
gp_check "veth FIFO attach" gapctl qdisc attach dev veth0
gp_expect_error "$log" "link rate" gapctl pace add dev veth0 dst 10.0.1.1 rate 1mbit
gp_check "veth detach" gapctl qdisc detach dev veth0

# gappace must be the root qdisc
tc qdisc add dev veth1 root handle 1: prio || gp_die "prio"
gp_expect_error "$log" "root qdisc" tc qdisc add dev veth1 parent 1:1 gappace linkrate 1mbit
# detach refuses to delete someone else's root qdisc
gp_expect_error "$log" "not gappace" gapctl qdisc detach dev veth1

# refused requests changed nothing
rules=$(gapctl -j pace show dev eth0)
echo "rules after: $rules" >>"$log"
case $rules in *'"dst":"10.0.1.1/32","rate":200000'*) ;; *) gp_fail "rule set changed: $rules" ;; esac
[ "$(echo "$rules" | grep -o '"dst"' | wc -l)" = 1 ] || gp_fail "unexpected rules: $rules"
kill "$replacer"
wait "$replacer" 2>/dev/null

# rule groups: numbered from 1; the last request's rate is the whole group's; a member that
# leaves leaves the others in place
gp_expect_error "$log" "numbered from 1" gapctl pace add dev eth0 dst 10.0.1.2 rate 100kbit group 0
gp_pace_hold eth0 10.0.1.2/32 100kbit group 3
gp_pace_hold eth0 10.0.1.3/32 300kbit group 3
rules=$(gapctl -j pace show dev eth0)
echo "group: $rules" >>"$log"
case $rules in *'"dst":"10.0.1.2/32","rate":300000,"group":3'*) ;; *) gp_fail "a group member's request did not set the group's rate: $rules" ;; esac
gp_pace_release eth0 10.0.1.3/32
rules=$(gapctl -j pace show dev eth0)
case $rules in *'"dst":"10.0.1.2/32","rate":300000,"group":3'*) ;; *) gp_fail "the group lost its rate or member when another left: $rules" ;; esac
gapctl pace show dev eth0 | grep -q 'dst 10.0.1.2/32 rate 300Kbit group 3' || gp_fail "pace show prints no group: $(gapctl pace show dev eth0)"
gp_pace_release eth0 10.0.1.2/32
gp_check "detach" gapctl qdisc detach dev eth0
rmmod gappace || gp_fail "rmmod"
gp_expect_error "$log" "not loaded" gapctl pace show
cat "$log"
