#!/bin/sh
# shellcheck shell=dash disable=SC3043 # (busybox ash has "local")
# gcluster — the namespace cluster *inside a QEMU guest* (busybox ash), for the gappace
# module: every host has a link that really serialises at a line rate R after its root qdisc
# (so gap frames occupy wire time) and before the switch (which drops them), and the two
# switches are joined by a bottleneck at C with a FIFO of Q packets. Installed in the
# initramfs as /usr/bin/gcluster by tests/vm/gcluster/run.sh; see tests/vm/README.md.
#
#   gcluster up [--left N] [--right M] [--rate R] [--bottleneck C] [--queue Q] [--mtu B]
#               [--ring BYTES] [--cc NAME] [--gappace] [--lookahead TIME] [--wire hfsc|tbf]
#               [--wire-burst BYTES] [--shaper netem|tbf] [--burst BYTES]
#   gcluster down
#   gcluster exec HOST CMD [ARGS...]     (HOST: h3, 3, or its address)
#   gcluster ns HOST | addr HOST | hosts
#   gcluster stats                       one JSON line: every wire and the bottleneck
#   gcluster gappaced-config HOST        a gappaced.toml for that host (see gc_gappaced_config)
#   gcluster counter DEV [HANDLE] FIELD  one counter (bytes packets drops overlimits backlog
#                                        qlen) of a qdisc in the switch, e.g. "bnL 1: drops"
# Sourcing it (GC_SOURCE_ONLY=1 . /usr/bin/gcluster) defines the gc_* functions only.
#
# Topology (all in one guest; every host is a network namespace GC-hI, the switch is GC-sw):
#
#   GC-h1: eth0 ─veth─ p1 ──ingress, mirred──► w1 (ifb; root: the wire at R) ──► back into p1 ─► brL
#   ...                                                                                         │
#              brL ── bnL ══ veth ══ bnR ── brR    bnL egress (L→R) and bnR egress (R→L):
#                                                   netem rate C limit Q, the switch output port
#
# * eth0 (10.1.0.I/24, MAC 02:00:00:00:00:II) is a veth: it has no rate of its own, so the
#   qdisc on it (gappace with --gappace) hands every frame, gap frames included, to the peer
#   pI at once. pI's *ingress* is redirected to the ifb wI, whose root qdisc serialises at R:
#   that is host I's wire, and its FIFO (--ring bytes) plays the NIC ring. The ifb hands each
#   frame back to pI's receive path (classification skipped), so frames reach the bridge
#   after the wire. The bridge drops IEEE MAC control frames (01:80:c2:00:00:01) before
#   learning or forwarding: gap frames cost wire time and go no further, as at a real switch.
# * The wire is an HFSC class with only a real-time curve at R: while it is backlogged every
#   frame's send time follows from the bytes sent since it became busy, so a late timer in
#   the emulator delays frames but never loses wire time (tbf would: it forgets tokens beyond
#   its bucket, and QEMU's timers are late by milliseconds on a busy machine); after idle it
#   gives no credit. --wire tbf (bucket --wire-burst) is there for comparison.
# * The bottleneck is netem with a rate and a limit: an exact serialiser at C with a
#   tail-drop FIFO of Q frames. netem releases the sender's socket accounting at its entry
#   (skb_orphan_partial), so TCP small queues count the host's qdisc and wire, as with a real
#   NIC (TX completion), not the switch buffer. --shaper tbf puts tbf + pfifo there instead
#   (tests/cluster's bottleneck; TSQ then also counts the switch queue).
# * Wire bytes everywhere: every shaper has a size table (stab) that counts a frame of L
#   bytes as max(L + 24, 84) — FCS 4, preamble 8, inter-frame gap 12, 64-byte minimum —
#   which is gappace's wire(L) exactly. R is the line rate as gappace's `linkrate` means it,
#   and the qdisc byte counters in `stats` are wire bytes (frame bytes: subtract 24 per
#   packet, for frames of 60 bytes or more). One TCP flow's goodput: at most rate x 1448/1538.
# * No back-pressure from the wire to eth0 (a veth never stops its queue): gappace hands every
#   frame to the wire's FIFO at once, gap frames up to the deadline of each data frame it
#   holds. Paced data still leaves at exactly the right wire position, but an unpaced frame
#   (ACK, same-side traffic) waits behind the gaps already committed - far longer than behind a
#   NIC's ring (tests/vm/README.md has numbers). --lookahead TIME sets gappace's option of that
#   name (wire clock at most TIME ahead of real time), which bounds that wait. Keep the ring deep enough that it never drops
#   (stats: wires[].wire.drops); TCP small queues bound what one socket keeps in it. Each
#   receiving device is processed on one CPU (RPS; host I on CPU (I-1) mod ncpus), so frames
#   keep their order from qdisc to bridge, as on one TX ring.
# * Offloads (TSO, GSO, GRO) off on every veth: one skb is one frame. IPv6 off in every
#   namespace, static ARP entries in every host, static FDB entries in both bridges with
#   learning and flooding off: the only frames are the ones the hosts send.
GC_IP=/usr/sbin/ip
GC_TC=/usr/sbin/tc
GC_STATE=${GC_STATE:-/run/gcluster/state}
GC_WIRE_OVERHEAD=24 # FCS + preamble + IFG, added to every frame by the size tables
GC_WIRE_MPU=84      # 64-byte minimum frame + 20
GC_MAX_HOSTS=200

gc_err() { echo "gcluster: $*" >&2; }
gc_usage_error() {
    gc_err "$*"
    return 2
}

# The first of these that exists: ethtool and bridge come in with mkinitramfs.sh --bin
# (/usr/bin) or live in /usr/sbin.
gc_tool() {
    local d
    for d in /usr/sbin /usr/bin /sbin /bin; do
        [ -x "$d/$1" ] && { echo "$d/$1"; return 0; }
    done
    gc_err "$1 is not in this initramfs (mkinitramfs.sh --bin)"
    return 1
}

# tc rate -> bit/s: 20mbit, 500kbit, 1gbit, 1.5mbit, 64000bit or a bare number of bit/s.
gc_bits() {
    echo "$1" | awk '
        /^[0-9]+(\.[0-9]+)?([kmgt]?bit)?$/ {
            n = $0; sub(/[kmgt]?bit$/, "", n); m = 1
            if ($0 ~ /kbit$/) m = 1e3; else if ($0 ~ /mbit$/) m = 1e6
            else if ($0 ~ /gbit$/) m = 1e9; else if ($0 ~ /tbit$/) m = 1e12
            v = n * m; if (v >= 1000) { printf "%.0f\n", v; exit 0 } }
        { exit 1 }'
}

gc_is_uint() {
    case $1 in '' | *[!0-9]*) return 1 ;; esac
    [ "${#1}" -le 10 ]
}

gc_load_state() {
    [ -f "$GC_STATE" ] || { gc_err "no cluster (no $GC_STATE): gcluster up first"; return 1; }
    # shellcheck disable=SC1090
    . "$GC_STATE"
}

# gc_host_index HOST: h3, 3 or 10.1.0.3 -> 3
gc_host_index() {
    local i=${1#h}
    i=${i#"$GC_SUBNET."}
    gc_is_uint "$i" && [ "$i" -ge 1 ] && [ "$i" -le "$GC_HOSTS_N" ] && { echo "$i"; return 0; }
    gc_err "no host '$1' (h1..h$GC_HOSTS_N)"
    return 1
}
gc_ns() { local i; i=$(gc_host_index "$1") || return 1; echo "$GC_PREFIX-h$i"; }
gc_addr() { local i; i=$(gc_host_index "$1") || return 1; echo "$GC_SUBNET.$i"; }
gc_mac() { printf '02:00:00:00:%02x:%02x\n' $(($1 / 256)) $(($1 % 256)); }
gc_side() { if [ "$1" -le "$GC_LEFT" ]; then echo L; else echo R; fi; }

gc_exec() {
    local ns
    ns=$(gc_ns "$1") || return 1
    shift
    "$GC_IP" netns exec "$ns" "$@"
}

gc_hosts() {
    local i=1
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        echo "h$i $GC_PREFIX-h$i $GC_SUBNET.$i $(gc_side "$i")"
        i=$((i + 1))
    done
}

# Every sysctl of one namespace in one exec (execs are slow under TCG).
gc_ns_sysctls() { # NS CC
    "$GC_IP" netns exec "$1" sh -c "
        echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6
        echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
        [ -z '$2' ] && exit 0
        echo '$2' >/proc/sys/net/ipv4/tcp_congestion_control || exit 1
        echo 1 >/proc/sys/net/ipv4/tcp_no_metrics_save"
}

gc_write_state() { # COMPLETE
    mkdir -p "${GC_STATE%/*}"
    cat >"$GC_STATE.tmp" <<EOF
GC_PREFIX=$GC_PREFIX
GC_SW=$GC_PREFIX-sw
GC_SUBNET=$GC_SUBNET
GC_LEFT=$GC_LEFT
GC_RIGHT=$GC_RIGHT
GC_HOSTS_N=$((GC_LEFT + GC_RIGHT))
GC_RATE_BPS=$GC_RATE_BPS
GC_BOTTLENECK_BPS=$GC_BOTTLENECK_BPS
GC_QUEUE=$GC_QUEUE
GC_MTU=$GC_MTU
GC_RING=$GC_RING
GC_WIRE_BURST=$GC_WIRE_BURST
GC_BURST=$GC_BURST
GC_CC=$GC_CC
GC_GAPPACE=$GC_GAPPACE
GC_SHAPER=$GC_SHAPER
GC_WIRE=$GC_WIRE
GC_COMPLETE=$1
EOF
    mv "$GC_STATE.tmp" "$GC_STATE"
}

gc_up() {
    GC_LEFT=2 GC_RIGHT=2 GC_MTU=1500 GC_QUEUE=8 GC_CC=cubic GC_GAPPACE=0 GC_SHAPER=netem GC_WIRE=hfsc GC_LOOKAHEAD=""
    local rate=10mbit bottleneck=5mbit ring="" wire_burst="" burst="" ethtool bridge
    while [ $# -gt 0 ]; do
        case $1 in
        --left | --right | --rate | --bottleneck | --queue | --mtu | --ring | --wire-burst | --burst | --cc | --shaper | --wire | --lookahead)
            [ $# -ge 2 ] && [ -n "$2" ] || { gc_usage_error "option $1 needs a value"; return; } ;;
        esac
        case $1 in
        --left) GC_LEFT=$2; shift 2 ;;
        --right) GC_RIGHT=$2; shift 2 ;;
        --rate) rate=$2; shift 2 ;;
        --bottleneck) bottleneck=$2; shift 2 ;;
        --queue) GC_QUEUE=$2; shift 2 ;;
        --mtu) GC_MTU=$2; shift 2 ;;
        --ring) ring=$2; shift 2 ;;
        --wire-burst) wire_burst=$2; shift 2 ;;
        --burst) burst=$2; shift 2 ;;
        --cc) GC_CC=$2; shift 2 ;;
        --shaper) GC_SHAPER=$2; shift 2 ;;
        --wire) GC_WIRE=$2; shift 2 ;;
        --gappace) GC_GAPPACE=1; shift ;;
        --lookahead) GC_LOOKAHEAD=$2; shift 2 ;;
        *) gc_usage_error "up: unknown option '$1'"; return ;;
        esac
    done
    local n
    for n in "$GC_LEFT" "$GC_RIGHT" "$GC_QUEUE" "$GC_MTU"; do
        gc_is_uint "$n" || { gc_usage_error "not a number: '$n'"; return; }
    done
    [ "$GC_LEFT" -ge 1 ] && [ "$GC_RIGHT" -ge 1 ] && [ $((GC_LEFT + GC_RIGHT)) -le $GC_MAX_HOSTS ] ||
        { gc_usage_error "--left and --right: at least 1 each, at most $GC_MAX_HOSTS hosts"; return; }
    [ "$GC_MTU" -ge 576 ] && [ "$GC_MTU" -le 9000 ] || { gc_usage_error "--mtu: 576..9000"; return; }
    [ "$GC_QUEUE" -ge 1 ] || { gc_usage_error "--queue: at least 1 packet"; return; }
    case $GC_SHAPER in tbf | netem) ;; *) gc_usage_error "--shaper: netem or tbf"; return ;; esac
    case $GC_WIRE in tbf | hfsc) ;; *) gc_usage_error "--wire: hfsc or tbf"; return ;; esac
    GC_RATE_BPS=$(gc_bits "$rate") || { gc_usage_error "--rate: not a rate: '$rate' (e.g. 20mbit)"; return; }
    GC_BOTTLENECK_BPS=$(gc_bits "$bottleneck") || { gc_usage_error "--bottleneck: not a rate: '$bottleneck'"; return; }
    # one frame on the wire at most: MTU + Ethernet header + overhead
    local wire_frame=$((GC_MTU + 14 + GC_WIRE_OVERHEAD))
    GC_STAB_MTU=$((wire_frame + 64))
    GC_WIRE_BURST=${wire_burst:-$((8 * wire_frame))}
    GC_BURST=${burst:-$((2 * wire_frame))}
    GC_RING=${ring:-1048576}
    for n in "$GC_WIRE_BURST" "$GC_BURST" "$GC_RING"; do
        gc_is_uint "$n" || { gc_usage_error "not a byte count: '$n'"; return; }
    done
    [ "$GC_WIRE_BURST" -ge "$wire_frame" ] && [ "$GC_BURST" -ge "$wire_frame" ] ||
        { gc_usage_error "--wire-burst and --burst: at least one frame ($wire_frame wire bytes at MTU $GC_MTU)"; return; }
    [ "$GC_RING" -ge $((2 * wire_frame)) ] || { gc_usage_error "--ring: at least two frames"; return; }
    [ -f "$GC_STATE" ] && { gc_err "a cluster is up ($GC_STATE): gcluster down first"; return 1; }
    ethtool=$(gc_tool ethtool) && bridge=$(gc_tool bridge) || return 1

    GC_PREFIX=gc-$(od -An -N3 -tx1 /dev/urandom | tr -d ' \n')
    GC_SUBNET=10.1.0
    # State first: "down" can remove a half-built cluster.
    gc_write_state 0
    local sw=$GC_PREFIX-sw i ns mac mask t0
    t0=$(cut -d' ' -f1 /proc/uptime)
    GC_HOSTS_N=$((GC_LEFT + GC_RIGHT))

    "$GC_IP" netns add "$sw" || return 1
    gc_ns_sysctls "$sw" "" || return 1
    # ip -batch: one exec for many commands. The switch: bridges without STP or snooping.
    {
        echo "link set lo up"
        for br in brL brR; do
            echo "link add $br type bridge stp_state 0 forward_delay 0 mcast_snooping 0"
        done
        echo "link add bnL mtu $GC_MTU type veth peer name bnR mtu $GC_MTU"
        echo "link set bnL master brL"
        echo "link set bnR master brR"
    } | "$GC_IP" -n "$sw" -batch - || return 1

    i=1
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        ns=$GC_PREFIX-h$i
        "$GC_IP" netns add "$ns" || return 1
        gc_ns_sysctls "$ns" "$GC_CC" || { gc_err "sysctls in $ns failed (congestion control '$GC_CC'?)"; return 1; }
        "$GC_IP" -n "$ns" link add eth0 mtu "$GC_MTU" address "$(gc_mac "$i")" type veth \
            peer name "p$i" mtu "$GC_MTU" netns "$sw" || return 1
        i=$((i + 1))
    done

    # Switch side of every port, and the wires (one ifb per host).
    {
        i=1
        while [ "$i" -le "$GC_HOSTS_N" ]; do
            echo "link add w$i mtu $GC_MTU type ifb"
            echo "link set p$i master br$(gc_side "$i")"
            i=$((i + 1))
        done
    } | "$GC_IP" -n "$sw" -batch - || return 1
    # Offloads off on every veth end in the switch (the ifbs take what they get).
    i=1
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        "$GC_IP" netns exec "$sw" "$ethtool" -K "p$i" tso off gso off gro off || return 1
        i=$((i + 1))
    done
    "$GC_IP" netns exec "$sw" "$ethtool" -K bnL tso off gso off gro off || return 1
    "$GC_IP" netns exec "$sw" "$ethtool" -K bnR tso off gso off gro off || return 1

    # tc: the wires, the ingress redirects, the bottleneck. Every shaper carries the same size
    # table: a frame of L bytes counts max(L + 24, 84) (see the header).
    local stab="stab mtu $GC_STAB_MTU tsize $((GC_STAB_MTU + 1)) overhead $GC_WIRE_OVERHEAD mpu $GC_WIRE_MPU"
    {
        i=1
        while [ "$i" -le "$GC_HOSTS_N" ]; do
            if [ "$GC_WIRE" = hfsc ]; then
                echo "qdisc add dev w$i root handle 1: $stab hfsc default 1"
                echo "class add dev w$i parent 1: classid 1:1 hfsc rt rate ${GC_RATE_BPS}bit"
                echo "qdisc add dev w$i parent 1:1 handle 10: bfifo limit $GC_RING"
            else
                echo "qdisc add dev w$i root handle 1: $stab tbf rate ${GC_RATE_BPS}bit burst $GC_WIRE_BURST limit $GC_RING"
            fi
            echo "qdisc add dev p$i handle ffff: ingress"
            echo "filter add dev p$i parent ffff: protocol all prio 1 matchall action mirred egress redirect dev w$i"
            i=$((i + 1))
        done
        for bn in bnL bnR; do
            if [ "$GC_SHAPER" = tbf ]; then
                # tbf insists on a limit; the pfifo child below replaces its queue.
                echo "qdisc add dev $bn root handle 1: $stab tbf rate ${GC_BOTTLENECK_BPS}bit burst $GC_BURST limit $GC_RING"
                echo "qdisc add dev $bn parent 1:1 handle 10: pfifo limit $GC_QUEUE"
            else
                echo "qdisc add dev $bn root handle 1: $stab netem rate ${GC_BOTTLENECK_BPS}bit limit $GC_QUEUE"
            fi
        done
    } | "$GC_TC" -n "$sw" -batch - || return 1

    # Static FDB on both bridges, learning and flooding off: nothing floods, nothing moves.
    {
        i=1
        while [ "$i" -le "$GC_HOSTS_N" ]; do
            mac=$(gc_mac "$i")
            echo "fdb replace $mac dev p$i master static"
            if [ "$(gc_side "$i")" = L ]; then
                echo "fdb replace $mac dev bnR master static"
            else
                echo "fdb replace $mac dev bnL master static"
            fi
            echo "link set dev p$i learning off flood off mcast_flood off"
            i=$((i + 1))
        done
        for port in bnL bnR; do
            echo "link set dev $port learning off flood off mcast_flood off"
        done
    } | "$GC_IP" netns exec "$sw" "$bridge" -batch - || return 1

    {
        i=1
        while [ "$i" -le "$GC_HOSTS_N" ]; do
            echo "link set w$i up"
            echo "link set p$i up"
            i=$((i + 1))
        done
        echo "link set bnL up"
        echo "link set bnR up"
        echo "link set brL up"
        echo "link set brR up"
    } | "$GC_IP" -n "$sw" -batch - || return 1

    # Hosts: address, static neighbours, offloads, up; gappace if asked.
    i=1
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        ns=$GC_PREFIX-h$i
        {
            echo "link set lo up"
            echo "addr add $GC_SUBNET.$i/24 dev eth0"
            local j=1
            while [ "$j" -le "$GC_HOSTS_N" ]; do
                [ "$j" -ne "$i" ] && echo "neigh replace $GC_SUBNET.$j lladdr $(gc_mac "$j") dev eth0 nud permanent"
                j=$((j + 1))
            done
            echo "link set eth0 up"
        } | "$GC_IP" -n "$ns" -batch - || return 1
        "$GC_IP" netns exec "$ns" "$ethtool" -K eth0 tso off gso off gro off || return 1
        if [ "$GC_GAPPACE" = 1 ]; then
            "$GC_IP" netns exec "$ns" gapctl qdisc attach dev eth0 linkrate "$GC_RATE_BPS" \
                ${GC_LOOKAHEAD:+lookahead "$GC_LOOKAHEAD"} >/dev/null ||
                { gc_err "gapctl qdisc attach in $ns failed (gappace loaded?)"; return 1; }
        fi
        i=$((i + 1))
    done
    # Frame order: one CPU per receiving device (host I's eth0 and pI on CPU (I-1) mod n).
    local ncpu
    ncpu=$(grep -c '^processor' /proc/cpuinfo)
    if [ "$ncpu" -gt 1 ]; then
        i=1
        while [ "$i" -le "$GC_HOSTS_N" ]; do
            mask=$(printf '%x' $((1 << ((i - 1) % ncpu))))
            "$GC_IP" netns exec "$GC_PREFIX-h$i" sh -c "echo $mask >/sys/class/net/eth0/queues/rx-0/rps_cpus" &&
                "$GC_IP" netns exec "$sw" sh -c "echo $mask >/sys/class/net/p$i/queues/rx-0/rps_cpus" ||
                { gc_err "cannot set rps_cpus for host $i"; return 1; }
            i=$((i + 1))
        done
        "$GC_IP" netns exec "$sw" sh -c 'echo 1 >/sys/class/net/bnL/queues/rx-0/rps_cpus; echo 2 >/sys/class/net/bnR/queues/rx-0/rps_cpus' ||
            { gc_err "cannot set rps_cpus of the bottleneck"; return 1; }
    fi
    gc_write_state 1
    gc_err "up: $GC_LEFT+$GC_RIGHT hosts ($GC_PREFIX), wires $GC_WIRE ${GC_RATE_BPS} bit/s, bottleneck" \
        "$GC_SHAPER ${GC_BOTTLENECK_BPS} bit/s, queue $GC_QUEUE, mtu $GC_MTU, gappace $GC_GAPPACE," \
        "$(awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f", b - a }') s"
}

gc_down() {
    [ -f "$GC_STATE" ] || return 0
    gc_load_state || return 1
    local nsf pids i=1 rc=0
    # every process in the cluster's namespaces: TERM, a bounded wait, then KILL
    for nsf in /run/netns/"$GC_PREFIX"-*; do
        [ -e "$nsf" ] || continue
        pids=$("$GC_IP" netns pids "${nsf##*/}" 2>/dev/null)
        # shellcheck disable=SC2086 # a list of pids
        [ -n "$pids" ] && kill $pids 2>/dev/null
    done
    while [ "$i" -le 20 ]; do
        pids=
        for nsf in /run/netns/"$GC_PREFIX"-*; do
            [ -e "$nsf" ] && pids="$pids$("$GC_IP" netns pids "${nsf##*/}" 2>/dev/null)"
        done
        [ -z "$pids" ] && break
        sleep 0.1
        i=$((i + 1))
    done
    for nsf in /run/netns/"$GC_PREFIX"-*; do
        [ -e "$nsf" ] || continue
        pids=$("$GC_IP" netns pids "${nsf##*/}" 2>/dev/null)
        # shellcheck disable=SC2086
        [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
        "$GC_IP" netns del "${nsf##*/}" || rc=1
    done
    rm -f "$GC_STATE"
    return $rc
}

# gc_counters: one line per qdisc of the switch namespace, from one tc call (JSON: exact
# numbers; the text form rounds backlog to Kb):
#   DEV HANDLE ROOT(1|0) bytes packets drops overlimits backlog qlen
gc_counters() {
    "$GC_TC" -n "$GC_SW" -s -j qdisc show | sed 's/},{"kind"/}\n{"kind"/g' |
        awk '{
            n = split("dev handle bytes packets drops overlimits backlog qlen", f, " ")
            for (i = 1; i <= n; i++) {
                v[i] = "null"
                if (match($0, "\"" f[i] "\":(\"[^\"]*\"|[0-9]+)")) {
                    v[i] = substr($0, RSTART, RLENGTH); sub(/^"[^"]*":/, "", v[i]); gsub(/"/, "", v[i])
                }
            }
            printf "%s %s %d %s %s %s %s %s %s\n", v[1], v[2], /"root":true/ ? 1 : 0, v[3], v[4], v[5], v[6], v[7], v[8]
        }'
}

# gc_qdisc_counters DEV HANDLE [COUNTERS]: "bytes packets drops overlimits backlog qlen" of one
# qdisc (HANDLE "" = the root), from COUNTERS (gc_counters output) or a fresh tc call.
gc_qdisc_counters() {
    local all=${3:-}
    [ -n "$all" ] || all=$(gc_counters) || return 1
    echo "$all" | awk -v d="$1" -v h="$2" '
        $1 == d && ((h == "" && $3 == 1) || $2 == h) { print $4, $5, $6, $7, $8, $9; found = 1; exit }
        END { if (!found) exit 1 }'
}

# gc_counter DEV HANDLE FIELD: one of them.
gc_counter() {
    local c
    c=$(gc_qdisc_counters "$1" "$2") || return 1
    # shellcheck disable=SC2086 # six numbers
    set -- $c "$3"
    case $7 in
    bytes) echo "$1" ;; packets) echo "$2" ;; drops) echo "$3" ;;
    overlimits) echo "$4" ;; backlog) echo "$5" ;; qlen) echo "$6" ;;
    *) gc_err "no counter '$7' (bytes packets drops overlimits backlog qlen)"; return 2 ;;
    esac
}

# gc_qdisc_json DEV HANDLE: {"bytes":..,"packets":..,"drops":..,"overlimits":..,"backlog":..,"qlen":..}
gc_qdisc_json() { # DEV HANDLE [COUNTERS]
    local c
    c=$(gc_qdisc_counters "$1" "$2" "${3:-}") || c="null null null null null null"
    # shellcheck disable=SC2086 # six numbers
    set -- $c
    echo "{\"bytes\":$1,\"packets\":$2,\"drops\":$3,\"overlimits\":$4,\"backlog\":$5,\"qlen\":$6}"
}

gc_stats() {
    local i=1 wires="" fifo=10: all
    [ "$GC_SHAPER" = netem ] && fifo=1:
    all=$(gc_counters) || return 1
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        wires="$wires${wires:+,}{\"host\":\"h$i\",\"dev\":\"w$i\",\"wire\":$(gc_qdisc_json "w$i" 1: "$all")}"
        i=$((i + 1))
    done
    printf '{"cluster":"%s","rate":%s,"bottleneck":%s,"queue":%s,"wire":"%s","shaper":"%s","wires":[%s],' \
        "$GC_PREFIX" "$GC_RATE_BPS" "$GC_BOTTLENECK_BPS" "$GC_QUEUE" "$GC_WIRE" "$GC_SHAPER" "$wires"
    printf '"l2r":{"dev":"bnL","shaper":%s,"fifo":%s},"r2l":{"dev":"bnR","shaper":%s,"fifo":%s}}\n' \
        "$(gc_qdisc_json bnL 1: "$all")" "$(gc_qdisc_json bnL $fifo "$all")" \
        "$(gc_qdisc_json bnR 1: "$all")" "$(gc_qdisc_json bnR $fifo "$all")"
}

# gc_gappaced_config HOST: a gappaced.toml for one host (module backend): the bottleneck in
# front of the other side, this host's wire as its link, and sockets of its own — abstract
# Unix sockets belong to the network namespace, so one daemon per host needs no paths.
# Tools in the host reach the daemon with GAPPACE_CONTROL_SOCK=@gappace-control.
# GC_GAPPACED_EXTRA (default /etc/gappaced-extra.toml; run.sh --file puts one there), if the
# file exists, is appended: tables the generated config does not have, e.g. [remedies], [planner].
# GC_PACER, if set, is [pacing] pacer ("socket" or "host").
gc_gappaced_config() {
    local i j prefixes="" side other min_rate extra pacer_line
    i=$(gc_host_index "$1") || return 1
    side=$(gc_side "$i")
    j=1
    while [ "$j" -le "$GC_HOSTS_N" ]; do
        [ "$(gc_side "$j")" != "$side" ] && prefixes="$prefixes${prefixes:+, }\"$GC_SUBNET.$j/32\""
        j=$((j + 1))
    done
    if [ "$side" = L ]; then other=right; else other=left; fi
    # a floor under C/k at the rates a guest sustains (written out: the default, 64 kbit/s, was
    # 1 Mbit/s before session 22, above C/k here)
    min_rate=$((GC_BOTTLENECK_BPS / 64))
    [ "$min_rate" -ge 1000 ] || min_rate=1000
    pacer_line=
    [ -z "${GC_PACER:-}" ] || pacer_line="pacer = \"$GC_PACER\""
    cat <<EOF
# gcluster host h$i ($GC_SUBNET.$i), cluster $GC_PREFIX
[daemon]
backend = "module"
hints_socket = "@gappace-hints"
control_socket = "@gappace-control"
state_file = "/run/gcluster/h$i/stock-state.json"

[pacing]
queue_packets = $GC_QUEUE
mtu = $GC_MTU
min_rate = "${min_rate}bit"
$pacer_line

[[link]]
device = "eth0"
rate = "${GC_RATE_BPS}bit"

[[bottleneck]]
name = "to-$other"
capacity = "${GC_BOTTLENECK_BPS}bit"
queue_packets = $GC_QUEUE
prefixes = [$prefixes]
EOF
    extra=${GC_GAPPACED_EXTRA:-/etc/gappaced-extra.toml}
    if [ -f "$extra" ]; then echo "# from $extra"; cat "$extra"; fi
}

gc_main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
    up) gc_up "$@" ;;
    down) gc_down ;;
    exec)
        [ $# -ge 2 ] || { gc_usage_error "exec HOST CMD [ARGS...]"; return; }
        gc_load_state && gc_exec "$@" ;;
    ns) [ $# -eq 1 ] || { gc_usage_error "ns HOST"; return; }; gc_load_state && gc_ns "$1" ;;
    addr) [ $# -eq 1 ] || { gc_usage_error "addr HOST"; return; }; gc_load_state && gc_addr "$1" ;;
    hosts) gc_load_state && gc_hosts ;;
    stats) gc_load_state && gc_stats ;;
    gappaced-config) [ $# -eq 1 ] || { gc_usage_error "gappaced-config HOST"; return; }; gc_load_state && gc_gappaced_config "$1" ;;
    counter)
        [ $# -eq 2 ] || [ $# -eq 3 ] || { gc_usage_error "counter DEV [HANDLE] FIELD"; return; }
        gc_load_state || return
        if [ $# -eq 2 ]; then gc_counter "$1" "" "$2"; else gc_counter "$@"; fi ;;
    -h | --help | help) sed -n '/^#   gcluster/,/^# Sourcing/p' "$0" | sed 's/^# \{0,1\}//'; return 0 ;;
    *) gc_usage_error "unknown command '$cmd' (up, down, exec, ns, addr, hosts, stats, counter, gappaced-config)"; return ;;
    esac
}

[ -n "${GC_SOURCE_ONLY:-}" ] || { set -u; gc_main "$@"; exit $?; }
