#!/bin/sh
# control — the control-plane chain with the module backend: a rank (gp-hintclient, holding
# a TCP connection to the peer netns) sends hints through libgapctl to the kernel, which
# stamps and multicasts them; gappaced (module backend) plans, installs a flow rule on eth0
# and an RTO override on the rank's socket, both leases of its netlink socket, and reverts
# them at the phase end. Checked: settings live during the phase and gone after it; a hint
# from another uid changes nothing; with linger_idle, an idle socket keeps them past linger and
# a write releases them; SIGKILL of the daemon lets the kernel restore everything.
. "$GP_LIB"

gp_load_module gappace
gp_load_kmod tcp_diag
gp_wire_up
log=$(gp_result control.txt)

gapctl qdisc attach dev eth0 linkrate 100mbit >>"$log" 2>&1 || gp_die "qdisc attach failed"
sleep 600 | gp_peer nc -l -p 6000 >/dev/null 2>&1 &
sleep 600 | gp_peer nc -l -p 6001 >/dev/null 2>&1 &
sleep 0.5

mkdir -p /run/gappace
gp_daemon_config module >/run/gappace/gappaced.toml
gp_start_daemon /run/gappace/gappaced.toml
daemon=$GP_DAEMON
gapctl -j daemon show | grep -q '"kernel_hints":true' || gp_fail "gappaced does not listen to the kernel's hints group"

# The rank: a client we drive through two FIFOs (fd 5 in, fd 6 out).
gp_start_hintclient
client=$GP_CLIENT

conn=$(say connect 10.0.0.2 6000)
echo "client: $conn" >>"$log"
case $conn in connected*) ;; *) gp_die "client could not connect: $conn" ;; esac
local_end=$(echo "$conn" | awk '{print $2}')

rules() { gapctl -j pace show dev eth0; }
# rule_gone WHAT LOOKS PAUSE: waits until no rule for the peer is left, at most LOOKS looks
# PAUSE seconds apart, else fails with WHAT
rule_gone() {
    local i=0
    while rules | grep -q '10.0.0.2'; do
        i=$((i + 1)); [ $i -lt "$2" ] || { gp_fail "$1"; return; }
        sleep "$3"
    done
}
rtos() { gapctl -j rto show; }
show() { gapctl -j daemon show; }

# --- a phase: a rule for the peer at C/k = 10mbit, an override on exactly this socket
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed"
sleep 0.5
show >>"$log"
rules >>"$log"; rtos >>"$log"
show | grep -q '"hints_kernel":1,' || gp_fail "the hint did not come through the kernel's group"
show | grep -q '"carrier":"kernel"' || gp_fail "phase not recorded as carried by the kernel"
# gapctl re-emits the daemon's JSON with sorted keys: one field per grep.
for f in '"kind":"alltoall"' '"algorithm":"pairwise"' '"bytes_per_peer":1048576' '"comm_size":2' \
         '"remote":"10.0.0.2"' '"sockets":1' '"paced":1' '"rto":1'; do
    show | grep -q "$f" || gp_fail "phase record lacks $f"
done
rules | grep -q '"dst":"10.0.0.2/32"' || gp_fail "no flow rule for the peer during the phase"
rules | grep -q '"rate":10000000' || gp_fail "flow rule rate is not 10mbit"
rtos | grep -q "\"local\":\"$local_end\"" || gp_fail "no RTO override on the rank's socket ($local_end)"
say end "$phase" >/dev/null
sleep 0.5
rules | grep -q '10.0.0.2' && gp_fail "flow rule left after the phase"
rtos | grep -q "$local_end" && gp_fail "RTO override left after the phase"
show | grep -q '"ended":"end"' || gp_fail "ended phase not in the history"
echo "phase: live during, gone after" >>"$log"

# --- one rank's phases back to back, the first still lingering when the second begins: they
# never send at once, so the rule paces at one phase's rate, not at the sum of both
sed -i 's/^phase_timeout = "60s"$/phase_timeout = "60s"\nlinger = "3s"/' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
first=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
say end "$first" >/dev/null
second=$(say begin alltoall 65536 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$first" ] && [ -n "$second" ] || gp_die "begin failed (linger)"
sleep 0.5
rules >>"$log"
show | grep -q '"phases_lingering":1' || gp_fail "the first phase is not lingering"
rules | grep -q '"rate":10000000' || gp_fail "a lingering phase and the next one of the same rank add up: $(rules)"
say end "$second" >/dev/null
rule_gone "flow rule left after both phases' linger" 60 0.1
sed -i '/^linger = "3s"$/d' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
echo "lingering phase and the next of the same rank: one share" >>"$log"

# --- linger_idle with the module backend: past linger, the rule and the override stay while
# the rank writes nothing on its socket (sock_diag, tcp_diag), and go at the tick after a write
sed -i 's/^linger_idle = "0s"$/linger_idle = "2s"/' /run/gappace/gappaced.toml
grep -q '^linger_idle = "2s"$' /run/gappace/gappaced.toml || gp_die "linger_idle not set in the config"
kill -HUP "$daemon"
sleep 0.5
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed (linger_idle)"
sleep 0.3
say end "$phase" >/dev/null
sleep 0.6 # linger (50 ms) and several ticks: the baseline is taken, then compared
rules | grep -q '10.0.0.2' || gp_fail "linger_idle: the idle socket's flow rule went past linger"
rtos | grep -q "\"local\":\"$local_end\"" || gp_fail "linger_idle: the idle socket's RTO override went past linger"
show | grep -q '"phases_lingering":1' || gp_fail "linger_idle: no phase lingering"
sent=$(say send 20000)
case $sent in sent*) ;; *) gp_fail "linger_idle: the client could not write: $sent" ;; esac
rule_gone "linger_idle: a write did not release the rule within 0.5 s" 10 0.05
rtos | grep -q "$local_end" && gp_fail "linger_idle: a write did not release the RTO override"
grep -q 'linger_idle:' /results/gappaced.log && gp_fail "linger_idle: the daemon could not read the socket table: $(grep linger_idle: /results/gappaced.log)"
sed -i 's/^linger_idle = "2s"$/linger_idle = "0s"/' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
echo "linger_idle: kept while idle, released by a write" >>"$log"

# --- a share above the qdisc's link rate (a bottleneck described faster than this host's own
# link): the rule is installed at the link rate, not refused by the kernel (ERANGE)
sed -i 's/^capacity = "10mbit"$/capacity = "400mbit"/' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed (clamp)"
sleep 0.5
rules >>"$log"; show >>"$log"
rules | grep -q '"rate":100000000' || gp_fail "a rule above the link rate is not clamped to it: $(rules)"
show | grep -q 'clamped to the link rate from 400' || gp_fail "the clamp is not shown in the live settings"
show | grep -q 'exceeds the link rate' && gp_fail "the kernel refused the rule (see recent_errors)"
say end "$phase" >/dev/null
sleep 0.5
rules | grep -q '10.0.0.2' && gp_fail "flow rule left after the clamped phase"
sed -i 's/^capacity = "400mbit"$/capacity = "10mbit"/' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
echo "share above the link rate: rule at the link rate" >>"$log"

# --- [pacing] pacer = "host", and a phase whose start overflows the queue share the models plan
# with (one flow into a queue of one packet): the rule joins the device's host group
# (GAPPACE_A_RULE_GROUP) at the sum of the group's shares, and goes at the phase end
sed -i 's/^frame_overhead = 0$/frame_overhead = 0\npacer = "host"/; s/^queue_packets = 4$/queue_packets = 1/' \
    /run/gappace/gappaced.toml
grep -q '^pacer = "host"$' /run/gappace/gappaced.toml || gp_die "pacer not set in the config"
kill -HUP "$daemon"
sleep 0.5
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed (host group)"
sleep 0.5
rules >>"$log"; show >>"$log"
rules | grep -q '"dst":"10.0.0.2/32","rate":10000000,"group":1735418880' \
    || gp_fail "the host pacer's rule is not in the daemon's group at 10mbit: $(rules)"
show | grep -q 'host group 1735418880 at 10Mbit' || gp_fail "the host group is not shown in the live settings"
say end "$phase" >/dev/null
sleep 0.5
rules | grep -q '10.0.0.2' && gp_fail "group rule left after the phase"
sed -i '/^pacer = "host"$/d; s/^queue_packets = 1$/queue_packets = 4/' /run/gappace/gappaced.toml
kill -HUP "$daemon"
sleep 0.5
echo "host pacer: the rule in the device's group" >>"$log"

# --- two connections to one host, each a peer of its own (the shim names peers by their
# connections' tuples: two ranks on one host). One rule paces both, at what they send at
# once: all at once (linear), 2 x 5mbit (C/k with k = 2 connections sending together); one
# at a time (pairwise), one connection's 10mbit. Either way the bottleneck's 10mbit.
conn2=$(say connect 10.0.0.2 6001)
echo "second connection: $conn2" >>"$log"
two_connections() { # ALGORITHM-WORDS...
    local phase
    phase=$(say begin alltoall 1048576 "$@" fd | awk '/^phase/{print $2}')
    sleep 0.5
    rules >>"$log"
    rules | grep -q '"dst":"10.0.0.2/32","rate":10000000' ||
        gp_fail "two connections to one host ($*): the rule is not at 10mbit: $(rules)"
    say end "$phase" >/dev/null
    rule_gone "the two connections' rule left after the phase" 60 0.1
}
two_connections linear
two_connections
echo "two connections to one host: one rule, at what they send at once" >>"$log"

# --- another uid names our connection: nothing may change
mkfifo /tmp/o.in /tmp/o.out
GP_AS_UID=65534 gp-hintclient </tmp/o.in >/tmp/o.out 2>&1 &
exec 7>/tmp/o.in 8</tmp/o.out
echo "begin alltoall 1048576 10.0.0.2" >&7; read -t 5 r <&8
echo "other uid: $r" >>"$log"
sleep 0.5
show | grep -q '"uid":65534' || gp_fail "the other uid's hint did not arrive (stamped uid 65534)"
rules | grep -q '10.0.0.2' && gp_fail "another uid's hint installed a flow rule"
rtos | grep -q "$local_end" && gp_fail "another uid's hint changed our socket"
echo quit >&7

# --- the daemon dies mid-phase: the kernel ends its leases
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
sleep 0.5
rules | grep -q '10.0.0.2' || gp_fail "no rule before the kill"
kill -9 "$daemon"
wait "$daemon" 2>/dev/null
sleep 1
rules | grep -q '10.0.0.2' && gp_fail "rule survived the daemon (lease not released)"
rtos | grep -q "$local_end" && gp_fail "RTO override survived the daemon"
echo "daemon SIGKILL: rule and override released by the kernel" >>"$log"

# --- without a daemon the library counts the kernel's ESRCH, nothing blocks
say begin alltoall 1048576 10.0.0.2 >/dev/null
# The library's thread sends and counts on its own time: wait (bounded) for it.
i=0
while :; do
    st=$(say stats)
    case $st in *'"carrier_errors":0'*) ;; *) break ;; esac
    [ "$i" -lt 20 ] || break
    i=$((i + 1))
    sleep 0.1
done
echo "no daemon: $st" >>"$log"
echo "$st" | grep -q '"carrier":1' || gp_fail "library not on the kernel carrier: $st"
echo "$st" | grep -q '"carrier_errors":0' && gp_fail "no daemon, but no carrier error counted: $st"
echo quit >&5
wait "$client" 2>/dev/null
cat /results/gappaced.log >>"$log"
gapctl qdisc detach dev eth0
