#!/usr/bin/env bash
# shellcheck disable=SC2054 # (commas inside QEMU option values are intended)
# run-guest.sh — boot one guest test under QEMU (TCG) and judge it.
#
# Usage:
#   run-guest.sh --kernel-dir DIR --initrd FILE --test NAME --out DIR
#                [--timeout SECONDS] [--capture] [--mem MB] [--smp N]
#                [--append "KERNEL ARGS"] [--verbose]
#
#   --kernel-dir DIR  from "kernels.sh fetch KVER" (boots DIR/vmlinux via PVH)
#   --initrd FILE     from mkinitramfs.sh (must contain /tests/NAME.sh)
#   --test NAME       guest test to run (gp.test=NAME)
#   --out DIR         run output: console.log, qemu.log, results/, eth0.pcap, run.txt
#   --timeout SECS    guest watchdog for the test (default 120); the host kills
#                     QEMU at SECS + 90 s whatever happens
#   --capture         record the frames eth0 transmits to OUT/eth0.pcap
#                     (first 128 bytes of each frame)
#   --mem MB          guest memory (default 512)
#   --smp N           guest CPUs (default 1; N > 1 uses multi-threaded TCG, one
#                     host thread per vCPU)
#   --append ARGS     extra kernel command line arguments
#   --verbose         also stream the console to stderr while the guest runs
#   --interactive     console on this terminal (still logged to console.log) and
#                     a guest shell after the test (gp.shell=1); Ctrl-A X quits QEMU
#   --qemu-arg ARG    extra QEMU argument (repeatable), e.g. a second capture:
#                     --qemu-arg -object --qemu-arg filter-dump,id=cap1,netdev=gpn1,queue=rx,file=X
#
# Exit status: 0 only if the console shows "GP-RESULT: PASS" and the results
# stream arrived intact; otherwise prints the reason and the console tail.
#
# Wire: two e1000 NICs on QEMU hub 0. The first (netdev gpn0, PCI slot 4,
# MAC 52:54:00:12:34:01) is eth0 in the guest; the second (gpn1, slot 5,
# MAC 52:54:00:12:34:02) is eth1. romfile= skips loading the iPXE option ROM.
set -euo pipefail

QEMU=${GP_QEMU:-qemu-system-x86_64}
# Margin on top of the guest watchdog: boot, dmesg scan, results transfer.
HOST_MARGIN=${GP_HOST_MARGIN:-90}

die() { echo "run-guest.sh: error: $*" >&2; exit 2; }
usage() { sed -n '/^# shellcheck/d; 2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

KERNEL_DIR="" INITRD="" TEST="" OUT="" TIMEOUT=120 CAPTURE=0 MEM=512 SMP=1 APPEND="" VERBOSE=0 INTERACTIVE=0
QEMU_EXTRA=()
QEMU_CMD_PRE=()

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --kernel-dir) KERNEL_DIR=${2:?}; shift 2 ;;
            --initrd) INITRD=${2:?}; shift 2 ;;
            --test) TEST=${2:?}; shift 2 ;;
            --out) OUT=${2:?}; shift 2 ;;
            --timeout) TIMEOUT=${2:?}; shift 2 ;;
            --capture) CAPTURE=1; shift ;;
            --mem) MEM=${2:?}; shift 2 ;;
            --smp) SMP=${2:?}; shift 2 ;;
            --append) APPEND=${2?}; shift 2 ;;
            --verbose) VERBOSE=1; shift ;;
            --interactive) INTERACTIVE=1; shift ;;
            --qemu-arg) QEMU_EXTRA+=("${2:?}"); shift 2 ;;
            -h | --help) usage ;;
            *) die "unknown argument: $1 (see --help)" ;;
        esac
    done
    [[ -f $KERNEL_DIR/vmlinux ]] || die "--kernel-dir must contain vmlinux (kernels.sh fetch)"
    [[ -f $INITRD ]] || die "--initrd file missing: $INITRD"
    [[ $TEST =~ ^[A-Za-z0-9_.-]+$ ]] || die "--test NAME required (letters, digits, _ . -)"
    [[ -n $OUT ]] || die "--out DIR required"
    [[ $TIMEOUT =~ ^[0-9]+$ && $MEM =~ ^[0-9]+$ && $SMP =~ ^[0-9]+$ ]] || die "numeric options must be integers"
    command -v "$QEMU" >/dev/null || die "$QEMU not installed (tests/vm/deps.sh)"
}

QEMU_PID=""
TAIL_PID=""
cleanup() {
    # Never leave QEMU behind: we own exactly these two processes.
    if [[ -n $QEMU_PID ]] && kill -0 "$QEMU_PID" 2>/dev/null; then
        kill -TERM "$QEMU_PID" 2>/dev/null || true
        sleep 1
        kill -KILL "$QEMU_PID" 2>/dev/null || true
        wait "$QEMU_PID" 2>/dev/null || true
    fi
    if [[ -n $TAIL_PID ]]; then
        kill "$TAIL_PID" 2>/dev/null || true
        wait "$TAIL_PID" 2>/dev/null || true
    fi
}

build_qemu_cmd() {
    local cmdline="console=ttyS0 quiet panic=-1 gp.test=$TEST gp.timeout=$TIMEOUT $APPEND"
    local accel=tcg console="file:$OUT/console.log"
    if [[ $INTERACTIVE -eq 1 ]]; then
        cmdline+=" gp.shell=1"
        console=chardev:gpcon
        QEMU_CMD_PRE=(-chardev "stdio,id=gpcon,mux=on,signal=off,logfile=$OUT/console.log" -mon chardev=gpcon,mode=readline)
    fi
    [[ $SMP -gt 1 ]] && accel=tcg,thread=multi
    QEMU_CMD=(
        "$QEMU" -accel "$accel" -cpu max -m "$MEM" -smp "$SMP"
        -nodefaults -display none -no-reboot -no-user-config
        ${QEMU_CMD_PRE[@]+"${QEMU_CMD_PRE[@]}"}
        -kernel "$KERNEL_DIR/vmlinux" -initrd "$INITRD" -append "$cmdline"
        # ttyS0: console. ttyS1: results stream (see guest-init.sh send_results).
        -serial "$console" -serial "file:$OUT/.serial1"
        -netdev hubport,id=gpn0,hubid=0
        -device e1000,netdev=gpn0,mac=52:54:00:12:34:01,addr=0x4,romfile=
        -netdev hubport,id=gpn1,hubid=0
        -device e1000,netdev=gpn1,mac=52:54:00:12:34:02,addr=0x5,romfile=
    )
    if [[ $CAPTURE -eq 1 ]]; then
        # A netfilter on a netdev sees two queues: "rx" is what the netdev
        # receives, i.e. frames the guest NIC transmits toward the hub; "tx"
        # would be frames the hub delivers to that NIC. Verified with QEMU 7.2
        # by run-smoke.sh: echo requests from eth0 appear, eth1's replies do not.
        QEMU_CMD+=(-object "filter-dump,id=cap0,netdev=gpn0,queue=rx,file=$OUT/eth0.pcap,maxlen=128")
    fi
    QEMU_CMD+=(${QEMU_EXTRA[@]+"${QEMU_EXTRA[@]}"})
}

# Decode the base64(tar.gz) stream that guest-init.sh wrote to ttyS1.
unpack_results() {
    local raw=$OUT/.serial1
    [[ -s $raw ]] || { echo "no results stream on ttyS1"; return 1; }
    grep -aq '^GP-RESULTS-END' <(tr -d '\r' <"$raw") || { echo "results stream truncated (no end marker)"; return 1; }
    mkdir -p "$OUT/results"
    tr -d '\r' <"$raw" | sed -n '/^GP-RESULTS-BEGIN/,/^GP-RESULTS-END/{/^GP-RESULTS-/d;p}' \
        | base64 -d | tar -xzf - -C "$OUT/results" \
        || { echo "results stream corrupt"; return 1; }
    rm -f "$raw"
}

fail() {
    local reason=$1
    echo "run-guest.sh: FAIL [$TEST on $(basename "$KERNEL_DIR")]: $reason" >&2
    if [[ -s $OUT/console.log ]]; then
        echo "---- last 40 console lines ($OUT/console.log) ----" >&2
        tail -n 40 "$OUT/console.log" >&2
        echo "----" >&2
    fi
    # (QEMU always warns that hub 0 has no host network: that is the point.)
    grep -v "is not connected to host network" "$OUT/qemu.log" 2>/dev/null | tail -n 5 | sed "s/^/qemu: /" >&2 || true
    exit 1
}

main() {
    parse_args "$@"
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    rm -rf "${OUT:?}/results" "${OUT:?}/console.log" "${OUT:?}/.serial1" "${OUT:?}/eth0.pcap" "${OUT:?}/run.txt"
    : >"$OUT/console.log"
    build_qemu_cmd
    trap cleanup EXIT
    trap 'exit 130' INT TERM

    if [[ $VERBOSE -eq 1 ]]; then
        tail -n +1 -f "$OUT/console.log" >&2 &
        TAIL_PID=$!
    fi

    local hard_limit=$((TIMEOUT + HOST_MARGIN)) start end rc=0
    printf '%q ' "${QEMU_CMD[@]}" >"$OUT/qemu-cmd.txt"
    start=$(date +%s.%N)
    if [[ $INTERACTIVE -eq 1 ]]; then
        # Foreground, so QEMU owns the terminal; still bounded.
        timeout --foreground --kill-after=10 "$hard_limit" "${QEMU_CMD[@]}" 2>"$OUT/qemu.log" || rc=$?
    else
        timeout --kill-after=10 "$hard_limit" "${QEMU_CMD[@]}" </dev/null >"$OUT/qemu.log" 2>&1 &
        QEMU_PID=$!
        wait "$QEMU_PID" || rc=$?
    fi
    QEMU_PID=""
    end=$(date +%s.%N)

    # The console is a tty: drop the \r of its \r\n line ends.
    sed -i 's/\r$//' "$OUT/console.log"
    local wall boot
    wall=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
    boot=$(sed -n 's/^gp-init: kernel .* uptime \([0-9.]*\)s$/\1/p' "$OUT/console.log" | sed -n 1p)
    printf 'test=%s\nkernel=%s\nwall_s=%s\nboot_s=%s\nqemu_rc=%s\n' \
        "$TEST" "$(cat "$KERNEL_DIR/kver" 2>/dev/null || basename "$KERNEL_DIR")" "$wall" "${boot:-?}" "$rc" >"$OUT/run.txt"

    [[ $rc -eq 124 || $rc -eq 137 ]] && fail "QEMU killed by the host after ${hard_limit}s (guest hung?)"
    [[ $rc -ne 0 ]] && fail "QEMU exited with status $rc"

    local result
    result=$(grep -a '^GP-RESULT: ' "$OUT/console.log" | tail -n 1 || true)
    [[ -n $result ]] || fail "no GP-RESULT line (guest crashed or panicked before finishing?)"
    local results_err
    results_err=$(unpack_results) || fail "$results_err"
    [[ $result == "GP-RESULT: PASS" ]] || fail "${result#GP-RESULT: }"
    echo "run-guest.sh: PASS [$TEST on $(basename "$KERNEL_DIR")] boot ${boot:-?}s, wall ${wall}s, out $OUT" >&2
}

main "$@"
