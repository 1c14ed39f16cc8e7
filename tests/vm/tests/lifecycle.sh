#!/bin/sh
# lifecycle — module load/unload and qdisc attach/detach while traffic flows;
# nothing may leak or warn. The harness fails the run on any WARN/BUG/oops.
#
# Leak checks (kmemleak is not in Debian's kernels): the module's refcount goes
# back to 0 after every detach, rmmod succeeds (and fails while attached), and
# the slab counters that gap frames (skbuff_head_cache clones) and rules
# (kmalloc) would grow return to their starting level.
. "$GP_LIB"

gp_wire_up 10.0.1.1/16 10.0.3.1/16
out=$(gp_result lifecycle.txt)

slab_active() { # CACHE: active objects
    awk -v c="$1" '$1 == c { print $2 }' /proc/slabinfo
}
slab_kb() {
    awk '/^Slab:/ { print $2 }' /proc/meminfo
}
refcnt() {
    cat /sys/module/gappace/refcnt
}
settle() { # let TX completions and RCU callbacks free what they hold
    sleep 1
    echo 3 >/proc/sys/vm/drop_caches
}

# A rule is a lease: its owner killed with SIGKILL, it is gone within a second.
gp_load_module gappace
gp_check "attach" gapctl qdisc attach dev eth0 linkrate 1mbit
gapctl pace add dev eth0 dst 10.0.9.9 rate 10kbit >/dev/null &
owner=$!
sleep 0.5
case $(gapctl -j pace show dev eth0) in *'10.0.9.9/32'*) ;; *) gp_fail "rule not set" ;; esac
kill -9 "$owner"
wait "$owner" 2>/dev/null
sleep 1
[ "$(gapctl -j pace show dev eth0)" = "[]" ] || gp_fail "rule outlived its killed owner: $(gapctl -j pace show dev eth0)"
gp_check "detach" gapctl qdisc detach dev eth0
gp_check "rmmod" rmmod gappace

settle
skb0=$(slab_active skbuff_head_cache)
slab0=$(slab_kb)
echo "start: skbuff_head_cache=$skb0 slab_kb=$slab0" >>"$out"

for round in 1 2 3; do
    gp_load_module gappace
    [ "$(refcnt)" = 0 ] || gp_fail "round $round: refcnt $(refcnt) after load"

    /usr/bin/gp-traffic udp-send --dst 10.0.3.1 --port 5000 --count 200000 --flow 1 --timeout 60 >/dev/null 2>&1 &
    unpaced=$!
    /usr/bin/gp-traffic udp-send --dst 10.0.1.1 --port 5000 --count 200000 --flow 2 --gso 44 --timeout 60 \
        >/dev/null 2>&1 &
    paced=$!

    gp_check "round $round attach under traffic" gapctl qdisc attach dev eth0 linkrate 1mbit ifg 100
    [ "$(refcnt)" = 1 ] || gp_fail "round $round: refcnt $(refcnt) while attached"
    rmmod gappace 2>/dev/null && gp_fail "round $round: rmmod succeeded while the qdisc was attached"
    gp_pace_hold eth0 10.0.1.1/32 10kbit
    sleep 0.3
    # delete the rule while its packets are queued: they continue unpaced
    gp_check "round $round del with backlog" gapctl pace del dev eth0 dst 10.0.1.1/32
    gp_pace_release eth0 10.0.1.1/32
    gp_pace_hold eth0 10.0.1.1/32 10kbit
    gp_check "round $round change" gapctl qdisc change dev eth0 ifg 1500 limit 50
    sleep 0.3
    # detach with paced packets queued and gap frames in flight
    gp_check "round $round detach under traffic" gapctl qdisc detach dev eth0
    gp_pace_release eth0 10.0.1.1/32	# its rule went with the qdisc
    gp_check "round $round re-attach" gapctl qdisc attach dev eth0 linkrate 1mbit
    gp-nlprobe --dev eth0 --add-rules 3000 --hold >/dev/null &
    bulk=$!
    i=0
    while [ "$i" -lt 600 ]; do # the probe holds 3000 rules' leases
        case $(gapctl -j stats dev eth0) in *'"rules":3000,'*) break ;; esac
        sleep 0.1
        i=$((i + 1))
    done
    gp_pace_hold eth0 10.0.1.1/32 10kbit
    sleep 0.3
    gapctl -j stats dev eth0 >"$(gp_result "stats-round-$round.json")"
    case $(cat "$(gp_result "stats-round-$round.json")") in *'"rules":3001,'*) ;; *) gp_fail "round $round: not 3001 rules" ;; esac
    # the rule dump takes many parts here: each rule listed once, none missing
    dumped=$(gapctl -j pace show dev eth0 | tr '{' '\n' | sed -n 's/.*"dst":"\([^"]*\)".*/\1/p')
    [ "$(echo "$dumped" | wc -l)" = 3001 ] && [ "$(echo "$dumped" | sort -u | wc -l)" = 3001 ] ||
        gp_fail "round $round: the dump of 3001 rules listed $(echo "$dumped" | wc -l), $(echo "$dumped" | sort -u | wc -l) distinct"
    gp_check "round $round detach with 3001 rules" gapctl qdisc detach dev eth0
    kill "$bulk" 2>/dev/null
    wait "$bulk" 2>/dev/null
    gp_pace_release eth0 10.0.1.1/32

    kill "$unpaced" "$paced" 2>/dev/null
    wait "$unpaced" "$paced" 2>/dev/null
    [ "$(refcnt)" = 0 ] || gp_fail "round $round: refcnt $(refcnt) after detach"
    gp_check "round $round rmmod" rmmod gappace
    grep -q '^gappace ' /proc/modules && gp_fail "round $round: module still listed"
    settle
    echo "round $round: skbuff_head_cache=$(slab_active skbuff_head_cache) slab_kb=$(slab_kb)" >>"$out"
done

settle
skb1=$(slab_active skbuff_head_cache)
slab1=$(slab_kb)
echo "end: skbuff_head_cache=$skb1 slab_kb=$slab1" >>"$out"
cat "$out"
# Each round sent tens of thousands of gap frames and held 3001 rules (~750 KB):
# a leak of either would dwarf these margins.
[ $((skb1 - skb0)) -lt 512 ] || gp_fail "skbuff_head_cache grew by $((skb1 - skb0)) objects"
[ $((slab1 - slab0)) -lt 1024 ] || gp_fail "slab grew by $((slab1 - slab0)) kB"
