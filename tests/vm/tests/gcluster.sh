#!/bin/sh
# shellcheck shell=dash disable=SC3043,SC2154,SC2046 # (busybox ash has "local"; the PHASE_* results are set by eval; counter lists split on purpose)
# gcluster — the guest cluster (tests/vm/gcluster/gcluster.sh) emulates what gap-frame pacing
# needs: host wires that serialise at R after the gappace qdisc, a switch that drops the gap
# frames, a bottleneck at C with a Q-frame FIFO. 2+2 hosts, gappace on every eth0:
#   (a) one unpaced TCP flow h1->h3 reaches min(R, C) x 1448/1538 of goodput;
#   (b) paced at r (rule on h1, dst h3/32): goodput r x 1448/1538; h1's wire carried gap frames,
#       and exactly what gappace sent (bytes and frames); the bottleneck carried exactly the
#       data frames, no gap frame; h2 received nothing (no flooding);
#   (c) h1 and h2 -> h3 at once: unpaced, the bottleneck FIFO overflows; each paced at C/2,
#       it does not;
#   (d) a ping behind a paced flow waits for all its queued gaps on a veth, which never pushes
#       back; with gappace's lookahead option, for at most the lookahead.
# Every wire's ring never drops. Parameters (kernel command line, run.sh --append):
#   gp.gc_rate=10  gp.gc_bottleneck=5 (Mbit/s)  gp.gc_queue=16  gp.gc_kbytes=1536 (per flow)
# Results: /results/gcluster/report.txt (numbers), stats-*.json, traffic JSON.
# shellcheck source=../guest-lib.sh
. "$GP_LIB"

param() { # NAME DEFAULT
    local v
    v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^gp\.$1=//p" | tail -n 1)
    echo "${v:-$2}"
}
R_MBIT=$(param gc_rate 10)
C_MBIT=$(param gc_bottleneck 5)
QUEUE=$(param gc_queue 16)
KBYTES=$(param gc_kbytes 1536)
BYTES=$((KBYTES * 1024))
report=$(gp_result gcluster/report.txt)

for m in veth bridge ifb sch_ingress cls_matchall act_mirred sch_hfsc sch_netem tcp_diag; do
    gp_load_kmod "$m"
done
gp_load_module gappace

say() { echo "$*" | tee -a "$report"; }
t0=$(cut -d' ' -f1 /proc/uptime)
elapsed() { awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { printf "%.1f s", b - a }'; }
# awk arithmetic and comparisons on decimals
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
holds() { awk "BEGIN { exit !($1) }"; }
field() { # JSON FIELD -> first "FIELD":number
    echo "$1" | sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" | head -n 1
}

gcluster up --left 2 --right 2 --rate "${R_MBIT}mbit" --bottleneck "${C_MBIT}mbit" --queue "$QUEUE" \
    --gappace 2>&1 | tee -a "$report"
[ -f /run/gcluster/state ] && grep -q GC_COMPLETE=1 /run/gcluster/state || gp_die "gcluster up failed"
# the cluster's functions in this shell: counters without a shell per call
GC_SOURCE_ONLY=1 . /usr/bin/gcluster
gc_load_state || gp_die "no cluster state"
say "[$(elapsed)] kernel $(uname -r), $(grep -c ^processor /proc/cpuinfo) CPUs; R=${R_MBIT} Mbit/s C=${C_MBIT} Mbit/s" \
    "Q=$QUEUE, $KBYTES KiB per flow"
# TCP goodput at most: payload 1448 of 1538 wire bytes per full frame
limit_mbit() { calc "$1 * 1448 / 1538"; }

# --- counters -----------------------------------------------------------------------------
# snapshot NAME: every counter we compare, as NAME_<counter> shell variables, and the raw JSON
snapshot() {
    local name=$1 h g all
    all=$(gc_counters) || gp_fail "tc counters ($name)"
    set -- $(gc_qdisc_counters w1 1: "$all")
    eval "${name}_w1=$1 ${name}_w1p=$2 ${name}_w1drop=$3"
    set -- $(gc_qdisc_counters w2 1: "$all")
    eval "${name}_w2drop=$3"
    set -- $(gc_qdisc_counters bnL 1: "$all")
    eval "${name}_bn=$1 ${name}_bnp=$2 ${name}_bndrop=$3"
    echo "$all" >"$(gp_result "gcluster/qdiscs-$name.txt")"
    for h in h1 h2; do
        g=$(gc_exec "$h" gapctl -j stats dev eth0)
        echo "$g" >"$(gp_result "gcluster/gappace-$h-$name.json")"
        eval "${name}_${h}_dwire=$(field "$g" data_wire_bytes) ${name}_${h}_dpk=$(field "$g" data_packets)"
        eval "${name}_${h}_gwire=$(field "$g" gap_wire_bytes) ${name}_${h}_gfr=$(field "$g" gap_frames)"
    done
    eval "${name}_h2rx=$(gc_exec h2 cat /sys/class/net/eth0/statistics/rx_packets)"
}
delta() { eval "echo \$((\${$2_$1} - \${$3_$1}))"; } # COUNTER AFTER BEFORE

# wait (bounded) until a sink listens, and until every wire and the bottleneck are empty
listening() { # HOST PORT
    local i=0
    while [ "$i" -lt 100 ]; do
        gc_exec "$1" ss -Hltn "sport = :$2" | grep -q LISTEN && return 0
        sleep 0.1
        i=$((i + 1))
    done
    gp_fail "no listener on $1:$2"
    return 1
}
drained() {
    local i=0 busy
    while [ "$i" -lt 100 ]; do
        # qlen of every root qdisc of the switch (ingress qdiscs have none: "null")
        busy=$(gc_counters | awk '$3 == 1 && $9 != 0 && $9 != "null" { printf "%s ", $1 }')
        [ -z "$busy" ] && return 0
        sleep 0.1
        i=$((i + 1))
    done
    gp_fail "queues not empty after 10 s: $busy"
}

# Stall probe: the guest's clock seen every 50 ms; a long gap between two lines is time the
# emulator did not run (QEMU preempted on a busy machine) - timers late, wires bursting after.
probe=/tmp/gcluster-probe
( while :; do read -r u _ </proc/uptime; echo "$u"; sleep 0.05; done >"$probe" ) &
probe_pid=$!
now() { cut -d' ' -f1 /proc/uptime; }
stall_ms() { # FROM TO: the longest gap (ms) the probe saw in that window
    awk -v a="$1" -v b="$2" '$1 >= a && $1 <= b { if (p != "" && $1 - p > m) m = $1 - p; p = $1 }
        END { printf "%d", m * 1000 }' "$probe"
}
# a timing result is only a result if the emulator ran: name the stall when one fails
timing_fail() { # PHASE_START MESSAGE
    gp_fail "$2 (longest guest stall $(stall_ms "$1" "$(now)") ms; more than ~200 ms: host overloaded?)"
}

# How busy a paced sender kept its wire (data and gap frames) over its transfer, % of R: below
# 100 when TCP had nothing queued for a while (the flow restarts without gaps) or the emulator
# could not run the wire at R. Reported, not judged.
wire_busy() { # WIRE_BYTES SECONDS
    calc "$1 * 8 / $2 / ($R_MBIT * 1e6) * 100"
}

# Rule leases: `gapctl pace add` holds the rule while it runs.
hold() { # HOST DST RATE_BIT
    local ns i=0
    ns=$(gc_ns "$1")
    # the binary itself in the background (not a shell function): $! is the lease holder
    "$GC_IP" netns exec "$ns" gapctl pace add dev eth0 dst "$2" rate "$3" >/dev/null &
    eval "hold_$1=$!"
    while [ "$i" -lt 100 ]; do
        ip netns exec "$ns" gapctl -j pace show dev eth0 | grep -q "\"dst\":\"$2\"" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    gp_fail "rule $2 on $1 did not appear"
}
release() { # HOST
    local pid
    eval "pid=\$hold_$1"
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

# flows PHASE SRC... : each SRC sends BYTES to h3 (ports 6001, 6002, ...) at once; sets
# PHASE_rate_SRC (Mbit/s at the sink: accept to last byte) and PHASE_rtx_SRC
flows() {
    local phase=$1 src port=6000 pids="" sinks="" out
    shift
    for src in "$@"; do
        port=$((port + 1))
        gc_exec h3 gp-traffic tcp-sink --port "$port" --once --timeout 120 \
            >"$(gp_result "gcluster/$phase-sink-$src.json")" &
        sinks="$sinks $!"
    done
    port=6000
    for src in "$@"; do
        port=$((port + 1))
        listening h3 "$port" || return
    done
    port=6000
    for src in "$@"; do
        port=$((port + 1))
        gc_exec "$src" gp-traffic tcp-send --dst 10.1.0.3 --port "$port" --bytes "$BYTES" --timeout 120 \
            >"$(gp_result "gcluster/$phase-send-$src.json")" &
        pids="$pids $!"
    done
    for p in $pids $sinks; do
        wait "$p" || gp_fail "$phase: a sender or sink failed"
    done
    for src in "$@"; do
        out=$(cat "$GP_RESULTS/gcluster/$phase-sink-$src.json")
        eval "${phase}_rate_$src=$(calc "$(field "$out" rate) / 1e6")"
        eval "${phase}_rtx_$src=$(field "$(cat "$GP_RESULTS/gcluster/$phase-send-$src.json")" retransmits)"
    done
    drained
}

# --- (a) one unpaced flow ------------------------------------------------------------------
ta=$(now)
snapshot a0
flows a h1
snapshot a1
expect=$(limit_mbit "$([ "$R_MBIT" -lt "$C_MBIT" ] && echo "$R_MBIT" || echo "$C_MBIT")")
say "[$(elapsed)] (a) unpaced h1->h3: goodput $a_rate_h1 Mbit/s of $expect possible, retransmits $a_rtx_h1," \
    "bottleneck drops $(delta bndrop a1 a0); longest guest stall $(stall_ms "$ta" "$(now)") ms"
holds "$a_rate_h1 >= 0.80 * $expect && $a_rate_h1 <= 1.02 * $expect" ||
    timing_fail "$ta" "(a) goodput $a_rate_h1 Mbit/s outside [0.80, 1.02] x $expect"
[ "$(delta h1_gfr a1 a0)" = 0 ] || gp_fail "(a) gap frames without a rule"

# --- (b) one paced flow at C/2 -------------------------------------------------------------
r_kbit=$((C_MBIT * 1000 / 2))
hold h1 10.1.0.3/32 "${r_kbit}kbit"
tb=$(now)
snapshot b0
flows b h1
snapshot b1
release h1
expect=$(limit_mbit "$(calc "$r_kbit / 1000")")
dw=$(delta h1_dwire b1 b0)
gw=$(delta h1_gwire b1 b0)
gf=$(delta h1_gfr b1 b0)
dp=$(delta h1_dpk b1 b0)
wire=$(delta w1 b1 b0)
wirep=$(delta w1p b1 b0)
bn=$(delta bn b1 b0)
bnp=$(delta bnp b1 b0)
secs=$(field "$(cat "$GP_RESULTS/gcluster/b-send-h1.json")" seconds)
busy=$(wire_busy "$wire" "$secs")
say "[$(elapsed)] (b) paced h1->h3 at $r_kbit kbit/s: goodput $b_rate_h1 Mbit/s of $expect planned, retransmits $b_rtx_h1"
say "    gappace on h1: $dp data frames ($dw wire bytes), $gf gap frames ($gw wire bytes);" \
    "wire w1 $wirep frames, $wire wire bytes, busy $busy% of R"
say "    bottleneck L->R: $bnp frames, $bn wire bytes; h2 received $(delta h2rx b1 b0) frames;" \
    "longest guest stall $(stall_ms "$tb" "$(now)") ms"
holds "$b_rate_h1 >= 0.90 * $expect && $b_rate_h1 <= 1.02 * $expect" ||
    timing_fail "$tb" "(b) goodput $b_rate_h1 Mbit/s outside [0.90, 1.02] x $expect"
[ "$gf" -gt 0 ] || gp_fail "(b) no gap frames"
[ "$wire" = $((dw + gw)) ] && [ "$wirep" = $((dp + gf)) ] ||
    gp_fail "(b) wire w1 carried $wirep frames / $wire bytes, gappace sent $((dp + gf)) / $((dw + gw))"
[ "$bn" = "$dw" ] && [ "$bnp" = "$dp" ] ||
    gp_fail "(b) bottleneck carried $bnp frames / $bn bytes, h1 sent $dp data frames / $dw bytes"
[ "$(delta h2rx b1 b0)" = 0 ] || gp_fail "(b) h2 received frames (flooded?)"

# --- (c) incast: two senders into one bottleneck --------------------------------------------
tcu=$(now)
snapshot c0
flows cu h1 h2
snapshot c1
unpaced_drops=$(delta bndrop c1 c0)
say "[$(elapsed)] (c) unpaced h1,h2->h3: goodput $cu_rate_h1 + $cu_rate_h2 Mbit/s, bottleneck drops $unpaced_drops," \
    "retransmits $cu_rtx_h1 + $cu_rtx_h2; longest guest stall $(stall_ms "$tcu" "$(now)") ms"
[ "$unpaced_drops" -gt 0 ] || gp_fail "(c) unpaced incast did not overflow the bottleneck FIFO"

hold h1 10.1.0.3/32 "${r_kbit}kbit"
hold h2 10.1.0.3/32 "${r_kbit}kbit"
tcp=$(now)
snapshot c2
flows cp h1 h2
snapshot c3
release h1
release h2
paced_drops=$(delta bndrop c3 c2)
busy1=$(wire_busy $(($(delta h1_dwire c3 c2) + $(delta h1_gwire c3 c2))) \
    "$(field "$(cat "$GP_RESULTS/gcluster/cp-send-h1.json")" seconds)")
busy2=$(wire_busy $(($(delta h2_dwire c3 c2) + $(delta h2_gwire c3 c2))) \
    "$(field "$(cat "$GP_RESULTS/gcluster/cp-send-h2.json")" seconds)")
say "[$(elapsed)] (c) paced h1,h2->h3 at $r_kbit kbit/s each: goodput $cp_rate_h1 + $cp_rate_h2 Mbit/s of $expect each," \
    "bottleneck drops $paced_drops, retransmits $cp_rtx_h1 + $cp_rtx_h2," \
    "gap frames $(delta h1_gfr c3 c2) + $(delta h2_gfr c3 c2), wires busy $busy1 + $busy2% of R;" \
    "longest guest stall $(stall_ms "$tcp" "$(now)") ms"
# Both senders together offer exactly C, so the FIFO has no slack to absorb the one thing the
# emulator adds: after a vCPU stall (QEMU threads preempted on a busy machine) a wire catches
# up in a burst, its gap frames vanish at the bridge and its data frames arrive back to back.
# A handful of drops in thousands of frames is that, not pacing; without pacing it is 10x more.
cp_frames=$(($(delta h1_dpk c3 c2) + $(delta h2_dpk c3 c2)))
[ "$paced_drops" -le $((unpaced_drops / 10)) ] && [ "$paced_drops" -le $((cp_frames / 200)) ] ||
    timing_fail "$tcp" "(c) paced incast dropped $paced_drops of $cp_frames frames at the bottleneck (unpaced: $unpaced_drops)"
[ "$(delta h1_gfr c3 c2)" -gt 0 ] && [ "$(delta h2_gfr c3 c2)" -gt 0 ] || gp_fail "(c) no gap frames"

# --- (d) lookahead: an unpaced frame behind a paced flow -----------------------------------
# h1's eth0 is a veth: it takes whatever gappace hands it at once, so gappace emits the gaps for
# every queued deadline in one go and h1's wire (HFSC at R) holds them. A ping from h1 to h4
# (no rule: unpaced) waits behind that. Option lookahead keeps gappace's wire clock at most
# that far ahead of real time: the ping waits for at most that much gap.
paced_ping() { # PHASE: a paced flow h1->h3 with 15 pings h1->h4 during it; sets PHASE_ping
    local phase=$1 sink send
    gc_exec h3 gp-traffic tcp-sink --port 6100 --once --timeout 120 >"$(gp_result "gcluster/$phase-sink.json")" &
    sink=$!
    listening h3 6100 || return
    gc_exec h1 gp-traffic tcp-send --dst 10.1.0.3 --port 6100 --bytes "$BYTES" --timeout 120 \
        >"$(gp_result "gcluster/$phase-send.json")" &
    send=$!
    sleep 1
    gc_exec h1 ping -c 15 -i 0.2 -W 5 10.1.0.4 >"$(gp_result "gcluster/$phase-ping.txt")" 2>&1
    wait "$send" || gp_fail "$phase: the sender failed"
    wait "$sink" || gp_fail "$phase: the sink failed"
    # median of the replies' times (ms); a lost ping counts as 5000
    eval "${phase}_ping=$(awk '/time=/ { sub(/.*time=/, ""); t[n++] = $1 + 0 }
        END { for (i = n; i < 15; i++) t[n++] = 5000; for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
              if (t[j] < t[i]) { x = t[i]; t[i] = t[j]; t[j] = x } printf "%.2f", t[int(n / 2)] }' \
        "$GP_RESULTS/gcluster/$phase-ping.txt")"
    eval "${phase}_rate=$(calc "$(field "$(cat "$GP_RESULTS/gcluster/$phase-sink.json")" rate) / 1e6")"
    drained
}
lookahead_us=2000
hold h1 10.1.0.3/32 "${r_kbit}kbit"
td=$(now)
paced_ping d0
gc_exec h1 gapctl qdisc change dev eth0 lookahead "${lookahead_us}us" >/dev/null ||
    gp_fail "(d) gapctl refused lookahead"
gc_exec h1 gapctl qdisc show dev eth0 | grep -q "lookahead ${lookahead_us}us" || gp_fail "(d) lookahead not shown"
paced_ping d1
waits1=$(field "$(gc_exec h1 gapctl -j qdisc show dev eth0)" lookahead_waits)
gc_exec h1 gapctl qdisc change dev eth0 lookahead 0 >/dev/null || gp_fail "(d) lookahead 0 refused"
release h1
say "[$(elapsed)] (d) ping h1->h4 during a paced flow h1->h3 at $r_kbit kbit/s: median $d0_ping ms without" \
    "lookahead, $d1_ping ms with lookahead ${lookahead_us}us (dequeues held back: ${waits1:-?});" \
    "paced goodput $d0_rate / $d1_rate Mbit/s of $expect; longest guest stall $(stall_ms "$td" "$(now)") ms"
# Without the bound the ping waits behind the gaps of every queued frame: tens to hundreds of ms.
holds "$d1_ping <= 40 && $d1_ping * 2 <= $d0_ping" ||
    timing_fail "$td" "(d) ping with lookahead $d1_ping ms, without $d0_ping ms"
[ -n "$waits1" ] && [ "$waits1" -gt 0 ] || gp_fail "(d) lookahead never held dequeue back (${waits1:-no counter})"
holds "$d1_rate >= 0.85 * $expect && $d1_rate <= 1.02 * $expect" ||
    timing_fail "$td" "(d) paced goodput with lookahead $d1_rate Mbit/s outside [0.85, 1.02] x $expect"

# the NIC rings never dropped
for phase in a1 b1 c1 c3; do
    eval "d=\$((\${${phase}_w1drop} + \${${phase}_w2drop}))"
    [ "$d" = 0 ] || gp_fail "a wire ring dropped ($d frames by $phase)"
done
# the configuration gcluster writes for a host's gappaced is valid
gc_gappaced_config h1 >/run/gcluster/h1.toml
gappaced --check-config --config /run/gcluster/h1.toml >>"$report" 2>&1 ||
    gp_fail "gappaced refuses gcluster's configuration: $(cat /run/gcluster/h1.toml)"
gc_stats >"$(gp_result gcluster/stats.json)" || gp_fail "gcluster stats"
kill "$probe_pid"
gc_down || gp_fail "gcluster down"
[ -z "$(ls /run/netns)" ] || gp_fail "namespaces left: $(ls /run/netns)"
