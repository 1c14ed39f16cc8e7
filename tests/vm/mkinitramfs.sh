#!/usr/bin/env bash
# mkinitramfs.sh — build the gzip'd newc cpio initramfs the harness boots.
#
# Usage:
#   mkinitramfs.sh --kernel-dir DIR --out FILE [--module PATH.ko]... [--kmod NAME]...
#                  [--bin PATH]... [--file SRC:DST]...
#
#   --kernel-dir DIR  output of "kernels.sh fetch KVER" (NIC driver modules come from it)
#   --out FILE        initramfs to write (.cpio.gz)
#   --module PATH.ko  extra module (e.g. gappace.ko) -> /lib/modules/NAME.ko; NOT
#                     loaded at boot: the test does "gp_load_module NAME [params]"
#   --kmod NAME       module from the kernel package (e.g. sch_netem), decompressed,
#                     with its dependencies -> /lib/modules/; test does "gp_load_kmod NAME"
#   --bin PATH        host executable -> /usr/bin/BASENAME, plus every shared library
#                     ldd reports (and the dynamic loader) at its exact host path
#   --file SRC:DST    file or directory SRC -> DST (absolute guest path)
#
# Always included: /init (guest-init.sh), static busybox (applets in /bin),
# the real /usr/sbin/ip and /usr/sbin/tc with their libraries and data files,
# the NIC driver modules, /lib/gp/guest-lib.sh, /lib/gp/dmesg-ignore and every
# guest test script tests/vm/tests/*.sh as /tests/NAME.sh.
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)

die() { echo "mkinitramfs.sh: error: $*" >&2; exit 1; }
usage() { sed -n '/^# shellcheck/d; 2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

KERNEL_DIR=""
OUT=""
MODULES=()
KMODS=()
BINS=()
FILES=()

parse_args() {
    while [[ $# -gt 0 ]]; do
        case $1 in
            --kernel-dir) KERNEL_DIR=${2:?}; shift 2 ;;
            --out) OUT=${2:?}; shift 2 ;;
            --module) MODULES+=("${2:?}"); shift 2 ;;
            --kmod) KMODS+=("${2:?}"); shift 2 ;;
            --bin) BINS+=("${2:?}"); shift 2 ;;
            --file) FILES+=("${2:?}"); shift 2 ;;
            -h | --help) usage ;;
            *) die "unknown argument: $1 (see --help)" ;;
        esac
    done
    [[ -n $KERNEL_DIR ]] || die "--kernel-dir is required"
    [[ -n $OUT ]] || die "--out is required"
    [[ -f $KERNEL_DIR/modules/load-order ]] || die "$KERNEL_DIR is not a kernels.sh fetch directory"
}

STAGE=""
cleanup() { if [[ -n $STAGE && -d $STAGE ]]; then rm -rf "${STAGE:?}"; fi; }

# Copy a host file to the same path inside the staging root (following
# symlinks, so the guest gets the real bytes under the name ldd reported).
copy_host_path() {
    local src=$1 dst=${2:-$1}
    mkdir -p "$STAGE/$(dirname "$dst")"
    cp -L "$src" "$STAGE/$dst"
}

# The shared libraries of a dynamic executable, and the loader, as absolute paths.
shared_libs() {
    local bin=$1
    # "not a dynamic executable" (static binaries) is fine: nothing to copy.
    ldd "$bin" 2>/dev/null | awk '
        /=> not found/ { print "MISSING " $1; next }
        $2 == "=>" && $3 ~ /^\// { print $3; next }
        $1 ~ /^\// { print $1 }' || true
}

add_executable() {
    local src=$1 dst=$2 lib
    [[ -x $src ]] || die "not an executable: $src"
    copy_host_path "$src" "$dst"
    chmod 0755 "$STAGE/$dst"
    while read -r lib; do
        [[ -n $lib ]] || continue
        [[ $lib == MISSING* ]] && die "$src needs a library ldd cannot find: ${lib#MISSING }"
        [[ -e $STAGE/$lib ]] || copy_host_path "$lib"
        # Our own libraries (libgapctl) live in the build tree, found through RUNPATH. The
        # guest mounts a tmpfs over /tmp, which hides a build tree there: put a copy where
        # the loader looks by default, too.
        case $lib in
        /lib/* | /lib64/* | /usr/lib/* | /usr/lib64/*) ;;
        *) [[ -e $STAGE/usr/lib/$(basename "$lib") ]] || copy_host_path "$lib" "/usr/lib/$(basename "$lib")" ;;
        esac
    done < <(shared_libs "$src")
}

add_base_system() {
    mkdir -p "$STAGE"/{bin,sbin,usr/bin,usr/sbin,lib/modules/base,lib/gp,etc,proc,sys,dev,tmp,run,root,results,tests,var}
    cp /bin/busybox "$STAGE/bin/busybox"
    file -L /bin/busybox | grep -q 'statically linked' || die "/bin/busybox is not static (install busybox-static)"
    # The kernel opens /dev/console for init before anything is mounted.
    mknod -m 600 "$STAGE/dev/console" c 5 1 2>/dev/null || true
    # busybox's own ip/tc lack netns and "tc qdisc add": ship the real ones.
    add_executable /usr/sbin/ip /usr/sbin/ip
    add_executable /usr/sbin/tc /usr/sbin/tc
    [[ -d /etc/iproute2 ]] && cp -a /etc/iproute2 "$STAGE/etc/"
    # netem delay distribution tables (tc looks in its TC_LIB_DIR).
    local tclib
    for tclib in /usr/lib/*/tc /usr/lib/tc; do
        [[ -d $tclib ]] || continue
        mkdir -p "$STAGE/$tclib"
        cp -L "$tclib"/*.dist "$STAGE/$tclib/" 2>/dev/null || true
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$STAGE/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$STAGE/etc/group"
    printf '127.0.0.1 localhost\n10.0.0.1 gp-host\n10.0.0.2 gp-peer\n' >"$STAGE/etc/hosts"
    : >"$STAGE/etc/fstab"

    install -m 0755 "$SCRIPT_DIR/guest-init.sh" "$STAGE/init"
    install -m 0644 "$SCRIPT_DIR/guest-lib.sh" "$STAGE/lib/gp/guest-lib.sh"
    grep -v -E '^[[:space:]]*(#|$)' "$SCRIPT_DIR/dmesg-ignore.txt" >"$STAGE/lib/gp/dmesg-ignore" || true
    # An empty pattern file would make "grep -v -f" drop every line.
    [[ -s $STAGE/lib/gp/dmesg-ignore ]] || echo '^GP-NEVER-MATCHES$' >"$STAGE/lib/gp/dmesg-ignore"
    cp "$SCRIPT_DIR/dmesg-ignore-blocks.txt" "$STAGE/lib/gp/dmesg-ignore-blocks"

    local t
    for t in "$SCRIPT_DIR"/tests/*.sh; do
        [[ -e $t ]] && install -m 0755 "$t" "$STAGE/tests/$(basename "$t")"
    done
}

add_kernel_modules() {
    local m name
    while read -r m; do
        [[ -n $m ]] || continue
        cp "$KERNEL_DIR/modules/$m" "$STAGE/lib/modules/base/$m"
    done <"$KERNEL_DIR/modules/load-order"
    cp "$KERNEL_DIR/modules/load-order" "$STAGE/lib/modules/base/load-order"

    for m in ${MODULES[@]+"${MODULES[@]}"}; do
        [[ -f $m && $m == *.ko ]] || die "--module needs an existing .ko file: $m"
        cp "$m" "$STAGE/lib/modules/$(basename "$m")"
    done

    # Package modules: NAME.order lists the closure (deps first) for gp_load_kmod.
    local closure f base
    for name in ${KMODS[@]+"${KMODS[@]}"}; do
        closure=$("$SCRIPT_DIR/kernels.sh" modclosure "$KERNEL_DIR" "$name") || die "--kmod $name failed"
        : >"$STAGE/lib/modules/$name.order"
        while read -r f; do
            "$SCRIPT_DIR/kernels.sh" plainmod "$f" "$STAGE/lib/modules"
            base=$(basename "$f")
            echo "${base%.ko*}.ko" >>"$STAGE/lib/modules/$name.order"
        done <<<"$closure"
    done
}

add_user_payload() {
    local b spec src dst
    for b in ${BINS[@]+"${BINS[@]}"}; do
        add_executable "$b" "/usr/bin/$(basename "$b")"
    done
    for spec in ${FILES[@]+"${FILES[@]}"}; do
        src=${spec%%:*}
        dst=${spec#*:}
        [[ $spec == *:* && -n $src && $dst == /* ]] || die "--file wants SRC:/ABS/DST, got: $spec"
        [[ -e $src ]] || die "--file source missing: $src"
        mkdir -p "$STAGE/$(dirname "$dst")"
        cp -a "$src" "$STAGE/$dst"
    done
}

write_archive() {
    local tmp
    mkdir -p "$(dirname "$OUT")"
    tmp=$(mktemp "$OUT.XXXXXX")
    # Sorted names and root ownership keep the archive stable across runs.
    (cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) \
        | gzip -6 >"$tmp"
    chmod 0644 "$tmp"
    mv -f "$tmp" "$OUT"
}

main() {
    parse_args "$@"
    STAGE=$(mktemp -d "${TMPDIR:-/tmp}/gp-initramfs.XXXXXX")
    trap cleanup EXIT
    add_base_system
    add_kernel_modules
    add_user_payload
    write_archive
    echo "$OUT"
}

main "$@"
