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
