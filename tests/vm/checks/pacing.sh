#!/usr/bin/env bash
# Host-side assertions of the pacing scenario (tests/vm/tests/pacing.sh).
#
# Usage: checks/pacing.sh RUN_DIR WIRECHECK LINK_BITS [FRAMES]
#   RUN_DIR    run-guest.sh --out directory (eth0.pcap, results/)
#   WIRECHECK  path of gp-wirecheck
#   LINK_BITS  link rate the guest declared, bit/s
#   FRAMES     data frames per phase the guest sent
# Writes RUN_DIR/report.txt (the numbers) and exits non-zero on any violation.
set -euo pipefail

run=${1:?run dir}
wirecheck=${2:?gp-wirecheck}
link=${3:?link rate}
frames=${4:-1000}
pcap=$run/eth0.pcap
res=$run/results
report=$run/report.txt
tol=0.005	# the acceptance tolerance: +-0.5 %
fails=0
: >"$report"

note() { echo "$*" | tee -a "$report"; }
fail() { note "FAIL: $*"; fails=$((fails + 1)); }
# within VALUE EXPECTED REL: |VALUE/EXPECTED - 1| <= REL
within() { jq -ne --argjson v "$1" --argjson e "$2" --argjson r "$3" '(($v / $e) - 1) | fabs <= $r' >/dev/null; }
relerr() { jq -nr --argjson v "$1" --argjson e "$2" '(($v / $e) - 1) * 100 | . * 1000 | round / 1000'; }
stat() { jq -r ".[0].stats.$2" "$res/stats/$1.json"; }
delta() { echo $(($(stat "$1.after" "$2") - $(stat "$1.before" "$2"))); }

[[ -s $pcap ]] || { fail "no capture at $pcap"; exit 1; }
mac=$(sed -n 's/^eth0_mac=//p' "$res/wire.txt")

# --- the link rate was read from the device: the e1000 reports 1 Gbit/s
auto=$(jq -r '.[0] | "\(.linkrate) \(.linkrate_auto)"' "$res/qdisc-auto.json")
[[ $auto == "1000000000 true" ]] || fail "attach without linkrate: got '$auto', want the device's 1000000000 (auto)"
note "linkrate from the device: ${auto% *} bit/s"

all=$run/wirecheck.json
"$wirecheck" -j --linkrate "$link" --dev-mac "$mac" \
	--flow p1=10.0.1.1/32 --flow p2=10.0.2.1/32 --flow u=10.0.3.1/32 "$pcap" >"$all"
phase() { jq -c --arg n "$1" '.phases[] | select(.name == $n)' "$all"; }
flow() { phase "$1" | jq -c --arg f "$2" '.flows[] | select(.name == $f)'; }

# --- every phase: valid gap frames, nothing lost or reordered, counters = capture
note "phase        data  gaps  (capture | qdisc counters)"
for ph in $(jq -r '.phases[].name' "$all"); do
	p=$(phase "$ph")
	[[ $(jq '.invalid_gaps.count' <<<"$p") == 0 ]] || fail "$ph: invalid gap frames: $(jq -c .invalid_gaps <<<"$p")"
	jq -e '[.integrity.udp[] | .lost + .reordered + .duplicated] | add // 0 | . == 0' <<<"$p" >/dev/null \
		|| fail "$ph: UDP loss/reorder on the wire: $(jq -c .integrity.udp <<<"$p")"
	[[ $(jq '.integrity.tcp_out_of_order' <<<"$p") == 0 ]] || fail "$ph: TCP segments out of order"
	[[ -f $res/stats/$ph.before.json ]] || continue
	for pair in "data.frames data_packets" "data.bytes data_bytes" "gap.frames gap_frames" "gap.bytes gap_bytes" \
		"gap.wire_bytes gap_wire_bytes"; do
		set -- $pair
		seen=$(jq ".$1" <<<"$p")
		counted=$(delta "$ph" "$2")
		[[ $seen == "$counted" ]] || fail "$ph: capture $1=$seen but qdisc $2 grew by $counted"
	done
	note "$(printf '%-12s %5s %5s  (equal)' "$ph" "$(jq .data.frames <<<"$p")" "$(jq .gap.frames <<<"$p")")"
done
# every frame of the capture went through the qdisc, and nothing else
total=$(jq -c .total "$all")
for pair in "data.frames data_packets" "gap.frames gap_frames" "data.bytes data_bytes" "gap.bytes gap_bytes"; do
	set -- $pair
	[[ $(jq ".$1" <<<"$total") == $(stat final "$2") ]] \
		|| fail "whole capture $1=$(jq ".$1" <<<"$total") but qdisc $2=$(stat final "$2")"
done
[[ $(stat final drops) == 0 ]] || fail "the qdisc dropped $(stat final drops) packets"

# --- device IFG mode: payload / (8 + frame + 4 + IFG) x link rate
note ""
note "IFG mode (UDP 1472-byte payload, 1514-byte frames):"
for ifg in 12 100 500 1500 5000; do
	p=$("$wirecheck" -j --linkrate "$link" --dev-mac "$mac" --ifg "$ifg" "$pcap" |
		jq -c --arg n "ifg-$ifg" '.phases[] | select(.name == $n)')
	got=$(jq '.ifg.payload_rate' <<<"$p")
	want=$(jq -n --argjson l "$link" --argjson g "$ifg" '1472 / (1526 + $g) * $l')
	dev=$(jq '.ifg.deviation_max_abs' <<<"$p")
	frames_seen=$(jq '.data.frames' <<<"$p")
	# the law frame by frame (the phase marker is a short frame), and the issue's
	# formula for the stream of full frames, which the marker biases by < 0.1 %
	note "  ifg $ifg: data wire share $(relerr "$(jq .ifg.data_wire_ratio <<<"$p")" "$(jq .ifg.law_ratio <<<"$p")") % from the law;" \
		"payload rate $(relerr "$got" "$want") % from 1472/(1526+IFG) x link; largest gap deviation $dev bytes; $frames_seen frames"
	within "$(jq .ifg.data_wire_ratio <<<"$p")" "$(jq .ifg.law_ratio <<<"$p")" "$tol" || fail "ifg $ifg: data wire share off the law"
	within "$got" "$want" "$tol" || fail "ifg $ifg: payload rate $got, law $want"
	jq -e --argjson g "$ifg" '.ifg.deviation_max_abs < 84' <<<"$p" >/dev/null \
		|| fail "ifg $ifg: a gap deviates $dev bytes from the plan (error diffusion bounds it below 84)"
	((frames_seen >= frames)) || fail "ifg $ifg: only $frames_seen data frames"
done

# --- one paced flow at P % of the link
note ""
note "one paced flow (UDP), achieved vs planned:"
for pct in 1 10 25 50 90; do
	want=$((link * pct / 100))
	f=$("$wirecheck" -j --linkrate "$link" --dev-mac "$mac" --flow "p1=10.0.1.1/32,rate=$want" "$pcap" |
		jq -c --arg n "rate-$pct" '.phases[] | select(.name == $n) | .flows[] | select(.name == "p1")')
	got=$(jq .achieved_rate <<<"$f")
	n=$(jq .frames <<<"$f")
	note "  $pct %: $(relerr "$got" "$want") % over $n frames, spacing deviation $(jq -c '[.spacing.deviation_min, .spacing.deviation_max]' <<<"$f") bytes"
	within "$got" "$want" "$tol" || fail "rate $pct %: achieved $got, planned $want"
	((n >= frames)) || fail "rate $pct %: only $n frames"
	[[ $(jq .spacing.violations <<<"$f") == 0 ]] || fail "rate $pct %: spacings below the plan"
done

# --- two paced flows and an unpaced one at once
note ""
note "mixed: paced 10 %, paced 25 %, unpaced:"
for spec in "p1 10" "p2 25"; do
	set -- $spec
	f=$(flow mixed "$1")
	want=$((link * $2 / 100))
	got=$(jq .achieved_rate <<<"$f")
	note "  $1 at $2 %: $(relerr "$got" "$want") %, $(jq .frames <<<"$f") frames"
	# Never faster than planned (+0.5 %). Slower only as far as the sender can fall behind:
	# next to the blaster on one TCG vCPU a paced sender sometimes does not stay backlogged
	# (-2.2 % once in session 7's CI), which is the sender's CPU, not the qdisc's clock. The
	# single-flow phases above hold the +-0.5 % both ways.
	jq -ne --argjson v "$got" --argjson e "$want" --argjson r "$tol" '($v / $e) - 1 | . <= $r and . >= -0.05' \
		>/dev/null || fail "mixed $1: achieved $got, planned $want"
done
u=$(phase mixed | jq -c '.flows[] | select(.name == "u")')
ushare=$(jq --argjson l "$link" '.phase_rate / $l' <<<"$u")
note "  unpaced: $(jq .frames <<<"$u") frames, $(jq -n --argjson s "$ushare" '$s * 1000 | round / 10') % of the link over the phase"
# Not starved while both paced flows hold backlog: a starved flow would send next to nothing
# until they drain. The paced flows take 35 %, so how much the unpaced flow gets is what the
# blaster's CPU time on one TCG vCPU lets it offer: 21-81 % in the session 7 CI runs, and
# 9.9 % (below 1/8) once. The 1/8 guarantee under contention
# (GP_UNPACED_SHARE) is checked by pace_core_test (OvercommittedPacedFlowsLeaveUnpacedItsShare);
# here a quarter of it.
jq -ne --argjson s "$ushare" '$s >= 0.03125' >/dev/null || fail "mixed: the unpaced flow got only $ushare of the link (starved?)"

# --- a rule group: two destinations paced together at 25 %, in FIFO order
note ""
want=$((link / 4))
g=$("$wirecheck" -j --linkrate "$link" --dev-mac "$mac" --flow "g=10.0.1.0/30,rate=$want" "$pcap" |
	jq -c '.phases[] | select(.name == "group") | .flows[] | select(.name == "g")')
got=$(jq .achieved_rate <<<"$g")
n=$(jq .frames <<<"$g")
note "group: 10.0.1.1 + 10.0.1.2 at 25 % together: $(relerr "$got" "$want") % over $n frames," \
	"spacing violations $(jq .spacing.violations <<<"$g")"
within "$got" "$want" "$tol" || fail "group: the two destinations together achieved $got, planned $want (rules of their own: twice)"
((n >= 2 * frames)) || fail "group: only $n frames of $((2 * frames))"
[[ $(jq .spacing.violations <<<"$g") == 0 ]] || fail "group: frames of the group closer than its schedule allows"
members=$(jq -c '[.[] | select(.dst == "10.0.1.1/32" or .dst == "10.0.1.2/32") | [.group, .rate, .stats.data_packets]] | unique' \
	"$res/rules/group.json")
note "  member rules (group, rate, data_packets): $members"
[[ $(jq length <<<"$members") == 1 && $(jq -c '.[0][:2]' <<<"$members") == "[7,$want]" ]] \
	|| fail "group: the member rules do not report one group, its rate and its counters: $members"

# --- paced TCP with TSO/GSO on
note ""
f=$(flow tcp-tso p1)
seg=$(delta tcp-tso gso_segmented)
note "tcp-tso: $(jq .frames <<<"$f") frames, $seg GSO packets segmented in the qdisc," \
	"spacing violations $(jq .spacing.violations <<<"$f"), back to back $(jq .spacing.back_to_back <<<"$f")," \
	"achieved $(jq .achieved_rate <<<"$f") of planned $((link / 5)) bit/s"
((seg > 0)) || fail "tcp-tso: no GSO packet reached the qdisc (TSO off?)"
[[ $(jq .spacing.violations <<<"$f") == 0 ]] || fail "tcp-tso: frames closer than the planned gap"
[[ $(jq .spacing.back_to_back <<<"$f") == 0 ]] || fail "tcp-tso: MTU frames back to back"
within "$(jq .achieved_rate <<<"$f")" $((link / 5)) 1 && jq -e --argjson w $((link / 5)) '.achieved_rate <= $w * 1.005' <<<"$f" >/dev/null \
	|| fail "tcp-tso: faster than planned"

# --- IPv6: longest prefix wins (/128 at 25 % inside a /64 at 10 %)
note ""
note "ipv6 (longest prefix match):"
v6=$("$wirecheck" -j --linkrate "$link" --dev-mac "$mac" --flow "a=fd00:1::2/128,rate=$((link / 4))" \
	--flow "b=fd00:1::3/128,rate=$((link / 10))" "$pcap" | jq -c '.phases[] | select(.name == "ipv6")')
for spec in "a 25 fd00:1::2/128" "b 10 fd00:1::3 (via /64)"; do
	set -- $spec
	f=$(jq -c --arg f "$1" '.flows[] | select(.name == $f)' <<<"$v6")
	want=$((link * $2 / 100))
	got=$(jq .achieved_rate <<<"$f")
	note "  $3 ${4:-} ${5:-} at $2 %: $(relerr "$got" "$want") %, $(jq .frames <<<"$f") frames, spacing violations $(jq .spacing.violations <<<"$f")"
	within "$got" "$want" "$tol" || fail "ipv6 $3: achieved $got, planned $want"
	(($(jq .frames <<<"$f") >= frames)) || fail "ipv6 $3: only $(jq .frames <<<"$f") frames"
done
[[ $(jq '.invalid_gaps.count' <<<"$v6") == 0 ]] || fail "ipv6: invalid gap frames"

# --- tc shows the qdisc's counters through the plugin
grep -q "gap_frames" "$res/tc-show.txt" || fail "tc -s qdisc show prints no gappace counters"
# tc's "Sent" is what the qdisc gave the device, gap frames included (one output: the same
# instant): packets exactly; bytes differ by the padding of short data frames the counters add
tcfield() { grep -oE "$1 [0-9]+" "$res/tc-show.txt" | awk 'NR == 1 {print $2}'; }
sent_bytes=$(grep -oE "Sent [0-9]+ bytes" "$res/tc-show.txt" | awk '{print $2}')
sent_pkts=$(grep -oE "bytes [0-9]+ pkt" "$res/tc-show.txt" | awk '{print $2}')
counted_pkts=$(($(tcfield data_packets) + $(tcfield gap_frames)))
counted_bytes=$(($(tcfield data_bytes) + $(tcfield gap_bytes)))
[[ $sent_pkts == "$counted_pkts" ]] \
	|| fail "tc Sent $sent_pkts pkt, but data_packets + gap_frames = $counted_pkts"
((sent_bytes <= counted_bytes && counted_bytes - sent_bytes <= $(tcfield data_packets) * 46)) \
	|| fail "tc Sent $sent_bytes bytes, but data_bytes + gap_bytes = $counted_bytes"
note "tc Sent $sent_bytes bytes $sent_pkts pkt (counters: $counted_bytes bytes, $counted_pkts frames)"

note ""
((fails == 0)) && note "pacing: all checks passed" || note "pacing: $fails checks failed"
((fails == 0))
