#!/usr/bin/env bash
# Installs every Debian package that building gappace and running its tests needs.
# Safe to re-run: apt-get only acts on what is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

packages=(
	build-essential cmake pkg-config rsync
	libmnl-dev libpcap-dev nlohmann-json3-dev libtomlplusplus-dev libsystemd-dev
	googletest libgtest-dev libgmock-dev libbenchmark-dev
	iproute2 jq python3 python3-yaml
	openmpi-bin libopenmpi-dev mpich libmpich-dev gfortran
	ethtool iperf3 iputils-ping gnuplot-nox systemd
)

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

# Guest kernels, their headers, QEMU, busybox: the guest-kernel harness knows its own needs.
bash "$here/vm/deps.sh"
