#!/bin/busybox sh
# shellcheck shell=dash disable=SC3043 # (busybox ash has "local")
# guest-init.sh — /init of the harness initramfs (PID 1 inside the QEMU guest).
#
# Boots a minimal system, runs /tests/$gp.test.sh under a watchdog, checks
# dmesg for kernel warnings/bugs, ships /results to the host over /dev/ttyS1,
# prints exactly one "GP-RESULT: PASS" / "GP-RESULT: FAIL <reason>" line on the
# console (ttyS0) and powers off.
#
# Kernel command line parameters (read from /proc/cmdline; the dot makes the
# kernel treat them as module parameters, so they do not become init args/env):
#   gp.test=NAME       test script /tests/NAME.sh (required)
#   gp.timeout=SECS    guest watchdog for the test (default 120)
#   gp.shell=1         after the result, a shell on the console (run-guest.sh --interactive)
#
# busybox ash, not bash: keep this POSIX-ish.

/bin/busybox --install -s /bin
# Real iproute2 (netns, tc qdisc add) lives in /usr/sbin, first in PATH for
# programs that exec it (ip netns exec ...). Debian's busybox shell runs its
# own applets before searching PATH, so guest-lib.sh also wraps them in functions.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root
umask 022

GP_RUN=/run/gp           # harness state: failures, test log, exit code
RESULTS=/results         # files here go back to the host (OUT/results/)

say() { echo "gp-init: $*"; }

mount_filesystems() {
    mount -t proc proc /proc
    mount -t sysfs sysfs /sys
    mount -t devtmpfs devtmpfs /dev 2>/dev/null || true
    mkdir -p /dev/pts /dev/shm
    mount -t devpts devpts /dev/pts
    mount -t tmpfs -o mode=1777 tmpfs /dev/shm
    mount -t tmpfs -o mode=1777 tmpfs /tmp
    mount -t tmpfs -o mode=0755 tmpfs /run
    mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null || true
    mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null || true
    mount -t bpf bpf /sys/fs/bpf 2>/dev/null || true
    # "ip netns add" bind-mounts namespaces under /run/netns and wants it to
    # be a shared mount point; prepare it so that works from the start.
    mkdir -p /run/netns
    mount -t tmpfs -o mode=0755 netns /run/netns
    mount --make-shared /run/netns 2>/dev/null || true
    mkdir -p "$GP_RUN" "$RESULTS" /var
    ln -sfn /run /var/run
}

cmdline_param() {  # cmdline_param NAME DEFAULT
    local v
    v=$(tr ' ' '\n' </proc/cmdline | sed -n "s/^$1=//p" | tail -n 1)
    echo "${v:-$2}"
}

load_base_modules() {
    local m
    # load-order lists the NIC driver and its dependencies, dependencies first.
    for m in $(cat /lib/modules/base/load-order 2>/dev/null); do
        insmod "/lib/modules/base/$m" || say "insmod $m failed"
    done
}

# Test scripts get any extra module via /lib/modules/NAME.ko; tell them where.
export GP_MODULE_DIR=/lib/modules
export GP_LIB=/lib/gp/guest-lib.sh
export GP_RESULTS=$RESULTS
export GP_RUN

# Run the test in its own session and process group (so the watchdog, and the
# cleanup after a normal end, can kill everything it started, including
# helpers left in the background), mirror its output to the console and to
# results/test.log, and record its exit code. The group id is written by the
# session leader itself: busybox setsid may fork, so $! is not reliable.
run_test() {
    local script=$1 timeout=$2 wd rc pg
    # The harness sleeps in a read of the "ended" FIFO, which the test's shell
    # (its exit code recorded) or the watchdog writes. It forks nothing while the
    # test runs: a loop that polled for test.rc every 0.1 s ran busybox's sleep
    # 10 times a second, and every fork and exec costs the emulated CPU.
    mkfifo "$GP_RUN/ended"
    # The exit code is recorded as soon as the test shell exits, not when the
    # pipe to tee closes: a helper left in the background keeps that pipe open.
    setsid sh -c '
        echo $$ >"$3/test.pgid"
        cd /tmp
        { sh "$1" </dev/null; echo $? >"$3/test.rc.tmp"; mv "$3/test.rc.tmp" "$3/test.rc"; echo >"$3/ended"; } 2>&1 | tee "$2"
    ' gp-test "$script" "$RESULTS/test.log" "$GP_RUN" &
    (
        sleep "$timeout"
        echo "timeout after ${timeout}s" >"$GP_RUN/timedout"
        pg=$(cat "$GP_RUN/test.pgid" 2>/dev/null)
        [ -n "$pg" ] && kill -KILL "-$pg" 2>/dev/null
        echo >"$GP_RUN/ended"
    ) &
    wd=$!
    # Bounded by the watchdog, which always writes "ended". A read that ends
    # without a line (a writer closed first, or the open interrupted by the
    # SIGCHLD of an orphan this init reaps) is as good: test.rc or timedout
    # decides, and a spurious wake-up only reads again.
    while [ ! -f "$GP_RUN/test.rc" ] && [ ! -f "$GP_RUN/timedout" ]; do
        { read -r _ <"$GP_RUN/ended"; } 2>/dev/null || true
    done
    kill "$wd" 2>/dev/null
    sleep 0.2
    # Whatever the test left running goes now, before dmesg is read.
    pg=$(cat "$GP_RUN/test.pgid" 2>/dev/null)
    [ -n "$pg" ] && kill -KILL "-$pg" 2>/dev/null
    if [ -f "$GP_RUN/timedout" ]; then
        echo "test $(cat "$GP_RUN/timedout")" >>"$GP_RUN/failures"
        return
    fi
    rc=$(cat "$GP_RUN/test.rc")
    [ "$rc" = 0 ] || echo "test exited with status $rc" >>"$GP_RUN/failures"
}

# Kernel trouble shows up in dmesg even when the test itself "passes".
# /lib/gp/dmesg-ignore holds extended regexes of known-benign lines.
check_dmesg() {
    local hits re
    dmesg >"$RESULTS/dmesg.txt" 2>&1
    # whole WARN blocks that are the emulator's (dmesg-ignore-blocks, each with its reason)
    cp "$RESULTS/dmesg.txt" /tmp/dmesg.checked
    while IFS= read -r re; do
        case $re in '' | '#'*) continue ;; esac
        if grep -q -E "$re" /tmp/dmesg.checked; then
            say "ignoring known emulator warning block: $re"
            sed -E -i "\#$re#,\#---\[ end trace#d" /tmp/dmesg.checked
        fi
    done </lib/gp/dmesg-ignore-blocks
    hits=$(grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace|refcount_t|list_del corruption|kernel BUG' \
        /tmp/dmesg.checked | grep -v -E -f /lib/gp/dmesg-ignore 2>/dev/null)
    if [ -n "$hits" ]; then
        say "kernel problems found in dmesg:"
        echo "$hits" | head -n 40 | sed 's/^/gp-init: dmesg: /'
        echo "kernel warning in dmesg: $(echo "$hits" | head -n 1 | sed 's/^\[[^]]*\] *//')" >>"$GP_RUN/failures"
    fi
}

# Send /results to the host on the second serial port as base64 of a gzipped
# tar, between marker lines. The host (run-guest.sh) strips \r and decodes.
# Closing the tty waits until the UART has drained, so nothing is lost at poweroff.
send_results() {
    local port=/dev/ttyS1
    if [ ! -c "$port" ]; then
        say "no $port: results not sent"
        return
    fi
    stty -F "$port" raw -echo 2>/dev/null
    {
        echo "GP-RESULTS-BEGIN"
        tar -C "$RESULTS" -cf - . | gzip -c | base64
        echo "GP-RESULTS-END"
    } >"$port"
}

finish() {
    local reason
    if [ -s "$GP_RUN/failures" ]; then
        reason=$(head -n 1 "$GP_RUN/failures")
        local n
        n=$(wc -l <"$GP_RUN/failures")
        [ "$n" -gt 1 ] && reason="$reason (+$((n - 1)) more)"
        say "failures:"
        sed 's/^/gp-init:   /' "$GP_RUN/failures"
        echo "GP-RESULT: FAIL $reason"
    else
        echo "GP-RESULT: PASS"
    fi
    if [ "$(cmdline_param gp.shell 0)" = 1 ]; then
        say "gp.shell=1: starting a shell; 'poweroff -f' to quit"
        setsid cttyhack sh
    fi
    # Give the console UART a moment to drain the last line before power off.
    sleep 0.3
    poweroff -f
}

main() {
    mount_filesystems
    : >"$GP_RUN/failures"
    load_base_modules
    # Detect WARN()s instead of dying on them; oopses are reported the same way.
    sysctl -qw kernel.panic_on_warn=0 >/dev/null 2>&1 || echo 0 >/proc/sys/kernel/panic_on_warn

    local name timeout script
    name=$(cmdline_param gp.test "")
    timeout=$(cmdline_param gp.timeout 120)
    script=/tests/$name.sh
    say "kernel $(uname -r), test '$name', timeout ${timeout}s, uptime $(cut -d' ' -f1 /proc/uptime)s"
    if [ -z "$name" ]; then
        echo "no gp.test= on the kernel command line" >>"$GP_RUN/failures"
    elif [ ! -f "$script" ]; then
        echo "test script $script not in initramfs" >>"$GP_RUN/failures"
    else
        echo "GP-TEST-BEGIN $name"
        run_test "$script" "$timeout"
        echo "GP-TEST-END $name"
    fi
    check_dmesg
    send_results
    finish
}

main
