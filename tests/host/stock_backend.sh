#!/usr/bin/env bash
# The control plane end to end on this host's own kernel, stock backend (no module):
# a process in namespace A holds TCP connections to B and sends hints through libgapctl;
# gappaced (in A) must pace exactly that process's sockets (SO_MAX_PACING_RATE) and floor
# their RTO (the per-peer route with rto_min lock and quickack; on Linux 6.15+ by default each
# socket's own TCP_RTO_MIN_US), revert both at the phase end, refuse what it must,
# survive malformed hints and configs, undo a killed predecessor's settings on restart (and
# start although some cannot be undone), refuse to run beside a live daemon of its own, and
# floor by the route where pidfd_getfd is denied (deny_pidfd_getfd.so, LD_PRELOAD).
#
# usage: stock_backend.sh BUILD_DIR        (root; uses ip netns; everything bounded in time)
set -euo pipefail
BUILD=$(cd "${1:?usage: stock_backend.sh BUILD_DIR}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
[[ $(id -u) -eq 0 ]] || { echo "SKIP: needs root"; exit 77; }

TAG=gp$RANDOM
NSA=$TAG-a NSB=$TAG-b
TMP=$(mktemp -d /tmp/gappace-stock.XXXXXX)
DAEMON_PID="" CLIENT_PID="" SINK_PID="" OTHER_PID=""
FAILS=0
export GAPCTL_LIB=$BUILD/libctl/libgapctl.so.1 GAPPACE_HINTS_SOCK=$TMP/hints.sock GAPPACE_CONTROL_SOCK=$TMP/control.sock
GAPCTL=$BUILD/tools/gapctl/gapctl

cleanup() {
	set +e
	for p in $CLIENT_PID $OTHER_PID $DAEMON_PID $SINK_PID; do kill -KILL "$p" 2>/dev/null; done
	ip netns pids "$NSA" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns pids "$NSB" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$NSA" 2>/dev/null; ip netns del "$NSB" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

ok() { echo "ok   $*"; }
fail() { echo "FAIL $*"; FAILS=$((FAILS + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else fail "$what"; fi; }
inA() { ip netns exec "$NSA" "$@"; }

ip netns add "$NSA"; ip netns add "$NSB"
ip link add "$TAG-va" type veth peer name "$TAG-vb"
ip link set "$TAG-va" netns "$NSA"; ip link set "$TAG-vb" netns "$NSB"
for ns in "$NSA" "$NSB"; do
	ip -n "$ns" link set lo up
	ip netns exec "$ns" sysctl -qw net.ipv4.tcp_congestion_control=cubic
done
ip -n "$NSA" addr add 10.213.0.1/24 dev "$TAG-va"; ip -n "$NSA" link set "$TAG-va" up
ip -n "$NSB" addr add 10.213.0.2/24 dev "$TAG-vb"; ip -n "$NSB" link set "$TAG-vb" up
ip -n "$NSA" addr add fd00:213::1/64 dev "$TAG-va" nodad
ip -n "$NSB" addr add fd00:213::2/64 dev "$TAG-vb" nodad
echo "cc: $(ip netns exec "$NSA" sysctl -n net.ipv4.tcp_congestion_control)"

# A sink in B, on IPv4 and IPv6: accepts and drains, for at most 120 s.
ip netns exec "$NSB" timeout 120 python3 -c '
import socket, threading
def drain(c):
    while c.recv(65536): pass
def serve(family, address):
    srv = socket.socket(family); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        srv.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
    srv.bind((address, 5001)); srv.listen(16)
    while True:
        c, _ = srv.accept(); threading.Thread(target=drain, args=(c,), daemon=True).start()
threading.Thread(target=serve, args=(socket.AF_INET6, "::"), daemon=True).start()
serve(socket.AF_INET, "0.0.0.0")
' &
SINK_PID=$!
for _ in $(seq 50); do
	[[ $(ip netns exec "$NSB" ss -Hltn "sport = :5001" | wc -l) -ge 2 ]] && break
	sleep 0.1
done

cat >"$TMP/gappaced.toml" <<CONF
[daemon]
backend = "stock"
hints_socket = "$TMP/hints.sock"
control_socket = "$TMP/control.sock"
state_file = "$TMP/state.json"
phase_timeout = "30s"
# Settings go right after END here, and every phase reaches the daemon (the linger_idle and
# quiet_remedied sections below turn those on for themselves).
linger_idle = "0s"
quiet_remedied = "0s"
# This test checks the actuation chain: the simple rule (pace and floor every crossing phase) and
# rates taken literally. The models' decisions are tested in daemon/tests and by bench-system.
[planner]
model = "default"
[pacing]
frame_overhead = 0
[rto]
# The route first; the socket option (the default where the kernel has it) has its own section.
stock_floor = "route"
floor = "5ms"
[[bottleneck]]
name = "b-side"
capacity = "100mbit"
queue_packets = 4
prefixes = ["10.213.0.2/32", "fd00:213::2/128"]
CONF

start_daemon() { # [NAME=VALUE...]: added to the daemon's environment
	# ip netns exec and env exec the daemon: $! is gappaced itself, so signals reach it.
	ip netns exec "$NSA" env "$@" "$BUILD/daemon/gappaced" --config "$TMP/gappaced.toml" 2>>"$TMP/daemon.log" &
	DAEMON_PID=$!
	for _ in $(seq 50); do [[ -S $TMP/control.sock ]] && "$GAPCTL" daemon show >/dev/null 2>&1 && return 0; sleep 0.1; done
	echo "gappaced did not start:"; cat "$TMP/daemon.log"; return 1
}
show() { "$GAPCTL" -j daemon show; }
counter() { show | jq -r ".counters.$1"; }

# A client: a stand-in rank we talk to line by line through two FIFOs.
start_client() { # NAME IN_FD OUT_FD [UID]
	local name=$1 in_fd=$2 out_fd=$3
	local -a run=(ip netns exec "$NSA")
	[[ -n ${4:-} ]] && run+=(setpriv --reuid "$4" --regid "$4" --clear-groups)
	mkfifo "$TMP/$name.in" "$TMP/$name.out"
	"${run[@]}" timeout 300 "$BUILD/tools/probes/gp-hintclient" <"$TMP/$name.in" >"$TMP/$name.out" 2>&1 &
	eval "exec $in_fd>\"$TMP/$name.in\" $out_fd<\"$TMP/$name.out\""
	LAST_PID=$!
}
ask() { # IN_FD OUT_FD command... -> one reply line (5 s at most)
	local in_fd=$1 out_fd=$2 reply; shift 2
	echo "$*" >&"$in_fd"
	read -r -t 5 reply <&"$out_fd" || reply="(no reply)"
	echo "$reply"
}
say() { ask 5 6 "$@"; }
# After a daemon restart the client's library reconnects on a later hint, at most once a
# second: send small phases until the new daemon has seen one (3 s at most).
await_carrier() {
	local _
	for _ in $(seq 15); do
		say end "$(say begin alltoall 1000 10.213.0.2 | awk '/^phase/{print $2}')" >/dev/null
		sleep 0.2
		(($(counter phases_begun) > 0)) && return 0
	done
	return 1
}

start_daemon
chmod 0777 "$TMP" # the unprivileged client must reach the socket (which is 0666)
start_client client 5 6; CLIENT_PID=$LAST_PID
conn=$(say connect 10.213.0.2 5001); echo "client: $conn"
[[ $conn == connected* ]] || { echo "FAIL the client could not connect"; exit 1; }
local_end=$(awk '{print $2}' <<<"$conn")
orig=$(say pacing)

# ---- a phase: settings live during it, gone after it
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
check "begin accepted" test -n "$phase"
sleep 0.3
route=$(ip -n "$NSA" route show 10.213.0.2 proto 167)
check "route with locked rto_min 5ms and no quickack (the default), proto 167: $route" \
	bash -c "[[ '$route' == *'rto_min lock 5ms'* && '$route' != *quickack* ]]"
during=$(say pacing)
check "the client's socket is paced to 100mbit (12500000 B/s): $during" test "$during" = "pacing 12500000"
ss_out=$(ip netns exec "$NSA" ss -tin dst 10.213.0.2) # -n: rates in bps, "current/cap"
check "ss shows the cap: $(grep -o "pacing_rate [^ ]*" <<<"$ss_out")" grep -Eq "pacing_rate [^ ]*/100000000bps" <<<"$ss_out"
check "daemon recorded kind/size/peers" \
	bash -c "$GAPCTL -j daemon show | jq -e '.phases[0] | .kind==\"alltoall\" and .bytes_per_peer==1048576 and .peers[0].remote==\"10.213.0.2\" and .sockets==1 and .paced==1 and .rto==1' >/dev/null"
check "state file records both settings" bash -c "jq -e '(.routes|length)==1 and (.pacing|length)==1' $TMP/state.json >/dev/null"
say end "$phase" >/dev/null
sleep 0.3
check "route gone after the phase" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
after=$(say pacing)
check "pacing restored ($orig)" test "$after" = "$orig"
check "history has the ended phase" bash -c "$GAPCTL -j daemon show | jq -e '.history[-1].ended==\"end\"' >/dev/null"
echo "hint->applied of that phase: $($GAPCTL -j daemon show | jq -c ".history[-1] | {apply_latency_ns, resolve_ns, backend_ns}")"

# ---- overlapping phases of one socket: the newest phase's cap. A phase at a third of the
# link (three peers) ends and lingers while the next one, at the whole link, runs: that one
# must get its own rate (the daemon kept the lower one for it)
phase=$(say begin alltoall 1048576 10.213.0.2 10.213.0.3 10.213.0.4 | awk '/^phase/{print $2}')
sleep 0.3
check "a third of 100mbit (4166666 B/s) for the three-peer phase ($(say pacing))" test "$(say pacing)" = "pacing 4166666"
say end "$phase" >/dev/null
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
check "the next phase, while the last one lingered, at its own 100mbit ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
say end "$phase" >/dev/null
sleep 0.3
check "both gone: the cap restored ($(say pacing))" test "$(say pacing)" = "$orig"

# ---- gapctl hint: a manual hint reaches the daemon (gapctl holds no sockets: nothing applied)
check "gapctl hint delivers begin+end" inA "$GAPCTL" hint alltoall --peers 10.213.0.2 --size 64k --hold 10ms
check "gapctl hint recorded" bash -c "$GAPCTL -j daemon show | jq -e '.history[-1] | .kind==\"alltoall\" and .bytes_per_peer==65536 and .sockets==0' >/dev/null"
out=$("$GAPCTL" hint alltoal --peers 10.213.0.2 --size 1 2>&1) && rc=0 || rc=$?
check "gapctl hint: unknown kind is a usage error ($rc)" bash -c "[[ $rc -eq 2 && '$out' == *'unknown kind'* ]]"

# ---- a small phase: the burst fits the queue, so no pacing, but the RTO floor
phase=$(say begin alltoall 1000 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
check "small message: not paced" test "$(say pacing)" = "$orig"
check "small message: route still set" bash -c "ip -n $NSA route show 10.213.0.2 proto 167 | grep -q rto_min"
say end "$phase" >/dev/null

# ---- another uid cannot touch our sockets, even naming our exact connection
start_client other 7 8 65534; OTHER_PID=$LAST_PID
reply=$(ask 7 8 begin alltoall 1048576 10.213.0.2)
sleep 0.3
check "other uid's hint arrives ($reply)" bash -c "$GAPCTL -j daemon show | jq -e '.phases[] | select(.uid==65534) | .sockets==0 and .paced==0 and .rto==0' >/dev/null"
check "other uid: our socket unpaced" test "$(say pacing)" = "$orig"
check "other uid: no route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
echo quit >&7; wait "$OTHER_PID" 2>/dev/null || true; OTHER_PID=""

# ---- an IPv6 connection: its segments carry 20 bytes less payload, so its payload cap is its
# wire share less those (daemon/segments.hpp), and its route is an IPv6 one
start_client v6 7 8; OTHER_PID=$LAST_PID
conn6=$(ask 7 8 connect fd00:213::2 5001)
check "IPv6 client connected ($conn6)" test "${conn6%% *}" = connected
phase=$(ask 7 8 begin alltoall 1048576 fd00:213::2 | awk '/^phase/{print $2}')
check "IPv6 begin accepted" test -n "$phase"
sleep 0.3
want6=$((100000000 * 1428 / 1448 / 8))
check "IPv6 socket capped at 100mbit of wire as IPv6 payload ($want6 B/s)" test "$(ask 7 8 pacing)" = "pacing $want6"
check "IPv6 route with locked rto_min 5ms, proto 167" \
	bash -c "ip -6 -n $NSA route show fd00:213::2 proto 167 | grep -q 'rto_min lock 5ms'"
check "the IPv4 socket is not touched by it" test "$(say pacing)" = "$orig"
ask 7 8 end "$phase" >/dev/null
sleep 0.3
check "IPv6 route gone after the phase" bash -c "[[ -z \$(ip -6 -n $NSA route show fd00:213::2 proto 167) ]]"
echo quit >&7; wait "$OTHER_PID" 2>/dev/null || true; OTHER_PID=""

# ---- malformed hints: counted, the daemon keeps running
before=$(counter hints_malformed)
inA python3 - "$TMP/hints.sock" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET); s.connect(sys.argv[1])
s.send(b"garbage")                                              # not a netlink message
s.send(struct.pack("=IHHII", 20, 0, 1, 0, 0) + bytes([4, 1, 0, 0]))  # genl header, wrong command
hdr = struct.pack("=IHHII", 28, 0, 1, 0, 0) + bytes([9, 1, 0, 0])
s.send(hdr + struct.pack("=HH", 8, 0x8004) + struct.pack("=HH", 4, 2))  # HINT nest without EVENT
PY
sleep 0.3
check "3 malformed hints counted" test "$(counter hints_malformed)" -eq $((before + 3))
check "daemon still running" kill -0 "$DAEMON_PID"

# ---- configs: --check-config and SIGHUP with a bad file
printf '[rto]\nfloor = "1s"\n' >"$TMP/bad.toml"
out=$("$BUILD/daemon/gappaced" --config "$TMP/bad.toml" --check-config 2>&1) && rc=0 || rc=$?
check "bad config refused with its line ($out)" bash -c "[[ $rc -eq 1 && '$out' == *'bad.toml:2: rto.floor: out of range'* ]]"
cp "$TMP/gappaced.toml" "$TMP/good.toml"; cp "$TMP/bad.toml" "$TMP/gappaced.toml"
kill -HUP "$DAEMON_PID"; sleep 0.3
check "SIGHUP with a bad config: counted, still running" bash -c "[[ \$($GAPCTL -j daemon show | jq .counters.config_errors) -eq 1 ]]"
cp "$TMP/good.toml" "$TMP/gappaced.toml"

# ---- scheduling: SCHED_FIFO at realtime_priority (default 10), the normal scheduler at 0
policy_of() { # PID -> "POLICY RT_PRIORITY" from /proc/PID/stat (fields 41 and 40; comm has no spaces)
	awk '{print $41, $40}' "/proc/$1/stat"
}
check "scheduling: the daemon runs SCHED_FIFO at priority 10 ($(policy_of "$DAEMON_PID"))" test "$(policy_of "$DAEMON_PID")" = "1 10"
check "scheduling: shown ($(show | jq -r .daemon.scheduling))" test "$(show | jq -r .daemon.scheduling)" = "SCHED_FIFO priority 10"
check "scheduling: in gapctl's text too" bash -c "$GAPCTL daemon show | grep -qx 'scheduling: SCHED_FIFO priority 10'"
sed -e 's/^phase_timeout = "30s"$/&\nrealtime_priority = 0/' "$TMP/good.toml" >"$TMP/gappaced.toml"
kill -HUP "$DAEMON_PID"; sleep 0.3
check "scheduling: realtime_priority = 0 and SIGHUP: the normal scheduler ($(policy_of "$DAEMON_PID"))" test "$(policy_of "$DAEMON_PID")" = "0 0"
check "scheduling: shown as normal" test "$(show | jq -r .daemon.scheduling)" = "normal"
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3
check "scheduling: back to SCHED_FIFO 10 on reload ($(policy_of "$DAEMON_PID"))" test "$(policy_of "$DAEMON_PID")" = "1 10"

# ---- [rto] quickack = true: the floor's route asks for quickack too, and goes with the phase
sed -e 's/^floor = "5ms"$/&\nquickack = true/' "$TMP/good.toml" >"$TMP/gappaced.toml"
grep -q '^quickack = true$' "$TMP/gappaced.toml" || { echo "FAIL the quickack config was not written"; exit 1; }
kill -HUP "$DAEMON_PID"; sleep 0.3
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
route=$(ip -n "$NSA" route show 10.213.0.2 proto 167)
check "quickack = true: the route has rto_min lock 5ms and quickack 1: $route" \
	bash -c "[[ '$route' == *'rto_min lock 5ms'* && '$route' == *'quickack 1'* ]]"
check "quickack = true: gapctl daemon show says so" \
	bash -c "$GAPCTL -j daemon show | jq -e '.settings[\"route 10.213.0.2\"] | test(\"quickack 1\")' >/dev/null"
say end "$phase" >/dev/null
sleep 0.3
check "quickack = true: route gone after the phase" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3

# ---- [rto] stock_floor "auto" (the default): on Linux 6.15+ the floor is the socket's own
# TCP_RTO_MIN_US, no route; it goes back with the phase, and a killed daemon's successor puts it back
if [[ $(say rto_min) == "rto_min -" ]]; then
	echo "SKIP stock_floor socket: this kernel has no TCP_RTO_MIN_US (Linux 6.15+)"
	sed -e 's/^stock_floor = "route"$/stock_floor = "socket"/' "$TMP/good.toml" >"$TMP/gappaced.toml"
	kill -HUP "$DAEMON_PID"; sleep 0.3
	check "stock_floor socket without the option: the reload is refused" \
		bash -c "$GAPCTL -j daemon show | jq -e '.recent_errors | any(test(\"no TCP_RTO_MIN_US\"))' >/dev/null"
else
	rto_orig=$(say rto_min)
	sed -e '/^stock_floor = "route"$/d' "$TMP/good.toml" >"$TMP/socket.toml"
	cp "$TMP/socket.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3
	phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
	sleep 0.3
	read -r _ rto_live <<<"$(say rto_min)"
	# 5 ms in whole jiffies: 5 ms at HZ=1000, 8 ms at 250, 10 at 100 (and never below 2 jiffies).
	check "stock_floor socket: the socket's TCP_RTO_MIN_US is the floor in jiffies ($rto_live us, was ${rto_orig#rto_min })" \
		bash -c "(( $rto_live >= 5000 && $rto_live <= 20000 ))"
	check "stock_floor socket: no route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
	check "stock_floor socket: still paced" test "$(say pacing)" = "pacing 12500000"
	check "stock_floor socket: the phase counts it" \
		bash -c "$GAPCTL -j daemon show | jq -e '.phases[0] | .rto==1 and .paced==1' >/dev/null"
	check "stock_floor socket: gapctl daemon show lists it" \
		bash -c "$GAPCTL -j daemon show | jq -e '.settings | to_entries | any(.key | startswith(\"rto \")) and any(.value | test(\"rto_min $rto_live us\"))' >/dev/null"
	check "stock_floor socket: the state file has the original" \
		bash -c "jq -e '(.routes|length)==0 and (.pacing|length)==1 and .pacing[0].original_rto_min_us==${rto_orig#rto_min } and .pacing[0].applied_rto_min_us==$rto_live' $TMP/state.json >/dev/null"
	say end "$phase" >/dev/null
	sleep 0.3
	check "stock_floor socket: back after the phase ($(say rto_min))" test "$(say rto_min)" = "$rto_orig"
	check "stock_floor socket: and the cap" test "$(say pacing)" = "$orig"
	# Killed mid-phase: the next daemon restores the floor from the state file.
	phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
	sleep 0.3
	check "stock_floor socket: floored before the kill" test "$(say rto_min)" = "rto_min $rto_live"
	kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
	start_daemon
	check "stock_floor socket: restart put the socket's RTO minimum back ($(say rto_min))" test "$(say rto_min)" = "$rto_orig"
	check "stock_floor socket: and its cap" test "$(say pacing)" = "$orig"
	check "stock_floor socket: the client's hints reach the restarted daemon" await_carrier
	# Where the daemon may not borrow the socket (pidfd_getfd denied to it: Yama's
	# ptrace_scope 3, an LSM; here deny_pidfd_getfd.so fails the call), "auto" floors the phase
	# by the peer's route instead, and only the cap fails.
	kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
	start_daemon LD_PRELOAD="$BUILD/tests/host/deny_pidfd_getfd.so"
	check "pidfd_getfd denied: the client's hints reach the daemon" await_carrier
	phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
	sleep 0.3
	route=$(ip -n "$NSA" route show 10.213.0.2 proto 167)
	check "pidfd_getfd denied: auto floors by the peer's route: $route" \
		bash -c "[[ '$route' == *'rto_min lock 5ms'* ]]"
	check "pidfd_getfd denied: the socket's own minimum untouched ($(say rto_min))" test "$(say rto_min)" = "$rto_orig"
	check "pidfd_getfd denied: no cap ($(say pacing))" test "$(say pacing)" = "$orig"
	check "pidfd_getfd denied: the phase counts the route, and reports the cap's EPERM alone" \
		bash -c "$GAPCTL -j daemon show | jq -e '.phases[0] | .rto==1 and .paced==0 and (.errors | any(test(\"^pace .*Operation not permitted\")) and all(test(\"^pace \")))' >/dev/null"
	say end "$phase" >/dev/null
	sleep 0.3
	check "pidfd_getfd denied: the route goes with the phase" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
	# "socket" asked for the socket's own floor and nothing else: denied, that is an error.
	sed -e 's/^floor = "5ms"$/&\nstock_floor = "socket"/' "$TMP/socket.toml" >"$TMP/gappaced.toml"
	kill -HUP "$DAEMON_PID"; sleep 0.3
	phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
	sleep 0.3
	check "pidfd_getfd denied, stock_floor socket: no route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
	check "pidfd_getfd denied, stock_floor socket: the floor's EPERM is reported" \
		bash -c "$GAPCTL -j daemon show | jq -e '.phases[0] | .rto==0 and (.errors | any(test(\"^rto .*Operation not permitted\")))' >/dev/null"
	say end "$phase" >/dev/null
	kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
	cp "$TMP/socket.toml" "$TMP/gappaced.toml"
	start_daemon
	check "pidfd_getfd allowed again: the client's hints reach the daemon" await_carrier
	# quickack is a route metric: with "socket" it is refused.
	sed -e 's/^floor = "5ms"$/&\nquickack = true\nstock_floor = "socket"/' "$TMP/socket.toml" >"$TMP/bad.toml"
	out=$(inA "$BUILD/daemon/gappaced" --check-config --config "$TMP/bad.toml" 2>&1) && rc=0 || rc=$?
	check "stock_floor socket with quickack refused ($out)" \
		bash -c "[[ $rc -eq 1 ]] && grep -q 'rto.quickack: needs the floor' <<<\"\$1\"" _ "$out"
fi
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3

# ---- quiet advice: with the RTO remedy off, a phase whose burst fits the queue changes
# nothing, so the daemon tells the client to skip alike phases for `quiet`; others still go
sed -e 's/^floor = "5ms"$/floor = "5ms"\n[remedies]\nrto = false/' -e 's/^phase_timeout = "30s"$/&\nquiet = "2s"/' \
	"$TMP/good.toml" >"$TMP/gappaced.toml"
kill -HUP "$DAEMON_PID"; sleep 0.3
advice_before=$(counter advice_sent); received_before=$(counter hints_received)
phase=$(say begin alltoall 1000 10.213.0.2 | awk '/^phase/{print $2}')
say end "$phase" >/dev/null
sleep 0.3
check "an inert phase brings advice ($(counter advice_sent) sent)" test "$(counter advice_sent)" -eq $((advice_before + 1))
received_before=$(counter hints_received)
quiet=$(say begin alltoall 1000 10.213.0.2 | awk '/^phase/{print $2}')
say end "$quiet" >/dev/null
check "the alike phase is quiet: its id has bit 63 ($quiet)" python3 -c "import sys; sys.exit(0 if int('$quiet') >> 63 else 1)"
check "the client counts it: $(say stats)" bash -c "[[ '$(say stats)' == *'\"hints_quiet\":1,'* ]]"
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
say end "$phase" >/dev/null
sleep 0.3
check "a phase that needs pacing is still sent (only it reached the daemon)" \
	test "$(counter hints_received)" -eq $((received_before + 2))
# Peers named by their connection's tuple: a phase that changes nothing is planned without
# looking up the sender's sockets; one that paces finds them.
phase=$(say begin allgather 1000 fd | awk '/^phase/{print $2}')
say end "$phase" >/dev/null
check "inert phase with tuple peers: no socket lookup ($(show | jq -c '.history[-1] | {sockets, resolve_ns, paced}'))" \
	bash -c "$GAPCTL -j daemon show | jq -e '.history[-1] | .kind==\"allgather\" and .sockets==0 and .resolve_ns==0 and .paced==0' >/dev/null"
phase=$(say begin allgather 1048576 fd | awk '/^phase/{print $2}')
sleep 0.3
check "paced phase with tuple peers: its socket found and paced ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
say end "$phase" >/dev/null
check "paced phase with tuple peers: recorded" \
	bash -c "$GAPCTL -j daemon show | jq -e '.history[-1] | .kind==\"allgather\" and .sockets==1 and .resolve_ns>0 and .paced==1' >/dev/null"
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3

# ---- quiet_remedied: a paced phase brings advice too; the alike phases after it are skipped
# while its settings stay, through the connection's writes, until the advice runs out. The
# advice lasts 3 s: the checks between it and the held settings' (gapctl, jq, python3) took
# 0.9 s on a slow machine, past a 1 s advice.
sed -e 's/^quiet_remedied = "0s"$/quiet_remedied = "3s"/' "$TMP/good.toml" >"$TMP/gappaced.toml"
grep -q '^quiet_remedied = "3s"$' "$TMP/gappaced.toml" || { echo "FAIL the quiet_remedied config was not written"; exit 1; }
kill -HUP "$DAEMON_PID"; sleep 0.3
advice_before=$(counter advice_sent)
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
advised_at=$(date +%s%N)
sleep 0.1
say end "$phase" >/dev/null
sleep 0.1
check "quiet_remedied: a paced phase brings advice ($(counter advice_sent) sent)" test "$(counter advice_sent)" -eq $((advice_before + 1))
check "quiet_remedied: its record says for how long ($(show | jq -c '.history[-1] | {quiet_advised_ms, paced}'))" \
	bash -c "$GAPCTL -j daemon show | jq -e '.history[-1] | .quiet_advised_ms == 3000 and .paced == 1' >/dev/null"
check "quiet_remedied: so does gapctl's text" bash -c "$GAPCTL daemon show | grep -q '1 paced, 1 rto; alike phases skipped for 3000 ms; end after'"
received_before=$(counter hints_received)
quiet=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
check "quiet_remedied: the alike phase is skipped: its id has bit 63 ($quiet)" python3 -c "import sys; sys.exit(0 if int('$quiet') >> 63 else 1)"
check "quiet_remedied: the client writes during it ($(say send 20000))" true
say end "$quiet" >/dev/null
sleep 0.3 # past linger (50 ms) and two ticks: only the hold keeps the settings now
check "quiet_remedied: the skipped phase ran paced, held past linger and the write ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
check "quiet_remedied: with the route" bash -c "ip -n $NSA route show 10.213.0.2 proto 167 | grep -q rto_min"
check "quiet_remedied: nothing reached the daemon" test "$(counter hints_received)" -eq "$received_before"
released=""
for _ in $(seq 120); do [[ $(say pacing) == "$orig" ]] && { released=1; break; }; sleep 0.05; done
held_ms=$((($(date +%s%N) - advised_at) / 1000000))
check "quiet_remedied: released when the advice ran out, and linger and a tick ($held_ms ms after the advice)" \
	bash -c "[[ -n '$released' ]] && (($held_ms >= 3000))"
check "quiet_remedied: the route too" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
check "quiet_remedied: after the advice the phase is sent again ($phase)" python3 -c "import sys; sys.exit(0 if int('$phase') >> 63 == 0 else 1)"
sleep 0.2
check "quiet_remedied: and paced again ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
say end "$phase" >/dev/null
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 3.3 # the last advice's hold

# ---- linger_idle: past `linger`, the settings stay while the phase's connection carries
# nothing new, and go at the first tick after the application writes on it, or at the latest
# linger_idle after `linger`
sed -e 's/^linger_idle = "0s"$/linger = "50ms"\nlinger_idle = "1s"/' "$TMP/good.toml" >"$TMP/gappaced.toml"
grep -q '^linger_idle = "1s"$' "$TMP/gappaced.toml" || { echo "FAIL the linger_idle config was not written"; exit 1; }
kill -HUP "$DAEMON_PID"; sleep 0.3
# A lingering phase that a newer one of its sender supersedes (running on the same connection:
# it holds every setting the old one holds) goes at `linger`, without a look at what the
# connection carried; the settings stay with the running phase.
first=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
say end "$first" >/dev/null
second=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
superseded=$(counter lingering_superseded)
sleep 0.4 # linger and a few ticks
check "linger_idle: the phase a running one supersedes is released ($(counter phases_lingering) lingering)" \
	test "$(counter phases_lingering)" -eq 0
check "linger_idle: counted as superseded" test "$(counter lingering_superseded)" -eq $((superseded + 1))
check "linger_idle: the running phase keeps the pacing ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
say end "$second" >/dev/null
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
say end "$phase" >/dev/null
sleep 0.5 # linger and three ticks: an idle connection's baseline is taken, then compared
check "linger_idle: the idle connection is still paced past linger ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
check "linger_idle: and its route is still there" bash -c "ip -n $NSA route show 10.213.0.2 proto 167 | grep -q rto_min"
check "linger_idle: one phase lingering" test "$(counter phases_lingering)" -eq 1
check "linger_idle: the client writes outside a phase ($(say send 20000))" true
released=""
for _ in $(seq 40); do [[ $(say pacing) == "$orig" ]] && { released=1; break; }; sleep 0.05; done
check "linger_idle: the write released the pacing within two ticks ($(say pacing))" test -n "$released"
check "linger_idle: and the route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
say end "$phase" >/dev/null
sleep 0.5
check "linger_idle: idle again, still paced ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
released=""
for _ in $(seq 30); do [[ $(say pacing) == "$orig" ]] && { released=1; break; }; sleep 0.05; done
check "linger_idle: without a write, released by linger + linger_idle (1.05 s) and a tick" test -n "$released"
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3

# ---- pacer = "host": the phase's crossing socket goes into the device's shaper (SO_PRIORITY
# 6761:1) instead of getting its own cap; the shaper goes when idle; a root qdisc somebody
# configured is left alone and the socket is capped by itself instead
# Three peers behind the bottleneck, 2500 B each, all at once (linear): the phase starts with
# 3 packets, more than the 2 of the 4-packet queue the plan shares out, so the plan asks for a
# bucket (Plan::bucket_bps); 7500 B overflow the queue, so the phase is paced, each connection at
# a third of 100mbit. Only the first peer has a connection.
host_pacer_config() {
	sed -e 's/^frame_overhead = 0$/frame_overhead = 0\npacer = "host"/' \
		-e 's|^prefixes = \["10.213.0.2/32"\]$|prefixes = ["10.213.0.2/32", "10.213.0.3/32", "10.213.0.4/32"]|' \
		"$TMP/good.toml" >"$TMP/gappaced.toml"
}
host_pacer_config
bucketed() { say begin alltoall "${1:-2500}" linear 10.213.0.2 10.213.0.3 10.213.0.4 | awk '/^phase/{print $2}'; }
third=4166666 # 100 Mbit/s / 3 in bytes per second
kill -HUP "$DAEMON_PID"; sleep 0.3
dev=$TAG-va
# While a phase of messages longer than TSQ lets a socket keep in the bucket (two 64 KB skbs)
# has steered sockets, the namespace's tcp_tso_rtt_log is 0 (stock.hpp, TsoSizing); kernels
# before 6.0 have no such sysctl, and nothing to change.
tso() { inA cat /proc/sys/net/ipv4/tcp_tso_rtt_log 2>/dev/null || echo none; }
tso_before=$(tso)
[[ $tso_before == 0 ]] && { inA sysctl -qw net.ipv4.tcp_tso_rtt_log=9; tso_before=9; }
phase=$(bucketed)
sleep 0.3
qdiscs=$(inA tc qdisc show dev "$dev")
check "host pacer: htb 6761: at the root, tbf 6762: under 6761:2 ($(tr '\n' ' ' <<<"$qdiscs"))" \
	bash -c "grep -q 'qdisc htb 6761: root' <<<'$qdiscs' && grep -q 'qdisc tbf 6762: parent 6761:2' <<<'$qdiscs'"
# A third of 100mbit with frame_overhead 0: mss + 66 bucket bytes per mss on the wire.
check "host pacer: the bucket's rate is the planned rate in frame bytes (about 34.85Mbit)" grep -Eq 'tbf 6762: .*rate 348[45][0-9]Kbit' <<<"$qdiscs"
# Its burst: the 2 packets of the shared queue split among the hosts that send into the
# bottleneck (Plan::bucket_burst_frames), at least one frame of mtu + 100 bytes.
check "host pacer: the bucket's burst is one frame (1600 B, tc shows 1598b)" grep -Eq 'tbf 6762: .*burst 1598b' <<<"$qdiscs"
check "host pacer: the socket is steered ($(say priority)) and keeps its own cap ($(say pacing))" \
	bash -c "[[ '$(say priority)' == 'priority 67610001' && '$(say pacing)' == 'pacing '$third ]]"
check "host pacer: the state file has the socket's original priority and rate" \
	bash -c "jq -e '.pacing[0].original_priority == 0 and .pacing[0].applied_bytes_per_second == '$third'' $TMP/state.json >/dev/null"
check "host pacer: daemon show lists the shaper" bash -c "$GAPCTL -j daemon show | jq -e '.settings | keys | any(startswith(\"shaper \"))' >/dev/null"
check "host pacer: 2500 B messages leave tcp_tso_rtt_log alone ($(tso))" test "$(tso)" = "$tso_before"
long=$(bucketed 262144)
sleep 0.3
if [[ $tso_before != none ]]; then
	check "host pacer: tcp_tso_rtt_log is 0 while a phase of 256 KB messages is steered (was $tso_before: $(tso))" \
		test "$(tso)" = 0
	check "host pacer: the state file has the tcp_tso_rtt_log before it" \
		bash -c "jq -e '.original_tso_rtt_log == $tso_before' $TMP/state.json >/dev/null"
	check "host pacer: daemon show lists tcp_tso_rtt_log" \
		bash -c "$GAPCTL -j daemon show | jq -e '.settings | has(\"sysctl net.ipv4.tcp_tso_rtt_log\")' >/dev/null"
fi
say end "$long" >/dev/null
sleep 0.3
check "host pacer: tcp_tso_rtt_log is back when that phase ends ($(tso))" test "$(tso)" = "$tso_before"
say end "$phase" >/dev/null
sleep 0.3
check "host pacer: the socket's priority and rate are back after the phase ($(say priority), $(say pacing))" \
	bash -c "[[ '$(say priority)' == 'priority 0' && '$(say pacing)' == '$orig' ]]"
sleep 2.5
check "host pacer: the idle shaper is gone ($(inA tc qdisc show dev "$dev" | head -1))" \
	bash -c "! ip netns exec $NSA tc qdisc show dev $dev | grep -q 6761:"
inA tc qdisc add dev "$dev" root handle 1: pfifo limit 1000
phase=$(bucketed 262144)
sleep 0.3
check "host pacer: a qdisc somebody configured stays ($(inA tc qdisc show dev "$dev" | head -1))" \
	bash -c "ip netns exec $NSA tc qdisc show dev $dev | grep -q 'qdisc pfifo 1: root'"
check "host pacer: refused, the socket is capped by itself ($(say pacing))" test "$(say pacing)" = "pacing $third"
check "host pacer: refused, tcp_tso_rtt_log is left alone ($(tso))" test "$(tso)" = "$tso_before"
check "host pacer: the refusal is logged" grep -q "somebody configured (pfifo 1:0): not replacing it" "$TMP/daemon.log"
say end "$phase" >/dev/null
inA tc qdisc del dev "$dev" root
# Killed with the shaper in place: the next daemon removes it and restores the priority.
phase=$(bucketed 262144)
sleep 0.3
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
prio=$(say priority)
check "host pacer: after SIGKILL the shaper and the steering are still there ($prio)" \
	bash -c "ip netns exec $NSA tc qdisc show dev $dev | grep -q 6761: && [[ '$prio' == 'priority 67610001' ]]"
[[ $tso_before == none ]] || check "host pacer: after SIGKILL tcp_tso_rtt_log is still 0 ($(tso))" test "$(tso)" = 0
start_daemon
check "host pacer: the restart removed the shaper" bash -c "! ip netns exec $NSA tc qdisc show dev $dev | grep -q 6761:"
check "host pacer: the restart put tcp_tso_rtt_log back ($(tso))" test "$(tso)" = "$tso_before"
[[ $tso_before == none ]] || { grep -q "tcp_tso_rtt_log put back" "$TMP/daemon.log" &&
	ok "host pacer: the restart logged tcp_tso_rtt_log's return" || fail "host pacer: the restart logged tcp_tso_rtt_log's return"; }
check "host pacer: the restart put the priority and rate back ($(say priority), $(say pacing))" \
	bash -c "[[ '$(say priority)' == 'priority 0' && '$(say pacing)' == '$orig' ]]"
grep -q "removed 1 shaper(s) a previous daemon left" "$TMP/daemon.log" && ok "host pacer: the restart logged the shaper's removal" ||
	fail "host pacer: the restart logged the shaper's removal"
# Two connections in one bucket: the bucket is the sum of their shares, and each socket's own
# cap is the whole bucket, so a flow behind the others can catch up while the bucket keeps the
# host to its share (stock_backend.cpp, steer()).
host_pacer_config
kill -HUP "$DAEMON_PID"; sleep 0.3
start_client pair 7 8; OTHER_PID=$LAST_PID
for _ in 1 2; do ask 7 8 connect 10.213.0.2 5001 >/dev/null; done
pair_orig=$(ask 7 8 pacing)
phase=$(ask 7 8 begin alltoall 2500 linear 10.213.0.2 10.213.0.3 10.213.0.4 | awk '/^phase/{print $2}')
sleep 0.3
qdiscs=$(inA tc qdisc show dev "$dev")
check "host pacer, two sockets: the bucket is both shares (about 69.7Mbit: $(grep -o 'rate [^ ]*' <<<"$qdiscs"))" \
	grep -Eq 'tbf 6762: .*rate 69[67][0-9][0-9]Kbit' <<<"$qdiscs"
read -r _ cap1 cap2 <<<"$(ask 7 8 pacing)"
# Both shares back through the bucket's bytes: 2 x 4166666 B/s, to the conversions' rounding.
check "host pacer, two sockets: each capped at the whole bucket ($cap1 $cap2, both shares 8333333 B/s)" \
	bash -c "(( cap1 = $cap1, cap2 = $cap2, cap1 >= 8333300 && cap1 <= 8333366 && cap2 == cap1 ))"
ask 7 8 end "$phase" >/dev/null
sleep 0.3
check "host pacer, two sockets: their caps are back after the phase ($(ask 7 8 pacing))" test "$(ask 7 8 pacing)" = "$pair_orig"
echo quit >&7; wait "$OTHER_PID" 2>/dev/null || true; OTHER_PID=""
cp "$TMP/good.toml" "$TMP/gappaced.toml"; kill -HUP "$DAEMON_PID"; sleep 0.3
# The client's library lost its carrier with the killed daemon and reconnects at most once a
# second: one phase to notice, then a pause.
say end "$(say begin alltoall 1000 10.213.0.2 | awk '/^phase/{print $2}')" >/dev/null
sleep 1.2

# ---- the daemon killed mid-phase: the next one restores from the state file
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
live=$(say pacing); check "phase live before the kill ($live)" test "$live" = "pacing 12500000"
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
check "after SIGKILL the settings are still there (nobody reverted)" \
	bash -c "ip -n $NSA route show 10.213.0.2 proto 167 | grep -q rto_min"
start_daemon
check "restart restored the route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
check "restart restored the pacing" test "$(say pacing)" = "$orig"
grep -q "restored what a previous daemon left" "$TMP/daemon.log" && ok "restart logged the restore" || fail "restart logged the restore"
check "the client's hints reach the restarted daemon" await_carrier

# ---- one daemon per state file and per socket: a second one is refused, and the first keeps
# what it set (a second daemon used to undo it as a dead predecessor's, purge its routes and
# take its sockets over)
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
live=$(say pacing); check "second daemon: the first one's phase is live ($live)" test "$live" = "pacing 12500000"
second() { # CONFIG: runs a second daemon in A for at most 10 s; sets rc and out
	out=$(ip netns exec "$NSA" timeout 10 "$BUILD/daemon/gappaced" --config "$1" 2>&1) && rc=0 || rc=$?
}
second "$TMP/gappaced.toml"
[[ $rc -ne 0 && $rc -ne 124 && $out == *"another gappaced (pid $DAEMON_PID) runs with the state file $TMP/state.json"* ]] &&
	ok "second daemon on the same state file: refused (rc $rc): $out" ||
	fail "second daemon on the same state file: refused (rc $rc): $out"
sed -e "s|^state_file = .*|state_file = \"$TMP/other-state.json\"|" "$TMP/gappaced.toml" >"$TMP/other.toml"
second "$TMP/other.toml"
[[ $rc -ne 0 && $rc -ne 124 && $out == *"$TMP/hints.sock: another process"*"listens there"* ]] &&
	ok "second daemon on the same sockets: refused (rc $rc): $out" ||
	fail "second daemon on the same sockets: refused (rc $rc): $out"
check "second daemon: the first one's route is still there" \
	bash -c "ip -n $NSA route show 10.213.0.2 proto 167 | grep -q rto_min"
check "second daemon: the first one's pacing is still there ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
check "second daemon: the first one still serves its control socket" bash -c "$GAPCTL daemon show >/dev/null"
check "second daemon: the first one's state file still records both" \
	bash -c "jq -e '(.routes|length)==1 and (.pacing|length)==1' $TMP/state.json >/dev/null"
say end "$phase" >/dev/null
sleep 0.3
check "second daemon: the first one still ends the phase (pacing $orig)" test "$(say pacing)" = "$orig"

# ---- a record the next daemon cannot undo (here: pidfd_getfd denied to it) no longer keeps
# every later daemon from starting: the daemon keeps the record, tries again at its shutdown,
# and a daemon that can undo it does
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
live=$(say pacing); check "record kept: phase live before the kill ($live)" test "$live" = "pacing 12500000"
kill -KILL "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
if start_daemon LD_PRELOAD="$BUILD/tests/host/deny_pidfd_getfd.so"; then
	ok "record kept: the daemon starts although it cannot undo the socket's cap"
else
	fail "record kept: the daemon starts although it cannot undo the socket's cap"
	start_daemon
fi
grep -q "keeping 1 record(s) that could not be undone yet" "$TMP/daemon.log" &&
	ok "record kept: logged" || fail "record kept: logged"
check "record kept: the route was undone, the pacing record stays in the state file" \
	bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]] && jq -e '(.routes|length)==0 and (.pacing|length)==1' $TMP/state.json >/dev/null"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true
check "record kept: still in the state file after a shutdown that could not undo it either" \
	bash -c "jq -e '(.pacing|length)==1' $TMP/state.json >/dev/null"
check "record kept: the socket is still capped ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
start_daemon
check "record kept: a daemon that may borrow the socket puts its cap back ($(say pacing))" test "$(say pacing)" = "$orig"
check "record kept: and empties the state file" bash -c "jq -e '(.routes|length)==0 and (.pacing|length)==0' $TMP/state.json >/dev/null"
check "record kept: the client's hints reach the daemon" await_carrier

# ---- SIGTERM mid-phase reverts
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
live=$(say pacing); check "phase live before SIGTERM ($live)" test "$live" = "pacing 12500000"
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=""
check "SIGTERM reverted the route" bash -c "[[ -z \$(ip -n $NSA route show 10.213.0.2 proto 167) ]]"
check "SIGTERM reverted the pacing" test "$(say pacing)" = "$orig"
check "SIGTERM left an empty state" bash -c "jq -e '(.routes|length)==0 and (.pacing|length)==0' $TMP/state.json >/dev/null"

# ---- scheduling refused (no CAP_SYS_NICE, RLIMIT_RTPRIO 0): said, shown, and the daemon serves
ip netns exec "$NSA" prlimit --rtprio=0 setpriv --inh-caps=-sys_nice --bounding-set=-sys_nice \
	"$BUILD/daemon/gappaced" --config "$TMP/gappaced.toml" 2>>"$TMP/daemon.log" &
DAEMON_PID=$!
for _ in $(seq 50); do "$GAPCTL" daemon show >/dev/null 2>&1 && break; sleep 0.1; done
sched=$(show | jq -r .daemon.scheduling)
check "scheduling refused: shown ($sched)" bash -c "[[ '$sched' == 'normal (SCHED_FIFO priority 10 refused: Operation not permitted)' ]]"
check "scheduling refused: in the recent errors" bash -c "$GAPCTL -j daemon show | jq -e '.recent_errors | any(startswith(\"scheduling: \"))' >/dev/null"
check "scheduling refused: the daemon runs on, normally scheduled ($(policy_of "$DAEMON_PID"))" test "$(policy_of "$DAEMON_PID")" = "0 0"
check "scheduling refused: the client's hints reach it" await_carrier
phase=$(say begin alltoall 1048576 10.213.0.2 | awk '/^phase/{print $2}')
sleep 0.3
check "scheduling refused: phases still applied ($(say pacing))" test "$(say pacing)" = "pacing 12500000"
say end "$phase" >/dev/null
kill -TERM "$DAEMON_PID"; wait "$DAEMON_PID" 2>/dev/null || true; DAEMON_PID=""
echo quit >&5 2>/dev/null || true

echo "--- daemon log"; cat "$TMP/daemon.log"
if ((FAILS)); then echo "stock_backend: $FAILS failed"; exit 1; fi
echo "stock_backend: all passed"
