// NetlinkSocket against the running kernel, with requests any user may make in any netns:
// resolving the genl controller itself and dumping qdiscs (every netns has lo).
#include <gtest/gtest.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>

#include "messages.hpp"
#include "netlink.hpp"

namespace gp {
namespace {

Expected<NetlinkSocket> open_or_skip(int bus)
{
	return NetlinkSocket::open(bus);
}

TEST(NetlinkSocket, ResolvesTheControllerFamilyAndCachesIt)
{
	auto socket = open_or_skip(NETLINK_GENERIC);
	if (!socket)
		GTEST_SKIP() << "no netlink here: " << socket.error().message;
	auto id = socket->genl_family_id("nlctrl");
	ASSERT_TRUE(id) << id.error().message;
	EXPECT_EQ(*id, GENL_ID_CTRL);
	NetlinkSocket moved = std::move(*socket);
	auto again = moved.genl_family_id("nlctrl");
	ASSERT_TRUE(again);
	EXPECT_EQ(*again, GENL_ID_CTRL);
}

TEST(NetlinkSocket, DumpsQdiscs)
{
	auto socket = open_or_skip(NETLINK_ROUTE);
	if (!socket)
		GTEST_SKIP() << "no netlink here: " << socket.error().message;
	RequestBuffer request;
	encode_qdisc_dump(request);
	int roots = 0;
	auto done = socket->transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto qdisc = decode_qdisc(nlh);
		if (!qdisc)
			return qdisc.error();
		roots += qdisc->is_root();
		return {};
	});
	ASSERT_TRUE(done) << done.error().message;
	EXPECT_GE(roots, 1);
}

TEST(NetlinkSocket, HandlerErrorIsReportedAndTheSocketStaysUsable)
{
	auto socket = open_or_skip(NETLINK_ROUTE);
	if (!socket)
		GTEST_SKIP() << "no netlink here: " << socket.error().message;
	RequestBuffer first;
	encode_qdisc_dump(first);
	auto failed = socket->transact(first, [](const nlmsghdr *) -> Expected<void> {
		return make_error(EBADMSG, "refused by the test");
	});
	ASSERT_FALSE(failed);
	EXPECT_EQ(failed.error().err, EBADMSG);
	EXPECT_EQ(failed.error().message, "refused by the test");

	RequestBuffer second;
	encode_qdisc_dump(second);
	int messages = 0;
	auto done = socket->transact(second, [&](const nlmsghdr *) -> Expected<void> {
		++messages;
		return {};
	});
	ASSERT_TRUE(done) << done.error().message;
	EXPECT_GE(messages, 1);
}

TEST(NetlinkSocket, KernelErrorCarriesExtack)
{
	auto socket = open_or_skip(NETLINK_ROUTE);
	if (!socket)
		GTEST_SKIP() << "no netlink here: " << socket.error().message;
	// Asking for the root qdisc of a device that does not exist: a read, refused by
	// every kernel with ENODEV.
	RequestBuffer request;
	request.nlh()->nlmsg_type = RTM_GETQDISC;
	request.nlh()->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(request.nlh(), sizeof(tcmsg)));
	tcm->tcm_ifindex = 0x7ffffff0;
	tcm->tcm_parent = TC_H_ROOT;
	auto done = socket->transact(request);
	ASSERT_FALSE(done);
	EXPECT_EQ(done.error().err, ENODEV);
	EXPECT_FALSE(done.error().message.empty());
}

} // namespace
} // namespace gp
