#include "host_counters.hpp"

#include <time.h>

#include "proc_net.hpp"

namespace gp::daemon {

std::optional<models::HostTcpCounters> host_tcp_counters_from_texts(std::string_view snmp_text,
								   std::string_view netstat_text)
{
	// Only the counters used: the daemon reads them at every phase whose losses it checks, and
	// a map of TcpExt's hundred-odd counters each time was most of what that cost.
	constexpr std::string_view kTcp[] = {"OutSegs", "RetransSegs"};
	constexpr std::string_view kTcpExt[] = {"TCPTimeouts", "TCPDSACKRecvSegs", "TCPDSACKRecv", "TCPSpuriousRTOs"};
	const auto tcp = parse_proc_net_values(snmp_text, "Tcp", kTcp);
	const auto ext = parse_proc_net_values(netstat_text, "TcpExt", kTcpExt);
	if (!tcp || !ext)
		return std::nullopt;
	auto value = [](const std::optional<int64_t> &v) -> std::optional<uint64_t> {
		if (!v || *v < 0)
			return std::nullopt;
		return static_cast<uint64_t>(*v);
	};
	const auto sent = value((*tcp)[0]), retransmitted = value((*tcp)[1]);
	const auto timeouts = value((*ext)[0]);
	if (!sent || !retransmitted || !timeouts)
		return std::nullopt;
	models::HostTcpCounters c;
	c.segments_sent = *sent;
	c.segments_retransmitted = *retransmitted;
	c.timeouts = *timeouts;
	// Kernels before 5.10 count DSACK blocks, not segments: about the same where each block
	// reports one segment. Without either, every retransmission counts as a loss.
	c.segments_reported_duplicate = value((*ext)[1]).value_or(value((*ext)[2]).value_or(0));
	c.spurious_timeouts = value((*ext)[3]).value_or(0);
	return c;
}

std::optional<models::HostTcpCounters> read_host_tcp_counters()
{
	const auto snmp = read_proc_text("/proc/net/snmp");
	const auto netstat = read_proc_text("/proc/net/netstat");
	if (!snmp || !netstat)
		return std::nullopt;
	auto counters = host_tcp_counters_from_texts(*snmp, *netstat);
	if (!counters)
		return std::nullopt;
	timespec now{};
	::clock_gettime(CLOCK_MONOTONIC, &now);
	counters->at_us = static_cast<double>(now.tv_sec) * 1e6 + static_cast<double>(now.tv_nsec) / 1e3;
	return counters;
}

} // namespace gp::daemon
