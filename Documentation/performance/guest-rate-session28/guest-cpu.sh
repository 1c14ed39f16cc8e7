#!/usr/bin/env bash
# guest-cpu.sh — how busy the one emulated CPU of the guest cluster is while the 4+4 all-to-all
# runs without remedies (gappace qdisc on every host, no rules, no daemon), per bottleneck rate.
# Prints, per rate: the fraction of C, the run's TCP timeouts, and the CPU's idle share between
# the ranks' start and their end (/proc/stat in the guest, the cluster's setup excluded).
#
#   guest-cpu.sh BUILD [MSG (1k)] [RATE...] (default: 5mbit 2mbit 1mbit)
#
# BUILD is a CMake build dir with the tools (make); the guest kernel is the newest of
# tests/vm/kernels.sh list. About a minute per rate.
set -euo pipefail
here=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd)
root=$(cd -- "$here/../../.." && pwd)
build=${1:?usage: guest-cpu.sh BUILD [MSG] [RATE...]}
msg=${2:-1k}
shift $(($# >= 2 ? 2 : 1))
rates=("$@")
((${#rates[@]})) || rates=(5mbit 2mbit 1mbit)
kver=$("$root/tests/vm/kernels.sh" list | tail -n 1)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/gp-cpu-probe" <<'GUEST'
#!/bin/sh
# gp-cpu-probe RATE MSG ITERATIONS: one stock run, /proc/stat around the ranks.
set -u
GC_SOURCE_ONLY=1 . /usr/bin/gcluster
gcluster up --left 4 --right 4 --rate "$1" --bottleneck "$1" --queue 16 --gappace --lookahead 2ms >/dev/null || exit 1
gc_load_state
head -n 1 /proc/stat >/results/stat-before
pids="" r=7
while [ "$r" -ge 0 ]; do
    h=$((r + 1)) side=left
    [ "$h" -gt 4 ] && side=right
    "$GC_IP" netns exec "$GC_PREFIX-h$h" gp-alltoall --rank "$r" --ranks 8 --rendezvous "$GC_SUBNET.1:7000" \
        --bind "$GC_SUBNET.$h" --side "$side" --capacity "$GC_BOTTLENECK_BPS" --msg "$2" --iterations "$3" \
        --warmup 3 --sndbuf 8m --timeout 300 >"/results/rank$r.json" 2>/dev/null &
    pids="$pids $!" r=$((r - 1))
done
for p in $pids; do wait "$p"; done
head -n 1 /proc/stat >/results/stat-after
gc_down
GUEST
chmod +x "$tmp/gp-cpu-probe"

bytes() { numfmt --from=iec "${1^^}"; }
bits() { awk -v r="$1" 'BEGIN { n = r + 0; u = substr(r, length(n "") + 1); print n * (u == "kbit" ? 1e3 : u == "mbit" ? 1e6 : u == "gbit" ? 1e9 : 1) }'; }
m=$(bytes "$msg")
printf '%-8s %-6s %-9s %-9s %s\n' rate msg fraction timeouts "cpu idle during the run"
for rate in "${rates[@]}"; do
	# about 4 s of cross-bottleneck wire time, as bench-system's guest cells
	it=$(awk -v c="$(bits "$rate")" -v m="$m" 'BEGIN { n = int(c / 8 * 4 / (16 * m)); print n < 3 ? 3 : n }')
	out=$tmp/$rate
	"$root/tests/vm/gcluster/run.sh" --kver "$kver" --build "$build" --out "$out" --timeout 400 \
		--bin "$tmp/gp-cpu-probe" -- gp-cpu-probe "$rate" "$m" "$it" >"$tmp/$rate.log" 2>&1 ||
		{ echo "guest-cpu: the $rate run failed: $(tail -n 3 "$tmp/$rate.log")" >&2; continue; }
	idle=$(paste "$out/results/stat-before" "$out/results/stat-after" | awk '{
		n = NF / 2; for (i = 2; i <= n; i++) { d = $(n + i) - $i; t += d; if (i == 5) id = d }
		printf "%.0f %%", 100 * id / t }')
	jq -r --arg r "$rate" --arg m "$msg" --arg idle "$idle" \
		'"\($r) \($m) \(.fraction_of_capacity * 100 | round / 100) \(.tcp.TCPTimeouts) \($idle)"' \
		"$out/results/rank0.json" | awk '{ printf "%-8s %-6s %-9s %-9s %s %s\n", $1, $2, $3, $4, $5, $6 }'
done
