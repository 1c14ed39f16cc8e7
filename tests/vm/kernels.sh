#!/usr/bin/env bash
# kernels.sh — which Debian kernels the VM harness tests, and where to get them.
#
#   kernels.sh list            kernel versions to test, one per line
#                              (current bookworm, then current bookworm-backports)
#   kernels.sh fetch KVER      download + unpack (cached) and print the kernel dir:
#                                DIR/vmlinux     uncompressed ELF, bootable by QEMU -kernel (PVH)
#                                DIR/config      the kernel .config
#                                DIR/modules/    e1000.ko + its dependencies, decompressed
#                                DIR/kver        the version string
#                                DIR/root/       the whole unpacked linux-image package
#                                                (mkinitramfs.sh --kmod takes modules from here)
#   kernels.sh headers KVER    print the Kbuild dir /usr/src/linux-headers-KVER
#
# Cache: $GP_VM_CACHE, default <repo>/build/vm/cache. Fetch is idempotent: a
# finished kernel dir carries a .complete stamp and is returned without work.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)
CACHE_DIR=${GP_VM_CACHE:-$REPO_ROOT/build/vm/cache}
BACKPORTS_SUITE=${GP_BACKPORTS_SUITE:-bookworm-backports}
export PATH="$PATH:/usr/sbin:/sbin"  # depmod lives in sbin

die() { echo "kernels.sh: error: $*" >&2; exit 1; }
log() { echo "kernels.sh: $*" >&2; }

# The linux-image-<kver> package that the linux-image-amd64 metapackage points at,
# optionally from a given target release (-t). Resolved at run time because the
# ABI number moves with every Debian kernel update.
resolve_kver() {
    local -a target=()
    [[ $# -gt 0 ]] && target=(-t "$1")
    apt-cache depends "${target[@]}" linux-image-amd64 2>/dev/null \
        | awk '/Depends: linux-image-/{sub(/^linux-image-/, "", $2); print $2; exit}'
}

cmd_list() {
    local stable bpo
    stable=$(resolve_kver)
    bpo=$(resolve_kver "$BACKPORTS_SUITE")
    [[ -n $stable ]] || die "cannot resolve the bookworm kernel (run 'apt-get update' or tests/vm/deps.sh)"
    [[ -n $bpo ]] || die "cannot resolve the $BACKPORTS_SUITE kernel (is the backports source configured? run tests/vm/deps.sh)"
    echo "$stable"
    # The two coincide only if backports has no newer kernel; do not test twice.
    [[ $bpo == "$stable" ]] || echo "$bpo"
}

# Write the first decompressed payload of a bzImage that is an ELF file to $2.
# The payload is located by scanning for compressor magics (xz for 6.1, zstd
# for 6.12; gzip/lz4 kept for robustness). Decompressors complain about the
# trailing bzImage bytes after the stream: that is expected and ignored.
extract_vmlinux() {
    local vmlinuz=$1 out=$2 off tmp magic tool
    tmp=$(mktemp "$out.XXXXXX")
    # (magic, decompressor) pairs; bash strings cannot hold NUL, so the xz magic stops at "XZ"
    local -a candidates=(
        $'\xfd7zXZ\x00' "xz -dc"
        $'\x28\xb5\x2f\xfd' "zstd -dcq"
        $'\x1f\x8b\x08' "gzip -dc"
    )
    local i
    for ((i = 0; i < ${#candidates[@]}; i += 2)); do
        magic=${candidates[i]}
        tool=${candidates[i + 1]}
        command -v "${tool%% *}" >/dev/null || continue
        while read -r off; do
            tail -c +$((off + 1)) "$vmlinuz" | $tool >"$tmp" 2>/dev/null || true
            if [[ $(head -c 4 "$tmp" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]]; then
                chmod 644 "$tmp"
                mv -f "$tmp" "$out"
                return 0
            fi
        # cut keeps only the offsets: bash's read chokes on the raw magic bytes.
        done < <(LC_ALL=C grep -obUaF -- "$magic" "$vmlinuz" | cut -d: -f1 || true)
    done
    rm -f "$tmp"
    return 1
}

# Decompress a module file (.ko, .ko.xz, .ko.zst, .ko.gz) to DIR/<name>.ko.
# Busybox insmod cannot load compressed modules, so the guest only gets plain .ko.
install_plain_module() {
    local src=$1 dir=$2 base
    base=$(basename "$src")
    case $src in
        *.ko.xz) xz -dc "$src" >"$dir/${base%.xz}" ;;
        *.ko.zst) zstd -dcq "$src" >"$dir/${base%.zst}" ;;
        *.ko.gz) gzip -dc "$src" >"$dir/${base%.gz}" ;;
        *.ko) cp -f "$src" "$dir/$base" ;;
        *) die "unknown module file type: $src" ;;
    esac
}

# Print, dependencies first, the module files (relative to the modules tree)
# needed to load module NAME, using the package's modules.dep.
module_closure() {
    local moddir=$1 name=$2
    local path
    path=$(awk -F: -v n="$name" '{
            f = $1; sub(/.*\//, "", f); sub(/\.ko(\.(xz|zst|gz))?$/, "", f);
            gsub(/-/, "_", f); m = n; gsub(/-/, "_", m);
            if (f == m) { print $1; exit } }' "$moddir/modules.dep")
    [[ -n $path ]] || return 1
    local -a deps
    read -r -a deps < <(awk -F: -v p="$path" '$1 == p { print $2; exit }' "$moddir/modules.dep")
    # modules.dep lists the full transitive closure, last-loaded-first.
    local j
    for ((j = ${#deps[@]} - 1; j >= 0; j--)); do echo "${deps[j]}"; done
    echo "$path"
}

# Version of the installed headers package, so that the image we boot is the
# exact build our module is compiled against (same ABI and symbol CRCs).
installed_headers_version() {
    dpkg-query -W -f='${db:Status-Status} ${Version}\n' "linux-headers-$1" 2>/dev/null \
        | awk '$1 == "installed" { print $2 }'
}

download_image_deb() {
    local kver=$1 dest=$2 ver pkg
    pkg=linux-image-$kver
    ver=$(installed_headers_version "$kver")
    mkdir -p "$dest"
    # apt-get download writes into the cwd; run it as root without the _apt
    # sandbox so a root-owned cache dir works without warnings.
    if [[ -n $ver ]] && (cd "$dest" && apt-get -q -o APT::Sandbox::User=root download "$pkg=$ver" >&2); then
        return 0
    fi
    [[ -n $ver ]] && log "version $ver of $pkg (matching the headers) not downloadable; taking the candidate"
    (cd "$dest" && apt-get -q -o APT::Sandbox::User=root download "$pkg" >&2) \
        || die "apt-get download $pkg failed (stale apt lists? run 'apt-get update' or tests/vm/deps.sh)"
}

cmd_fetch() {
    local kver=${1:?usage: kernels.sh fetch KVER}
    local kdir=$CACHE_DIR/$kver
    if [[ -f $kdir/.complete ]]; then
        echo "$kdir"
        return 0
    fi
    mkdir -p "$kdir"
    # Serialise concurrent fetches of the same kernel (parallel test drivers).
    exec 9>"$kdir/.lock"
    flock 9
    if [[ -f $kdir/.complete ]]; then
        echo "$kdir"
        return 0
    fi
    log "fetching linux-image-$kver into $kdir"
    rm -rf "${kdir:?}/root" "${kdir:?}/modules"
    local debdir=$kdir/deb deb
    deb=$(compgen -G "$debdir/linux-image-${kver}_*.deb" | sort | tail -n 1 || true)
    # A cached archive that does not unpack (download cut short) is fetched again.
    if [[ -z $deb ]] || ! dpkg-deb -x "$deb" "$kdir/root" 2>/dev/null; then
        [[ -n $deb ]] && log "cached $(basename "$deb") is damaged; downloading again"
        rm -rf "${kdir:?}/root" "${debdir:?}"
        download_image_deb "$kver" "$debdir"
        deb=$(compgen -G "$debdir/linux-image-${kver}_*.deb" | sort | tail -n 1)
        dpkg-deb -x "$deb" "$kdir/root" || die "cannot unpack $deb"
    fi

    local vmlinuz=$kdir/root/boot/vmlinuz-$kver
    [[ -f $vmlinuz ]] || die "package has no boot/vmlinuz-$kver"
    extract_vmlinux "$vmlinuz" "$kdir/vmlinux" || die "no ELF vmlinux found inside $vmlinuz"
    cp -f "$kdir/root/boot/config-$kver" "$kdir/config"

    local moddir=$kdir/root/lib/modules/$kver rel closure
    # The package does not ship modules.dep (the postinst runs depmod); build
    # it inside the unpacked tree so module dependencies can be resolved.
    depmod -b "$kdir/root" "$kver" || die "depmod failed for $kver"
    mkdir -p "$kdir/modules"
    : >"$kdir/modules/load-order"
    # e1000 (the NIC QEMU emulates for us) is a module on Debian; ship it and
    # its dependencies, in load order.
    closure=$(module_closure "$moddir" e1000) || die "e1000 not found in modules.dep of $kver"
    while read -r rel; do
        install_plain_module "$moddir/$rel" "$kdir/modules"
        rel=$(basename "$rel")
        echo "${rel%.ko*}.ko" >>"$kdir/modules/load-order"
    done <<<"$closure"

    echo "$kver" >"$kdir/kver"
    touch "$kdir/.complete"
    log "kernel $kver ready"
    echo "$kdir"
}

cmd_headers() {
    local kver=${1:?usage: kernels.sh headers KVER}
    local dir=/usr/src/linux-headers-$kver
    if [[ ! -f $dir/Makefile ]]; then
        die "headers for $kver not installed ($dir missing): run tests/vm/deps.sh or apt-get install linux-headers-$kver"
    fi
    echo "$dir"
}

# Exposed for mkinitramfs.sh --kmod: "kernels.sh modclosure KDIR NAME" prints
# absolute paths of NAME's module files, dependencies first.
cmd_modclosure() {
    local kdir name=${2:?} kver rel
    kdir=$(cd "${1:?}" && pwd)
    kver=$(cat "$kdir/kver")
    local moddir=$kdir/root/lib/modules/$kver
    local closure
    closure=$(module_closure "$moddir" "$name") || die "module $name not found in $kver"
    while read -r rel; do echo "$moddir/$rel"; done <<<"$closure"
}

# Internal helper for mkinitramfs.sh: decompress module SRC into DIR.
cmd_plainmod() { install_plain_module "${1:?}" "${2:?}"; }

main() {
    local cmd=${1:-}
    shift || true
    case $cmd in
        list) cmd_list "$@" ;;
        fetch) cmd_fetch "$@" ;;
        headers) cmd_headers "$@" ;;
        modclosure) cmd_modclosure "$@" ;;
        plainmod) cmd_plainmod "$@" ;;
        *) echo "usage: kernels.sh list | fetch KVER | headers KVER" >&2; exit 2 ;;
    esac
}

main "$@"
