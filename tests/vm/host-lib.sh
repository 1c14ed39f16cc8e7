# shellcheck shell=bash
# host-lib.sh — host-side helpers for VM test drivers (bash). Source it:
#     . "$(dirname "$0")/host-lib.sh"
#
# Pcap assertions use tcpdump (reading a file needs no privileges and sends
# nothing). Filters are BPF expressions, e.g. "arp", "ip6",
# "ether proto 0x8808" (MAC control / PAUSE), "icmp[icmptype] == icmp-echo".

GP_HOST_FAILS=0

gp_host_log() { echo "[host] $*" >&2; }

gp_host_fail() {
    echo "[host] FAIL: $*" >&2
    GP_HOST_FAILS=$((GP_HOST_FAILS + 1))
}

# gp_pcap_count PCAP [FILTER]: number of frames matching FILTER (all if empty).
gp_pcap_count() {
    local pcap=$1
    shift
    [[ -f $pcap ]] || { echo "gp_pcap_count: no such pcap: $pcap" >&2; echo -1; return 1; }
    tcpdump -nn -r "$pcap" "$@" 2>/dev/null | wc -l
}

# gp_pcap_show PCAP [FILTER]: one line per frame, with link-level headers.
gp_pcap_show() {
    local pcap=$1
    shift
    tcpdump -nn -e -r "$pcap" "$@" 2>/dev/null
}

# gp_expect_count DESCRIPTION EXPECTED PCAP [FILTER]: record a failure unless
# exactly EXPECTED frames match; shows up to 10 offending frames if too many.
gp_expect_count() {
    local what=$1 want=$2 pcap=$3
    shift 3
    local got
    got=$(gp_pcap_count "$pcap" "$@")
    if [[ $got -ne $want ]]; then
        gp_host_fail "$what: expected $want frame(s) matching '${*:-all}', got $got"
        gp_pcap_show "$pcap" "$@" | head -n 10 | sed 's/^/[host]   /' >&2
        return 1
    fi
    gp_host_log "ok: $what ($got)"
}

# gp_emulator_fault CONSOLE_LOG: true if the guest died of a fault only the emulator makes.
#
# Under QEMU TCG, Debian's 6.12 kernel has a few times (about one guest run in a dozen of the
# busiest tests, never on 6.1, never with slub_debug=FZP) died in the slab allocator with a
# register dump whose EFLAGS has reserved bits set: a WARN in exc_debug_kernel (a single-step
# #DB in kernel mode, which that function's comment names QEMU as a known source of), a double
# fault in kmem_cache_alloc_node, and a NULL dereference in ___slab_alloc. Bits 22-31 of EFLAGS
# read as zero on every x86 CPU; there, they held part of a kernel pointer. So: a kernel
# fault or warning in the guest whose register dump shows reserved EFLAGS bits. Anything else
# is a real failure. Callers keep the evidence and run once more (tests/vm/check.sh,
# tools/bench/system/bench-system.sh).
gp_emulator_fault() {
	[[ -s $1 ]] || return 1
	grep -qaE 'Oops: |BUG: kernel|WARNING: CPU: [0-9]+ PID: [0-9]+ at ' "$1" || return 1
	local flags
	while read -r _ flags; do
		((0x$flags >> 22)) && return 0
	done < <(grep -aoE 'EFLAGS: [0-9a-f]{8}' "$1" | head -n 64)
	return 1
}
