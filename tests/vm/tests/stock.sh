#!/bin/sh
# stock — the stock backend (no gappace module) on a Debian kernel: what a cluster runs before
# or without insmod. A rank (gp-hintclient, one TCP connection to the peer netns) sends hints
# through libgapctl to the daemon's socket; gappaced (backend "stock", [rto] stock_floor
# "auto") caps the rank's socket with SO_MAX_PACING_RATE through pidfd_getfd and floors the RTO:
# on kernels without TCP_RTO_MIN_US (before 6.15, Debian 12's 6.1 and 6.12) with a host route
# to the peer (rto_min lock, protocol 167), else with the socket's own option. Checked: both
# live during the phase and gone after it; SIGKILL of the daemon mid-phase, then a new daemon,
# puts them back from the state file; stock_floor "socket" on a kernel without the option is
# refused at start with a message and exit code 1, and leaves nothing behind; where no process
# may take another's fds (Yama ptrace_scope 3), the cap fails, reported, and the route floors
# (on any kernel: "auto" falls back to it where it may not borrow the socket).
. "$GP_LIB"

gp_load_kmod tcp_diag
gp_wire_up
log=$(gp_result stock.txt)
lsmod | grep -q '^gappace ' && gp_die "the gappace module is loaded: this test is for the stock backend"

# Two sinks (busybox nc takes one connection each): the rank's connection, and a later one.
sleep 600 | gp_peer nc -l -p 6000 >/dev/null 2>&1 &
sleep 600 | gp_peer nc -l -p 6001 >/dev/null 2>&1 &
sleep 0.5

mkdir -p /run/gappace
conf=/run/gappace/gappaced.toml
# Every phase reaches the daemon: none is skipped on advice with its settings held.
gp_daemon_config stock | sed 's/^linger_idle = "0s"$/&\nquiet_remedied = "0s"/' >"$conf"
grep -q '^quiet_remedied = "0s"$' "$conf" || gp_die "quiet_remedied not set in the config"

daemon=
start_daemon() { gp_start_daemon "$conf"; daemon=$GP_DAEMON; }
start_daemon
gapctl -j daemon show | grep -q '"backend":"stock"' || gp_die "the daemon is not on the stock backend: $(gapctl -j daemon show | head -c 300)"

# The rank: a client driven through two FIFOs (fd 5 in, fd 6 out), on the daemon's socket.
gp_start_hintclient socket
client=$GP_CLIENT

conn=$(say connect 10.0.0.2 6000)
echo "client: $conn" >>"$log"
case $conn in connected*) ;; *) gp_die "client could not connect: $conn" ;; esac

show() { gapctl -j daemon show; }
floor_route() { ip route show 10.0.0.2 proto 167; }
orig_pacing=$(say pacing)
orig_rto=$(say rto_min)
echo "before: $orig_pacing, $orig_rto" >>"$log"
# "rto_min -": the kernel has no TCP_RTO_MIN_US, so "auto" floors with the peer's route.
case $orig_rto in
"rto_min -") by_route=1 ;;
"rto_min "[0-9]*) by_route= ;;
*) gp_die "client: rto_min said '$orig_rto'" ;;
esac
if [ -n "$by_route" ]; then echo "floor by: the peer's route" >>"$log"; else echo "floor by: the socket's option" >>"$log"; fi

# The RTO the kernel computes for the connection (ss's rto:, in ms) after it carried data and
# took its ACKs: what a lost tail would wait.
rto_ms() {
    say send 65536 >/dev/null
    sleep 0.5
    ss -Hti dst 10.0.0.2:6000 | tr ' ' '\n' | sed -n 's/^rto://p' | head -n 1
}
stock_rto=$(rto_ms)
echo "rto before: $stock_rto ms" >>"$log"
[ "${stock_rto%.*}" -ge 200 ] 2>/dev/null || gp_die "the connection's RTO before any phase is '$stock_rto' ms, not Linux's 200 ms minimum"

# The client's replies list every held connection (a second one is opened below): the value
# expected on each.
conns=1
each() { # WORD VALUE: the reply "WORD VALUE VALUE..." with VALUE once per connection
    r=$1; i=0; while [ $i -lt $conns ]; do r="$r $2"; i=$((i + 1)); done; echo "$r"
}

# Both settings while the phase runs: the cap at C/k = 10 Mbit/s (1250000 bytes/s), the floor.
applied() { # WHAT
    [ "$(say pacing)" = "$(each pacing 1250000)" ] || gp_fail "$1: the socket is not capped at 1250000 bytes/s: $(say pacing)"
    if [ -n "$by_route" ]; then
        floor_route | grep -q 'rto_min lock 5ms' || gp_fail "$1: no floor route to the peer: $(ip route show 10.0.0.2)"
    else
        [ "$(say rto_min)" != "$orig_rto" ] || gp_fail "$1: the socket's RTO minimum did not change: $(say rto_min)"
        [ -z "$(floor_route)" ] || gp_fail "$1: a floor route although the socket has the option"
    fi
}
reverted() { # WHAT
    [ "$(say pacing)" = "$(each pacing "${orig_pacing#pacing }")" ] || gp_fail "$1: the cap is still there: $(say pacing), was $orig_pacing"
    [ "$(say rto_min)" = "$(each rto_min "${orig_rto#rto_min }")" ] || gp_fail "$1: the RTO minimum is not back: $(say rto_min), was $orig_rto"
    [ -z "$(floor_route)" ] || gp_fail "$1: the floor route is still there: $(floor_route)"
}

# --- a phase: live during, gone after
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed"
sleep 0.5
show >>"$log"; ip route show >>"$log"
for f in '"kind":"alltoall"' '"sockets":1' '"paced":1' '"rto":1' '"carrier":"socket"'; do
    show | grep -q "$f" || gp_fail "phase record lacks $f"
done
applied "phase"
# A lowered floor reaches the estimate as rttvar decays, a quarter per round trip: below Linux's
# 200 ms minimum (which stock TCP never goes under) after a few sends.
i=0
while :; do
    floored_rto=$(rto_ms)
    i=$((i + 1))
    [ "${floored_rto%.*}" -lt 200 ] 2>/dev/null || [ $i -ge 5 ] || continue
    break
done
echo "rto during the phase: $floored_rto ms after $i sends of 64 KiB" >>"$log"
[ "${floored_rto%.*}" -lt 200 ] 2>/dev/null || gp_fail "the floor did not reach the connection: its RTO is '$floored_rto' ms"
say end "$phase" >/dev/null
sleep 0.5
reverted "after the phase"
# The live connection keeps its lowered estimate (the kernel raises rttvar only on a large
# deviation, daemon/stock/README.md "Pitfalls"): recorded, not asserted. What the revert does
# restore: a connection opened now gets Linux's 200 ms minimum again.
echo "rto after the phase, the same connection: $(rto_ms) ms (the estimator keeps it)" >>"$log"
conn2=$(say connect 10.0.0.2 6001)
case $conn2 in connected*) ;; *) gp_die "client could not connect again: $conn2" ;; esac
conns=2
say send 65536 >/dev/null
sleep 0.5
new_rto=$(ss -Hti dst 10.0.0.2:6001 | tr ' ' '\n' | sed -n 's/^rto://p' | head -n 1)
echo "rto after the phase, a new connection: $new_rto ms" >>"$log"
[ "${new_rto%.*}" -ge 200 ] 2>/dev/null || gp_fail "a connection opened after the phase has an RTO of '$new_rto' ms, not Linux's 200 ms minimum"
echo "phase: live during, gone after" >>"$log"

# --- the daemon killed mid-phase: the next one restores from the state file
phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
[ -n "$phase" ] || gp_die "begin failed (kill)"
sleep 0.5
applied "before the kill"
kill -KILL "$daemon"
wait "$daemon" 2>/dev/null
[ "$(say pacing)" = "$(each pacing 1250000)" ] || gp_fail "the cap went with the killed daemon: nothing to restore"
start_daemon
sleep 0.3
reverted "after the restart"
say end "$phase" >/dev/null
grep -q 'restored' /results/gappaced.log || gp_fail "the new daemon did not report a restore: $(tail -n 3 /results/gappaced.log)"
echo "SIGKILL mid-phase: restored by the next daemon" >>"$log"
kill -TERM "$daemon"
wait "$daemon" 2>/dev/null

# --- stock_floor "socket" where the kernel has no TCP_RTO_MIN_US: refused at start
if [ -n "$by_route" ]; then
    sed 's/^floor = "5ms"$/floor = "5ms"\nstock_floor = "socket"/' "$conf" >/run/gappace/socket.toml
    grep -q '^stock_floor = "socket"$' /run/gappace/socket.toml || gp_die "stock_floor not set in the config"
    out=$(gappaced --config /run/gappace/socket.toml 2>&1 &
          pid=$!; i=0
          while kill -0 $pid 2>/dev/null && [ $i -lt 50 ]; do i=$((i + 1)); sleep 0.1; done
          kill -KILL $pid 2>/dev/null && echo "still running after 5 s"
          wait $pid; echo "exit $?")
    echo "stock_floor socket: $out" >>"$log"
    case $out in *"no TCP_RTO_MIN_US"*"exit 1") ;; *) gp_fail "stock_floor socket without the option: want the reason and exit 1, got: $out" ;; esac
    [ -z "$(floor_route)" ] || gp_fail "the refused daemon left a route"
    [ "$(say pacing)" = "$(each pacing "${orig_pacing#pacing }")" ] || gp_fail "the refused daemon changed the socket"
fi

# --- a kernel that lets nobody take another process's fds (Yama ptrace_scope 3, which cannot
# be undone until reboot: this guest's last section): pidfd_getfd says EPERM, so the cap fails
# and is reported, while the daemon still finds the rank's socket in the socket table (by uid)
# and floors it by the peer's route. Where the kernel has TCP_RTO_MIN_US, "auto" would floor
# the socket itself through pidfd_getfd; denied, it takes the peer's route as well (on the host,
# tests/host/stock_backend.sh checks that with pidfd_getfd failed by LD_PRELOAD).
if [ -w /proc/sys/kernel/yama/ptrace_scope ]; then
    echo 3 >/proc/sys/kernel/yama/ptrace_scope || gp_die "cannot set kernel.yama.ptrace_scope"
    start_daemon
    phase=$(say begin alltoall 1048576 10.0.0.2 | awk '/^phase/{print $2}')
    [ -n "$phase" ] || gp_die "begin failed (ptrace_scope 3)"
    sleep 0.5
    show >>"$log"
    for f in '"sockets":2' '"paced":0' '"rto":1' 'Operation not permitted'; do
        show | grep -q "$f" || gp_fail "ptrace_scope 3: the phase record lacks $f"
    done
    floor_route | grep -q 'rto_min lock 5ms' || gp_fail "ptrace_scope 3: no floor route to the peer: $(ip route show 10.0.0.2)"
    [ "$(say pacing)" = "$(each pacing "${orig_pacing#pacing }")" ] || gp_fail "ptrace_scope 3: a cap although pidfd_getfd is denied: $(say pacing)"
    say end "$phase" >/dev/null
    sleep 0.5
    [ -z "$(floor_route)" ] || gp_fail "ptrace_scope 3: the floor route is still there after the phase"
    echo "ptrace_scope 3: caps refused (EPERM, reported), the floor by the route" >>"$log"
    kill -TERM "$daemon"
    wait "$daemon" 2>/dev/null
else
    echo "ptrace_scope 3: skipped, this kernel has no Yama" >>"$log"
fi

say quit >/dev/null
exec 5>&- 6<&-
kill "$client" 2>/dev/null
echo "stock backend: done" >>"$log"
