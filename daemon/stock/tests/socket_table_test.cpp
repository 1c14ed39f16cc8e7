// The socket table against real connections between two network namespaces.
#include <gtest/gtest.h>

#include <algorithm>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <vector>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

using testing::ClientProcess;
using testing::FarServer;
using testing::NetnsPair;

// An idle client in near connected, over IPv4, to a listener of `listen_family` in far (an
// IPv6 one takes it dual-stack), and the connection's far end, accepted by this process.
struct FarConnection {
	std::unique_ptr<ClientProcess> client;
	UniqueFd accepted;
};
FarConnection connect_to_far(const NetnsPair &pair, int listen_family, std::string &error)
{
	FarConnection out;
	UniqueFd listener = pair.far_socket(listen_family, SOCK_STREAM);
	sockaddr_storage any{};
	any.ss_family = static_cast<sa_family_t>(listen_family);
	socklen_t len = listen_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
	if (!listener || bind(listener.get(), reinterpret_cast<sockaddr *>(&any), len) != 0 ||
	    listen(listener.get(), 1) != 0 || getsockname(listener.get(), reinterpret_cast<sockaddr *>(&any), &len) != 0) {
		error = std::string("far listener: ") + std::strerror(errno);
		return out;
	}
	Endpoint server = pair.far_address(AF_INET);
	server.port = ntohs(listen_family == AF_INET6 ? reinterpret_cast<sockaddr_in6 *>(&any)->sin6_port
						       : reinterpret_cast<sockaddr_in *>(&any)->sin_port);
	out.client = ClientProcess::start(server, ClientProcess::Mode::idle, std::nullopt, error);
	if (out.client)
		out.accepted = UniqueFd(accept(listener.get(), nullptr, nullptr));
	return out;
}

class EstablishedSockets : public testing::NetnsTest {};

TEST_P(EstablishedSockets, FindsTheConnectionWithItsOwnerAndInode)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	ASSERT_TRUE(server.ok());
	constexpr uid_t kOwner = 4242;
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, kOwner, error);
	ASSERT_TRUE(client) << error;

	SocketFilter by_owner;
	by_owner.uid = kOwner;
	auto sockets = list_established_tcp(by_owner);
	ASSERT_TRUE(sockets) << sockets.error().message;
	ASSERT_EQ(sockets->size(), 1u) << "near sees only its own end: the server's end is in far";
	const TcpSocket &socket = sockets->front();
	EXPECT_EQ(socket.uid, kOwner);
	EXPECT_EQ(socket.inode, client->inode());
	EXPECT_EQ(socket.socket_family, family);
	EXPECT_EQ(socket.remote, server.endpoint());
	EXPECT_EQ(socket.local.family, family);
	EXPECT_TRUE(std::equal(socket.local.address.begin(), socket.local.address.end(),
			       pair_->near_address(family).address.begin()));
	EXPECT_NE(socket.local.port, 0);

	// The same socket by peer address (any port) and by peer address and port.
	SocketFilter by_peer;
	by_peer.remote = pair_->far_address(family);
	sockets = list_established_tcp(by_peer);
	ASSERT_TRUE(sockets);
	ASSERT_EQ(sockets->size(), 1u);
	EXPECT_EQ(sockets->front().inode, client->inode());
	by_peer.remote = server.endpoint();
	sockets = list_established_tcp(by_peer);
	ASSERT_TRUE(sockets);
	EXPECT_EQ(sockets->size(), 1u);
	by_peer.remote->port = static_cast<uint16_t>(server.endpoint().port + 1);
	sockets = list_established_tcp(by_peer);
	ASSERT_TRUE(sockets);
	EXPECT_TRUE(sockets->empty()) << "another port is another peer";
	SocketFilter other_owner;
	other_owner.uid = kOwner + 1;
	sockets = list_established_tcp(other_owner);
	ASSERT_TRUE(sockets);
	EXPECT_TRUE(sockets->empty());

	// The same socket by its 4-tuple (sock_diag's exact lookup); another tuple finds nothing.
	sockets = list_established_tcp(by_owner);
	ASSERT_TRUE(sockets);
	ASSERT_EQ(sockets->size(), 1u);
	const TcpSocket own = sockets->front();
	TcpSocket tuples[2];
	tuples[0].local = own.local;
	tuples[0].remote = own.remote;
	tuples[1] = tuples[0];
	tuples[1].remote.port = static_cast<uint16_t>(server.endpoint().port + 1);
	auto found = find_established_tcp(tuples);
	ASSERT_TRUE(found) << found.error().message;
	ASSERT_EQ(found->size(), 1u) << "the second tuple is nobody's";
	EXPECT_EQ(found->front().inode, client->inode());
	EXPECT_EQ(found->front().uid, kOwner);
	EXPECT_EQ(found->front().socket_family, family);
	EXPECT_EQ(found->front().local, own.local);
	EXPECT_EQ(found->front().remote, own.remote);
	EXPECT_TRUE(find_established_tcp({})->empty());
	TcpSocket mixed;
	mixed.local = pair_->near_address(AF_INET);
	mixed.remote = pair_->far_address(AF_INET6);
	auto refused = find_established_tcp({&mixed, 1});
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().err, EINVAL);
	EXPECT_NE(refused.error().message.find("not an IPv4 or IPv6 tuple"), std::string::npos) << refused.error().message;

	// Which fd the process holds it under.
	const uint64_t wanted[] = {client->inode()};
	auto held = process_sockets(client->pid(), wanted);
	ASSERT_TRUE(held) << held.error().message;
	ASSERT_EQ(held->size(), 1u);
	EXPECT_EQ(held->front().inode, client->inode());
	EXPECT_EQ(held->front().fd, client->fd());
	// Its connections from its fd table, as tuples the exact lookup takes: the same socket.
	auto tuples_held = process_tcp_tuples(client->pid());
	ASSERT_TRUE(tuples_held) << tuples_held.error().message;
	ASSERT_EQ(tuples_held->size(), 1u) << "the client's one connection";
	EXPECT_EQ(tuples_held->front().inode, client->inode());
	EXPECT_EQ(tuples_held->front().socket_family, family);
	EXPECT_EQ(tuples_held->front().local, own.local);
	EXPECT_EQ(tuples_held->front().remote, own.remote);
	found = find_established_tcp(*tuples_held);
	ASSERT_TRUE(found);
	ASSERT_EQ(found->size(), 1u);
	EXPECT_EQ(found->front().uid, kOwner);
	auto all = process_sockets(client->pid());
	ASSERT_TRUE(all);
	EXPECT_GE(all->size(), 1u);
	const uint64_t not_held[] = {client->inode() + 1000000};
	held = process_sockets(getpid(), not_held);
	ASSERT_TRUE(held);
	EXPECT_TRUE(held->empty());
}

// A SocketTable asks in batches of kLookupBatch, on one socket for all its calls, and answers
// every tuple as the lookup of that tuple alone would: the sockets in the tuples' order, nobody's
// tuples left out, what each socket has written.
TEST_P(EstablishedSockets, ManyTuplesGoInBatchesOnOneSocket)
{
	const int family = GetParam();
	UniqueFd listener = pair_->far_socket(family, SOCK_STREAM);
	Endpoint server = pair_->far_address(family);
	sockaddr_storage address{};
	socklen_t len = sizeof(address);
	ASSERT_TRUE(listener);
	address.ss_family = static_cast<sa_family_t>(family);
	ASSERT_EQ(bind(listener.get(), reinterpret_cast<sockaddr *>(&address),
		       family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in)), 0);
	ASSERT_EQ(listen(listener.get(), 64), 0);
	ASSERT_EQ(getsockname(listener.get(), reinterpret_cast<sockaddr *>(&address), &len), 0);
	server.port = from_socket_address(address).port;

	// 40 connections from this (near) thread; after every third, a tuple nobody has.
	constexpr size_t kConnections = 40;
	std::vector<UniqueFd> clients, accepted;
	std::vector<TcpSocket> tuples, watched;
	for (size_t i = 0; i < kConnections; ++i) {
		UniqueFd client(socket(family, SOCK_STREAM, 0));
		ASSERT_TRUE(client);
		sockaddr_storage far{};
		far.ss_family = static_cast<sa_family_t>(family);
		if (family == AF_INET6) {
			auto *in6 = reinterpret_cast<sockaddr_in6 *>(&far);
			std::memcpy(&in6->sin6_addr, server.address.data(), server.address_size());
			in6->sin6_port = htons(server.port);
			len = sizeof(sockaddr_in6);
		} else {
			auto *in4 = reinterpret_cast<sockaddr_in *>(&far);
			std::memcpy(&in4->sin_addr, server.address.data(), server.address_size());
			in4->sin_port = htons(server.port);
			len = sizeof(sockaddr_in);
		}
		ASSERT_EQ(connect(client.get(), reinterpret_cast<sockaddr *>(&far), len), 0) << std::strerror(errno);
		accepted.emplace_back(accept(listener.get(), nullptr, nullptr));
		ASSERT_TRUE(accepted.back());
		sockaddr_storage local{};
		len = sizeof(local);
		ASSERT_EQ(getsockname(client.get(), reinterpret_cast<sockaddr *>(&local), &len), 0);
		struct stat st {};
		ASSERT_EQ(fstat(client.get(), &st), 0);
		TcpSocket tuple;
		tuple.local = unmapped(from_socket_address(local));
		tuple.remote = server;
		tuple.inode = st.st_ino;
		tuples.push_back(tuple);
		watched.push_back(tuple);
		if (i % 3 == 2) {
			tuple.remote.port = static_cast<uint16_t>(server.port + 1);
			tuples.push_back(tuple);
		}
		clients.push_back(std::move(client));
	}
	ASSERT_GT(tuples.size(), 3 * SocketTable::kLookupBatch) << "several batches, the last one partial";

	auto table = SocketTable::open();
	ASSERT_TRUE(table) << table.error().message;
	auto found = table->find_established(tuples);
	ASSERT_TRUE(found) << found.error().message;
	ASSERT_EQ(found->size(), kConnections);
	for (size_t i = 0; i < kConnections; ++i) {
		EXPECT_EQ((*found)[i].inode, watched[i].inode) << "connection " << i;
		EXPECT_EQ((*found)[i].local, watched[i].local);
		EXPECT_EQ((*found)[i].remote, server);
	}
	const size_t batches = (tuples.size() + SocketTable::kLookupBatch - 1) / SocketTable::kLookupBatch;
	EXPECT_EQ(table->lookups_sent(), tuples.size());
	EXPECT_EQ(table->batches_sent(), batches);

	// What each has written, on the same socket: only the one written on grows.
	auto before = table->written_bytes(watched);
	ASSERT_TRUE(before) << before.error().message;
	ASSERT_EQ(before->size(), kConnections);
	const std::vector<char> data(3000, 'x');
	ASSERT_EQ(send(clients[kConnections - 3].get(), data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
	auto after = table->written_bytes(watched);
	ASSERT_TRUE(after) << after.error().message;
	ASSERT_EQ(after->size(), kConnections);
	for (size_t i = 0; i < kConnections; ++i)
		EXPECT_EQ(after->at(watched[i].inode) - before->at(watched[i].inode), i == kConnections - 3 ? data.size() : 0)
			<< "connection " << i;
	EXPECT_EQ(table->batches_sent(), batches + 2 * ((kConnections + SocketTable::kLookupBatch - 1) /
							 SocketTable::kLookupBatch));

	// A bad tuple anywhere: refused before anything is asked; the table still answers.
	const uint64_t sent = table->lookups_sent();
	std::vector<TcpSocket> with_bad = watched;
	with_bad[25].remote = pair_->far_address(family == AF_INET ? AF_INET6 : AF_INET);
	auto refused = table->find_established(with_bad);
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().err, EINVAL);
	EXPECT_EQ(table->lookups_sent(), sent);
	found = table->find_established({watched.data() + 30, 1});
	ASSERT_TRUE(found) << found.error().message;
	ASSERT_EQ(found->size(), 1u);
	EXPECT_EQ(found->front().inode, watched[30].inode);
}

INSTANTIATE_TEST_SUITE_P(Families, EstablishedSockets, ::testing::Values(AF_INET, AF_INET6),
			 [](const auto &info) { return info.param == AF_INET ? "IPv4" : "IPv6"; });

TEST(SocketTableNamespaces, DualStackPeersAreReportedAsIPv4)
{
	if (auto reason = testing::namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	std::string error;
	auto pair = NetnsPair::create(error);
	ASSERT_TRUE(pair) << error;
	// An IPv6 listener in far takes an IPv4 connection: its accepted socket is AF_INET6 with
	// an IPv4-mapped peer. It is listed in far only, and with the peer as IPv4.
	FarConnection far = connect_to_far(*pair, AF_INET6, error);
	ASSERT_TRUE(far.accepted) << error;
	struct stat st {};
	fstat(far.accepted.get(), &st);

	Expected<std::vector<TcpSocket>> in_far = make_error(EINVAL, "not run");
	SocketFilter by_peer;
	by_peer.remote = pair->near_address(AF_INET);
	testing::in_netns(pair->far_fd(), [&] { in_far = list_established_tcp(by_peer); });
	ASSERT_TRUE(in_far) << in_far.error().message;
	ASSERT_EQ(in_far->size(), 1u);
	EXPECT_EQ(in_far->front().socket_family, AF_INET6);
	EXPECT_EQ(in_far->front().remote.family, AF_INET);
	EXPECT_EQ(in_far->front().local.family, AF_INET);
	EXPECT_EQ(in_far->front().inode, st.st_ino);
	// Its IPv4 tuple finds it by exact lookup too: it is hashed by its IPv4 addresses.
	Expected<std::vector<TcpSocket>> by_tuple = make_error(EINVAL, "not run");
	testing::in_netns(pair->far_fd(), [&] { by_tuple = find_established_tcp({&in_far->front(), 1}); });
	ASSERT_TRUE(by_tuple) << by_tuple.error().message;
	ASSERT_EQ(by_tuple->size(), 1u);
	EXPECT_EQ(by_tuple->front().inode, st.st_ino);
	EXPECT_EQ(by_tuple->front().socket_family, AF_INET6);
	EXPECT_EQ(by_tuple->front().remote, in_far->front().remote);
	// So does the tuple getpeername() gives through this process's fd (::ffff:a.b.c.d).
	auto held = process_tcp_tuples(getpid());
	ASSERT_TRUE(held) << held.error().message;
	auto accepted = std::find_if(held->begin(), held->end(), [&](const TcpSocket &t) { return t.inode == st.st_ino; });
	ASSERT_NE(accepted, held->end());
	EXPECT_EQ(accepted->socket_family, AF_INET6);
	EXPECT_EQ(accepted->remote, in_far->front().remote);
	EXPECT_EQ(accepted->local, in_far->front().local);
}

// written_bytes: what the application wrote, whether sent, acknowledged or still queued; it
// grows by exactly what each write adds and stays put while that is delivered.
TEST(SocketTableNamespaces, WrittenBytesGrowWithWritesOnly)
{
	if (auto reason = testing::namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	std::string error;
	auto pair = NetnsPair::create(error);
	ASSERT_TRUE(pair) << error;
	FarConnection far = connect_to_far(*pair, AF_INET, error);
	ASSERT_TRUE(far.accepted) << error;
	const int accepted = far.accepted.get();
	struct stat st {};
	fstat(accepted, &st);
	Expected<std::vector<TcpSocket>> in_far = make_error(EINVAL, "not run");
	testing::in_netns(pair->far_fd(), [&] { in_far = list_established_tcp(); });
	ASSERT_TRUE(in_far) << in_far.error().message;
	ASSERT_EQ(in_far->size(), 1u);
	ASSERT_EQ(in_far->front().inode, st.st_ino);
	// The socket; its tuple under another inode (a socket that has since taken the tuple is
	// not the one watched); a tuple nobody has.
	TcpSocket watched[3] = {in_far->front(), in_far->front(), in_far->front()};
	watched[1].inode = st.st_ino + 1000000;
	watched[2].remote.port = static_cast<uint16_t>(watched[2].remote.port + 1);
	watched[2].inode = st.st_ino + 2000000;
	auto written = [&] {
		Expected<std::map<uint64_t, uint64_t>> out = make_error(EINVAL, "not run");
		testing::in_netns(pair->far_fd(), [&] { out = written_bytes(watched); });
		EXPECT_TRUE(out) << out.error().message;
		EXPECT_EQ(out->size(), 1u) << "another inode's tuple and nobody's tuple are absent";
		return out ? out->at(st.st_ino) : uint64_t{0};
	};
	const uint64_t before = written();
	std::vector<char> data(100000, 'x');
	ASSERT_EQ(send(accepted, data.data(), data.size(), 0), static_cast<ssize_t>(data.size()));
	const uint64_t queued = written();
	EXPECT_EQ(queued - before, data.size()) << "acknowledged or not, written";
	usleep(200000); // delivered into the idle client's receive buffer meanwhile
	EXPECT_EQ(written(), queued) << "delivery changes nothing";
	ASSERT_EQ(send(accepted, data.data(), 5000, 0), 5000);
	EXPECT_EQ(written() - queued, 5000u);
}

TEST(SocketTableErrors, ProcessesThatDoNotExist)
{
	// pid_max is at most 2^22: this pid cannot exist.
	constexpr pid_t kNoSuchPid = (1 << 22) + 1;
	auto sockets = process_sockets(kNoSuchPid);
	ASSERT_FALSE(sockets);
	EXPECT_EQ(sockets.error().err, ESRCH);
	auto start = process_start_time(kNoSuchPid);
	ASSERT_FALSE(start);
	EXPECT_EQ(start.error().err, ESRCH);
	EXPECT_EQ(process_sockets(0).error().err, EINVAL);
	auto tuples = process_tcp_tuples(kNoSuchPid);
	ASSERT_FALSE(tuples);
	EXPECT_EQ(tuples.error().err, ESRCH);
	EXPECT_EQ(process_tcp_tuples(0).error().err, EINVAL);
	auto own = process_start_time(getpid());
	ASSERT_TRUE(own) << own.error().message;
	EXPECT_GT(*own, 0u);
}

TEST(SocketTableErrors, FilterOfUnknownFamily)
{
	SocketFilter filter;
	filter.remote = Endpoint{};
	auto sockets = list_established_tcp(filter);
	ASSERT_FALSE(sockets);
	EXPECT_EQ(sockets.error().err, EINVAL);
}

} // namespace
} // namespace gp::stock
