#!/bin/sh
# hints — collective-phase hints through the kernel (GAPPACE_CMD_HINT and the
# "hints" multicast group): bad hints are refused with errno and message; a
# hint from root and one from uid 65534 reach a listener with the sender's pid,
# uid and netns stamped by the kernel; an unprivileged process cannot
# subscribe; without a listener the sender gets ESRCH; a hint stays in its
# sender's netns; the module unloads with a listener subscribed.
. "$GP_LIB"

gp_load_module gappace
ip link set lo up
log=$(gp_result hints.txt)
ns=hints$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
pids=
cleanup() {
    # shellcheck disable=SC2086 # a list of pids
    [ -n "$pids" ] && kill $pids 2>/dev/null
    ip netns del "$ns" 2>/dev/null
}
trap cleanup EXIT

# inode of the netns a command runs in: "net:[4026531840]" -> 4026531840
netns_inode() {
    "$@" readlink /proc/self/ns/net | tr -cd '0-9'
}

# field JSON KEY: the first value of KEY (quotes dropped)
field() {
    echo "$1" | grep -o "\"$2\":[^,}]*" | head -n 1 | cut -d: -f2- | tr -d '"'
}

# start_listener NAME COUNT TIMEOUT_MS [PREFIX...]: gp-nlprobe --listen-hints in
# the background (PREFIX: e.g. /usr/sbin/ip netns exec NS); returns once it has
# joined the group. Its pid goes to NAME_pid, its hints to results/NAME.jsonl.
start_listener() {
    local name=$1 count=$2 timeout=$3 out err pid i=0
    shift 3
    out=$(gp_result "$name.jsonl")
    err=$(gp_result "$name.err")
    "$@" gp-nlprobe --listen-hints "$count" --timeout-ms "$timeout" >"$out" 2>"$err" &
    pid=$!
    eval "${name}_pid=$pid"
    pids="$pids $pid"
    while [ "$i" -lt 200 ]; do
        grep -q "listening for hints" "$err" && return 0
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
        i=$((i + 1))
    done
    gp_fail "listener $name did not subscribe: $(cat "$err")"
}

# finish_listener NAME: waits for it; it must have received its COUNT hints
finish_listener() {
    local pid rc
    eval "pid=\$${1}_pid"
    wait "$pid"
    rc=$?
    echo "listener $1 exit $rc: $(cat "$(gp_result "$1.err")")" >>"$log"
    [ "$rc" = 0 ] || gp_fail "listener $1 exited $rc: $(cat "$(gp_result "$1.err")")"
}

# expected_hint SENT_JSON: the line a listener must print for gp-nlprobe
# --send-hint's hint, with the stamps the kernel must have added.
expected_hint() {
    printf '{"event":"begin","phase_id":%s,"kind":"alltoall","algorithm":"pairwise","flags":3,' "$(field "$1" phase_id)"
    printf '"bytes_per_peer":1048576,"comm_size":4,"rank":0,"repetitions":10,'
    printf '"sender_pid":%s,"sender_uid":%s,"sender_netns":%s,' "$(field "$1" pid)" "$(field "$1" uid)" "$(field "$1" netns)"
    printf '"peers":[{"daddr":"10.0.0.2","rank":1},'
    printf '{"saddr":"10.0.0.1","daddr":"10.0.0.2","sport":40000,"dport":6000,"rank":2},'
    printf '{"daddr":"fd00::3","rank":3}]}\n'
}

# expect_hint WHAT LISTENER SENT_JSON [LINE]: line LINE (default 1) of the
# listener's output is exactly the hint that was sent, stamped
expect_hint() {
    local got want
    got=$(sed -n "${4:-1}p" "$(gp_result "$2.jsonl")")
    want=$(expected_hint "$3")
    echo "$1: got  $got" >>"$log"
    echo "$1: want $want" >>"$log"
    [ "$got" = "$want" ] || gp_fail "$1: listener $2 got '$got', want '$want'"
}

init_inode=$(netns_inode)
echo "initial netns: $init_inode" >>"$log"

# --- bad hints: each refused with the right errno and message (no listener anywhere)
gp-nlprobe -j --only hint_ --dev lo --plain-dev lo >"$(gp_result nlprobe-hints.json)" \
    || gp_fail "gp-nlprobe: some bad hint was not refused properly"
gp-nlprobe --only hint_ --dev lo --plain-dev lo >>"$log" 2>&1
cases=$(grep -o '"case"' "$(gp_result nlprobe-hints.json)" | wc -l)
[ "$cases" -ge 20 ] || gp_fail "only $cases hint cases ran"

# --- nobody listens: ESRCH with the kernel's message
out=$(gp-nlprobe --send-hint --phase-id 100)
rc=$?
echo "no listener: [$rc] $out" >>"$log"
[ "$rc" = 1 ] || gp_fail "a hint without listener: exit $rc, want 1 ($out)"
case $out in
    *'"sent":false,'*'"errno":3,'*'no daemon listens for hints'*) ;;
    *) gp_fail "a hint without listener: '$out', want ESRCH and 'no daemon listens for hints'" ;;
esac

# --- an unprivileged process cannot subscribe
err=$(gp-nlprobe --listen-hints 1 --timeout-ms 2000 --as-uid 65534 2>&1 >/dev/null)
rc=$?
echo "unprivileged listener: [$rc] $err" >>"$log"
[ "$rc" = 3 ] || gp_fail "an unprivileged listener: exit $rc, want 3 (subscription refused): $err"
case $err in *"Operation not permitted"*) ;; *) gp_fail "unprivileged listener said '$err', want EPERM" ;; esac

# --- root's hint and uid 65534's hint reach the listener, stamped
start_listener main 2 30000
sent_root=$(gp-nlprobe --send-hint --phase-id 101) || gp_fail "root's hint refused: $sent_root"
sent_nobody=$(gp-nlprobe --send-hint --phase-id 102 --as-uid 65534) || gp_fail "uid 65534's hint refused: $sent_nobody"
echo "sent: $sent_root / $sent_nobody" >>"$log"
finish_listener main
[ "$(field "$sent_root" uid)" = 0 ] && [ "$(field "$sent_root" netns)" = "$init_inode" ] \
    || gp_fail "root's sender is not uid 0 in the initial netns: $sent_root"
[ "$(field "$sent_nobody" uid)" = 65534 ] || gp_fail "the probe did not become uid 65534: $sent_nobody"
[ "$(field "$sent_root" pid)" != "$(field "$sent_nobody" pid)" ] || gp_fail "two senders, one pid"
expect_hint "root's hint" main "$sent_root" 1
expect_hint "uid 65534's hint" main "$sent_nobody" 2
[ "$(wc -l <"$(gp_result main.jsonl)")" = 2 ] || gp_fail "listener main got more than 2 hints"

# --- a hint stays in its sender's netns
ip netns add "$ns" || gp_die "ip netns add $ns"
/usr/sbin/ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=cubic >/dev/null 2>&1
ns_inode=$(netns_inode /usr/sbin/ip netns exec "$ns")
echo "second netns $ns: $ns_inode" >>"$log"
[ -n "$ns_inode" ] && [ "$ns_inode" != "$init_inode" ] || gp_fail "netns $ns has inode '$ns_inode'"
start_listener first 1 30000
start_listener second 1 30000 /usr/sbin/ip netns exec "$ns"
# sent first: had it leaked, listener "first" would report it instead of 202
sent_ns=$(/usr/sbin/ip netns exec "$ns" gp-nlprobe --send-hint --phase-id 201) || gp_fail "hint in $ns refused: $sent_ns"
sent_init=$(gp-nlprobe --send-hint --phase-id 202) || gp_fail "hint in the initial netns refused: $sent_init"
echo "sent: $sent_ns / $sent_init" >>"$log"
finish_listener first
finish_listener second
[ "$(field "$sent_ns" netns)" = "$ns_inode" ] || gp_fail "the sender in $ns saw netns $(field "$sent_ns" netns)"
expect_hint "hint from $ns" second "$sent_ns"
expect_hint "hint from the initial netns" first "$sent_init"
# a listener elsewhere does not make a netns without one listen: ESRCH there
start_listener third 1 30000
out=$(/usr/sbin/ip netns exec "$ns" gp-nlprobe --send-hint --phase-id 301)
rc=$?
echo "no listener in $ns, one in the initial netns: [$rc] $out" >>"$log"
case $rc:$out in
    1:*'"errno":3,'*'no daemon listens for hints'*) ;;
    *) gp_fail "hint in $ns with a listener only in the initial netns: [$rc] $out, want ESRCH" ;;
esac
sent_init=$(gp-nlprobe --send-hint --phase-id 302) || gp_fail "hint in the initial netns refused: $sent_init"
finish_listener third
expect_hint "hint after the one refused in $ns" third "$sent_init"

# --- the module unloads while a listener is subscribed
start_listener stale 1 60000
gp_check "rmmod with a subscribed listener" rmmod gappace
out=$(gp-nlprobe --send-hint --phase-id 401 2>&1)
rc=$?
echo "after rmmod: [$rc] $out" >>"$log"
[ "$rc" != 0 ] || gp_fail "a hint was accepted without the module: $out"
kill "$stale_pid" 2>/dev/null
wait "$stale_pid" 2>/dev/null
[ ! -s "$(gp_result stale.jsonl)" ] || gp_fail "the stale listener got: $(cat "$(gp_result stale.jsonl)")"
cat "$log"
