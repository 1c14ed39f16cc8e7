#!/usr/bin/env bash
# bench-system: the all-to-all collapse and its removal, measured side by side on the namespace
# test cluster (tests/cluster) of this machine's own kernel.
#
#   bench-system.sh --build BUILD [--out DIR] [--topologies 4+4,8+8] [--sizes 1k,4k,...]
#                   [--variants LIST] [--reps N] [--rate 200mbit] [--queue 40] [--seconds S]
#                   [--cell-timeout S] [--pattern pairwise|ring|half] [--quick] [--no-plot]
#                   [--sndbuf BYTES|auto (default 8m)] [--planner models|default] [--publish DOC.md]
#                   [--publish-models MODELS.md] [--guest-kernel KVER] [--guest-topologies 4+4]
#                   [--guest-rate 2mbit] [--guest-queue 16] [--guest-max-size 64k] [--guest-seconds 4]
#                   [--remedies pacing,rto|pacing|rto|none] [--learn] [--loss-check PHASES (default 32, 0: off)]
#                   [--queue-share F (the daemons' [planner] queue_share; default: theirs)]
#                   [--pacer socket|host (the daemons' [pacing] pacer; default: host)]
#                   [--warmup N (unmeasured iterations before each run, at most what fits in
#                   --seconds of wire time, at least 1; default 3)]
# Environment: GP_BENCH_PACING_TOML, more keys for the daemons' [pacing] table (experiments);
# GP_BENCH_DAEMON_TOML, more keys for their [daemon] table (linger = "500ms");
# GP_BENCH_RTO_TOML, more keys for their [rto] table (quickack = true);
# GP_BENCH_ALLTOALL_ARGS, more gp-alltoall options, split at spaces (--trace-iterations);
# GP_BENCH_MPI_ENV, KEY=VALUE pairs for every MPI rank, split at spaces
# (GAPPACE_SHIM_EAGER_LIMIT=0).
#
# For every topology (N+N hosts, one bottleneck of rate C with a FIFO of q packets per
# direction), message size m and variant, it runs the TCP all-to-all (gp-alltoall) or a real
# MPI_Alltoall (Open MPI with the PMPI shim) REPS times, and writes
#   OUT/runs.jsonl   one JSON object per run (the tool's own report plus the cell's keys)
#   OUT/cells.csv    per cell: median, min and max of the fraction of capacity, timeouts, ...
#   OUT/results.md   the tables Documentation/performance.md quotes (generated, never edited)
#   OUT/TOPOLOGY.png bandwidth vs message size, one line per variant (gnuplot)
#   OUT/daemon-TOPO-SIZE-VARIANT[-repN]-hX.json  each daemon's `gapctl daemon show` at the
#                    end of the cell (and of each repetition): its phases, plans and counters
#
# Variants (the issue's letters):
#   stock         (a) stock Linux, cubic, nothing changed
#   rto           (b) by hand: a route with `rto_min lock 5ms` to the cluster's subnet on every host
#   pace          (b) by hand: every socket capped at C/k (SO_MAX_PACING_RATE, k = N senders/side)
#   rto+pace      (b) both by hand
#   gappaced      (c) one gappaced per host (stock backend) deciding from the tool's hints
#   mpi-stock     (e) Open MPI MPI_Alltoall, stock
#   mpi-gappaced  (e) Open MPI MPI_Alltoall with the PMPI shim and gappaced
#   mpi-gappaced-rto  the same with gappaced's pacing switched off ([remedies] pacing = false):
#                 the RTO floor alone where the models predict a loss, side by side with (e)
#   module-stock     (d) in a QEMU guest with Debian's kernel (tests/vm/gcluster): the gappace
#   module-gappaced      qdisc on every host without rules, then gappaced with the module
#                        backend (gap frames, RTO overrides). TCG runs the guest 20-50x slower,
#                        so it uses its own scaled-down link (--guest-rate, --guest-queue;
#                        at 5mbit the one emulated CPU had no idle time left and stock lost
#                        bandwidth at 1 KB without a loss: performance/guest-rate-session28),
#                        topologies (--guest-topologies), sizes up to --guest-max-size, and
#                        iterations for about --guest-seconds of wire time; its tables are
#                        titled "N+M (guest)". --guest-kernel KVER (default: the newest of
#                        tests/vm/kernels.sh list).
#
# Per topology, the sizes run in turn and, for each size, every variant's REPS repetitions, so
# that the variants of one size are measured minutes apart, not the whole sweep apart (the
# daemons start afresh for each size and variant; what they learn is kept per size class).
# Every run is bounded (--cell-timeout); the clusters, daemons and ranks it starts are removed
# on every exit path. Needs root (network namespaces). Exit 0 when every cell produced a
# result, 1 otherwise, 2 on bad usage, 77 without root.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
CLUSTER=$ROOT/tests/cluster

usage() { sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "bench-system: $*" >&2; exit 1; }

BUILD="" OUT="" TOPOLOGIES="4+4,8+8" SIZES="1k,4k,16k,64k,256k,1m,4m"
VARIANTS="stock,rto,pace,rto+pace,gappaced,mpi-stock,mpi-gappaced,mpi-gappaced-rto,module-stock,module-gappaced"
PLOT=1 PUBLISH='' PUBLISH_MODELS='' PLANNER=models SNDBUF=8m REPS=3 RATE=200mbit QUEUE=40 SECONDS_PER_RUN=2 CELL_TIMEOUT=60 PATTERN=pairwise RTO_MS=5 REMEDIES=pacing,rto LEARN=false LOSS_CHECK=32 QUEUE_SHARE='' PACER=host WARMUP=3
GUEST_KERNEL='' GUEST_TOPOLOGIES=4+4 GUEST_RATE=2mbit GUEST_QUEUE=16 GUEST_MAX_SIZE=64k GUEST_SECONDS=4
while (($#)); do
	case $1 in
	--build) BUILD=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--topologies) TOPOLOGIES=${2:?}; shift 2 ;;
	--sizes) SIZES=${2:?}; shift 2 ;;
	--variants) VARIANTS=${2:?}; shift 2 ;;
	--reps) REPS=${2:?}; shift 2 ;;
	--rate) RATE=${2:?}; shift 2 ;;
	--queue) QUEUE=${2:?}; shift 2 ;;
	--seconds) SECONDS_PER_RUN=${2:?}; shift 2 ;;
	--cell-timeout) CELL_TIMEOUT=${2:?}; shift 2 ;;
	--pattern) PATTERN=${2:?}; shift 2 ;;
	--no-plot) PLOT=0; shift ;;
	--sndbuf) SNDBUF=${2:?}; shift 2 ;;
	--planner) PLANNER=${2:?}; shift 2 ;;
	--publish) PUBLISH=${2:?}; shift 2 ;;
	--publish-models) PUBLISH_MODELS=${2:?}; shift 2 ;;
	--guest-kernel) GUEST_KERNEL=${2:?}; shift 2 ;;
	--guest-topologies) GUEST_TOPOLOGIES=${2:?}; shift 2 ;;
	--guest-rate) GUEST_RATE=${2:?}; shift 2 ;;
	--guest-queue) GUEST_QUEUE=${2:?}; shift 2 ;;
	--guest-max-size) GUEST_MAX_SIZE=${2:?}; shift 2 ;;
	--guest-seconds) GUEST_SECONDS=${2:?}; shift 2 ;;
	--remedies) REMEDIES=${2:?}; shift 2 ;;
	--learn) LEARN=true; shift ;;
	--loss-check) LOSS_CHECK=${2:?}; shift 2 ;;
	--queue-share) QUEUE_SHARE=${2:?}; shift 2 ;;
	--pacer) PACER=${2:?}; shift 2 ;;
	--warmup) WARMUP=${2:?}; shift 2 ;;
	--quick) TOPOLOGIES=4+4 SIZES=16k,64k REPS=1 SECONDS_PER_RUN=1; shift ;;
	-h | --help) usage ;;
	*) echo "bench-system: unknown option '$1'" >&2; usage ;;
	esac
done
[[ -n $BUILD ]] || { echo "bench-system: --build is required" >&2; usage; }
BUILD=$(cd "$BUILD" && pwd) || exit 2
OUT=${OUT:-$BUILD/bench-system}
[[ $REPS =~ ^[1-9][0-9]?$ ]] || { echo "bench-system: --reps must be 1..99" >&2; exit 2; }
[[ $WARMUP =~ ^[0-9]$|^[1-9][0-9]$ ]] || { echo "bench-system: --warmup must be 0..99" >&2; exit 2; }
[[ $SECONDS_PER_RUN =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "bench-system: --seconds must be a number" >&2; exit 2; }
[[ $CELL_TIMEOUT =~ ^[1-9][0-9]*$ ]] || { echo "bench-system: --cell-timeout must be whole seconds" >&2; exit 2; }
case $PATTERN in pairwise | ring | half) ;; *) echo "bench-system: bad --pattern '$PATTERN'" >&2; exit 2 ;; esac
# What gappaced may use (its [remedies] table): both by default; one or none to measure what
# each remedy contributes to a gappaced variant.
case $REMEDIES in
pacing,rto | rto,pacing) PACING_ON=true RTO_ON=true ;; pacing) PACING_ON=true RTO_ON=false ;;
rto) PACING_ON=false RTO_ON=true ;; none) PACING_ON=false RTO_ON=false ;;
*) echo "bench-system: --remedies must be pacing,rto, pacing, rto or none" >&2; exit 2 ;;
esac
[[ $LOSS_CHECK =~ ^[0-9]+$ ]] && ((LOSS_CHECK <= 4096)) || { echo "bench-system: --loss-check must be 0 .. 4096 phases" >&2; exit 2; }
[[ $PACER == socket || $PACER == host ]] || { echo "bench-system: --pacer must be socket or host" >&2; exit 2; }
[[ -z $QUEUE_SHARE || $QUEUE_SHARE =~ ^(0?\.[0-9]+|1(\.0*)?)$ ]] || { echo "bench-system: --queue-share must be a fraction (0.05 .. 1)" >&2; exit 2; }
IFS=, read -ra TOPOS <<<"$TOPOLOGIES"
IFS=, read -ra SIZE_LIST <<<"$SIZES"
IFS=, read -ra VARIANT_LIST <<<"$VARIANTS"
for t in "${TOPOS[@]}"; do [[ $t =~ ^[1-9][0-9]?\+[1-9][0-9]?$ ]] || { echo "bench-system: bad topology '$t' (N+M)" >&2; exit 2; }; done
for v in "${VARIANT_LIST[@]}"; do
	case $v in stock | rto | pace | rto+pace | gappaced | mpi-stock | mpi-gappaced | mpi-gappaced-rto | module-stock | module-gappaced) ;;
	*) echo "bench-system: unknown variant '$v'" >&2; exit 2 ;; esac
done
IFS=, read -ra GUEST_TOPOS <<<"$GUEST_TOPOLOGIES"
for t in "${GUEST_TOPOS[@]}"; do [[ $t =~ ^[1-9][0-9]?\+[1-9][0-9]?$ ]] || { echo "bench-system: bad guest topology '$t' (N+M)" >&2; exit 2; }; done
[[ $GUEST_QUEUE =~ ^[1-9][0-9]*$ ]] || { echo "bench-system: --guest-queue must be a packet count" >&2; exit 2; }
[[ $GUEST_SECONDS =~ ^[1-9][0-9]?$ ]] || { echo "bench-system: --guest-seconds must be 1..99" >&2; exit 2; }
[[ ${GUEST_MAX_SIZE,,} =~ ^[0-9]+[kmg]?$ ]] || { echo "bench-system: bad --guest-max-size '$GUEST_MAX_SIZE'" >&2; exit 2; }
[[ ${GUEST_RATE,,} =~ ^[0-9]+(kbit|mbit|gbit)$ ]] || { echo "bench-system: --guest-rate like 2mbit" >&2; exit 2; }
HOST_VARIANTS=() GUEST_MODES=()
for v in "${VARIANT_LIST[@]}"; do
	case $v in module-stock) GUEST_MODES+=(baseline) ;; module-gappaced) GUEST_MODES+=(gappaced) ;; *) HOST_VARIANTS+=("$v") ;; esac
done
[[ $(id -u) -eq 0 ]] || { echo "bench-system: SKIP: needs root (network namespaces)" >&2; exit 77; }
ALLTOALL=$BUILD/tools/alltoall/gp-alltoall
[[ -x $ALLTOALL ]] || die "$ALLTOALL is not built (make userspace)"
[[ -x $BUILD/daemon/gappaced ]] || die "$BUILD/daemon/gappaced is not built"
command -v jq >/dev/null || die "jq is missing (make deps)"

# shellcheck source=../../../tests/cluster/lib.sh
source "$CLUSTER/lib.sh"
# shellcheck source=../../../tests/vm/host-lib.sh
source "$ROOT/tests/vm/host-lib.sh"
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/gappace-bench.XXXXXX)
# The daemons' state files (rewritten whenever a setting is added) on tmpfs, as /run is on a
# usual host. Here /run and /tmp are ext4, where replacing a file by rename starts its
# writeback: 15 routes of an 8+8 phase took 1.1-1.5 s to apply there, 0.02-0.16 s on tmpfs.
STATE_DIR=$(mktemp -d /dev/shm/gappace-bench.XXXXXX 2>/dev/null || mktemp -d /tmp/gappace-bench-state.XXXXXX)
TAG=$RANDOM$RANDOM
finish() {
	set +e
	gp_daemons_stop
	gp_cluster_down 2>/dev/null
	rm -rf "$TMP" "$STATE_DIR"
}
trap finish EXIT
trap 'exit 130' INT TERM

bytes_of() { # 16k -> 16384
	local v=${1,,}
	case $v in
	*k) echo $((${v%k} * 1024)) ;; *m) echo $((${v%m} * 1048576)) ;; *g) echo $((${v%g} * 1073741824)) ;;
	*) echo "$v" ;;
	esac
}
rate_bps() { # tc rate -> bit/s
	local v=${1,,}
	case $v in
	*gbit) echo $((${v%gbit} * 1000000000)) ;; *mbit) echo $((${v%mbit} * 1000000)) ;;
	*kbit) echo $((${v%kbit} * 1000)) ;; *bit) echo "${v%bit}" ;; *) die "rate '$1' needs a unit (bit kbit mbit gbit)" ;;
	esac
}
C_BPS=$(rate_bps "$RATE")

# Namespace TCP counters as one JSON object (for the MPI variants; gp-alltoall reports its own).
tcp_counters() {
	ip netns exec "$1" cat /proc/net/netstat /proc/net/snmp | awk '
		/^TcpExt:/ { if (!h1) { split($0, k); h1 = 1 } else { for (i = 2; i <= NF; i++) ext[k[i]] = $i } }
		/^Tcp:/ { if (!h2) { split($0, t); h2 = 1 } else { for (i = 2; i <= NF; i++) tcp[t[i]] = $i } }
		END { printf "{\"TCPTimeouts\":%d,\"TCPLossProbes\":%d,\"RetransSegs\":%d}\n",
			ext["TCPTimeouts"], ext["TCPLossProbes"], tcp["RetransSegs"] }'
}

# The bottleneck FIFO's counters in both directions: what the switch dropped, and what it sent.
bottleneck_counters() {
	"$CLUSTER/cluster.sh" stats --state "$GPC_STATE" 2>/dev/null |
		jq -c '{drops: (.l2r.fifo.drops + .r2l.fifo.drops), packets: (.l2r.shaper.packets + .r2l.shaper.packets)}' ||
		echo null
}

DAEMON_PACING='' DAEMON_RTO=''
# The daemons keep their last 64 phases for the report, unless GP_BENCH_DAEMON_TOML sets it.
HISTORY_TOML="history = 64"
[[ ${GP_BENCH_DAEMON_TOML:-} != *history* ]] || HISTORY_TOML=""
daemon_config() { # HOST_INDEX: gappaced's config for that host (remedies from DAEMON_PACING/RTO)
	cat <<CONF
$(gp_daemon_toml "$STATE_DIR/${GPC_HOSTS[$1]}.json" "$HISTORY_TOML" ${GP_BENCH_DAEMON_TOML:+"$GP_BENCH_DAEMON_TOML"})
[remedies]
pacing = $DAEMON_PACING
rto = $DAEMON_RTO
[rto]
floor = "${RTO_MS}ms"
${GP_BENCH_RTO_TOML:-}
[pacing]
queue_packets = $QUEUE
# The emulated bottleneck (tbf) counts Ethernet frames without FCS, preamble and gap: a
# 1448-byte segment is a 1514-byte frame there (a real wire adds 24: the default 90).
frame_overhead = 66
pacer = "$PACER"
${GP_BENCH_PACING_TOML:-}
[planner]
model = "$PLANNER"
learn = $LEARN
loss_check_phases = $LOSS_CHECK
${QUEUE_SHARE:+queue_share = $QUEUE_SHARE}
$(gp_cluster_bottlenecks_toml)
CONF
}
start_daemons() { # [PACING RTO]: one gappaced per host (configs and logs in $TMP/daemons)
	DAEMON_PACING=${1:-$PACING_ON} DAEMON_RTO=${2:-$RTO_ON}
	gp_daemons_start "$BUILD" daemon_config "$TMP/daemons" || die "the daemons did not start"
}

daemon_counters() { # sums phases/apply errors over the hosts' daemons
	local i
	for i in "${!GPC_HOSTS[@]}"; do
		gp_daemon_show "$i" "$BUILD" 2>/dev/null | jq -c '.counters'
	done | jq -s -c '{phases_begun: (map(.phases_begun) | add), apply_errors: (map(.apply_errors) | add),
		phases_timed_out: (map(.phases_timed_out) | add), hints_dropped: (map(.hints_dropped) | add)}'
}

set_hand_rto() { # on|off: a route to the cluster subnet with a locked rto_min on every host
	local i
	for i in "${!GPC_HOSTS[@]}"; do
		if [[ $1 == on ]]; then
			ip -n "${GPC_HOST_NS[$i]}" route replace "$GPC_SUBNET" dev eth0 rto_min "${RTO_MS}ms" # iproute2 always locks rto_min
		else
			ip -n "${GPC_HOST_NS[$i]}" route replace "$GPC_SUBNET" dev eth0
		fi
	done
}

# Warm-up iterations for one run: --warmup, but no more than fit in --seconds of wire time at
# C (at least one, unless --warmup 0). The warm-up is for short phases, whose cold start
# (settings that arrive after the first burst) would spill into the measured run; a 4 MB
# all-to-all of 8+8 hosts takes 10.7 s per iteration at C, and three of them did not fit in
# the ranks' setup bound.
warmup_for() { # BYTES_PER_DIRECTION_PER_ITERATION RATE_BPS SECONDS
	awk -v b="$1" -v c="$2" -v s="$3" -v w="$WARMUP" \
		'BEGIN { n = int(s * c / (8 * b)); if (n < 1) n = 1; if (n > w) n = w; print n }'
}

# A stalled iteration waited for something like a retransmission timeout (200 ms stock):
# longer than the ideal iteration (N*M*m bytes per direction at C) by 150 ms.
stall_ms_for() { # BYTES_PER_DIRECTION_PER_ITERATION RATE_BPS
	awk -v b="$1" -v c="$2" 'BEGIN { printf "%d", 8 * b / c * 1000 + 150 }'
}

run_alltoall() { # VARIANT SIZE -> one JSON line on stdout
	local variant=$1 m=$2 extra=() ranks=${#GPC_HOSTS[@]} n_left=$3
	# The volume that takes SECONDS_PER_RUN at full capacity: cross-traffic share of an
	# all-to-all is 2*N*M/(P*(P-1)) of all bytes; both directions carry C.
	local cross_pairs=$((2 * n_left * (ranks - n_left)))
	local volume
	volume=$(awk -v c="$C_BPS" -v s="$SECONDS_PER_RUN" -v p="$ranks" -v x="$cross_pairs" -v m="$m" \
		'BEGIN { v = 2 * c / 8 * s * p * (p - 1) / x; min = p * (p - 1) * m; printf "%d", (v < min ? min : v) }')
	# Every phase in flight at once, as MPI's posted sends: a send buffer that holds a message
	# (twice the largest size swept, 4m by default). Autotuning would size it from cwnd, which
	# pacing keeps small, and so serialise the phases of exactly the paced variants.
	[[ $SNDBUF == auto ]] || extra+=(--sndbuf "$SNDBUF")
	extra+=(--stall-ms "$(stall_ms_for $((n_left * (ranks - n_left) * m)) "$C_BPS")")
	case $variant in
	pace | rto+pace) extra+=(--pacing-rate $((C_BPS / n_left))) ;;
	gappaced) extra+=(--hints iteration) ;;
	esac
	local -a more=()
	read -r -a more <<<"${GP_BENCH_ALLTOALL_ARGS:-}"
	extra+=("${more[@]}")
	local warmup
	warmup=$(warmup_for $((n_left * (ranks - n_left) * m)) "$C_BPS" "$SECONDS_PER_RUN")
	GAPPACE_HINTS_SOCK=$GAPPACE_HINTS_SOCK "$CLUSTER/alltoall.sh" --state "$GPC_STATE" --program "$ALLTOALL" -- \
		--msg "$m" --volume "$volume" --pattern "$PATTERN" --capacity "$C_BPS" --cc cubic --warmup "$warmup" \
		--timeout "$CELL_TIMEOUT" "${extra[@]}" 2>"$TMP/alltoall.err" || true
}

run_mpi() { # VARIANT SIZE N_LEFT -> one JSON line: the collectives report plus counters
	local variant=$1 m=$2 n_left=$3 ranks=${#GPC_HOSTS[@]} env=() i
	local program=$BUILD/tests/mpi/collectives-openmpi shim=$BUILD/libctl/mpi/openmpi/libgapctl-mpi.so
	[[ -x $program && -f $shim ]] || { echo '{"error":"collectives-openmpi or the shim is not built"}'; return; }
	local cross_pairs=$((2 * n_left * (ranks - n_left)))
	local iters
	iters=$(awk -v c="$C_BPS" -v s="$SECONDS_PER_RUN" -v x="$cross_pairs" -v m="$m" \
		'BEGIN { n = int(2 * c / 8 * s / (x * m)); if (n < 4) n = 4; if (n > 20000) n = 20000; print n }')
	# The warm-up and the iterations must fit the cell bound even at a quarter of C (Open MPI
	# at mid sizes without remedies gets less than that); a cell that cannot is skipped, said
	# so in its line, and not counted as a failure (8+8 at 4 MB needs about 215 s).
	local need_s warmup
	warmup=$(warmup_for $((n_left * (ranks - n_left) * m)) "$C_BPS" "$SECONDS_PER_RUN")
	need_s=$(awk -v c="$C_BPS" -v x="$cross_pairs" -v m="$m" -v n="$iters" -v w="$warmup" 'BEGIN { printf "%.0f", (n + w) * x * m * 8 / (2 * c) / 0.25 }')
	if ((need_s > CELL_TIMEOUT)); then
		echo '{"skipped":"'"$((iters + warmup)) alltoalls of $m B need about ${need_s} s at 0.25 of C, more than --cell-timeout $CELL_TIMEOUT"'"}'
		return
	fi
	[[ $variant == mpi-gappaced* ]] && env=(--env "LD_PRELOAD=$shim" --env "GAPPACE_HINTS_SOCK=$GAPPACE_HINTS_SOCK")
	local pair
	for pair in ${GP_BENCH_MPI_ENV:-}; do env+=(--env "$pair"); done
	local before=() after=()
	for i in "${!GPC_HOSTS[@]}"; do before+=("$(tcp_counters "${GPC_HOST_NS[$i]}")"); done
	local out rc=0
	out=$(gp_cluster_mpirun --mpi openmpi --timeout "$CELL_TIMEOUT" "${env[@]}" -- \
		"$program" --size "$m" --iters "$iters" --warmup "$warmup" --kinds alltoall --no-barrier 2>"$TMP/mpi.err") || rc=$?
	for i in "${!GPC_HOSTS[@]}"; do after+=("$(tcp_counters "${GPC_HOST_NS[$i]}")"); done
	local delta
	delta=$(jq -n -c --argjson b "$(printf '%s\n' "${before[@]}" | jq -s .)" --argjson a "$(printf '%s\n' "${after[@]}" | jq -s .)" \
		'[range(0; $a|length) as $i | ($a[$i] | to_entries | map({key, value: (.value - $b[$i][.key])}) | from_entries)]
		 | {TCPTimeouts: (map(.TCPTimeouts) | add), TCPLossProbes: (map(.TCPLossProbes) | add), RetransSegs: (map(.RetransSegs) | add)}')
	local line
	line=$(grep -m1 '^{"program":"collectives"' <<<"$out" || true)
	[[ -n $line ]] || line='{"error":"no report","rc":'$rc'}'
	jq -c --argjson tcp "$delta" --argjson c "$C_BPS" --argjson x "$cross_pairs" --argjson rc "$rc" \
		'. as $r | ($r.results // [] | map(select(.kind == "alltoall")) | .[0]) as $a
		 | $r + {rc: $rc, tcp: $tcp,
		   seconds: ($a.loop_s // null),
		   bytes_cross: (if $a then ($r.iters * $x * $r.size) else null end),
		   fraction_of_capacity: (if $a and $a.loop_s > 0 then ($r.iters * $x * $r.size * 8) / ($a.loop_s * 2 * $c) else null end),
		   iteration_us: {p50: $a.p50_us, p99: $a.p99_us, max: $a.max_us},
		   stalled_iterations: null}' <<<"$line"
}

export GAPPACE_HINTS_SOCK=@gappace-bench-hints-$TAG GAPPACE_CONTROL_SOCK=@gappace-bench-ctl-$TAG
RUNS=$OUT/runs.jsonl
: >"$RUNS"
: >"$OUT/predictions.jsonl"
{
	echo "machine: $(nproc) CPUs, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
	echo "started: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "command: $0 --topologies $TOPOLOGIES --sizes $SIZES --variants $VARIANTS --reps $REPS --rate $RATE --queue $QUEUE --seconds $SECONDS_PER_RUN --cell-timeout $CELL_TIMEOUT --pattern $PATTERN --sndbuf $SNDBUF --planner $PLANNER --remedies $REMEDIES$([[ $LEARN == true ]] && echo " --learn") --loss-check $LOSS_CHECK${QUEUE_SHARE:+ --queue-share $QUEUE_SHARE} --pacer $PACER --warmup $WARMUP$( ((${#GUEST_MODES[@]})) && echo " --guest-kernel ${GUEST_KERNEL:-(newest)} --guest-topologies $GUEST_TOPOLOGIES --guest-rate $GUEST_RATE --guest-queue $GUEST_QUEUE --guest-max-size $GUEST_MAX_SIZE --guest-seconds $GUEST_SECONDS")"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2
failures=0
for topo in "${TOPOS[@]}"; do
	((${#HOST_VARIANTS[@]})) || break
	n_left=${topo%+*} n_right=${topo#*+}
	gp_cluster_up "$TMP/cluster-$topo.state" --left "$n_left" --right "$n_right" --rate "$RATE" --queue "$QUEUE" >/dev/null
	echo "== $topo: ${#GPC_HOSTS[@]} hosts, bottleneck $RATE, FIFO $QUEUE packets, cc $GPC_CC" >&2
	# Size outer, variant inner: the variants of one size run within a few minutes of each
	# other, so that drift of this shared machine's load does not pass for a difference between
	# them. The daemons start afresh for each (size, variant); what they learn (calibration, the
	# loss check's verdicts) is kept per size class, so nothing learnt for another size is lost.
	for size in "${SIZE_LIST[@]}"; do
		m=$(bytes_of "$size")
		for variant in "${HOST_VARIANTS[@]}"; do
			case $variant in rto | rto+pace) set_hand_rto on ;; esac
			case $variant in
			gappaced | mpi-gappaced) start_daemons ;;
			mpi-gappaced-rto) start_daemons false "$RTO_ON" ;;
			esac
			for rep in $(seq "$REPS"); do
				dc_before='{}'
				[[ $variant == *gappaced* ]] && dc_before=$(daemon_counters)
				rep_began_ms=$(date +%s%3N)
				bn_before=$(bottleneck_counters)
				if [[ $variant == mpi-* ]]; then
					line=$(run_mpi "$variant" "$m" "$n_left")
				else
					line=$(run_alltoall "$variant" "$m" "$n_left")
				fi
				# One JSON value for --argjson below: the first object if a run printed several
				# lines, null if nothing parses.
				line=$(jq -c -s 'map(select(type == "object")) | .[0]' 2>/dev/null <<<"$line") || line=null
				[[ -n $line ]] || line=null
				if jq -e 'type == "object" and has("skipped")' >/dev/null 2>&1 <<<"$line"; then
					echo "bench-system: $topo $variant $size rep $rep: skipped: $(jq -r .skipped <<<"$line")" >&2
				elif ! jq -e 'type == "object" and (.fraction_of_capacity | type) == "number"' >/dev/null 2>&1 <<<"$line"; then
					echo "bench-system: $topo $variant $size rep $rep: no result: $(head -c 300 <<<"$line") $(tail -n 3 "$TMP"/*.err 2>/dev/null | head -c 600)" >&2
					failures=$((failures + 1))
				fi
				# Drops at the switch, so that a report can tell the bottleneck's losses from others.
				bn=$(jq -n -c --argjson b "$bn_before" --argjson a "$(bottleneck_counters)" \
					'if $a == null or $b == null then null else {drops: ($a.drops - $b.drops), packets: ($a.packets - $b.packets)} end')
				dc='null'
				if [[ $variant == *gappaced* ]]; then
					dc=$(jq -n -c --argjson b "$dc_before" --argjson a "$(daemon_counters)" \
						'$a | to_entries | map({key, value: (.value - ($b[.key] // 0))}) | from_entries')
					# The daemons' phases of this repetition (they live on through the cell's
					# repetitions): predicted, calibrated and measured times. A
					# phase that brought a quiet summary adds one entry for the phases its
					# sender skipped: their mean time, with what they were advised under.
					# Each host's whole record is kept per repetition too, for the run
					# that reads apart from the others (daemon-TOPO-SIZE-VARIANT-repN-hX.json).
					for i in "${!GPC_HOSTS[@]}"; do
						gp_daemon_show "$i" "$BUILD" 2>/dev/null |
							tee "$OUT/daemon-$topo-$size-$variant-rep$rep-${GPC_HOSTS[$i]}.json" |
							jq -c --arg topo "$topo" --arg variant "$variant" --argjson m "$m" --argjson rep "$rep" \
								--arg host "${GPC_HOSTS[$i]}" --argjson since "$rep_began_ms" \
								'{topology: $topo, variant: $variant, msg: $m, rep: $rep, host: $host,
								  phases: [.history[] | select(.bytes_per_peer == $m and .began_unix_ms >= $since)
									   | (select((.quiet_phases // 0) > 0 and (.quiet_predicted_us // 0) > 0)
									      | {predicted_us: .quiet_predicted_us, calibrated_us: .quiet_calibrated_us,
										 measured_us: (.quiet_ns / .quiet_phases / 1000), quiet_phases,
										 plan: "quiet summary"}),
									     (select(.ended == "end" and .predicted_us > 0)
									      | {predicted_us, calibrated_us, measured_us: (.duration_ns / 1000), plan})]}' \
							>>"$OUT/predictions.jsonl" || true
					done
				fi
				jq -n -c --arg topo "$topo" --arg variant "$variant" --argjson m "$m" --argjson rep "$rep" \
					--argjson r "$line" --argjson daemon "$dc" --arg cc "$GPC_CC" --arg rate "$RATE" --argjson queue "$QUEUE" \
					--argjson bottleneck "$bn" \
					'{topology: $topo, variant: $variant, msg: $m, rep: $rep, cc: $cc, rate: $rate, queue: $queue,
					  daemon: $daemon, bottleneck: $bottleneck, result: $r}' >>"$RUNS"
				jq -r '"\(.topology) \(.variant) m=\(.msg) rep \(.rep): " +
					(if .result.fraction_of_capacity then "\(.result.fraction_of_capacity * 1000 | round / 1000) of C, \(.result.tcp.TCPTimeouts // "?") timeouts" else "no result" end)' \
					<<<"$(tail -n1 "$RUNS")" >&2
			done
			if [[ $variant == *gappaced* ]]; then
				# What the daemons planned, predicted and measured (calibration), kept per host.
				for i in "${!GPC_HOSTS[@]}"; do
					gp_daemon_show "$i" "$BUILD" \
						>"$OUT/daemon-$topo-$size-$variant-${GPC_HOSTS[$i]}.json" 2>/dev/null || true
				done
				gp_daemons_stop
			fi
			case $variant in rto | rto+pace) set_hand_rto off ;; esac
		done
	done
	gp_cluster_down
done
# (d): one guest per (topology, size, repetition) runs both modes on the same guest cluster.
if ((${#GUEST_MODES[@]})); then
	kver=${GUEST_KERNEL:-$("$ROOT/tests/vm/kernels.sh" list | tail -n 1)}
	guest_bps=$(rate_bps "$GUEST_RATE")
	guest_max=$(bytes_of "$GUEST_MAX_SIZE")
	mode=${GUEST_MODES[0]}
	((${#GUEST_MODES[@]} == 1)) || mode=both
	for topo in "${GUEST_TOPOS[@]}"; do
		n_left=${topo%+*} n_right=${topo#*+}
		echo "== $topo (guest $kver): bottleneck $GUEST_RATE, FIFO $GUEST_QUEUE packets" >&2
		for size in "${SIZE_LIST[@]}"; do
			m=$(bytes_of "$size")
			((m <= guest_max)) || continue
			# Iterations for about GUEST_SECONDS of cross-bottleneck wire time, 3..200.
			iterations=$(((guest_bps / 8 * GUEST_SECONDS + n_left * n_right * m - 1) / (n_left * n_right * m)))
			((iterations >= 3)) || iterations=3
			((iterations <= 200)) || iterations=200
			warmup=$(warmup_for $((n_left * n_right * m)) "$guest_bps" "$GUEST_SECONDS")
			# As on the host cluster (run_alltoall): the same stall bound, and every phase in
			# flight at once.
			guest_extra=(--stall-ms "$(stall_ms_for $((n_left * n_right * m)) "$guest_bps")")
			[[ $SNDBUF == auto ]] || guest_extra+=(--sndbuf "$SNDBUF")
			for rep in $(seq "$REPS"); do
				gout=$TMP/guest-$topo-$m-$rep
				for attempt in 1 2; do
					rc=0
					timeout $((CELL_TIMEOUT * 10 + 300)) "$ROOT/tests/vm/gcluster/run.sh" --kver "$kver" --build "$BUILD" \
						--out "$gout" --timeout $((CELL_TIMEOUT * 10)) -- gcluster-alltoall --left "$n_left" \
						--right "$n_right" --rate "$GUEST_RATE" --bottleneck "$GUEST_RATE" --queue "$GUEST_QUEUE" \
						--mode "$mode" --pacer "$PACER" -- --msg "$m" --iterations "$iterations" --warmup "$warmup" \
						"${guest_extra[@]}" \
						>"$gout.log" 2>&1 || rc=$?
					# A guest killed by the emulator (host-lib.sh) is run once more; the first
					# run's console is kept next to the results.
					((rc && attempt == 1)) && gp_emulator_fault "$gout/console.log" || break
					mv "$gout/console.log" "$OUT/guest-$topo-$m-$rep.emulator-fault.console.log"
					echo "bench-system: $topo guest $size rep $rep: the guest hit a known emulator fault; run again (console kept in $OUT)" >&2
				done
				# What the guest's daemons planned, kept per repetition (each run starts its own).
				for f in "$gout"/results/alltoall/gappaced/daemon-h*.json; do
					[[ -f $f ]] && cp "$f" "$OUT/daemon-$topo-guest-$size-module-gappaced-rep$rep-${f##*/daemon-}"
				done
				for gm in "${GUEST_MODES[@]}"; do
					variant=module-stock
					[[ $gm == gappaced ]] && variant=module-gappaced
					line=$(jq -c 'select(type == "object")' "$gout/results/alltoall/$gm/alltoall.json" 2>/dev/null | sed -n 1p)
					[[ -n $line ]] || line=null
					if ! jq -e 'type == "object" and (.fraction_of_capacity | type) == "number"' >/dev/null 2>&1 <<<"$line"; then
						echo "bench-system: $topo guest $variant $size rep $rep: no result (run.sh exit $rc): $(tail -n 3 "$gout.log" | head -c 600)" >&2
						failures=$((failures + 1))
						line=null
					fi
					jq -n -c --arg topo "$topo (guest)" --arg variant "$variant" --argjson m "$m" --argjson rep "$rep" \
						--argjson r "$line" --arg rate "$GUEST_RATE" --argjson queue "$GUEST_QUEUE" --arg kver "$kver" \
						'{topology: $topo, variant: $variant, msg: $m, rep: $rep, cc: ($r.cc // "cubic"), rate: $rate,
						  queue: $queue, kernel: $kver, daemon: null, result: $r}' >>"$RUNS"
					jq -r '"\(.topology) \(.variant) m=\(.msg) rep \(.rep): " +
						(if .result.fraction_of_capacity then "\(.result.fraction_of_capacity * 1000 | round / 1000) of C, \(.result.tcp.TCPTimeouts // "?") timeouts" else "no result" end)' \
						<<<"$(tail -n1 "$RUNS")" >&2
				done
			done
		done
	done
fi
echo "finished: $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"
report_args=()
((PLOT)) || report_args+=(--no-plot)
[[ -z $PUBLISH ]] || report_args+=(--publish "$PUBLISH")
[[ -z $PUBLISH_MODELS ]] || report_args+=(--publish-models "$PUBLISH_MODELS")
python3 "$HERE/report.py" --runs "$RUNS" --out "$OUT" --machine "$OUT/machine.txt" "${report_args[@]}"
((failures == 0)) || { echo "bench-system: $failures runs produced no result" >&2; exit 1; }
