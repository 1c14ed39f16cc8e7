// The pacing actuator on a real flow between two namespaces: the cap shows on the owner's fd,
// limits the throughput (TCP's internal pacing, no fq qdisc), and reverts.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <iostream>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

using namespace std::chrono_literals;
using testing::ClientProcess;
using testing::FarServer;
using testing::NetnsPair;

constexpr uint64_t kPacedBitsPerSecond = 10'000'000;

class Pacing : public testing::NetnsTest {
protected:
	std::optional<uint64_t> find_inode(const Endpoint &server)
	{
		SocketFilter filter;
		filter.remote = server;
		auto sockets = list_established_tcp(filter);
		if (!sockets || sockets->size() != 1)
			return std::nullopt;
		return sockets->front().inode;
	}
};

TEST_P(Pacing, CapsAFlowAndRevertsIt)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	ASSERT_TRUE(server.ok());
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::bulk, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	auto inode = find_inode(server.endpoint());
	ASSERT_TRUE(inode);
	ASSERT_EQ(*inode, client->inode());
	ASSERT_EQ(client->pacing_rate_seen_by_owner(), kUnlimitedPacingRate);

	std::this_thread::sleep_for(300ms); // past slow start
	const double unpaced = testing::measure_rate(server, 1000ms);

	PacingActuator pacing(*store_);
	auto applied = pacing.apply(client->pid(), *inode, kPacedBitsPerSecond);
	ASSERT_TRUE(applied) << applied.error().message;
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), kPacedBitsPerSecond / 8) << "the owner's own fd shows the cap";
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_EQ(store_->state().pacing[0].original_bytes_per_second, kUnlimitedPacingRate);
	EXPECT_EQ(store_->state().pacing[0].fd, client->fd());
	// What is queued in the socket already drains at the new rate too: no long settling.
	std::this_thread::sleep_for(500ms);
	const double paced = testing::measure_rate(server, 3000ms);

	auto reverted = pacing.revert(client->pid(), *inode);
	ASSERT_TRUE(reverted) << reverted.error().message;
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), kUnlimitedPacingRate);
	EXPECT_TRUE(store_->state().pacing.empty());
	ASSERT_TRUE(store_->flush()); // removals reach the file lazily
	auto on_disk = load_state(store_->path());
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->pacing.empty());
	std::this_thread::sleep_for(300ms);
	const double after = testing::measure_rate(server, 1000ms);

	std::cout << "[ measured ] " << (family == AF_INET ? "IPv4" : "IPv6") << " unpaced " << unpaced / 1e6
		  << " Mbit/s, paced at 10 Mbit/s: " << paced / 1e6 << " Mbit/s, after revert " << after / 1e6
		  << " Mbit/s\n";
	RecordProperty("paced_mbit_per_s", std::to_string(paced / 1e6));
	EXPECT_GT(unpaced, 20 * static_cast<double>(kPacedBitsPerSecond)) << "the veth must be much faster than the cap";
	EXPECT_GT(paced, 0.9 * kPacedBitsPerSecond);
	EXPECT_LT(paced, 1.05 * kPacedBitsPerSecond);
	EXPECT_GT(after, 20 * static_cast<double>(kPacedBitsPerSecond)) << "the revert lifts the cap";
}

TEST_P(Pacing, ApplyingAgainKeepsTheFirstOriginal)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	PacingActuator pacing(*store_);
	ASSERT_TRUE(pacing.apply(client->pid(), client->inode(), 80'000'000));
	ASSERT_TRUE(pacing.apply(client->pid(), client->inode(), 8'000'000));
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), 1'000'000u);
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_EQ(store_->state().pacing[0].original_bytes_per_second, kUnlimitedPacingRate);
	ASSERT_TRUE(pacing.revert_all());
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), kUnlimitedPacingRate);
}

TEST_P(Pacing, SettingsItsProcessChangedSinceAreLeftAlone)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	PacingActuator pacing(*store_);
	ASSERT_TRUE(pacing.apply(client->pid(), client->inode(), kPacedBitsPerSecond));
	ASSERT_TRUE(pacing.steer(client->pid(), client->inode()));
	{
		// The application sets a cap and a priority of its own while ours are on (a
		// duplicate is the same socket as its fd).
		auto own = duplicate_process_socket(client->pid(), client->inode());
		ASSERT_TRUE(own) << own.error().message;
		ASSERT_TRUE(set_max_pacing_rate(own->socket.get(), 3'000'000));
		ASSERT_TRUE(set_priority(own->socket.get(), 5));
	}
	auto reverted = pacing.revert(client->pid(), client->inode());
	ASSERT_TRUE(reverted) << reverted.error().message;
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), 3'000'000u) << "its own cap, not the one from before ours";
	auto own = duplicate_process_socket(client->pid(), client->inode());
	ASSERT_TRUE(own) << own.error().message;
	EXPECT_EQ(*get_priority(own->socket.get()), 5u);
	EXPECT_TRUE(store_->state().pacing.empty()) << "nothing of ours is left to undo";

	// Unchanged settings go back as before: ours are undone to the process's 3 MB/s and 5.
	ASSERT_TRUE(pacing.apply(client->pid(), client->inode(), kPacedBitsPerSecond));
	ASSERT_TRUE(pacing.revert(client->pid(), client->inode()));
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), 3'000'000u);
}

TEST_P(Pacing, RevertOfAGoneProcessSucceeds)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	PacingActuator pacing(*store_);
	const pid_t pid = client->pid();
	const uint64_t inode = client->inode();
	ASSERT_TRUE(pacing.apply(pid, inode, kPacedBitsPerSecond));
	client->kill_now();
	auto reverted = pacing.revert(pid, inode);
	EXPECT_TRUE(reverted) << reverted.error().message;
	EXPECT_TRUE(store_->state().pacing.empty());
	auto again = pacing.revert(pid, inode);
	ASSERT_FALSE(again);
	EXPECT_EQ(again.error().err, ENOENT);
}

// The RTO floor on the socket itself (TCP_RTO_MIN_US, Linux 6.15+): the owner's fd shows it in
// whole jiffies, the record keeps the original, a revert of one setting leaves the others, and
// a minimum the process set since ours is its own.
TEST_P(Pacing, FloorsTheRtoOfOneSocketAndRevertsIt)
{
	if (!socket_rto_min().available)
		GTEST_SKIP() << "this kernel has no TCP_RTO_MIN_US (Linux 6.15+)";
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	auto own = duplicate_process_socket(client->pid(), client->inode());
	ASSERT_TRUE(own) << own.error().message;
	const int fd = own->socket.get(); // the owner's socket, not a copy
	const uint32_t original = *get_rto_min_us(fd);
	EXPECT_EQ(original, 200000u) << "Linux's TCP_RTO_MIN";

	PacingActuator pacing(*store_);
	ASSERT_TRUE(pacing.apply(client->pid(), client->inode(), kPacedBitsPerSecond));
	auto floored = pacing.floor_rto(client->pid(), client->inode(), 5000);
	ASSERT_TRUE(floored) << floored.error().message;
	const uint32_t live = *get_rto_min_us(fd);
	EXPECT_GE(live, 5000u);
	EXPECT_GE(live, socket_rto_min().smallest_us);
	EXPECT_LT(live, 5000u + socket_rto_min().smallest_us) << "5 ms rounded up to whole jiffies";
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_EQ(store_->state().pacing[0].original_rto_min_us, original);
	EXPECT_EQ(store_->state().pacing[0].applied_rto_min_us, live);
	auto on_disk = load_state(store_->path());
	ASSERT_TRUE(on_disk);
	ASSERT_EQ(on_disk->pacing.size(), 1u);
	EXPECT_EQ(on_disk->pacing[0].original_rto_min_us, original) << "written before the change";
	EXPECT_NE(on_disk->pacing[0].applied_bytes_per_second, 0u);

	// One setting back, the other stays.
	ASSERT_TRUE(pacing.unfloor_rto(client->pid(), client->inode()));
	EXPECT_EQ(*get_rto_min_us(fd), original);
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), kPacedBitsPerSecond / 8);
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_FALSE(store_->state().pacing[0].original_rto_min_us);

	// A minimum the process sets while ours is on is its own, and stays.
	ASSERT_TRUE(pacing.floor_rto(client->pid(), client->inode(), 5000));
	ASSERT_TRUE(set_rto_min_us(fd, 50000));
	ASSERT_TRUE(pacing.revert(client->pid(), client->inode()));
	const uint32_t theirs = *get_rto_min_us(fd);
	EXPECT_GE(theirs, 50000u) << "the process's 50 ms, not the 200 ms from before ours";
	EXPECT_LT(theirs, 50000u + socket_rto_min().smallest_us);
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), kUnlimitedPacingRate);
	EXPECT_TRUE(store_->state().pacing.empty());

	// Floors outside what the option takes are clamped: below two jiffies, above 200 ms.
	ASSERT_TRUE(pacing.floor_rto(client->pid(), client->inode(), 1));
	const uint32_t smallest = socket_rto_min().smallest_us;
	EXPECT_GE(*get_rto_min_us(fd), smallest);
	EXPECT_LE(*get_rto_min_us(fd), smallest + smallest / 2) << "two jiffies, the least the option takes";
	ASSERT_TRUE(pacing.floor_rto(client->pid(), client->inode(), 1'000'000));
	EXPECT_EQ(*get_rto_min_us(fd), 200000u) << "at most Linux's own 200 ms";
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_EQ(store_->state().pacing[0].original_rto_min_us, theirs) << "a second floor keeps the first original";
	ASSERT_TRUE(pacing.revert(client->pid(), client->inode()));
	EXPECT_FALSE(pacing.floor_rto(client->pid(), client->inode(), 0));
	EXPECT_TRUE(store_->state().pacing.empty());
}

INSTANTIATE_TEST_SUITE_P(Families, Pacing, ::testing::Values(AF_INET, AF_INET6),
			 [](const auto &info) { return info.param == AF_INET ? "IPv4" : "IPv6"; });

TEST(PacingErrors, BadRatesAndSockets)
{
	EXPECT_EQ(pacing_bytes_per_second(0).error().err, EINVAL);
	EXPECT_EQ(pacing_bytes_per_second(7).error().err, EINVAL);
	EXPECT_EQ(*pacing_bytes_per_second(8), 1u);
	EXPECT_EQ(*pacing_bytes_per_second(10'000'007), 1'250'000u);

	if (auto reason = testing::namespace_tests_unavailable())
		GTEST_SKIP() << *reason;
	testing::TempDir dir;
	auto store = StateStore::create(dir.path() + "/state.json");
	ASSERT_TRUE(store);
	PacingActuator pacing(*store);

	// A UDP socket of our own: found, but not TCP.
	UniqueFd udp(socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
	struct stat st {};
	fstat(udp.get(), &st);
	auto not_tcp = pacing.apply(getpid(), st.st_ino, kPacedBitsPerSecond);
	ASSERT_FALSE(not_tcp);
	EXPECT_EQ(not_tcp.error().err, EPROTOTYPE) << not_tcp.error().message;
	auto no_socket = pacing.apply(getpid(), st.st_ino + 1000000, kPacedBitsPerSecond);
	ASSERT_FALSE(no_socket);
	EXPECT_EQ(no_socket.error().err, ENOENT) << no_socket.error().message;
	auto no_process = pacing.apply((1 << 22) + 1, 1, kPacedBitsPerSecond);
	ASSERT_FALSE(no_process);
	EXPECT_EQ(no_process.error().err, ESRCH);
	auto bad_rate = pacing.apply(getpid(), st.st_ino, 0);
	ASSERT_FALSE(bad_rate);
	EXPECT_EQ(bad_rate.error().err, EINVAL);
	EXPECT_TRUE(store->state().empty()) << "failed applies leave no record";
	auto on_disk = load_state(store->path());
	ASSERT_TRUE(on_disk);
	EXPECT_TRUE(on_disk->empty());
}

} // namespace
} // namespace gp::stock
