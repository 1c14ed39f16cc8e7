#!/usr/bin/env bash
# make demo: the all-to-all collapse and its removal, in a few minutes, on this machine.
#
# Installs what it needs (Debian packages), builds only the parts the demo uses, brings up a
# 4+4-host namespace cluster whose two sides share one 200 Mbit/s link with a 40-packet FIFO,
# and runs the TCP all-to-all at 16 KB and 64 KB per peer twice: with stock Linux, and with one
# gappaced per host deciding pacing and RTO floors from the benchmark's phase hints. Prints a
# table with the fraction of the bottleneck's capacity reached and the retransmission timeouts.
#
#   demo.sh [--build DIR] [--no-deps]
#
# Nothing is loaded into this machine's kernel: everything runs in network namespaces it
# creates and removes. Needs root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
BUILD=$ROOT/build-demo DEPS=1
while (($#)); do
	case $1 in
	--build) BUILD=${2:?--build needs a directory}; shift 2 ;;
	--no-deps) DEPS=0; shift ;;
	-h | --help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "demo: unknown option '$1'" >&2; exit 2 ;;
	esac
done
[[ $(id -u) -eq 0 ]] || { echo "demo: needs root (network namespaces, apt-get)" >&2; exit 1; }
started=$(date +%s)

if ((DEPS)); then
	packages=(build-essential cmake pkg-config libmnl-dev libpcap-dev nlohmann-json3-dev
		libtomlplusplus-dev libsystemd-dev googletest libgtest-dev libgmock-dev libbenchmark-dev
		iproute2 jq python3 ethtool iputils-ping)
	missing=()
	for p in "${packages[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if ((${#missing[@]})); then
		echo "demo: installing ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -q >/dev/null
		apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
	fi
fi

echo "demo: building gp-alltoall, gappaced, gapctl and libgapctl in $BUILD"
only="tools/common;libctl;daemon/stock;daemon/models;daemon;tools/gapctl;tools/alltoall"
cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGP_ONLY="$only" >/dev/null
cmake --build "$BUILD" -j "$(nproc)" --target gp-alltoall gappaced gapctl libgapctl >/dev/null

out=$BUILD/demo
rm -rf "$out"
echo "demo: 4+4 hosts, bottleneck 200 Mbit/s with a 40-packet FIFO, cubic; all-to-all of 16 KB and 64 KB per peer"
bash "$HERE/bench-system.sh" --build "$BUILD" --out "$out" --topologies 4+4 --sizes 16k,64k \
	--variants stock,gappaced --reps 1 --seconds 2 --cell-timeout 60 --no-plot >/dev/null 2>"$out.log" || {
	cat "$out.log" >&2
	echo "demo: the benchmark failed (log above)" >&2
	exit 1
}
echo
jq -r -s '
	def pad(n): . + " " * (n - length);
	def lpad(n): " " * (n - length) + .;
	def row: "\("\(.msg / 1024 | floor) KB" | pad(9))\(.variant | pad(10))\("\(.result.fraction_of_capacity * 100 | round)%" | lpad(6)) of capacity  \("\(.result.tcp.TCPTimeouts)" | lpad(5)) retransmission timeouts  iteration p99 \("\(.result.iteration_us.p99 / 1000 * 10 | round / 10)" | lpad(6)) ms";
	"message  variant     result", (.[] | row)' "$out/runs.jsonl"
echo
echo "demo: done in $(($(date +%s) - started)) s; every run: $out/runs.jsonl; the full benchmark: make bench-system"
