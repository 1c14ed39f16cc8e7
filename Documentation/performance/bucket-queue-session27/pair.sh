# Sourced by tsq-host.sh and bursts-host.sh: two namespaces A (sender) and B joined by a veth,
# offloads off, cubic in both, the sender's tcp_tso_rtt_log set; removed on exit.
#   pair_up A B NET RTT_LOG   (NET: the first three octets, A is .1 and B .2)
pair_up() {
	local a=$1 b=$2 net=$3 rtt_log=$4
	PAIR_A=$a PAIR_B=$b
	trap pair_down EXIT
	pair_down
	ip netns add "$a" && ip netns add "$b" || exit 1
	ip link add eth0 netns "$a" type veth peer name eth0 netns "$b"
	ip -n "$a" addr add "$net.1/24" dev eth0
	ip -n "$b" addr add "$net.2/24" dev eth0
	local n
	for n in "$a" "$b"; do
		ip -n "$n" link set lo up
		ip -n "$n" link set eth0 up
		ip netns exec "$n" sysctl -qw net.ipv4.tcp_congestion_control=cubic
		ip netns exec "$n" ethtool -K eth0 tso off gso off gro off
	done
	ip netns exec "$a" sysctl -qw net.ipv4.tcp_tso_rtt_log="$rtt_log"
}
pair_down() {
	ip netns del "$PAIR_A" 2>/dev/null
	ip netns del "$PAIR_B" 2>/dev/null
	return 0
}
