#include <gtest/gtest.h>
#include <linux/genetlink.h>
#include <linux/rtnetlink.h>

#include <cstring>

#include "messages.hpp"
#include "netlink.hpp"
#include "test_util.hpp"

namespace gp {
namespace {

using test::MessageBuilder;

// An NLMSG_ERROR for `request`, capped (NETLINK_CAP_ACK) or echoing the whole request.
MessageBuilder error_reply(int error, const nlmsghdr *request, bool capped)
{
	MessageBuilder msg;
	nlmsghdr *nlh = msg.nlh();
	nlh->nlmsg_type = NLMSG_ERROR;
	auto *err = static_cast<nlmsgerr *>(mnl_nlmsg_put_extra_header(nlh, sizeof(nlmsgerr)));
	err->error = error;
	std::memcpy(&err->msg, request, sizeof(nlmsghdr));
	if (capped) {
		nlh->nlmsg_flags |= NLM_F_CAPPED;
	} else {
		const size_t rest = request->nlmsg_len - sizeof(nlmsghdr);
		void *echo = mnl_nlmsg_put_extra_header(nlh, rest);
		std::memcpy(echo, reinterpret_cast<const char *>(request) + sizeof(nlmsghdr), rest);
	}
	return msg;
}

void add_extack_tlvs(MessageBuilder &msg, const char *text)
{
	msg.nlh()->nlmsg_flags |= NLM_F_ACK_TLVS;
	if (text)
		mnl_attr_put_strz(msg.nlh(), NLMSGERR_ATTR_MSG, text);
}

RequestBuffer sample_request()
{
	RequestBuffer request;
	QdiscOptions options;
	options.linkrate = 1000;
	encode_qdisc_attach(request, 2, options);
	return request;
}

TEST(ExtAck, AckIsNotAnError)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(0, request.nlh(), true);
	EXPECT_FALSE(decode_ack(msg.nlh(), request.bytes()));
}

TEST(ExtAck, CappedErrorWithMessage)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-ENOENT, request.nlh(), true);
	add_extack_tlvs(msg, "Specified qdisc kind is unknown");
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->err, ENOENT);
	EXPECT_EQ(error->message, "Specified qdisc kind is unknown");
}

TEST(ExtAck, UncappedErrorSkipsTheEchoedRequest)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-EINVAL, request.nlh(), false);
	add_extack_tlvs(msg, "Invalid qdisc name");
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->err, EINVAL);
	EXPECT_EQ(error->message, "Invalid qdisc name");
}

TEST(ExtAck, NoTlvsFallsBackToStrerror)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-EPERM, request.nlh(), true);
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->err, EPERM);
	EXPECT_EQ(error->message, "Operation not permitted");
}

TEST(ExtAck, TlvsAreIgnoredWithoutTheFlag)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-EPERM, request.nlh(), true);
	mnl_attr_put_strz(msg.nlh(), NLMSGERR_ATTR_MSG, "should not be read");
	EXPECT_EQ(decode_ack(msg.nlh(), request.bytes())->message, "Operation not permitted");
}

TEST(ExtAck, MissingAttributeInsideANest)
{
	RequestBuffer request;
	encode_rule_del(request, 0x20, 3, *parse_prefix("10.0.0.1"));
	// The kernel reports the offset of the GAPPACE_A_RULE nest: right after the
	// IFINDEX attribute (4 + 4 bytes) behind the nlmsghdr and genlmsghdr.
	const uint32_t nest_offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(genlmsghdr)) + 8;
	auto msg = error_reply(-EINVAL, request.nlh(), true);
	add_extack_tlvs(msg, "missing attribute");
	mnl_attr_put_u32(msg.nlh(), NLMSGERR_ATTR_MISS_TYPE, GAPPACE_A_RULE_RATE);
	mnl_attr_put_u32(msg.nlh(), NLMSGERR_ATTR_MISS_NEST, nest_offset);
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->message, "missing attribute (missing attribute 5 in nested attribute 3)");
}

TEST(ExtAck, MissingTopLevelAttributeWithoutText)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-EINVAL, request.nlh(), true);
	add_extack_tlvs(msg, nullptr);
	mnl_attr_put_u32(msg.nlh(), NLMSGERR_ATTR_MISS_TYPE, 2);
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->message, "Invalid argument (missing attribute 2)");
}

TEST(ExtAck, BadAttributeOffsetNamesTheAttribute)
{
	RequestBuffer request = sample_request();
	// tcmsg, then TCA_KIND "gappace" (4 + 8 bytes), then TCA_OPTIONS, whose first member
	// is TCA_GAPPACE_LINKRATE.
	const uint32_t linkrate_offset = NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(tcmsg)) + 12 + 4;
	auto msg = error_reply(-ERANGE, request.nlh(), true);
	add_extack_tlvs(msg, "link rate out of range");
	mnl_attr_put_u32(msg.nlh(), NLMSGERR_ATTR_OFFS, linkrate_offset);
	auto error = decode_ack(msg.nlh(), request.bytes());
	ASSERT_TRUE(error);
	EXPECT_EQ(error->message, "link rate out of range (attribute 2)");
}

TEST(ExtAck, OffsetOutsideTheRequestIsIgnored)
{
	RequestBuffer request = sample_request();
	auto msg = error_reply(-EINVAL, request.nlh(), true);
	add_extack_tlvs(msg, "bad");
	mnl_attr_put_u32(msg.nlh(), NLMSGERR_ATTR_OFFS, 100000);
	EXPECT_EQ(decode_ack(msg.nlh(), request.bytes())->message, "bad");
}

TEST(ExtAck, FailedDump)
{
	MessageBuilder msg;
	msg.nlh()->nlmsg_type = NLMSG_DONE;
	msg.nlh()->nlmsg_flags = NLM_F_MULTI | NLM_F_ACK_TLVS;
	auto *error = static_cast<int *>(mnl_nlmsg_put_extra_header(msg.nlh(), sizeof(int)));
	*error = -ENODEV;
	mnl_attr_put_strz(msg.nlh(), NLMSGERR_ATTR_MSG, "device has no gappace qdisc");
	auto failure = decode_dump_done(msg.nlh());
	ASSERT_TRUE(failure);
	EXPECT_EQ(failure->err, ENODEV);
	EXPECT_EQ(failure->message, "device has no gappace qdisc");
}

TEST(ExtAck, SuccessfulDump)
{
	MessageBuilder msg;
	msg.nlh()->nlmsg_type = NLMSG_DONE;
	mnl_nlmsg_put_extra_header(msg.nlh(), sizeof(int));
	EXPECT_FALSE(decode_dump_done(msg.nlh()));
	MessageBuilder empty;
	empty.nlh()->nlmsg_type = NLMSG_DONE;
	EXPECT_FALSE(decode_dump_done(empty.nlh()));
}

TEST(GenlController, GetFamilyRequestAndReply)
{
	RequestBuffer request;
	encode_get_family(request, "gappace");
	EXPECT_EQ(request.nlh()->nlmsg_type, GENL_ID_CTRL);
	EXPECT_EQ(request.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	const auto attrs = test::Attrs::of_message(request.nlh(), sizeof(genlmsghdr));
	EXPECT_STREQ(mnl_attr_get_str(attrs[CTRL_ATTR_FAMILY_NAME]), "gappace");

	MessageBuilder reply;
	reply.genl(GENL_ID_CTRL, CTRL_CMD_NEWFAMILY);
	mnl_attr_put_strz(reply.nlh(), CTRL_ATTR_FAMILY_NAME, "gappace");
	mnl_attr_put_u16(reply.nlh(), CTRL_ATTR_FAMILY_ID, 0x1f);
	auto id = decode_family_id(reply.nlh());
	ASSERT_TRUE(id);
	EXPECT_EQ(*id, 0x1f);
	// No version in the reply: an error naming the attribute, not version 0.
	auto missing = decode_family_version(reply.nlh());
	ASSERT_FALSE(missing);
	EXPECT_EQ(missing.error().err, EBADMSG);
	mnl_attr_put_u32(reply.nlh(), CTRL_ATTR_VERSION, GAPPACE_GENL_VERSION);
	auto version = decode_family_version(reply.nlh());
	ASSERT_TRUE(version);
	EXPECT_EQ(*version, uint32_t{GAPPACE_GENL_VERSION});
}

TEST(AttrIndex, IgnoresUnknownTypesAndKeepsTheLastDuplicate)
{
	MessageBuilder msg;
	msg.genl(1, 1);
	mnl_attr_put_u32(msg.nlh(), 1, 10);
	mnl_attr_put_u32(msg.nlh(), 1, 11);
	mnl_attr_put_u32(msg.nlh(), 60, 12);
	const auto attrs = AttrIndex::of_message(msg.nlh(), sizeof(genlmsghdr), 3);
	ASSERT_TRUE(attrs[1]);
	EXPECT_EQ(mnl_attr_get_u32(attrs[1]), 11u);
	EXPECT_FALSE(attrs[60]);
	EXPECT_FALSE(attrs[2]);
}

} // namespace
} // namespace gp
