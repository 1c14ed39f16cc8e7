#!/usr/bin/env bash
# check.sh — the guest-kernel tests (make check-vm): for every kernel under test,
# build gappace.ko against its headers, pack an initramfs with the module and
# our tools, boot each test in QEMU, then run its host-side assertions.
#
# Usage: check.sh --build DIR [--kernel KVER]... [--test NAME]... [--frames N]
#   --build DIR     the CMake build directory (tools are taken from it)
#   --kernel KVER   only this kernel (repeatable; default: kernels.sh list)
#   --test NAME     only this test (repeatable; default: all of TESTS below)
#   --frames N      data frames per pacing phase (default 1000)
# Output under DIR/vm/check/KVER/TEST/ (console.log, results/, eth0.pcap, report.txt).
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd -- "$SCRIPT_DIR/../.." && pwd)

# name : guest timeout (s) : capture?
TESTS=(pacing:900:capture lifecycle:300: badinput:300: clock:300: rto:300: tailloss:300: hints:300: control:300: stock:300: gcluster:300:)
# Retried once on failure, reported as such (see below). pacing is here for one check only: its
# mixed phase needs the guest's unpaced UDP blaster to keep the emulated wire contended, which
# a host busy elsewhere can starve (seen once: 9 % of the link against the 12.5 % asserted).
TIMING_SENSITIVE="tailloss gcluster pacing"
LINK_BITS=1000000	# the pacing test's declared link rate (tests/pacing.sh: gp.linkmbit=1)

BUILD=
KERNELS=()
ONLY=()
FRAMES=1000
while [[ $# -gt 0 ]]; do
	case $1 in
	--build) BUILD=${2:?}; shift 2 ;;
	--kernel) KERNELS+=("${2:?}"); shift 2 ;;
	--test) ONLY+=("${2:?}"); shift 2 ;;
	--frames) FRAMES=${2:?}; shift 2 ;;
	*) echo "check.sh: unknown argument: $1" >&2; exit 2 ;;
	esac
done
[[ -n $BUILD && -x $BUILD/tools/gapctl/gapctl ]] || { echo "check.sh: --build DIR with built tools needed (make userspace)" >&2; exit 2; }
((${#KERNELS[@]})) || mapfile -t KERNELS < <("$SCRIPT_DIR/kernels.sh" list)
((${#KERNELS[@]})) || { echo "check.sh: no kernels to test" >&2; exit 2; }

# A guest that died of what only the emulator does (gp_emulator_fault, host-lib.sh) is
# kept and repeated once; any other failure fails.
# shellcheck source=host-lib.sh
. "$SCRIPT_DIR/host-lib.sh"

wanted() {
	((${#ONLY[@]} == 0)) && return 0
	local t
	for t in "${ONLY[@]}"; do [[ $t == "$1" ]] && return 0; done
	return 1
}

results=()
failed=0
for kver in "${KERNELS[@]}"; do
	kdir=$("$SCRIPT_DIR/kernels.sh" fetch "$kver")
	headers=$("$SCRIPT_DIR/kernels.sh" headers "$kver")
	out_k=$BUILD/vm/check/$kver
	mkdir -p "$out_k"
	echo "== $kver: building gappace.ko"
	make -s -C "$REPO_ROOT/kmod" KDIR="$headers" BUILD_DIR="$BUILD/kmod/$kver" 2>&1 | grep -v "Skipping BTF" || true
	[[ -f $BUILD/kmod/$kver/gappace.ko ]] || { echo "module build failed for $kver" >&2; exit 1; }
	"$SCRIPT_DIR/mkinitramfs.sh" --kernel-dir "$kdir" --out "$out_k/initrd.gz" \
		--module "$BUILD/kmod/$kver/gappace.ko" --kmod veth --kmod sch_prio \
		--kmod sch_ingress --kmod cls_u32 --kmod act_police --kmod tcp_diag \
		--kmod bridge --kmod ifb --kmod cls_matchall --kmod act_mirred --kmod sch_hfsc --kmod sch_netem \
		--bin /usr/sbin/ethtool --bin /usr/sbin/bridge --file "$SCRIPT_DIR/gcluster/gcluster.sh:/usr/bin/gcluster" \
		--bin "$BUILD/tools/gapctl/gapctl" --bin "$BUILD/tools/traffic/gp-traffic" \
		--bin "$BUILD/tools/probes/gp-nlprobe" --bin /usr/bin/ss \
		--bin "$BUILD/daemon/gappaced" --bin "$BUILD/tools/probes/gp-hintclient" \
		--file "$BUILD/tools/tc/q_gappace.so:/usr/lib/x86_64-linux-gnu/tc/q_gappace.so" >/dev/null

	for spec in "${TESTS[@]}"; do
		IFS=: read -r name timeout capture <<<"$spec"
		wanted "$name" || continue
		out=$out_k/$name
		rm -rf "${out:?}"	# no stale report from an earlier run
		args=(--kernel-dir "$kdir" --initrd "$out_k/initrd.gz" --test "$name" --out "$out" --timeout "$timeout"
			--append "gp.frames=$FRAMES gp.linkmbit=$((LINK_BITS / 1000000))")
		[[ -n $capture ]] && args+=(--capture)
		status=PASS
		retried=
		rc=0
		"$SCRIPT_DIR/run-guest.sh" "${args[@]}" || rc=$?
		if ((rc)) && gp_emulator_fault "$out/console.log"; then
			# see gp_emulator_fault(): keep the evidence, run once more, say so
			rm -rf "${out:?}.emulator-fault"
			mv "$out" "$out.emulator-fault"
			echo "RETRY: $name on $kver hit a known emulator fault (reserved EFLAGS bits in a kernel fault); first run kept in $out.emulator-fault" >&2
			retried=" (retried after emulator fault)"
			rc=0
			"$SCRIPT_DIR/run-guest.sh" "${args[@]}" || rc=$?
		fi
		if ((rc)) && [[ -z $retried && " $TIMING_SENSITIVE " == *" $name "* ]]; then
			# Its thresholds depend on RTT samples the emulator jitters. Keep the evidence,
			# run once more, say so.
			rm -rf "${out:?}.timing"
			mv "$out" "$out.timing"
			echo "RETRY: $name on $kver failed once ($(grep -a GP-RESULT "$out.timing/console.log" | head -n 1)); first run kept in $out.timing" >&2
			retried=" (retried after a timing failure)"
			rc=0
			"$SCRIPT_DIR/run-guest.sh" "${args[@]}" || rc=$?
		fi
		if ((rc)); then
			status=FAIL
		elif [[ -x $SCRIPT_DIR/checks/$name.sh ]] &&
			! "$SCRIPT_DIR/checks/$name.sh" "$out" "$BUILD/tools/wirecheck/gp-wirecheck" "$LINK_BITS" "$FRAMES" >/dev/null; then
			status=FAIL
			cat "$out/report.txt" >&2 || true
		fi
		[[ -f $out/report.txt ]] && sed 's/^/    /' "$out/report.txt"
		results+=("$(printf '%-24s %-10s %s%s' "$kver" "$name" "$status" "$retried")")
		[[ $status == PASS ]] || failed=$((failed + 1))
	done
done

echo
echo "guest-kernel tests:"
printf '  %s\n' "${results[@]}"
((failed == 0)) || { echo "$failed failed" >&2; exit 1; }
