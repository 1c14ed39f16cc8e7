# shellcheck shell=sh disable=SC3043 # (busybox ash has "local")
# guest-lib.sh — helpers for guest test scripts (busybox ash). Source it:
#     . "$GP_LIB"        (GP_LIB=/lib/gp/guest-lib.sh, exported by /init)
#
# The wire: two e1000 NICs on one QEMU hub. eth0 (first NIC) stays in the
# initial netns as 10.0.0.1/16 and is the device under test (its transmitted
# frames are what run-guest.sh --capture records). eth1 (second NIC) lives in
# netns "peer" as 10.0.0.2/16 (+ extra addresses).
#
# Failure model: gp_fail records a failure and returns 0, so the test goes on
# and collects more evidence; /init turns any recorded failure (or a non-zero
# exit of the test script, or the watchdog firing) into "GP-RESULT: FAIL".
# gp_die records and exits 1 at once.

GP_RUN=${GP_RUN:-/run/gp}
GP_RESULTS=${GP_RESULTS:-/results}
GP_MODULE_DIR=${GP_MODULE_DIR:-/lib/modules}
GP_NETNS=peer

# Debian's static busybox prefers its applets over PATH ("standalone shell"):
# plain "ip" or "tc" would run busybox's cut-down versions even though the
# real iproute2 is first in PATH. Shell functions win over applets, so wrap
# every real executable shipped in /usr/sbin and /usr/bin (iproute2 and
# mkinitramfs.sh --bin tools) whose name is also an applet. Scripts started
# with "sh -c" do not inherit these: use absolute paths there.
_gp_shadow_applets() {
    local f n applets
    applets=" $(busybox --list | tr '\n' ' ') "
    for f in /usr/sbin/* /usr/bin/*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        n=${f##*/}
        case $n in *[!A-Za-z0-9_]* | [0-9]*) continue ;; esac
        case $applets in *" $n "*) eval "$n() { $f \"\$@\"; }" ;; esac
    done
}
_gp_shadow_applets
GP_ADDR0=10.0.0.1
GP_ADDR1=10.0.0.2
GP_PREFIX=16

gp_log() {
    echo "[gp $(cut -d' ' -f1 /proc/uptime)] $*"
}

gp_fail() {
    gp_log "FAIL: $*"
    mkdir -p "$GP_RUN"
    echo "$*" >>"$GP_RUN/failures"
    return 0
}

gp_die() {
    gp_fail "$@"
    exit 1
}

# gp_check DESCRIPTION CMD...: run CMD, record a failure if it exits non-zero.
gp_check() {
    local what=$1
    shift
    "$@" || gp_fail "$what (exit $?: $*)"
}

# gp_expect_error LOG PATTERN CMD...: CMD must fail and its stderr contain PATTERN
# (the kernel's extack text, as gapctl prints it); the exchange is appended to LOG.
gp_expect_error() {
    local log=$1 pattern=$2 err rc
    shift 2
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    echo "[$rc] $* -> $err" >>"$log"
    [ "$rc" -ne 0 ] || { gp_fail "succeeded but must fail: $*"; return 0; }
    case $err in *"$pattern"*) ;; *) gp_fail "'$*' said '$err', want '$pattern'" ;; esac
}

# Path of a result file; whatever is in /results is sent to the host.
gp_result() {
    mkdir -p "$GP_RESULTS/$(dirname "$1")"
    echo "$GP_RESULTS/$1"
}

# Run a command in the peer network namespace.
gp_peer() {
    ip netns exec "$GP_NETNS" "$@"
}

# gp_load_module NAME [PARAM=VALUE...]: insmod /lib/modules/NAME.ko (shipped
# with mkinitramfs.sh --module); dies if it cannot be loaded.
gp_load_module() {
    local name=$1
    shift
    local ko=$GP_MODULE_DIR/$name.ko
    [ -f "$ko" ] || gp_die "module $ko not in initramfs"
    insmod "$ko" "$@" || gp_die "insmod $name failed"
    gp_log "loaded $name $*"
}

# gp_wait_carrier IFACE [NETNS] [SECONDS]: wait (bounded) for link carrier.
gp_wait_carrier() {
    local ifc=$1 ns=${2:-} secs=${3:-10} i=0 c
    while [ "$i" -lt $((secs * 10)) ]; do
        if [ -n "$ns" ]; then
            c=$(ip netns exec "$ns" cat "/sys/class/net/$ifc/carrier" 2>/dev/null)
        else
            c=$(cat "/sys/class/net/$ifc/carrier" 2>/dev/null)
        fi
        [ "$c" = 1 ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    gp_fail "no carrier on $ifc${ns:+ (netns $ns)} after ${secs}s"
    return 1
}

_gp_disable_ipv6() {  # [netns-exec prefix...] — all, default (+ lo) in that netns
    "$@" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 >/dev/null
}

# gp_wire_up [EXTRA_PEER_ADDR/PREFIX...]
# Sets up the two-namespace wire so that the only frames on it are the ones
# the test sends: IPv6 off before any link goes up (no ND/MLD/RS), permanent
# neighbour entries (no ARP), lo up on both sides, cubic everywhere.
gp_wire_up() {
    local mac0 mac1 a
    [ -d /sys/class/net/eth0 ] && [ -d /sys/class/net/eth1 ] \
        || gp_die "expected eth0 and eth1 (got: $(ls /sys/class/net | tr '\n' ' '))"
    mac0=$(cat /sys/class/net/eth0/address)
    mac1=$(cat /sys/class/net/eth1/address)

    _gp_disable_ipv6
    sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1 net.ipv6.conf.eth1.disable_ipv6=1 >/dev/null
    ip netns add "$GP_NETNS" || gp_die "ip netns add $GP_NETNS failed"
    # A new netns starts from compiled-in defaults, not from init_net's.
    _gp_disable_ipv6 gp_peer
    ip link set eth1 netns "$GP_NETNS" || gp_die "cannot move eth1 into netns $GP_NETNS"
    gp_peer sysctl -qw net.ipv6.conf.eth1.disable_ipv6=1 >/dev/null

    ip addr add "$GP_ADDR0/$GP_PREFIX" dev eth0
    gp_peer ip addr add "$GP_ADDR1/$GP_PREFIX" dev eth1
    for a in "$@"; do
        gp_peer ip addr add "$a" dev eth1 || gp_die "cannot add $a to eth1"
    done

    ip neigh replace "$GP_ADDR1" lladdr "$mac1" dev eth0 nud permanent
    for a in "$@"; do
        ip neigh replace "${a%/*}" lladdr "$mac1" dev eth0 nud permanent
    done
    gp_peer ip neigh replace "$GP_ADDR0" lladdr "$mac0" dev eth1 nud permanent

    sysctl -qw net.ipv4.tcp_congestion_control=cubic >/dev/null
    gp_peer sysctl -qw net.ipv4.tcp_congestion_control=cubic >/dev/null

    ip link set lo up
    gp_peer ip link set lo up
    ip link set eth0 up
    gp_peer ip link set eth1 up
    gp_wait_carrier eth0 "" 10 || gp_die "eth0 has no carrier"
    gp_wait_carrier eth1 "$GP_NETNS" 10 || gp_die "eth1 has no carrier"
    # QEMU's e1000 model refuses to receive for 1000 ms (virtual clock) after
    # every write of the RCTL register, which the driver does on open and on
    # each rx-mode change (promisc, multicast). Frames sent meanwhile wait in
    # the QEMU hub and arrive in a burst. Let that window pass, so the first
    # frames of the test see a live wire. See README "Known facts".
    sleep "${GP_SETTLE:-1.2}"

    {
        echo "kernel=$(uname -r)"
        echo "eth0_mac=$mac0"
        echo "eth1_mac=$mac1"
        echo "eth0_addr=$GP_ADDR0/$GP_PREFIX"
        echo "eth1_addr=$GP_ADDR1/$GP_PREFIX $*"
        echo "cc_init=$(sysctl -n net.ipv4.tcp_congestion_control)"
        echo "cc_peer=$(gp_peer sysctl -n net.ipv4.tcp_congestion_control)"
        echo "eth0_qdisc=$(tc qdisc show dev eth0 | head -n 1)"
    } >"$(gp_result wire.txt)"
    gp_log "wire up: eth0 $GP_ADDR0 ($mac0) <-> peer eth1 $GP_ADDR1 $* ($mac1)"
}

# gp_daemon_config BACKEND: a gappaced.toml for the control-plane tests (control, stock): one
# bottleneck of 10 Mbit/s with a 4-packet queue in front of the peer 10.0.0.2, a 5 ms floor.
# They check the actuation chain: the simple rule (pace and floor every crossing phase) and
# rates taken literally; the models' decisions are tested in daemon/tests and by bench-system.
# Settings go right after END (linger_idle 0); a test turns that on for itself.
gp_daemon_config() {
    cat <<CONF
[daemon]
backend = "$1"
phase_timeout = "60s"
linger_idle = "0s"
[planner]
model = "default"
[pacing]
frame_overhead = 0
[rto]
floor = "5ms"
[[bottleneck]]
name = "peer"
capacity = "10mbit"
queue_packets = 4
prefixes = ["10.0.0.2/32"]
CONF
}

# gp_start_daemon CONFIG: starts gappaced (its stderr appended to /results/gappaced.log), sets
# GP_DAEMON to its pid and waits until it answers (5 s at most, else the test dies).
gp_start_daemon() {
    local i=0
    gappaced --config "$1" 2>>/results/gappaced.log &
    GP_DAEMON=$!
    while ! gapctl daemon show >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 50 ] || gp_die "gappaced did not start: $(tail -n 5 /results/gappaced.log)"
        sleep 0.1
    done
}

# gp_start_hintclient [socket]: a stand-in rank (gp-hintclient) driven through two FIFOs, fd 5
# in and fd 6 out, with GP_CLIENT its pid; `say CMD...` sends one command and prints the reply
# (5 s at most). "socket": hints to the daemon's socket even where the module is loaded.
gp_start_hintclient() {
    mkfifo /tmp/c.in /tmp/c.out
    (
        [ "${1:-}" = socket ] && export GAPCTL_NO_KERNEL=1
        exec gp-hintclient </tmp/c.in >/tmp/c.out 2>&1
    ) &
    GP_CLIENT=$!
    exec 5>/tmp/c.in 6</tmp/c.out
}
say() { echo "$*" >&5; r=; read -t 5 r <&6; echo "$r"; }

# gp_load_kmod NAME: load a module of the kernel package shipped with
# mkinitramfs.sh --kmod NAME, dependencies first (e.g. sch_netem, sch_fq).
gp_load_kmod() {
    local name=$1 m
    [ -f "$GP_MODULE_DIR/$name.order" ] || gp_die "kernel module $name not in initramfs (--kmod $name)"
    for m in $(cat "$GP_MODULE_DIR/$name.order"); do
        grep -q "^${m%.ko} " /proc/modules && continue
        insmod "$GP_MODULE_DIR/$m" || gp_die "insmod $m failed"
    done
    gp_log "loaded kernel module $name"
}

# --- gappace leases -------------------------------------------------------
# A flow rule lives as long as the netlink socket that set it: `gapctl pace add`
# holds it until it gets SIGTERM. gp_pace_hold DEV DST RATE [OPTIONS] starts such a holder
# in the background and waits (bounded) until the rule is listed;
# gp_pace_release DEV DST ends the lease and waits until the rule is gone.
_gp_hold_file() {
    echo "$GP_RUN/hold.$(echo "$1.$2" | tr '/:.' '___')"
}

gp_pace_hold() { # DEV DST RATE [gapctl pace add options, e.g. group N]
    local dev=$1 dst=$2 rate=$3 i=0
    shift 3
    mkdir -p "$GP_RUN"
    /usr/bin/gapctl pace add dev "$dev" dst "$dst" rate "$rate" "$@" >/dev/null &
    echo $! >"$(_gp_hold_file "$dev" "$dst")"
    while [ "$i" -lt 100 ]; do
        case $(/usr/bin/gapctl -j pace show dev "$dev") in *"\"dst\":\"$dst\""*) return 0 ;; esac
        sleep 0.05
        i=$((i + 1))
    done
    gp_fail "rule $dst on $dev did not appear"
}

gp_pace_release() {
    local dev=$1 dst=$2 f pid i=0
    f=$(_gp_hold_file "$dev" "$dst")
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    rm -f "$f"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    while [ "$i" -lt 100 ]; do
        case $(/usr/bin/gapctl -j pace show dev "$dev" 2>/dev/null) in *"\"dst\":\"$dst\""*) ;; *) return 0 ;; esac
        sleep 0.05
        i=$((i + 1))
    done
    gp_fail "rule $dst on $dev outlived its lease"
}
