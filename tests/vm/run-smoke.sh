#!/usr/bin/env bash
# run-smoke.sh — end-to-end check of the VM harness on every kernel under test.
#
# Usage: run-smoke.sh [--kernel KVER]... [--out DIR] [--verbose]
#   --kernel KVER  test only this kernel (repeatable; default: kernels.sh list)
#   --out DIR      output root (default <repo>/build/vm/smoke); per kernel:
#                  DIR/KVER/initrd.cpio.gz and DIR/KVER/smoke/ (run-guest.sh --out)
#   --verbose      stream guest consoles
#
# For each kernel: fetch it, build an initramfs, boot tests/smoke.sh with
# --capture, then assert on the host that eth0's capture holds exactly the 20
# ICMP echo requests 10.0.0.1 -> 10.0.0.2 and nothing else: no echo replies
# (eth1 sent those), no ARP, no IPv6. Prints boot time per kernel and a final
# "N passed, N failed" line; exits non-zero if any kernel failed.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)
# shellcheck source=host-lib.sh
. "$SCRIPT_DIR/host-lib.sh"

OUT_ROOT=$REPO_ROOT/build/vm/smoke
KERNELS=()
VERBOSE=()

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --kernel) KERNELS+=("${2:?}"); shift 2 ;;
            --out) OUT_ROOT=${2:?}; shift 2 ;;
            --verbose) VERBOSE=(--verbose); shift ;;
            -h | --help) sed -n '/^# shellcheck/d; 2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
            *) echo "run-smoke.sh: unknown argument: $1" >&2; exit 2 ;;
        esac
    done
    if [[ ${#KERNELS[@]} -eq 0 ]]; then
        mapfile -t KERNELS < <("$SCRIPT_DIR/kernels.sh" list)
    fi
    [[ ${#KERNELS[@]} -gt 0 ]] || { echo "run-smoke.sh: no kernels to test" >&2; exit 2; }
}

# Host-side assertions on what eth0 put on the wire.
assert_smoke_capture() {
    local pcap=$1
    GP_HOST_FAILS=0
    gp_expect_count "all frames eth0 sent" 20 "$pcap" || true
    gp_expect_count "echo requests 10.0.0.1 -> 10.0.0.2" 20 "$pcap" \
        'ether src 52:54:00:12:34:01 and src host 10.0.0.1 and dst host 10.0.0.2 and icmp[icmptype] == icmp-echo' || true
    gp_expect_count "echo replies (eth1 sent them: must not be in eth0's capture)" 0 "$pcap" \
        'icmp[icmptype] == icmp-echoreply' || true
    gp_expect_count "ARP" 0 "$pcap" arp || true
    gp_expect_count "IPv6" 0 "$pcap" ip6 || true
    [[ $GP_HOST_FAILS -eq 0 ]]
}

# run_one KVER: prints "boot_s wall_s" of the run on success.
run_one() {
    local kver=$1 kdir out initrd
    kdir=$("$SCRIPT_DIR/kernels.sh" fetch "$kver")
    out=$OUT_ROOT/$kver
    initrd=$out/initrd.cpio.gz
    mkdir -p "$out"
    "$SCRIPT_DIR/mkinitramfs.sh" --kernel-dir "$kdir" --out "$initrd" >/dev/null
    "$SCRIPT_DIR/run-guest.sh" --kernel-dir "$kdir" --initrd "$initrd" --test smoke \
        --out "$out/smoke" --capture --timeout 60 ${VERBOSE[@]+"${VERBOSE[@]}"} || return 1
    assert_smoke_capture "$out/smoke/eth0.pcap" || return 1
}

main() {
    parse_args "$@"
    local kver passed=0 failed=0 summary=() run
    for kver in "${KERNELS[@]}"; do
        gp_host_log "=== smoke on $kver"
        if run_one "$kver"; then
            passed=$((passed + 1))
            run=$OUT_ROOT/$kver/smoke/run.txt
            summary+=("PASS $kver  boot $(sed -n 's/^boot_s=//p' "$run")s (guest uptime at /init)  wall $(sed -n 's/^wall_s=//p' "$run")s (QEMU start to exit)")
        else
            failed=$((failed + 1))
            summary+=("FAIL $kver  (see $OUT_ROOT/$kver/smoke/)")
        fi
    done
    printf '%s\n' "${summary[@]}"
    echo "smoke: $passed passed, $failed failed"
    [[ $failed -eq 0 ]]
}

main "$@"
