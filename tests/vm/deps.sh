#!/usr/bin/env bash
# deps.sh — install what the VM harness needs on a Debian 12 (bookworm) host:
# QEMU, busybox, decompressors, iproute2, tcpdump, and the linux-headers
# packages of every kernel that kernels.sh lists (bookworm + bookworm-backports).
#
# Safe to re-run; prints nothing when everything is already present.
# Needs root (or sudo). Environment:
#   GP_APT_MAX_AGE_H   refresh apt lists older than this many hours (default 24);
#                      stale lists name kernel builds the mirror no longer has.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
APT_MAX_AGE_H=${GP_APT_MAX_AGE_H:-24}
export DEBIAN_FRONTEND=noninteractive

# Tools the harness calls (host side and, for busybox/iproute2, copied into the guest).
HOST_PACKAGES=(
    qemu-system-x86 busybox-static iproute2 kmod cpio gzip xz-utils zstd
    file tcpdump coreutils util-linux apt
)

log() { echo "deps.sh: $*" >&2; }
die() { echo "deps.sh: error: $*" >&2; exit 1; }

SUDO=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || die "must run as root (or have sudo)"
    SUDO=(sudo)
fi

codename() { . /etc/os-release && echo "${VERSION_CODENAME:-bookworm}"; }

is_installed() {
    [[ $(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null) == installed ]]
}

apt_update() {
    log "apt-get update"
    "${SUDO[@]}" apt-get update -qq >/dev/null || die "apt-get update failed"
    APT_UPDATED=1
}
APT_UPDATED=0

# The backports kernel is one of the two we test; add its source if absent.
ensure_backports_source() {
    local suite
    suite=$(codename)-backports
    if grep -rqsE "^[^#]*\b${suite}\b" /etc/apt/sources.list /etc/apt/sources.list.d/; then
        return 0
    fi
    log "adding apt source for $suite"
    "${SUDO[@]}" tee /etc/apt/sources.list.d/backports.sources >/dev/null <<EOF
Types: deb
URIs: http://deb.debian.org/debian
Suites: $suite
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    apt_update
}

# Refresh lists that are missing or old: kernels.sh resolves versions from them
# and the mirror only keeps the newest build of each kernel.
ensure_fresh_lists() {
    [[ $APT_UPDATED -eq 1 ]] && return 0
    local newest
    newest=$(find /var/lib/apt/lists -maxdepth 1 -name '*Release' -printf '%T@\n' 2>/dev/null | sort -n | tail -n 1)
    if [[ -z $newest ]] || (($(date +%s) - ${newest%.*} > APT_MAX_AGE_H * 3600)); then
        apt_update
    fi
}

apt_install() {
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
        || die "apt-get install $* failed"
}

install_host_packages() {
    local -a missing=()
    local p
    for p in "${HOST_PACKAGES[@]}"; do is_installed "$p" || missing+=("$p"); done
    [[ ${#missing[@]} -eq 0 ]] && return 0
    [[ $APT_UPDATED -eq 1 ]] || apt_update
    log "installing ${missing[*]}"
    apt_install "${missing[@]}"
}

# Headers for the kernels under test. The backports one must come from the
# backports suite (-t), otherwise apt resolves its dependencies from bookworm.
install_kernel_headers() {
    local kernels kver stable_kver suite
    suite=$(codename)-backports
    kernels=$("$SCRIPT_DIR/kernels.sh" list) || die "kernels.sh list failed"
    stable_kver=$(head -n 1 <<<"$kernels")
    while read -r kver; do
        [[ -n $kver ]] || continue
        is_installed "linux-headers-$kver" && continue
        log "installing linux-headers-$kver"
        if [[ $kver == "$stable_kver" ]]; then
            apt_install "linux-headers-$kver"
        else
            apt_install -t "$suite" "linux-headers-$kver"
        fi
    done <<<"$kernels"
}

main() {
    command -v apt-get >/dev/null || die "not a Debian-like system (no apt-get)"
    ensure_backports_source
    ensure_fresh_lists
    install_host_packages
    install_kernel_headers
}

main "$@"
