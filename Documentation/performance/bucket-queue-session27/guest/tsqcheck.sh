#!/bin/sh
# tsqcheck — does TCP Small Queues bound what one paced TCP socket keeps in a local tbf?
# Netns tsqa -> tsqb over a veth, tbf 3mbit on the sender's veth, cubic, TSO/GSO/GRO off.
# One flow for 6 s per case: SO_MAX_PACING_RATE 6 Mbit/s, 24 Mbit/s, none. Samples at 2..5 s:
# tbf backlog (tc -s qdisc) and the socket (ss -tinm: skmem t, rtt, pacing_rate).
# Needs: --kmod veth --kmod sch_tbf --kmod tcp_diag --bin /usr/sbin/ethtool --bin /usr/bin/ss
#        --bin tsqsend (static sender/sink).
. "$GP_LIB"
DUR=12
for m in veth sch_tbf tcp_diag; do gp_load_kmod "$m"; done
sum=$(gp_result tsq/summary.txt)
{
    echo "kernel $(uname -r)"
    echo "tcp_limit_output_bytes=$(sysctl -n net.ipv4.tcp_limit_output_bytes)"
    echo "tcp_wmem=$(sysctl -n net.ipv4.tcp_wmem)"
    echo "tcp_available_cc=$(sysctl -n net.ipv4.tcp_available_congestion_control)"
} >>"$sum"

case_run() { # NAME RATE_Bps PORT TSO_RTT_LOG
    local name=$1 rate=$2 port=$3 rttlog=$4 t f
    ip netns add tsqa || gp_die "netns add"
    ip netns add tsqb
    for n in tsqa tsqb; do
        ip netns exec $n sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
        ip netns exec $n sysctl -qw net.ipv4.tcp_congestion_control=cubic
        ip -n $n link set lo up
    done
    ip netns exec tsqa sysctl -qw net.ipv4.tcp_tso_rtt_log="$rttlog" || gp_fail "tcp_tso_rtt_log"
    ip link add tq0 netns tsqa type veth peer name tq1 netns tsqb || gp_die "veth"
    ip -n tsqa addr add 10.222.0.1/24 dev tq0
    ip -n tsqb addr add 10.222.0.2/24 dev tq1
    ip -n tsqa link set tq0 up
    ip -n tsqb link set tq1 up
    ip netns exec tsqa /usr/bin/ethtool -K tq0 tso off gso off gro off 2>&1
    ip netns exec tsqb /usr/bin/ethtool -K tq1 tso off gso off gro off 2>&1
    ip netns exec tsqa /usr/bin/ethtool -k tq0 >"$(gp_result "tsq/$name-ethtool.txt")" 2>&1
    ip netns exec tsqa /usr/sbin/tc qdisc add dev tq0 root tbf rate 3mbit burst 3200 limit 4000000 || gp_die "tbf"
    sleep 1
    ip netns exec tsqb /usr/bin/tsqsend sink "$port" 40 >"$(gp_result "tsq/$name-sink.json")" 2>&1 &
    sleep 0.5
    ip netns exec tsqa /usr/bin/tsqsend send 10.222.0.2 "$port" "$DUR" "$rate" cubic >"$(gp_result "tsq/$name-send.json")" 2>&1 &
    t0=$(cut -d' ' -f1 /proc/uptime)
    f=$(gp_result "tsq/$name-samples.txt")
    echo "--- $name (SO_MAX_PACING_RATE=$rate B/s), tcp_tso_rtt_log=$(ip netns exec tsqa sysctl -n net.ipv4.tcp_tso_rtt_log), flow started at uptime $t0; age = uptime - start" >>"$sum"
    for t in 2 3 4 5 6 7 8 9 10; do
        while awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" -v t="$t" 'BEGIN { exit !(b - a < t) }'; do sleep 0.1; done
        u=$(cut -d' ' -f1 /proc/uptime)
        {
            echo "=== target ${t}s age=$(awk -v a="$t0" -v b="$u" 'BEGIN { printf "%.2f", b - a }')s uptime=$u"
            ip netns exec tsqa /usr/sbin/tc -s qdisc show dev tq0
            ip netns exec tsqa /usr/bin/ss -tinm dst 10.222.0.2
            echo "=== sample done uptime=$(cut -d' ' -f1 /proc/uptime)"
        } >"$f.cur" 2>&1
        cat "$f.cur" >>"$f"
        echo "  $(head -n 1 "$f.cur" | cut -d' ' -f3-) $(grep -o 'backlog [^ ]* [^ ]*\|skmem:([^)]*)\|pacing_rate [^ ]*\| rtt:[^ ]*\|cwnd:[^ ]*\|unacked:[^ ]*\|notsent:[^ ]*\|minrtt:[^ ]*' "$f.cur" | tr '\n' ' ')" >>"$sum"
        rm -f "$f.cur"
    done
    wait
    ip netns exec tsqa /usr/sbin/tc -s qdisc show dev tq0 >"$(gp_result "tsq/$name-tc-end.txt")" 2>&1
    echo "  sender: $(cat "$(gp_result "tsq/$name-send.json")") sink: $(cat "$(gp_result "tsq/$name-sink.json")")" >>"$sum"
    ip netns del tsqa
    ip netns del tsqb
    sleep 0.5
}

# tcp_tso_rtt_log=9 (default): TCP's skb size (tcp_tso_autosize) grows as min_rtt shrinks,
# and the TSQ limit is max(2 * skb->truesize, pacing_rate >> 10); =0 turns that term off.
case_run cap6M 750000 5201 9
case_run cap24M 3000000 5202 9
case_run nocap 0 5203 9
case_run cap6M-rttlog0 750000 5211 0
case_run cap24M-rttlog0 3000000 5212 0
case_run nocap-rttlog0 0 5213 0
cat "$sum"
