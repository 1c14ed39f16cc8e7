// Unit tests of the shim's MPI-independent half: socket scan and rank matching.
#include "peer_exchange.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "unique_fd.hpp"

namespace gp::mpishim {
namespace {

in_addr v4(const char *text)
{
	in_addr a{};
	EXPECT_EQ(inet_pton(AF_INET, text, &a), 1) << text;
	return a;
}

in6_addr v6(const char *text)
{
	in6_addr a{};
	EXPECT_EQ(inet_pton(AF_INET6, text, &a), 1) << text;
	return a;
}

LocalSocket tcp4(const char *local, uint16_t lport, const char *remote, uint16_t rport)
{
	const in_addr l = v4(local), r = v4(remote);
	return make_local_socket(AF_INET, &l, lport, &r, rport);
}

// The gathered data of a communicator, built rank by rank.
struct Gathered {
	std::vector<RankRecord> records;
	std::vector<WireEndpoint> endpoints;
	std::vector<std::vector<LocalSocket>> sockets;

	void add_rank(uint64_t host, std::vector<LocalSocket> socks, const char *addr = nullptr)
	{
		RankRecord rec{};
		rec.host_key = host;
		rec.n_endpoints = static_cast<uint32_t>(socks.size());
		if (addr) {
			const in_addr a = v4(addr);
			std::memcpy(rec.addrs[0], &a, 4);
			rec.addr_family[0] = 4;
			rec.n_addrs = 1;
		}
		records.push_back(rec);
		for (const LocalSocket &s : socks)
			endpoints.push_back(s.wire);
		sockets.push_back(std::move(socks));
	}

	PeerTable match(int rank)
	{
		PeerTable table;
		EXPECT_TRUE(match_peers(rank, sockets[rank], records, endpoints, table));
		return table;
	}
};

TEST(MatchPeers, AcceptedSocketShowsTheConnectingEphemeralPort)
{
	Gathered g;
	// Rank 0 connected from an ephemeral port to rank 1's listener; rank 1 also has its
	// connection to the launcher, which no rank publishes.
	g.add_rank(1, {tcp4("127.0.0.1", 40000, "127.0.0.1", 1025)});
	g.add_rank(1, {tcp4("127.0.0.1", 1025, "127.0.0.1", 40000),
		       tcp4("127.0.0.1", 50000, "127.0.0.1", 38711)});
	const PeerTable t0 = g.match(0);
	ASSERT_EQ(t0.peers.size(), 1u);
	EXPECT_EQ(t0.peers[0].rank, 1);
	EXPECT_EQ(t0.peers[0].fd, -1);
	EXPECT_EQ(t0.peers[0].family, AF_INET);
	EXPECT_EQ(t0.peers[0].local_port, 40000);
	EXPECT_EQ(t0.peers[0].port, 1025);
	EXPECT_EQ(t0.tuple_peers, 1u);
	EXPECT_EQ(t0.mapped_ranks, 1u);
	EXPECT_EQ(t0.matched_pairs, 1u);
	EXPECT_FALSE(t0.any_unmapped);

	const PeerTable t1 = g.match(1);
	ASSERT_EQ(t1.peers.size(), 1u);	// the launcher connection is not a peer
	EXPECT_EQ(t1.peers[0].rank, 0);
	EXPECT_EQ(t1.peers[0].local_port, 1025);
	EXPECT_EQ(t1.peers[0].port, 40000);
	EXPECT_EQ(format_tuple(t1.peers[0]), "127.0.0.1:1025>127.0.0.1:40000");
}

TEST(MatchPeers, MappedIpv6SocketMatchesItsIpv4Peer)
{
	Gathered g;
	const in6_addr l = v6("::ffff:10.0.0.1"), r = v6("::ffff:10.0.0.2");
	g.add_rank(1, {make_local_socket(AF_INET6, &l, 5000, &r, 6000)});
	g.add_rank(2, {tcp4("10.0.0.2", 6000, "10.0.0.1", 5000)});
	const PeerTable t0 = g.match(0);
	ASSERT_EQ(t0.tuple_peers, 1u);
	// The hint carries the tuple as this socket shows it (IPv6).
	EXPECT_EQ(t0.peers[0].family, AF_INET6);
	EXPECT_EQ(std::memcmp(t0.peers[0].addr, &r, 16), 0);
	EXPECT_EQ(t0.peers[0].rank, 1);
	const PeerTable t1 = g.match(1);
	ASSERT_EQ(t1.tuple_peers, 1u);
	EXPECT_EQ(t1.peers[0].family, AF_INET);
	EXPECT_EQ(t1.peers[0].rank, 0);
}

TEST(MatchPeers, UnconnectedRemoteRankFallsBackToItsAddress)
{
	Gathered g;
	g.add_rank(10, {tcp4("10.0.0.1", 40000, "10.0.0.2", 1024)}, "10.0.0.1");
	g.add_rank(20, {tcp4("10.0.0.2", 1024, "10.0.0.1", 40000)}, "10.0.0.2");
	g.add_rank(30, {}, "10.0.0.3");
	const PeerTable t0 = g.match(0);
	ASSERT_EQ(t0.peers.size(), 2u);
	EXPECT_EQ(t0.tuple_peers, 1u);
	EXPECT_EQ(t0.address_peers, 1u);
	EXPECT_EQ(t0.peers[1].rank, 2);
	EXPECT_EQ(t0.peers[1].local_port, 0);	// address form
	const in_addr a = v4("10.0.0.3");
	EXPECT_EQ(std::memcmp(t0.peers[1].addr, &a, 4), 0);
	// Pairs (0,2) and (1,2) cross hosts without a socket: every rank must rescan.
	EXPECT_TRUE(t0.any_unmapped);
	EXPECT_TRUE(g.match(2).any_unmapped);
	EXPECT_EQ(g.match(2).address_peers, 2u);
}

TEST(MatchPeers, SharedMemoryRanksOnOneHostAreSkipped)
{
	Gathered g;
	for (int r = 0; r < 3; r++)
		g.add_rank(7, {}, "192.0.2.1");
	const PeerTable t = g.match(1);
	EXPECT_TRUE(t.peers.empty());
	EXPECT_EQ(t.matched_pairs, 0u);
	// No pair on this host uses TCP, so no rescan is asked for.
	EXPECT_FALSE(t.any_unmapped);
}

TEST(MatchPeers, LocalTcpMakesUnconnectedLocalPairsCount)
{
	Gathered g;
	g.add_rank(7, {tcp4("127.0.0.1", 40000, "127.0.0.1", 1025)});
	g.add_rank(7, {tcp4("127.0.0.1", 1025, "127.0.0.1", 40000)});
	g.add_rank(7, {});
	const PeerTable t = g.match(2);
	EXPECT_TRUE(t.any_unmapped);	// pairs (0,2), (1,2) may still connect
	EXPECT_TRUE(t.peers.empty());	// same host, nothing known: nothing to send
}

TEST(MatchPeers, RejectsCountsThatDoNotAddUp)
{
	Gathered g;
	g.add_rank(1, {tcp4("127.0.0.1", 1, "127.0.0.1", 2)});
	g.add_rank(1, {});
	g.endpoints.pop_back();
	PeerTable t;
	EXPECT_FALSE(match_peers(0, g.sockets[0], g.records, g.endpoints, t));
	EXPECT_FALSE(match_peers(5, g.sockets[0], g.records, g.endpoints, t));
}

TEST(ScanTcpSockets, FindsBothEndsOfALoopbackConnection)
{
	UniqueFd listener(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_TRUE(listener);
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	ASSERT_EQ(listen(listener.get(), 1), 0);
	socklen_t len = sizeof(addr);
	ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr *>(&addr), &len), 0);
	UniqueFd client(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	UniqueFd server(accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
	ASSERT_TRUE(server);
	sockaddr_in client_addr{};
	len = sizeof(client_addr);
	ASSERT_EQ(getsockname(client.get(), reinterpret_cast<sockaddr *>(&client_addr), &len), 0);
	UniqueFd udp(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));	// not TCP: ignored

	const std::vector<LocalSocket> all = scan_tcp_sockets(kMaxEndpointsPerRank);
	const uint16_t listen_port = ntohs(addr.sin_port), client_port = ntohs(client_addr.sin_port);
	const LocalSocket *client_side = nullptr, *server_side = nullptr;
	for (const LocalSocket &s : all) {
		EXPECT_NE(s.local_port, 0);	// the listener (no peer) is not listed
		if (s.local_port == client_port && s.remote_port == listen_port)
			client_side = &s;
		if (s.local_port == listen_port && s.remote_port == client_port)
			server_side = &s;
	}
	ASSERT_NE(client_side, nullptr);
	ASSERT_NE(server_side, nullptr);
	EXPECT_EQ(client_side->family, AF_INET);

	// As two "ranks" of one host, the two ends find each other.
	Gathered g;
	g.add_rank(3, {*client_side});
	g.add_rank(3, {*server_side});
	const PeerTable t = g.match(0);
	ASSERT_EQ(t.tuple_peers, 1u);
	EXPECT_EQ(t.peers[0].rank, 1);
	EXPECT_EQ(t.peers[0].local_port, client_port);
	EXPECT_EQ(t.peers[0].port, listen_port);
	EXPECT_EQ(scan_tcp_sockets(1).size(), 1u);	// the bound holds
}

TEST(RankRecord, PublishesNoLoopbackAndAStableHostKey)
{
	const uint64_t key = compute_host_key();
	EXPECT_EQ(key, compute_host_key());
	const RankRecord rec = make_rank_record(key, 12);
	EXPECT_EQ(rec.host_key, key);
	EXPECT_EQ(rec.n_endpoints, 12u);
	ASSERT_LE(rec.n_addrs, static_cast<uint32_t>(kMaxPublishedAddrs));
	for (uint32_t i = 0; i < rec.n_addrs; i++) {
		ASSERT_TRUE(rec.addr_family[i] == 4 || rec.addr_family[i] == 6);
		if (rec.addr_family[i] == 4) {
			EXPECT_NE(rec.addrs[i][0], 127);
		}
	}
}

} // namespace
} // namespace gp::mpishim
