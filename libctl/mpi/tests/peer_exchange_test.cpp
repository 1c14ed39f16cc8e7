// Unit tests of the shim's MPI-independent half: socket scan, routing and rank matching.
#include "peer_exchange.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

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

ListenEndpoint listen4(const char *addr, uint16_t port)
{
	const in_addr a = v4(addr);
	return make_listen_endpoint(AF_INET, &a, port);
}

// A communicator's ranks, exchanging in memory exactly as the shim's collectives move the
// data: PMPI_Allgather of records, PMPI_Alltoall of counts, PMPI_Alltoallv of endpoints,
// PMPI_Alltoallv of answers, PMPI_Allreduce of the sums.
struct Cluster {
	std::vector<RankRecord> records;
	std::vector<std::vector<LocalSocket>> sockets;
	std::vector<uint64_t> sent, received;	// per rank, from the last exchange
	std::vector<int> abandoning;		// ranks whose part fails

	// The rank's network namespace key is its host key unless netns is given.
	void add_rank(uint64_t host, std::vector<LocalSocket> socks, const char *addr = nullptr,
		      std::vector<ListenEndpoint> listeners = {}, uint64_t netns = 0)
	{
		RankRecord rec = make_rank_record(host, netns ? netns : host, listeners, socks);
		rec.n_addrs = 0;	// the test's addresses, not this machine's
		if (addr) {
			const in_addr a = v4(addr);
			std::memcpy(rec.addrs[0], &a, 4);
			rec.addr_family[0] = 4;
			rec.n_addrs = 1;
		}
		records.push_back(rec);
		sockets.push_back(std::move(socks));
	}

	std::vector<PeerTable> exchange()
	{
		const int n = static_cast<int>(records.size());
		std::vector<EndpointExchange> ex;
		for (int r = 0; r < n; r++)
			ex.emplace_back(r, n, sockets[r]);
		for (const int r : abandoning)
			ex[r].abandon();
		for (int r = 0; r < n; r++)
			ex[r].route(records);
		for (int r = 0; r < n; r++) {
			std::vector<int> counts(n);
			for (int q = 0; q < n; q++)
				counts[q] = ex[q].send_counts()[r];
			EXPECT_TRUE(ex[r].expect(counts)) << "rank " << r;
		}
		for (int r = 0; r < n; r++)
			for (int q = 0; q < n; q++)
				std::copy_n(ex[q].sent().begin() + ex[q].send_displs()[r],
					    ex[q].send_counts()[r],
					    ex[r].received().begin() + ex[r].recv_displs()[q]);
		for (int r = 0; r < n; r++)
			ex[r].answer();
		for (int r = 0; r < n; r++)
			for (int q = 0; q < n; q++)
				std::copy_n(ex[q].answers_out().begin() + ex[q].recv_displs()[r],
					    ex[q].recv_counts()[r],
					    ex[r].answers_in().begin() + ex[r].send_displs()[q]);
		ExchangeSums sums;
		for (int r = 0; r < n; r++) {
			const ExchangeSums part = ex[r].confirm();
			sums.mapped_ranks += part.mapped_ranks;
			sums.local_mapped += part.local_mapped;
			sums.failed += part.failed;
		}
		std::vector<PeerTable> tables(n);
		sent.assign(n, 0);
		received.assign(n, 0);
		for (int r = 0; r < n; r++) {
			const bool ok = ex[r].table(sums, tables[r]);
			EXPECT_EQ(ok, sums.failed == 0) << "rank " << r;
			sent[r] = ex[r].sent_count();
			received[r] = ex[r].received_count();
		}
		return tables;
	}
};

TEST(EndpointExchange, AcceptedSocketShowsTheConnectingEphemeralPort)
{
	Cluster c;
	// Rank 0 connected from an ephemeral port to rank 1's listener; rank 1 also has its
	// connection to the launcher, which is no rank.
	c.add_rank(1, {tcp4("127.0.0.1", 40000, "127.0.0.1", 1025)}, nullptr,
		   {listen4("0.0.0.0", 1024)});
	c.add_rank(1, {tcp4("127.0.0.1", 1025, "127.0.0.1", 40000),
		       tcp4("127.0.0.1", 50000, "127.0.0.1", 38711)}, nullptr,
		   {listen4("0.0.0.0", 1025)});
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].peers.size(), 1u);
	EXPECT_EQ(t[0].peers[0].rank, 1);
	EXPECT_EQ(t[0].peers[0].fd, -1);
	EXPECT_EQ(t[0].peers[0].family, AF_INET);
	EXPECT_EQ(t[0].peers[0].local_port, 40000);
	EXPECT_EQ(t[0].peers[0].port, 1025);
	EXPECT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].mapped_ranks, 1u);
	EXPECT_EQ(t[0].matched_pairs, 1u);
	EXPECT_FALSE(t[0].any_unmapped);

	ASSERT_EQ(t[1].peers.size(), 1u);	// the launcher connection is not a peer
	EXPECT_EQ(t[1].peers[0].rank, 0);
	EXPECT_EQ(t[1].peers[0].local_port, 1025);
	EXPECT_EQ(t[1].peers[0].port, 40000);
	EXPECT_EQ(format_tuple(t[1].peers[0]), "127.0.0.1:1025>127.0.0.1:40000");
	// The connector sends its socket to the listener's rank; the accepted end is not sent.
	// The launcher connection reaches no listener, so it goes to the host's other rank.
	EXPECT_EQ(c.sent[0], 1u);
	EXPECT_EQ(c.sent[1], 1u);
	EXPECT_EQ(c.received[0], 1u);
}

TEST(EndpointExchange, MappedIpv6SocketMatchesItsIpv4Peer)
{
	Cluster c;
	const in6_addr l = v6("::ffff:10.0.0.1"), r = v6("::ffff:10.0.0.2");
	// No listener published: both ends go to the host of their remote address.
	c.add_rank(1, {make_local_socket(AF_INET6, &l, 5000, &r, 6000)}, "10.0.0.1");
	c.add_rank(2, {tcp4("10.0.0.2", 6000, "10.0.0.1", 5000)}, "10.0.0.2");
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].tuple_peers, 1u);
	// The hint carries the tuple as this socket shows it (IPv6).
	EXPECT_EQ(t[0].peers[0].family, AF_INET6);
	EXPECT_EQ(std::memcmp(t[0].peers[0].addr, &r, 16), 0);
	EXPECT_EQ(t[0].peers[0].rank, 1);
	ASSERT_EQ(t[1].tuple_peers, 1u);
	EXPECT_EQ(t[1].peers[0].family, AF_INET);
	EXPECT_EQ(t[1].peers[0].rank, 0);
}

TEST(EndpointExchange, UnconnectedRemoteRankFallsBackToItsAddress)
{
	Cluster c;
	c.add_rank(10, {tcp4("10.0.0.1", 40000, "10.0.0.2", 1024)}, "10.0.0.1");
	c.add_rank(20, {tcp4("10.0.0.2", 1024, "10.0.0.1", 40000)}, "10.0.0.2",
		   {listen4("0.0.0.0", 1024)});
	c.add_rank(30, {}, "10.0.0.3");
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].peers.size(), 2u);
	EXPECT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].address_peers, 1u);
	EXPECT_EQ(t[0].peers[1].rank, 2);
	EXPECT_EQ(t[0].peers[1].local_port, 0);	// address form
	const in_addr a = v4("10.0.0.3");
	EXPECT_EQ(std::memcmp(t[0].peers[1].addr, &a, 4), 0);
	// Pairs (0,2) and (1,2) cross hosts without a socket: every rank must rescan.
	EXPECT_TRUE(t[0].any_unmapped);
	EXPECT_TRUE(t[2].any_unmapped);
	EXPECT_EQ(t[2].address_peers, 2u);
}

TEST(EndpointExchange, SharedMemoryRanksOnOneHostAreSkipped)
{
	Cluster c;
	for (int r = 0; r < 3; r++)
		c.add_rank(7, {}, "192.0.2.1");
	const std::vector<PeerTable> t = c.exchange();
	EXPECT_TRUE(t[1].peers.empty());
	EXPECT_EQ(t[1].matched_pairs, 0u);
	// No pair on this host uses TCP, so no rescan is asked for.
	EXPECT_FALSE(t[1].any_unmapped);
}

TEST(EndpointExchange, LocalTcpMakesUnconnectedLocalPairsCount)
{
	Cluster c;
	c.add_rank(7, {tcp4("127.0.0.1", 40000, "127.0.0.1", 1025)});
	c.add_rank(7, {tcp4("127.0.0.1", 1025, "127.0.0.1", 40000)});
	c.add_rank(7, {});
	const std::vector<PeerTable> t = c.exchange();
	EXPECT_EQ(t[0].mapped_ranks, 1u);
	EXPECT_TRUE(t[2].any_unmapped);	// pairs (0,2), (1,2) may still connect
	EXPECT_TRUE(t[2].peers.empty());	// same host, nothing known: nothing to send
}

TEST(EndpointExchange, OneRankFailingDropsTheExchangeEverywhere)
{
	Cluster c;
	c.add_rank(1, {tcp4("10.0.0.1", 40000, "10.0.0.2", 1024)}, "10.0.0.1");
	c.add_rank(2, {tcp4("10.0.0.2", 1024, "10.0.0.1", 40000)}, "10.0.0.2",
		   {listen4("0.0.0.0", 1024)});
	c.abandoning = {1};
	const std::vector<PeerTable> t = c.exchange();	// checks every table() is false
	EXPECT_TRUE(t[0].peers.empty());
	EXPECT_EQ(c.sent[1], 0u);

	// Counts this rank cannot receive: it says so (the shim then gives up on every rank).
	EndpointExchange short_counts(0, 2, {});
	short_counts.route(c.records);
	EXPECT_FALSE(short_counts.expect(std::vector<int>(1, 0)));
	EndpointExchange to_itself(0, 2, {});
	to_itself.route(c.records);
	EXPECT_FALSE(to_itself.expect(std::vector<int>{3, 0}));

	// A rank number outside the communicator is a failed part too.
	EndpointExchange bad(5, 2, {});
	bad.route(c.records);
	EXPECT_TRUE(bad.failed());
	EXPECT_EQ(bad.confirm().failed, 1u);
}

// A socket's other end that no rank holds: a server on a rank's host that is not a rank,
// or a port no rank listens on. It is offered to the host's ranks and nobody maps it.
TEST(EndpointExchange, ConnectionToANonRankIsNotMapped)
{
	Cluster c;
	c.add_rank(1, {tcp4("10.0.0.1", 40000, "10.0.0.2", 22)}, "10.0.0.1");
	c.add_rank(2, {}, "10.0.0.2", {listen4("0.0.0.0", 1024)});
	c.add_rank(2, {}, "10.0.0.2", {listen4("0.0.0.0", 1025)});
	const std::vector<PeerTable> t = c.exchange();
	EXPECT_EQ(t[0].tuple_peers, 0u);
	EXPECT_EQ(c.sent[0], 2u);	// both ranks of 10.0.0.2
	EXPECT_EQ(t[0].address_peers, 2u);
}

// A listener reached at an address its rank does not publish (more interface addresses
// than a record holds, and its sockets' addresses past kMaxSocketAddrs): the connector
// cannot find it, so the accepting rank sends its end to the connector's host, and both
// map the connection.
TEST(EndpointExchange, UnpublishedListenerAddressIsFoundFromTheAcceptingSide)
{
	Cluster c;
	c.add_rank(1, {tcp4("10.0.0.1", 40000, "10.9.9.2", 1024)}, "10.0.0.1",
		   {listen4("0.0.0.0", 1024)});
	c.add_rank(1, {}, "10.0.0.1", {listen4("0.0.0.0", 1025)});
	c.add_rank(2, {tcp4("10.9.9.2", 1024, "10.0.0.1", 40000)}, "10.0.0.2",
		   {listen4("0.0.0.0", 1024)});
	c.records[2].n_socket_addrs = 0;
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].peers[0].rank, 2);
	ASSERT_EQ(t[2].tuple_peers, 1u);
	EXPECT_EQ(t[2].peers[0].rank, 0);
	EXPECT_EQ(c.sent[0], 0u);	// 10.9.9.2 is nobody's published address
	EXPECT_EQ(c.sent[2], 2u);	// both ranks of 10.0.0.1
	EXPECT_EQ(t[1].tuple_peers, 0u);
}

// Neither end's address among the interface addresses a record holds (hosts with more
// interfaces than that, MPI on the last one): the addresses the ranks' sockets use are
// published too, so the connector still finds the listener.
TEST(EndpointExchange, SocketAddressesRouteWhereInterfaceAddressesRunOut)
{
	Cluster c;
	c.add_rank(1, {tcp4("10.9.9.1", 40000, "10.9.9.2", 1024)}, "10.0.0.1",
		   {listen4("0.0.0.0", 1024)});
	c.add_rank(2, {tcp4("10.9.9.2", 1024, "10.9.9.1", 40000)}, "10.0.0.2",
		   {listen4("0.0.0.0", 1024)});
	std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].peers[0].rank, 1);
	ASSERT_EQ(t[1].tuple_peers, 1u);
	EXPECT_EQ(c.sent[0], 1u);	// rule 2, by the listener under 10.9.9.2
	EXPECT_EQ(c.sent[1], 0u);	// accepted at a published address

	// Without the socket addresses nothing routes the connection.
	for (RankRecord &rec : c.records)
		rec.n_socket_addrs = 0;
	t = c.exchange();
	EXPECT_EQ(t[0].tuple_peers, 0u);
	EXPECT_TRUE(t[0].any_unmapped);
}

// An address two hosts both have (Docker's 172.17.0.1 on every Docker host) names neither:
// a socket to it is not offered to every rank that has it.
TEST(EndpointExchange, AnAddressOfSeveralHostsRoutesNothing)
{
	Cluster c;
	c.add_rank(1, {tcp4("172.17.0.1", 40000, "172.17.0.1", 1024)}, "172.17.0.1",
		   {listen4("0.0.0.0", 1024)}, 77);
	for (uint64_t host = 2; host < 6; host++)
		c.add_rank(host, {}, "172.17.0.1", {listen4("0.0.0.0", 1024)});
	c.exchange();
	EXPECT_EQ(c.sent[0], 0u);
	for (size_t r = 1; r < c.records.size(); r++)
		EXPECT_EQ(c.received[r], 0u) << r;
}

// Ranks that share a network namespace but not a host name (separate UTS namespaces):
// loopback reaches across, and the connection is mapped.
TEST(EndpointExchange, LoopbackFollowsTheNetworkNamespaceNotTheHostName)
{
	Cluster c;
	c.add_rank(1, {tcp4("127.0.0.1", 40000, "127.0.0.1", 1025)}, nullptr, {}, 9);
	c.add_rank(2, {tcp4("127.0.0.1", 1025, "127.0.0.1", 40000)}, nullptr,
		   {listen4("0.0.0.0", 1025)}, 9);
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].peers[0].rank, 1);
	ASSERT_EQ(t[1].tuple_peers, 1u);
	EXPECT_EQ(t[1].peers[0].rank, 0);
}

// The point of routing: what a rank sends and receives grows with its own sockets, not with
// every socket of the communicator. 16 hosts of 16 ranks, every pair across hosts connected
// (the lower rank connects to the higher one's listener); every rank listens on the same
// wildcard port on every host, as Open MPI's first port does, plus its own.
TEST(EndpointExchange, TrafficGrowsWithTheRanksOwnSockets)
{
	constexpr int kHosts = 16, kPerHost = 16, kRanks = kHosts * kPerHost;
	const auto host_addr = [](int rank) {
		return "10.1." + std::to_string(rank / kPerHost) + ".1";
	};
	const auto port = [](int rank) { return static_cast<uint16_t>(1024 + rank % kPerHost); };
	std::vector<std::vector<LocalSocket>> socks(kRanks);
	uint16_t next_ephemeral[kRanks];
	for (int r = 0; r < kRanks; r++)
		next_ephemeral[r] = 40000;
	for (int r = 0; r < kRanks; r++) {
		for (int q = r + 1; q < kRanks; q++) {
			if (r / kPerHost == q / kPerHost)
				continue;	// shared memory
			const uint16_t eph = next_ephemeral[r / kPerHost]++;
			socks[r].push_back(tcp4(host_addr(r).c_str(), eph, host_addr(q).c_str(),
						port(q)));
			socks[q].push_back(tcp4(host_addr(q).c_str(), port(q), host_addr(r).c_str(),
						eph));
		}
	}
	Cluster c;
	for (int r = 0; r < kRanks; r++)
		c.add_rank(100 + r / kPerHost, socks[r], host_addr(r).c_str(),
			   {listen4("0.0.0.0", port(r))});
	const std::vector<PeerTable> t = c.exchange();
	uint64_t connected_total = 0;
	for (int r = 0; r < kRanks; r++) {
		EXPECT_EQ(t[r].mapped_ranks, static_cast<uint32_t>(kRanks - kPerHost)) << r;
		EXPECT_EQ(t[r].address_peers, 0u) << r;
		EXPECT_FALSE(t[r].any_unmapped);
		// Each rank sends exactly the sockets it connected and receives the ones it
		// accepted: its own sockets, once.
		EXPECT_EQ(c.sent[r] + c.received[r], socks[r].size()) << r;
		connected_total += c.sent[r];
	}
	EXPECT_EQ(connected_total, static_cast<uint64_t>(kRanks) * (kRanks - kPerHost) / 2);
	EXPECT_EQ(t[0].matched_pairs, static_cast<uint64_t>(kRanks) * (kRanks - kPerHost) / 2);
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

	const SocketScan scan = scan_tcp_sockets(kMaxSocketsPerRank);
	const std::vector<LocalSocket> &all = scan.connected;
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

	// The listener is listed as bound to its address.
	const ListenEndpoint *listed = nullptr;
	for (const ListenEndpoint &l : scan.listeners)
		if (l.port == listen_port)
			listed = &l;
	ASSERT_NE(listed, nullptr);
	EXPECT_EQ(listed->wildcard, 0);
	EXPECT_EQ(std::memcmp(listed->addr, client_side->wire.remote_addr, 16), 0);

	// As two "ranks" of one host, the two ends find each other through the listener.
	Cluster c;
	c.add_rank(3, {*client_side});
	c.add_rank(3, {*server_side}, nullptr, {*listed});
	const std::vector<PeerTable> t = c.exchange();
	ASSERT_EQ(t[0].tuple_peers, 1u);
	EXPECT_EQ(t[0].peers[0].rank, 1);
	EXPECT_EQ(t[0].peers[0].local_port, client_port);
	EXPECT_EQ(t[0].peers[0].port, listen_port);
	EXPECT_EQ(c.sent[1], 0u);	// the accepted end waits for the connector's
	EXPECT_EQ(scan_tcp_sockets(1).connected.size(), 1u);	// the bound holds
}

TEST(ScanTcpSockets, ListsAWildcardListener)
{
	UniqueFd listener(socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
	ASSERT_TRUE(listener);
	sockaddr_in6 addr{};
	addr.sin6_family = AF_INET6;	// in6addr_any, port 0
	ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr *>(&addr), sizeof(addr)), 0);
	ASSERT_EQ(listen(listener.get(), 1), 0);
	socklen_t len = sizeof(addr);
	ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr *>(&addr), &len), 0);
	UniqueFd bound_only(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));	// not listening
	sockaddr_in any4{};
	any4.sin_family = AF_INET;
	ASSERT_EQ(bind(bound_only.get(), reinterpret_cast<sockaddr *>(&any4), sizeof(any4)), 0);
	len = sizeof(any4);
	ASSERT_EQ(getsockname(bound_only.get(), reinterpret_cast<sockaddr *>(&any4), &len), 0);

	const SocketScan scan = scan_tcp_sockets(kMaxSocketsPerRank);
	int found = 0;
	for (const ListenEndpoint &l : scan.listeners) {
		if (l.port == ntohs(addr.sin6_port)) {
			found++;
			EXPECT_EQ(l.wildcard, 1);
		}
		EXPECT_NE(l.port, ntohs(any4.sin_port));
	}
	EXPECT_EQ(found, 1);
}

TEST(RankRecord, PublishesNoLoopbackAndAStableHostKey)
{
	const uint64_t key = compute_host_key();
	EXPECT_EQ(key, compute_host_key());
	std::vector<ListenEndpoint> listeners;
	for (uint16_t p = 0; p < kMaxPublishedListeners + 3; p++)
		listeners.push_back(listen4("192.0.2.7", 2000 + p));
	const std::vector<LocalSocket> socks{tcp4("192.0.2.7", 40000, "192.0.2.8", 1),
					     tcp4("192.0.2.7", 40001, "192.0.2.9", 1),
					     tcp4("127.0.0.1", 40002, "127.0.0.1", 1),
					     tcp4("198.51.100.1", 40003, "192.0.2.9", 1)};
	const RankRecord rec = make_rank_record(key, compute_netns_key(), listeners, socks);
	EXPECT_EQ(rec.host_key, key);
	EXPECT_NE(rec.netns_key, key);	// the host name is not in it
	ASSERT_EQ(rec.n_socket_addrs, 2u);	// distinct, no loopback
	EXPECT_EQ(std::memcmp(rec.socket_addrs[0], socks[0].wire.local_addr, 16), 0);
	EXPECT_EQ(std::memcmp(rec.socket_addrs[1], socks[3].wire.local_addr, 16), 0);
	ASSERT_EQ(rec.n_listeners, static_cast<uint32_t>(kMaxPublishedListeners));
	EXPECT_EQ(rec.listeners[kMaxPublishedListeners - 1].port, 2000 + kMaxPublishedListeners - 1);
	EXPECT_EQ(rec.listeners[0].wildcard, 0);
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
