#!/usr/bin/env bash
# run.sh — boot a QEMU guest with Debian's kernel KVER, gappace.ko built for it, the guest
# cluster script (/usr/bin/gcluster), the all-to-all driver (/usr/bin/gcluster-alltoall,
# alltoall.sh) and our tools, and run one guest command or test there.
# Prints the guest's results directory (OUT/results) on stdout; exit status as run-guest.sh.
#
# Usage:
#   run.sh --kver KVER --build DIR [options] -- GUEST-COMMAND [ARGS...]
#   run.sh --kver KVER --build DIR [options] --test NAME      (tests/vm/tests/NAME.sh)
#
#   --kver KVER       kernel under test (tests/vm/kernels.sh list)
#   --build DIR       CMake build dir: gapctl, gp-traffic, gappaced are taken from it, the
#                     module is built into DIR/kmod/KVER, output goes to DIR/vm/gcluster/
#   --out DIR         run output (default DIR/vm/gcluster/KVER/NAME; NAME = test or "cmd")
#   --timeout SECS    guest watchdog (default 300)
#   --mem MB          guest memory (default 1024)
#   --smp N           guest CPUs (default 1: on a shared machine one vCPU kept the wires busier
#                     and the runs shorter than two; see tests/vm/README.md, "guest cluster")
#   --bin PATH        extra executable for the guest's /usr/bin (repeatable)
#   --file SRC:DST    extra file (repeatable), as mkinitramfs.sh --file
#   --append ARGS     extra kernel command line (e.g. "gp.gc_rate=5 gp.gc_bottleneck=2" for
#                     tests/gcluster.sh)
#   --verbose         stream the guest console
#
# GUEST-COMMAND runs as root in the guest's initial namespace, after gappace.ko and the kernel
# modules the cluster needs are loaded; /results is the place for output files; the run fails
# if it exits non-zero. A guest script can `. "$GP_LIB"` (guest-lib.sh) to get the real ip and
# tc instead of busybox's applets; in `sh -c '...'` write /usr/sbin/ip, /usr/sbin/tc.
# Example:
#   tests/vm/gcluster/run.sh --kver 6.1.0-56-amd64 --build /tmp/build -- \
#       sh -c 'gcluster up --left 2 --right 2 --gappace && gcluster stats >/results/stats.json'
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
VM_DIR=$(cd -- "$SCRIPT_DIR/.." && pwd)
REPO_ROOT=$(cd -- "$VM_DIR/../.." && pwd)

# Kernel-package modules of the cluster: bridges, veths, the ifb wires (ingress + matchall +
# mirred), tbf shapers (pfifo is built in). tcp_diag for ss and gappaced's socket lookup.
GC_KMODS=(veth bridge ifb sch_ingress cls_matchall act_mirred sch_hfsc sch_netem sch_tbf tcp_diag)

die() { echo "gcluster/run.sh: $*" >&2; exit 2; }
usage() { sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' "${BASH_SOURCE[0]}" >&2; exit 2; }

KVER="" BUILD="" OUT="" TIMEOUT=300 MEM=1024 SMP=1 TEST="" APPEND="" VERBOSE=()
EXTRA=()
CMD=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--kver) KVER=${2:?}; shift 2 ;;
	--build) BUILD=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--mem) MEM=${2:?}; shift 2 ;;
	--smp) SMP=${2:?}; shift 2 ;;
	--test) TEST=${2:?}; shift 2 ;;
	--bin) EXTRA+=(--bin "${2:?}"); shift 2 ;;
	--file) EXTRA+=(--file "${2:?}"); shift 2 ;;
	--append) APPEND=${2?}; shift 2 ;;
	--verbose) VERBOSE=(--verbose); shift ;;
	--) shift; CMD=("$@"); break ;;
	-h | --help) usage ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done
[[ -n $KVER ]] || die "--kver KVER required (tests/vm/kernels.sh list)"
[[ -n $BUILD && -x $BUILD/tools/gapctl/gapctl ]] || die "--build DIR with built tools required (cmake + make)"
BUILD=$(cd "$BUILD" && pwd)
[[ -n $TEST || ${#CMD[@]} -gt 0 ]] || die "give a guest command after --, or --test NAME"
[[ -z $TEST || ${#CMD[@]} -eq 0 ]] || die "--test and a guest command exclude each other"
[[ -z $TEST || -f $VM_DIR/tests/$TEST.sh ]] || die "no guest test tests/vm/tests/$TEST.sh"

kdir=$("$VM_DIR/kernels.sh" fetch "$KVER")
headers=$("$VM_DIR/kernels.sh" headers "$KVER")
name=${TEST:-cmd}
OUT=${OUT:-$BUILD/vm/gcluster/$KVER/$name}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# The module for exactly this kernel, as check.sh builds it.
make -s -C "$REPO_ROOT/kmod" KDIR="$headers" BUILD_DIR="$BUILD/kmod/$KVER" 2>&1 | grep -v "Skipping BTF" >&2 || true
[[ -f $BUILD/kmod/$KVER/gappace.ko ]] || die "module build failed for $KVER"

stage=$(mktemp -d "${TMPDIR:-/tmp}/gcluster-run.XXXXXX")
trap 'rm -rf "$stage"' EXIT
if [[ -z $TEST ]]; then
	# The command becomes a guest test script of its own: modules first, then the command.
	TEST=gcluster-cmd
	{
		# shellcheck disable=SC2016 # for the guest's shell to expand
		echo '. "$GP_LIB"'
		echo 'gp_load_module gappace'
		for m in "${GC_KMODS[@]}"; do echo "gp_load_kmod $m"; done
		# POSIX single quotes, which busybox ash reads (bash's %q may produce $'...')
		line="exec"
		for a in "${CMD[@]}"; do line+=" '${a//\'/\'\\\'\'}'"; done
		echo "$line"
	} >"$stage/$TEST.sh"
	EXTRA+=(--file "$stage/$TEST.sh:/tests/$TEST.sh")
fi
optional=()
for b in "$BUILD/tools/probes/gp-hintclient" "$BUILD/tools/alltoall/gp-alltoall" /usr/bin/iperf3; do
	[[ -x $b ]] && optional+=(--bin "$b")
done
kmod_args=()
for m in "${GC_KMODS[@]}"; do kmod_args+=(--kmod "$m"); done
# executable whatever the checkout says
install -m 0755 "$SCRIPT_DIR/gcluster.sh" "$stage/gcluster"
install -m 0755 "$SCRIPT_DIR/alltoall.sh" "$stage/gcluster-alltoall"
"$VM_DIR/mkinitramfs.sh" --kernel-dir "$kdir" --out "$stage/initrd.gz" \
	--module "$BUILD/kmod/$KVER/gappace.ko" "${kmod_args[@]}" \
	--bin "$BUILD/tools/gapctl/gapctl" --bin "$BUILD/tools/traffic/gp-traffic" \
	--bin "$BUILD/daemon/gappaced" --bin /usr/bin/ss --bin /usr/sbin/ethtool --bin /usr/sbin/bridge \
	--file "$stage/gcluster:/usr/bin/gcluster" --file "$stage/gcluster-alltoall:/usr/bin/gcluster-alltoall" \
	--file "$BUILD/tools/tc/q_gappace.so:/usr/lib/x86_64-linux-gnu/tc/q_gappace.so" \
	${optional[@]+"${optional[@]}"} ${EXTRA[@]+"${EXTRA[@]}"} >/dev/null

rc=0
"$VM_DIR/run-guest.sh" --kernel-dir "$kdir" --initrd "$stage/initrd.gz" --test "$TEST" --out "$OUT" \
	--timeout "$TIMEOUT" --mem "$MEM" --smp "$SMP" --append "$APPEND" ${VERBOSE[@]+"${VERBOSE[@]}"} >&2 || rc=$?
echo "$OUT/results"	# also after a failure: what the guest wrote is there (if it got that far)
exit "$rc"
