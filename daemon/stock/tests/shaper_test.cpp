// The host shaper on a real flow between two namespaces: a steered socket's data goes through
// the device's bucket at the shaped rate, an unsteered one passes; the device gets its default
// qdisc back on removal; a qdisc somebody configured is never replaced; a killed daemon's
// shaper and steering are undone.
#include <gtest/gtest.h>
#include <net/if.h>

#include <iostream>

#include "netns.hpp"
#include "stock.hpp"

namespace gp::stock {
namespace {

using namespace std::chrono_literals;
using testing::ClientProcess;
using testing::FarServer;
using testing::NetnsPair;

constexpr uint64_t kShapedBitsPerSecond = 10'000'000;
constexpr ShaperSettings kShaped{kShapedBitsPerSecond / 8, 1600};

// SO_PRIORITY of a process's socket, through a duplicate of it.
std::optional<uint32_t> priority_of(pid_t pid, uint64_t inode)
{
	auto borrowed = duplicate_process_socket(pid, inode);
	if (!borrowed)
		return std::nullopt;
	auto priority = get_priority(borrowed->socket.get());
	return priority ? std::optional<uint32_t>(*priority) : std::nullopt;
}

class Shaper : public testing::NetnsTest {
protected:
	void SetUp() override
	{
		NetnsTest::SetUp();
		if (!set_up())
			return;
		ifindex_ = if_nametoindex(NetnsPair::kNearIfname);
		ASSERT_NE(ifindex_, 0u);
	}

	uint32_t ifindex_ = 0;
};

TEST_P(Shaper, ShapesSteeredSocketsOnlyAndRemovesItself)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	ASSERT_TRUE(server.ok());
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::bulk, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	auto before = root_qdisc(ifindex_);
	ASSERT_TRUE(before) << before.error().message;
	EXPECT_EQ(before->handle, 0u) << "a new veth has the kernel's default qdisc";

	ShaperActuator shaper;
	auto installed = shaper.set(ifindex_, kShaped);
	ASSERT_TRUE(installed) << installed.error().message;
	auto root = root_qdisc(ifindex_);
	ASSERT_TRUE(root);
	EXPECT_EQ(root->kind, "htb");
	EXPECT_EQ(root->handle, kShaperHandle);
	std::this_thread::sleep_for(300ms);
	const double unsteered = testing::measure_rate(server, 1000ms);

	PacingActuator sockets(*store_);
	auto steered = sockets.steer(client->pid(), client->inode());
	ASSERT_TRUE(steered) << steered.error().message;
	EXPECT_EQ(priority_of(client->pid(), client->inode()), kShaperSteering);
	ASSERT_EQ(store_->state().pacing.size(), 1u);
	EXPECT_EQ(store_->state().pacing[0].original_priority, 0u);
	EXPECT_EQ(store_->state().pacing[0].applied_bytes_per_second, 0u) << "steering leaves the socket's rate alone";
	std::this_thread::sleep_for(500ms);
	const double shaped = testing::measure_rate(server, 3000ms);

	// A new rate takes effect in place.
	ASSERT_TRUE(shaper.set(ifindex_, ShaperSettings{2 * kShaped.bytes_per_second, kShaped.burst_bytes}));
	std::this_thread::sleep_for(300ms);
	const double doubled = testing::measure_rate(server, 2000ms);

	ASSERT_TRUE(sockets.revert(client->pid(), client->inode()));
	EXPECT_EQ(priority_of(client->pid(), client->inode()), 0u);
	std::this_thread::sleep_for(300ms);
	const double released = testing::measure_rate(server, 1000ms);

	ASSERT_TRUE(shaper.remove(ifindex_));
	auto after = root_qdisc(ifindex_);
	ASSERT_TRUE(after);
	EXPECT_EQ(after->handle, 0u);
	EXPECT_EQ(after->kind, before->kind);
	EXPECT_EQ(shaper.remove(ifindex_).error().err, ENOENT);

	std::cout << "[ measured ] " << (family == AF_INET ? "IPv4" : "IPv6") << " unsteered " << unsteered / 1e6
		  << " Mbit/s, steered into a 10 Mbit/s shaper " << shaped / 1e6 << " Mbit/s, at 20 Mbit/s "
		  << doubled / 1e6 << " Mbit/s, released " << released / 1e6 << " Mbit/s\n";
	// The bucket counts whole frames (Ethernet header included); the sink counts payload.
	EXPECT_GT(unsteered, 20 * static_cast<double>(kShapedBitsPerSecond)) << "unsteered traffic is not shaped";
	EXPECT_GT(shaped, 0.85 * kShapedBitsPerSecond);
	EXPECT_LT(shaped, 1.02 * kShapedBitsPerSecond);
	EXPECT_GT(doubled, 1.6 * kShapedBitsPerSecond);
	EXPECT_LT(doubled, 2.04 * kShapedBitsPerSecond);
	EXPECT_GT(released, 20 * static_cast<double>(kShapedBitsPerSecond));
}

TEST_P(Shaper, LeavesAQdiscSomebodyConfiguredAlone)
{
	const auto added = testing::run_command({"tc", "qdisc", "add", "dev", NetnsPair::kNearIfname, "root", "handle",
						 "1:", "tbf", "rate", "1gbit", "burst", "64k", "limit", "1m"});
	ASSERT_EQ(added.status, 0) << added.output;
	ShaperActuator shaper;
	auto refused = shaper.set(ifindex_, kShaped);
	ASSERT_FALSE(refused);
	EXPECT_EQ(refused.error().err, EBUSY);
	EXPECT_NE(refused.error().message.find("somebody configured (tbf 1:0)"), std::string::npos)
		<< refused.error().message;
	auto root = root_qdisc(ifindex_);
	ASSERT_TRUE(root);
	EXPECT_EQ(root->kind, "tbf");
	EXPECT_EQ(root->handle, 0x10000u);
	EXPECT_TRUE(shaper.installed().empty());
	auto purged = purge_shapers();
	ASSERT_TRUE(purged);
	EXPECT_EQ(*purged, 0u) << "only our handle is purged";
}

TEST_P(Shaper, BadSettings)
{
	ShaperActuator shaper;
	EXPECT_EQ(shaper.set(ifindex_, ShaperSettings{0, 1600}).error().err, EINVAL);
	EXPECT_EQ(shaper.set(ifindex_, ShaperSettings{1000, 0}).error().err, EINVAL);
	auto no_device = shaper.set(999999, kShaped);
	ASSERT_FALSE(no_device);
	EXPECT_EQ(no_device.error().err, ENODEV) << no_device.error().message;
	EXPECT_TRUE(shaper.installed().empty());
	auto root = root_qdisc(ifindex_);
	ASSERT_TRUE(root);
	EXPECT_EQ(root->handle, 0u) << "failed sets leave the device alone";
}

// A daemon killed with a shaper installed and a socket steered: the next one's restore puts
// the socket's priority back, and the purge removes the shaper.
TEST_P(Shaper, AKilledDaemonsShaperAndSteeringAreUndone)
{
	const int family = GetParam();
	FarServer server(*pair_, family, FarServer::Mode::sink);
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	const std::string path = dir_.path() + "/killed.json";
	{
		auto store = StateStore::create(path);
		ASSERT_TRUE(store);
		ShaperActuator shaper;
		ASSERT_TRUE(shaper.set(ifindex_, kShaped));
		PacingActuator sockets(*store);
		ASSERT_TRUE(sockets.steer(client->pid(), client->inode()));
		// Steering again keeps the first original.
		ASSERT_TRUE(sockets.steer(client->pid(), client->inode()));
		ASSERT_EQ(store->state().pacing.size(), 1u);
		EXPECT_EQ(store->state().pacing[0].original_priority, 0u);
		// The daemon dies here: nothing is reverted.
	}
	EXPECT_EQ(priority_of(client->pid(), client->inode()), kShaperSteering);
	auto report = restore_from_state(path);
	ASSERT_TRUE(report) << report.error().message;
	EXPECT_EQ(report->pacing_restored, 1u);
	EXPECT_TRUE(report->failures.empty());
	EXPECT_EQ(priority_of(client->pid(), client->inode()), 0u);
	auto purged = purge_shapers();
	ASSERT_TRUE(purged) << purged.error().message;
	EXPECT_EQ(*purged, 1u);
	auto root = root_qdisc(ifindex_);
	ASSERT_TRUE(root);
	EXPECT_EQ(root->handle, 0u);

	// A shaper left without anybody knowing is taken over by the next set().
	{
		ShaperActuator left;
		ASSERT_TRUE(left.set(ifindex_, kShaped));
	}
	ShaperActuator next;
	ASSERT_TRUE(next.set(ifindex_, ShaperSettings{2 * kShaped.bytes_per_second, 1600}));
	// Deleted behind its back: the next change installs it again.
	const auto deleted = testing::run_command({"tc", "qdisc", "del", "dev", NetnsPair::kNearIfname, "root"});
	ASSERT_EQ(deleted.status, 0) << deleted.output;
	auto again = next.set(ifindex_, kShaped);
	ASSERT_TRUE(again) << again.error().message;
	EXPECT_EQ(root_qdisc(ifindex_)->handle, kShaperHandle);
	ASSERT_TRUE(next.remove_all());
	EXPECT_EQ(root_qdisc(ifindex_)->handle, 0u);
}

// A socket whose process set SO_PRIORITY (a VLAN priority, a qdisc band) is not steered: its
// priority stays, nothing is recorded, and a cap still applies.
TEST_P(Shaper, ASocketWithItsOwnPriorityIsNotSteered)
{
	FarServer server(*pair_, GetParam(), FarServer::Mode::sink);
	ASSERT_TRUE(server.ok());
	std::string error;
	auto client = ClientProcess::start(server.endpoint(), ClientProcess::Mode::idle, std::nullopt, error);
	ASSERT_TRUE(client) << error;
	{
		auto borrowed = duplicate_process_socket(client->pid(), client->inode());
		ASSERT_TRUE(borrowed) << borrowed.error().message;
		ASSERT_TRUE(set_priority(borrowed->socket.get(), 5)); // the process's own choice
	}
	PacingActuator sockets(*store_);
	auto steered = sockets.steer(client->pid(), client->inode());
	ASSERT_FALSE(steered);
	EXPECT_EQ(steered.error().err, EBUSY);
	EXPECT_NE(steered.error().message.find("SO_PRIORITY 5"), std::string::npos) << steered.error().message;
	EXPECT_EQ(priority_of(client->pid(), client->inode()), 5u);
	EXPECT_TRUE(store_->state().pacing.empty()) << "nothing changed, nothing to undo";
	ASSERT_TRUE(sockets.apply(client->pid(), client->inode(), 8'000'000));
	EXPECT_EQ(client->pacing_rate_seen_by_owner(), 1'000'000u) << "8 Mbit/s as bytes";
	ASSERT_TRUE(sockets.revert(client->pid(), client->inode()));
	EXPECT_EQ(priority_of(client->pid(), client->inode()), 5u) << "the revert of a cap leaves the priority";
}

INSTANTIATE_TEST_SUITE_P(Families, Shaper, ::testing::Values(AF_INET, AF_INET6),
			 [](const auto &info) { return info.param == AF_INET ? "IPv4" : "IPv6"; });

} // namespace
} // namespace gp::stock
