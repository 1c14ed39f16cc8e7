// The loss check's counters: OutSegs and RetransSegs (snmp's Tcp table), TCPTimeouts (netstat's
// TcpExt table), read from this process's namespace.
#include <gtest/gtest.h>

#include "host_counters.hpp"

namespace gp::daemon {
namespace {

constexpr const char *kSnmp = "Ip: Forwarding DefaultTTL\nIp: 1 64\n"
			      "Tcp: RtoAlgorithm MaxConn OutSegs RetransSegs InErrs\nTcp: 1 -1 5000 12 0\n";
constexpr const char *kNetstat = "TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPDSACKRecv TCPDSACKRecvSegs "
				 "TCPSpuriousRTOs\nTcpExt: 0 3 7 4 5 1\n";

TEST(HostCounters, ParsesTheThreeCounters)
{
	const auto c = host_tcp_counters_from_texts(kSnmp, kNetstat);
	ASSERT_TRUE(c);
	EXPECT_EQ(c->segments_sent, 5000u);
	EXPECT_EQ(c->segments_retransmitted, 12u);
	EXPECT_EQ(c->timeouts, 3u);
	EXPECT_EQ(c->segments_reported_duplicate, 5u) << "TCPDSACKRecvSegs, not the blocks";
	EXPECT_EQ(c->spurious_timeouts, 1u);
	const auto old_kernel = host_tcp_counters_from_texts(kSnmp, "TcpExt: TCPTimeouts TCPDSACKRecv\nTcpExt: 3 4\n");
	ASSERT_TRUE(old_kernel);
	EXPECT_EQ(old_kernel->segments_reported_duplicate, 4u) << "the blocks where segments are not counted";
	EXPECT_EQ(old_kernel->spurious_timeouts, 0u);
	EXPECT_FALSE(host_tcp_counters_from_texts(kSnmp, "TcpExt: TCPLossProbes\nTcpExt: 7\n")) << "no TCPTimeouts";
	EXPECT_FALSE(host_tcp_counters_from_texts("Tcp: OutSegs\nTcp: 1\n", kNetstat)) << "no RetransSegs";
	EXPECT_FALSE(host_tcp_counters_from_texts("", "")) << "empty files";
}

TEST(HostCounters, ReadsThisNamespacesCountersWithATime)
{
	const auto a = read_host_tcp_counters();
	ASSERT_TRUE(a) << "/proc/net/snmp and /proc/net/netstat of this namespace";
	const auto b = read_host_tcp_counters();
	ASSERT_TRUE(b);
	EXPECT_GT(a->at_us, 0);
	EXPECT_GE(b->at_us, a->at_us);
	EXPECT_GE(b->segments_sent, a->segments_sent);
}

} // namespace
} // namespace gp::daemon
