#!/usr/bin/env bash
# demo.sh — make demo: gap-frame pacing on a real guest kernel, in about a minute.
#
# Boots Debian's newest kernel under QEMU with gappace.ko, runs the pacing
# scenario with a few hundred frames per phase, and shows what eth0 put on the
# wire: a stretch of the capture (data frames with gap frames between them) and
# the measured rates against the plan.
#
# Usage: demo.sh --build DIR
set -euo pipefail

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
BUILD=${2:?usage: demo.sh --build DIR}
[[ $1 == --build ]] || { echo "usage: demo.sh --build DIR" >&2; exit 2; }

kver=$("$SCRIPT_DIR/kernels.sh" list | tail -n 1)
echo "gappace demo on Debian kernel $kver (QEMU, software emulation)"
echo
bash "$SCRIPT_DIR/check.sh" --build "$BUILD" --kernel "$kver" --test pacing --frames 300 >/dev/null 2>&1 || true
run=$BUILD/vm/check/$kver/pacing
[[ -s $run/eth0.pcap ]] || { echo "demo: the guest run failed; see $run/console.log" >&2; exit 1; }

echo "On the wire, a flow paced at 25 % of the link: each data frame is followed by"
echo "gap frames (802.3x PAUSE, pause_time 0) worth three frame times:"
echo
# the phase starts at its marker frame (line first_frame of tcpdump's listing)
first=$(jq '.phases[] | select(.name == "rate-25") | .first_frame' "$run/wirecheck.json")
tcpdump -nn -e -r "$run/eth0.pcap" 2>/dev/null | sed -n "$((first + 1)),$((first + 12))p" |
	sed -E 's/^[0-9:.]+ //; s/^/  /' | cut -c1-110
echo
echo "Measured on the capture (gp-wirecheck), against the plan:"
sed -n '/^IFG mode/,$p' "$run/report.txt" | sed 's/^/  /'
