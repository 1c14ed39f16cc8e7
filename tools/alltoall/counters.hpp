// A network namespace's TCP counters (/proc/net/netstat TcpExt, /proc/net/snmp Tcp) and its
// identity. /proc/net is /proc/self/net: a process reads the counters of its own namespace.
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "expected.hpp"
#include "proc_net.hpp"

namespace gp::alltoall {

struct CounterName {
	std::string_view table; // "TcpExt" (netstat) or "Tcp" (snmp)
	std::string_view name;
};

// The counters a collapse shows in: RTOs (TCPTimeouts), tail loss probes, spurious RTOs, fast
// and slow-start retransmissions, all retransmitted and all sent segments. The order is part of
// the rendezvous protocol (snapshots travel as arrays).
inline constexpr std::array<CounterName, 8> kTcpCounters{{
	{"TcpExt", "TCPTimeouts"},
	{"TcpExt", "TCPLossProbes"},
	{"TcpExt", "TCPLossProbeRecovery"},
	{"TcpExt", "TCPSpuriousRTOs"},
	{"TcpExt", "TCPFastRetrans"},
	{"TcpExt", "TCPSlowStartRetrans"},
	{"Tcp", "RetransSegs"},
	{"Tcp", "OutSegs"},
}};

struct CounterSnapshot {
	std::array<std::optional<uint64_t>, kTcpCounters.size()> values{}; // nullopt: kernel lacks it
};

using gp::parse_proc_net_table; // proc_net.hpp

// The tracked counters out of the two files' texts; a missing table or name leaves nullopt.
CounterSnapshot snapshot_from_texts(std::string_view netstat_text, std::string_view snmp_text);

// Reads /proc/net/netstat and /proc/net/snmp of this process's namespace.
Expected<CounterSnapshot> read_tcp_counters();

// The inode of /proc/self/ns/net: equal for processes in one network namespace.
Expected<uint64_t> current_netns_inode();

} // namespace gp::alltoall
