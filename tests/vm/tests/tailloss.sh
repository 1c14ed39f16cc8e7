#!/bin/sh
# tailloss — the stall a lost tail costs, without and with the RTO override.
#
# A request/response series (150 requests of 1000 bytes, one segment each, 20 ms
# apart: long enough to arm the drop in the middle of it)
# over one connection. Exactly one request's only segment is dropped: a tc
# police action on the *receiver's* ingress (eth1 in the peer netns) lets its
# first PSH segment "conform" and drops
# it, then its bucket stays empty so the retransmission passes (the bucket holds
# 1600 bytes and refills at 100 bytes/s: a second 1052-byte segment could only
# conform five seconds later, after the series). The drop must be invisible to
# the sender: dropped at the sender's own egress hook, TCP would see the
# transmit error, keep the segment unsent and retry it from its probe timer,
# which is floored at 200 ms whatever the RTO. Nothing follows
# the lost segment, and tail loss probes are off (tcp_early_retrans=0), so only
# the retransmission timeout recovers it. The slowest exchange is the stall.
. "$GP_LIB"

gp_load_module gappace
for m in sch_ingress cls_u32 act_police tcp_diag; do gp_load_kmod "$m"; done
gp_wire_up
sysctl -qw net.ipv4.tcp_early_retrans=0
gp_peer sysctl -qw net.ipv4.tcp_early_retrans=0
gp_peer tc qdisc add dev eth1 clsact || gp_die "clsact"
log=$(gp_result tailloss.txt)
echo "kernel $(uname -r), HZ-derived floor: see rto.json; tcp_early_retrans=0 on both ends" >>"$log"

# series NAME PORT [gapctl rto set args...]
series() {
    local name=$1 port=$2 client tuple holder=
    shift 2
    gp_peer gp-traffic tcp-rr-server --port "$port" --size 1000 --timeout 60 >/dev/null &
    sleep 0.5
    /usr/bin/gp-traffic tcp-rr --dst 10.0.0.2 --port "$port" --count 150 --size 1000 --pause-ms 20 \
        --timeout 60 >"$(gp_result "tailloss-$name.json")" &
    client=$!
    sleep 0.3
    tuple=$(ss -tnH state established "( dport = :$port )" | awk '{print $3, $4}' | head -n 1)
    [ -n "$tuple" ] || { gp_fail "$name: no connection"; return; }
    if [ $# -gt 0 ]; then
        # shellcheck disable=SC2086
        gapctl -j rto set $tuple "$@" >"$(gp_result "rto-$name.json")" 2>&1 &
        holder=$!
        sleep 0.3
    fi
    echo "$name: $tuple rto before the drop: $(ss -tinH state established "( dport = :$port )" | grep -o 'rto:[0-9.]*')" >>"$log"
    gp_peer tc filter add dev eth1 ingress protocol ip prio 1 u32 \
        match ip dport "$port" 0xffff match u8 0x08 0x08 at 33 \
        action police rate 800bit burst 1600 conform-exceed ok/drop || gp_fail "$name: tc filter"
    wait "$client" || gp_fail "$name: tcp-rr failed"
    gp_peer tc -s filter show dev eth1 ingress >"$(gp_result "police-$name.txt")" 2>&1
    cat "$(gp_result "police-$name.txt")" >>"$log"
    gp_peer tc filter del dev eth1 ingress prio 1
    [ -n "$holder" ] && kill "$holder" 2>/dev/null
    wait 2>/dev/null
}

series stock 7000
series override 7001 5ms

stall() { sed -n 's/.*"max_us":\([0-9]*\).*/\1/p' "$(gp_result "tailloss-$1.json")"; }
retrans() { sed -n 's/.*"total_retrans":\([0-9]*\).*/\1/p' "$(gp_result "tailloss-$1.json")"; }
dropped() { sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' "$(gp_result "police-$1.txt")" | head -n 1; }
p50() { sed -n 's/.*"p50_us":\([0-9]*\).*/\1/p' "$(gp_result "tailloss-$1.json")"; }
for n in stock override; do
    echo "$n: stall $(stall $n) us, median exchange $(p50 $n) us, retransmissions $(retrans $n)" >>"$log"
done
cat "$log"
# exactly one segment lost on the wire, in each series
for n in stock override; do
    [ "$(dropped $n)" = 1 ] || gp_fail "$n: the police action dropped '$(dropped $n)' segments, want 1"
done
# stock Linux recovers it with one timeout and nothing else retransmits. With the
# override, one retransmission is the lost segment; more are spurious timeouts: under
# TCG an exchange now and then takes longer than the 8-12 ms RTO (latencies of 15-20 ms
# were seen on 6.12), the cost a low floor carries and the planner's RTT margin is
# for. They are allowed, but bounded: a handful, not a retransmission storm.
[ "$(retrans stock)" = 1 ] || gp_fail "stock: $(retrans stock) retransmissions, want 1"
[ "$(retrans override)" -ge 1 ] && [ "$(retrans override)" -le 5 ] ||
    gp_fail "override: $(retrans override) retransmissions, want 1 (plus at most 4 spurious)"
# stock Linux: the 200 ms floor; with the override: the 8 ms floor (5 ms rounded up to
# 2 jiffies at HZ=250) plus srtt and the emulator's slowness, far from 200 ms. The RTO
# itself is srtt + 4 rttvar above the floor, and TCG's jitter (exchanges of 2-20 ms)
# makes that 10-50 ms: stalls of 50-54 ms were seen on a loaded machine. Half the stock
# floor still tells an applied override from one that did not apply.
[ "$(stall stock)" -ge 195000 ] || gp_fail "stock stall $(stall stock) us: not a 200 ms RTO"
[ "$(stall override)" -lt 100000 ] || gp_fail "override stall $(stall override) us: the floor did not apply"
[ "$(stall override)" -ge 8000 ] || gp_fail "override stall $(stall override) us: below the floor?"
