#!/bin/sh
# shellcheck shell=dash disable=SC3043 # (busybox ash has "local")
# gcluster-alltoall — guest side of the all-to-all benchmark on the guest cluster: one
# gp-alltoall rank per host, without and/or with one gappaced (module backend) per host.
# Installed as /usr/bin/gcluster-alltoall by run.sh. Example (host side):
#
#   tests/vm/gcluster/run.sh --kver 6.1.0-56-amd64 --build /tmp/build --timeout 900 -- \
#       gcluster-alltoall --left 4 --right 4 --rate 5mbit --bottleneck 5mbit --queue 16 \
#       --mode both -- --msg 16k --iterations 20
#
#   gcluster-alltoall [--left N] [--right M] [--rate R] [--bottleneck C] [--queue Q]
#                     [--lookahead TIME] [--mode baseline|gappaced|both] [--timeout S]
#                     [--pacer socket|host] [-- GP-ALLTOALL-OPTIONS]
#
# Rank r runs on host h(r+1) (ranks 0..N-1 on the left), rendezvous at rank 0's address;
# --side and --capacity are filled in. With gappaced each rank sends phase hints
# (--hints iteration) through the kernel to its host's daemon, which paces the connections
# that cross the bottleneck (gcluster gappaced-config). Results under /results/alltoall/MODE/:
# rank 0's JSON (alltoall.json), bottleneck and wire counters before/after, every daemon's
# `gapctl -j daemon show` and log. Exit 1 if a run failed. --pacer is the daemons' [pacing]
# pacer (default theirs, "socket"): "host" paces the destinations behind the bottleneck in one
# rule group per host where the plan asks for a host bucket.
set -u
GC_SOURCE_ONLY=1 . /usr/bin/gcluster

left=4 right=4 rate=2mbit bottleneck=2mbit queue=16 mode=both timeout=600 lookahead=2ms
while [ $# -gt 0 ]; do
    case $1 in
    --left) left=$2; shift 2 ;;
    --right) right=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --bottleneck) bottleneck=$2; shift 2 ;;
    --queue) queue=$2; shift 2 ;;
    --lookahead) lookahead=$2; shift 2 ;;
    --mode) mode=$2; shift 2 ;;
    --timeout) timeout=$2; shift 2 ;;
    --pacer) GC_PACER=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "gcluster-alltoall: unknown option '$1'" >&2; exit 2 ;;
    esac
done
case $mode in baseline) modes=baseline ;; gappaced) modes=gappaced ;; both) modes="baseline gappaced" ;;
*) echo "gcluster-alltoall: --mode baseline, gappaced or both" >&2; exit 2 ;; esac
case ${GC_PACER:-socket} in socket | host) ;; *) echo "gcluster-alltoall: --pacer socket or host" >&2; exit 2 ;; esac
command -v gp-alltoall >/dev/null || { echo "gcluster-alltoall: gp-alltoall is not in the initramfs" >&2; exit 2; }

export GAPPACE_CONTROL_SOCK=@gappace-control	# gapctl daemon show, in each host's netns
# The ranks hint through the kernel; libgapctl reads the daemon's quiet advice on its socket.
export GAPPACE_HINTS_SOCK=@gappace-hints
failed=0

start_daemons() { # DIR
    local i=1 n
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        mkdir -p "/run/gcluster/h$i"
        gc_gappaced_config "h$i" >"/run/gcluster/h$i/gappaced.toml"
        "$GC_IP" netns exec "$GC_PREFIX-h$i" gappaced --config "/run/gcluster/h$i/gappaced.toml" \
            2>"$1/gappaced-h$i.log" &
        eval "daemon_$i=$!"
        n=0
        until gc_exec "h$i" gapctl daemon show >/dev/null 2>&1; do
            n=$((n + 1))
            [ "$n" -lt 100 ] || { echo "gappaced on h$i did not start: $(cat "$1/gappaced-h$i.log")" >&2; return 1; }
            sleep 0.1
        done
        i=$((i + 1))
    done
}

stop_daemons() { # DIR
    local i=1 pid
    while [ "$i" -le "$GC_HOSTS_N" ]; do
        gc_exec "h$i" gapctl -j daemon show >"$1/daemon-h$i.json" 2>&1
        eval "pid=\${daemon_$i:-}"
        [ -n "$pid" ] && { kill "$pid"; wait "$pid"; }
        i=$((i + 1))
    done
}

run_mode() { # MODE [GP-ALLTOALL-OPTIONS]
    local m=$1 dir r h side hints=none pids=""
    shift
    dir=/results/alltoall/$m
    mkdir -p "$dir"
    gcluster up --left "$left" --right "$right" --rate "$rate" --bottleneck "$bottleneck" --queue "$queue" \
        --gappace ${lookahead:+--lookahead "$lookahead"} 2>"$dir/up.txt" || { cat "$dir/up.txt" >&2; return 1; }
    gc_load_state
    if [ "$m" = gappaced ]; then
        start_daemons "$dir" || { gc_down; return 1; }
        hints=iteration
    fi
    gc_stats >"$dir/stats-before.json"
    r=$((GC_HOSTS_N - 1))
    while [ "$r" -ge 0 ]; do	# rank 0 last: the others retry their rendezvous until it is up
        h=$((r + 1))
        side=left
        [ "$h" -gt "$GC_LEFT" ] && side=right
        "$GC_IP" netns exec "$GC_PREFIX-h$h" gp-alltoall --rank "$r" --ranks "$GC_HOSTS_N" \
            --rendezvous "$GC_SUBNET.1:7000" --bind "$GC_SUBNET.$h" --side "$side" \
            --capacity "${GC_BOTTLENECK_BPS}" --hints "$hints" --timeout "$timeout" "$@" \
            >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
        pids="$pids $!"
        r=$((r - 1))
    done
    local rc=0
    for p in $pids; do wait "$p" || rc=1; done
    cp "$dir/rank0.out" "$dir/alltoall.json"
    gc_stats >"$dir/stats-after.json"
    [ "$m" = gappaced ] && stop_daemons "$dir"
    gc_down
    return $rc
}

for m in $modes; do
    run_mode "$m" "$@" || { echo "gcluster-alltoall: the $m run failed (see /results/alltoall/$m)" >&2; failed=1; }
done
exit $failed
