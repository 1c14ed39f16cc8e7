#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <linux/gen_stats.h>
#include <linux/rtnetlink.h>

#include <cstring>
#include <functional>

#include "messages.hpp"
#include "test_util.hpp"

namespace gp {
namespace {

using test::Attrs;
using test::MessageBuilder;

constexpr uint16_t kFamily = 0x1234;

Prefix prefix(std::string_view text)
{
	auto parsed = parse_prefix(text);
	EXPECT_TRUE(parsed) << text;
	return parsed ? *parsed : Prefix{};
}

const genlmsghdr *genl_header(const nlmsghdr *nlh)
{
	return static_cast<const genlmsghdr *>(mnl_nlmsg_get_payload(nlh));
}

// ------------------------------------------------------------------ qdisc encoders

TEST(QdiscEncoder, AttachSendsOnlyGivenOptions)
{
	RequestBuffer buf;
	QdiscOptions options;
	options.linkrate = 1000000000;
	options.limit = 1000;
	encode_qdisc_attach(buf, 7, options);

	const nlmsghdr *nlh = buf.nlh();
	EXPECT_EQ(nlh->nlmsg_type, RTM_NEWQDISC);
	EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE);
	const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(nlh));
	EXPECT_EQ(tcm->tcm_ifindex, 7);
	EXPECT_EQ(tcm->tcm_parent, TC_H_ROOT);
	EXPECT_EQ(tcm->tcm_handle, 0u);

	const auto attrs = Attrs::of_message(nlh, sizeof(tcmsg));
	EXPECT_EQ(attrs.count, 2);
	ASSERT_TRUE(attrs[TCA_KIND]);
	EXPECT_STREQ(mnl_attr_get_str(attrs[TCA_KIND]), "gappace");
	ASSERT_TRUE(attrs[TCA_OPTIONS]);
	EXPECT_TRUE(attrs[TCA_OPTIONS]->nla_type & NLA_F_NESTED);

	const auto opts = Attrs::of_nest(attrs[TCA_OPTIONS]);
	EXPECT_EQ(opts.count, 2);
	ASSERT_TRUE(opts[TCA_GAPPACE_LINKRATE]);
	EXPECT_EQ(mnl_attr_get_payload_len(opts[TCA_GAPPACE_LINKRATE]), 8u);
	EXPECT_EQ(mnl_attr_get_u64(opts[TCA_GAPPACE_LINKRATE]), 1000000000u);
	EXPECT_FALSE(opts[TCA_GAPPACE_IFG]);
	ASSERT_TRUE(opts[TCA_GAPPACE_LIMIT]);
	EXPECT_EQ(mnl_attr_get_payload_len(opts[TCA_GAPPACE_LIMIT]), 4u);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_LIMIT]), 1000u);
}

TEST(QdiscEncoder, ChangeDoesNotCreate)
{
	RequestBuffer buf;
	QdiscOptions options;
	options.ifg = 100;
	encode_qdisc_change(buf, 3, options);
	EXPECT_EQ(buf.nlh()->nlmsg_type, RTM_NEWQDISC);
	EXPECT_EQ(buf.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(tcmsg));
	const auto opts = Attrs::of_nest(attrs[TCA_OPTIONS]);
	EXPECT_EQ(opts.count, 1);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_IFG]), 100u);
}

TEST(QdiscEncoder, LookaheadTravelsInNanoseconds)
{
	RequestBuffer buf;
	QdiscOptions options;
	options.lookahead_ns = 200000;
	encode_qdisc_change(buf, 3, options);
	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(tcmsg));
	const auto opts = Attrs::of_nest(attrs[TCA_OPTIONS]);
	EXPECT_EQ(opts.count, 1);
	ASSERT_TRUE(opts[TCA_GAPPACE_LOOKAHEAD]);
	EXPECT_EQ(mnl_attr_get_payload_len(opts[TCA_GAPPACE_LOOKAHEAD]), 4u);
	EXPECT_EQ(mnl_attr_get_u32(opts[TCA_GAPPACE_LOOKAHEAD]), 200000u);

	// 0 is a value (switch the bound off), not an absent option.
	RequestBuffer off;
	options.lookahead_ns = 0;
	encode_qdisc_change(off, 3, options);
	const auto off_opts = Attrs::of_nest(Attrs::of_message(off.nlh(), sizeof(tcmsg))[TCA_OPTIONS]);
	ASSERT_TRUE(off_opts[TCA_GAPPACE_LOOKAHEAD]);
	EXPECT_EQ(mnl_attr_get_u32(off_opts[TCA_GAPPACE_LOOKAHEAD]), 0u);
}

TEST(QdiscEncoder, DeleteNamesTheHandleItChecked)
{
	RequestBuffer buf;
	encode_root_qdisc_delete(buf, 4, 0x80010000);
	EXPECT_EQ(buf.nlh()->nlmsg_type, RTM_DELQDISC);
	const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(buf.nlh()));
	EXPECT_EQ(tcm->tcm_ifindex, 4);
	EXPECT_EQ(tcm->tcm_parent, TC_H_ROOT);
	EXPECT_EQ(tcm->tcm_handle, 0x80010000u);
	EXPECT_EQ(buf.nlh()->nlmsg_len, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(tcmsg)));
}

TEST(QdiscEncoder, Dump)
{
	RequestBuffer dump;
	encode_qdisc_dump(dump);
	EXPECT_EQ(dump.nlh()->nlmsg_type, RTM_GETQDISC);
	EXPECT_EQ(dump.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	const auto *tcm = static_cast<const tcmsg *>(mnl_nlmsg_get_payload(dump.nlh()));
	EXPECT_EQ(tcm->tcm_ifindex, 0);
	EXPECT_EQ(tcm->tcm_parent, 0u);
	EXPECT_EQ(dump.nlh()->nlmsg_len, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(tcmsg)));
}

// ------------------------------------------------------------------ qdisc decoder

// A qdisc as the kernel reports it, with `xstats_len` bytes of xstats.
MessageBuilder qdisc_reply(std::string_view kind, size_t xstats_len, const tc_gappace_xstats &xstats)
{
	MessageBuilder msg;
	nlmsghdr *nlh = msg.nlh();
	nlh->nlmsg_type = RTM_NEWQDISC;
	auto *tcm = static_cast<tcmsg *>(mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg)));
	tcm->tcm_ifindex = 5;
	tcm->tcm_handle = 0x80010000;
	tcm->tcm_parent = TC_H_ROOT;
	mnl_attr_put_strz(nlh, TCA_KIND, std::string(kind).c_str());
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	msg.put_u64_padded(TCA_GAPPACE_PAD, TCA_GAPPACE_LINKRATE, 0);
	mnl_attr_put_u32(nlh, TCA_GAPPACE_IFG, 100);
	mnl_attr_put_u32(nlh, TCA_GAPPACE_LIMIT, 1000);
	mnl_attr_put_u32(nlh, TCA_GAPPACE_MAX + 7, 42); // from a newer kernel: ignored
	mnl_attr_nest_end(nlh, options);
	nlattr *stats2 = mnl_attr_nest_start(nlh, TCA_STATS2);
	std::vector<char> app(xstats_len, '\x5a'); // a longer struct has bytes we do not know
	std::memcpy(app.data(), &xstats, std::min(xstats_len, sizeof(xstats)));
	mnl_attr_put(nlh, TCA_STATS_APP, app.size(), app.data());
	mnl_attr_nest_end(nlh, stats2);
	return msg;
}

tc_gappace_xstats sample_xstats()
{
	tc_gappace_xstats x{};
	x.linkrate = 1000000000;
	x.data_packets = 10;
	x.data_bytes = 15140;
	x.data_wire_bytes = 15380;
	x.gap_frames = 3;
	x.rules = 2;
	x.ifg = 100;
	x.limit = 1000;
	x.qlen = 4;
	return x;
}

TEST(QdiscDecoder, OptionsAndFullXstats)
{
	auto msg = qdisc_reply("gappace", sizeof(tc_gappace_xstats), sample_xstats());
	auto qdisc = decode_qdisc(msg.nlh());
	ASSERT_TRUE(qdisc) << qdisc.error().message;
	EXPECT_EQ(qdisc->ifindex, 5u);
	EXPECT_EQ(qdisc->handle, 0x80010000u);
	EXPECT_TRUE(qdisc->is_root());
	EXPECT_TRUE(qdisc->is_gappace());
	EXPECT_EQ(qdisc->options.linkrate, 0u);
	EXPECT_EQ(qdisc->options.ifg, 100u);
	EXPECT_EQ(qdisc->options.limit, 1000u);
	ASSERT_TRUE(qdisc->xstats);
	EXPECT_EQ(qdisc->xstats->received_len, sizeof(tc_gappace_xstats));
	EXPECT_EQ(qdisc->xstats->values.data_bytes, 15140u);
	EXPECT_EQ(qdisc->xstats->values.qlen, 4u);
}

TEST(QdiscDecoder, ShorterXstatsFromAnOlderModule)
{
	const size_t old_len = offsetof(tc_gappace_xstats, data_bytes); // linkrate, data_packets
	auto msg = qdisc_reply("gappace", old_len, sample_xstats());
	auto qdisc = decode_qdisc(msg.nlh());
	ASSERT_TRUE(qdisc);
	ASSERT_TRUE(qdisc->xstats);
	EXPECT_EQ(qdisc->xstats->received_len, old_len);
	EXPECT_EQ(qdisc->xstats->values.data_packets, 10u);
	EXPECT_EQ(qdisc->xstats->values.data_bytes, 0u);
	EXPECT_TRUE(qdisc->xstats->has_field(offsetof(tc_gappace_xstats, data_packets), 8));
	EXPECT_FALSE(qdisc->xstats->has_field(offsetof(tc_gappace_xstats, data_bytes), 8));
}

TEST(QdiscDecoder, LongerXstatsFromANewerModule)
{
	auto msg = qdisc_reply("gappace", sizeof(tc_gappace_xstats) + 16, sample_xstats());
	auto qdisc = decode_qdisc(msg.nlh());
	ASSERT_TRUE(qdisc);
	EXPECT_EQ(qdisc->xstats->received_len, sizeof(tc_gappace_xstats));
	EXPECT_EQ(qdisc->xstats->values.qlen, 4u);
}

TEST(QdiscDecoder, OtherKindsKeepOnlyTheirIdentity)
{
	auto msg = qdisc_reply("fq_codel", 8, sample_xstats());
	auto qdisc = decode_qdisc(msg.nlh());
	ASSERT_TRUE(qdisc);
	EXPECT_EQ(qdisc->kind, "fq_codel");
	EXPECT_FALSE(qdisc->is_gappace());
	EXPECT_TRUE(qdisc->options.empty());
	EXPECT_FALSE(qdisc->xstats);
}

TEST(QdiscDecoder, RejectsMalformedOption)
{
	MessageBuilder msg;
	nlmsghdr *nlh = msg.nlh();
	nlh->nlmsg_type = RTM_NEWQDISC;
	mnl_nlmsg_put_extra_header(nlh, sizeof(tcmsg));
	mnl_attr_put_strz(nlh, TCA_KIND, "gappace");
	nlattr *options = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	mnl_attr_put_u16(nlh, TCA_GAPPACE_IFG, 12); // u32 expected
	mnl_attr_nest_end(nlh, options);
	auto qdisc = decode_qdisc(nlh);
	ASSERT_FALSE(qdisc);
	EXPECT_EQ(qdisc.error().err, EBADMSG);
	EXPECT_EQ(qdisc.error().message, "malformed TCA_GAPPACE_IFG in kernel reply");
}

// ------------------------------------------------------------------ genl encoders

TEST(RuleEncoder, NewIPv4RoundTrip)
{
	RequestBuffer buf;
	encode_rule_new(buf, kFamily, 7, prefix("10.0.1.0/24"), 100000000, false);

	const nlmsghdr *nlh = buf.nlh();
	EXPECT_EQ(nlh->nlmsg_type, kFamily);
	// no create/excl flags: in generic netlink they alias the dump flags
	EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(nlh)->cmd, GAPPACE_CMD_RULE_NEW);
	EXPECT_EQ(genl_header(nlh)->version, GAPPACE_GENL_VERSION);

	const auto attrs = Attrs::of_message(nlh, sizeof(genlmsghdr));
	EXPECT_EQ(attrs.count, 2);
	EXPECT_EQ(mnl_attr_get_u32(attrs[GAPPACE_A_IFINDEX]), 7u);
	ASSERT_TRUE(attrs[GAPPACE_A_RULE]);
	EXPECT_TRUE(attrs[GAPPACE_A_RULE]->nla_type & NLA_F_NESTED);

	const auto rule = Attrs::of_nest(attrs[GAPPACE_A_RULE]);
	EXPECT_EQ(rule.count, 3);
	ASSERT_TRUE(rule[GAPPACE_A_RULE_DST_IPV4]);
	ASSERT_EQ(mnl_attr_get_payload_len(rule[GAPPACE_A_RULE_DST_IPV4]), 4u);
	const uint8_t expected_dst[4] = {10, 0, 1, 0};
	EXPECT_EQ(std::memcmp(mnl_attr_get_payload(rule[GAPPACE_A_RULE_DST_IPV4]), expected_dst, 4), 0);
	EXPECT_FALSE(rule[GAPPACE_A_RULE_DST_IPV6]);
	ASSERT_EQ(mnl_attr_get_payload_len(rule[GAPPACE_A_RULE_PREFIX_LEN]), 1u);
	EXPECT_EQ(mnl_attr_get_u8(rule[GAPPACE_A_RULE_PREFIX_LEN]), 24);
	ASSERT_EQ(mnl_attr_get_payload_len(rule[GAPPACE_A_RULE_RATE]), 8u);
	EXPECT_EQ(mnl_attr_get_u64(rule[GAPPACE_A_RULE_RATE]), 100000000u);
}

TEST(RuleEncoder, GroupOnlyWhenGiven)
{
	RequestBuffer plain, grouped;
	encode_rule_new(plain, kFamily, 7, prefix("10.0.1.1"), 1000, false);
	encode_rule_new(grouped, kFamily, 7, prefix("10.0.1.1"), 1000, true, 42);
	const auto plain_rule = Attrs::of_nest(Attrs::of_message(plain.nlh(), sizeof(genlmsghdr))[GAPPACE_A_RULE]);
	EXPECT_FALSE(plain_rule[GAPPACE_A_RULE_GROUP]);
	const auto rule = Attrs::of_nest(Attrs::of_message(grouped.nlh(), sizeof(genlmsghdr))[GAPPACE_A_RULE]);
	ASSERT_TRUE(rule[GAPPACE_A_RULE_GROUP]);
	ASSERT_EQ(mnl_attr_get_payload_len(rule[GAPPACE_A_RULE_GROUP]), 4u);
	EXPECT_EQ(mnl_attr_get_u32(rule[GAPPACE_A_RULE_GROUP]), 42u);
	EXPECT_EQ(mnl_attr_get_u64(rule[GAPPACE_A_RULE_RATE]), 1000u);
}

TEST(RuleEncoder, ReplaceIsTheRuleSetCommand)
{
	RequestBuffer buf;
	encode_rule_new(buf, kFamily, 7, prefix("10.0.1.1"), 1000, true);
	EXPECT_EQ(buf.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(buf.nlh())->cmd, GAPPACE_CMD_RULE_SET);
}

TEST(RuleEncoder, NewIPv6)
{
	RequestBuffer buf;
	encode_rule_new(buf, kFamily, 2, prefix("2001:db8::/48"), 5000, false);
	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(genlmsghdr));
	const auto rule = Attrs::of_nest(attrs[GAPPACE_A_RULE]);
	ASSERT_TRUE(rule[GAPPACE_A_RULE_DST_IPV6]);
	EXPECT_FALSE(rule[GAPPACE_A_RULE_DST_IPV4]);
	ASSERT_EQ(mnl_attr_get_payload_len(rule[GAPPACE_A_RULE_DST_IPV6]), 16u);
	const auto *addr = static_cast<const uint8_t *>(mnl_attr_get_payload(rule[GAPPACE_A_RULE_DST_IPV6]));
	EXPECT_EQ(addr[0], 0x20);
	EXPECT_EQ(addr[3], 0xb8);
	EXPECT_EQ(addr[15], 0);
	EXPECT_EQ(mnl_attr_get_u8(rule[GAPPACE_A_RULE_PREFIX_LEN]), 48);
}

TEST(RuleEncoder, DelCarriesNoRate)
{
	RequestBuffer buf;
	encode_rule_del(buf, kFamily, 7, prefix("10.0.1.1"));
	EXPECT_EQ(buf.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(buf.nlh())->cmd, GAPPACE_CMD_RULE_DEL);
	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(genlmsghdr));
	const auto rule = Attrs::of_nest(attrs[GAPPACE_A_RULE]);
	EXPECT_EQ(rule.count, 2);
	EXPECT_FALSE(rule[GAPPACE_A_RULE_RATE]);
	EXPECT_EQ(mnl_attr_get_u8(rule[GAPPACE_A_RULE_PREFIX_LEN]), 32);
}

TEST(RuleEncoder, DumpWithAndWithoutDevice)
{
	RequestBuffer all;
	encode_rule_dump(all, kFamily, std::nullopt);
	EXPECT_EQ(all.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	EXPECT_EQ(genl_header(all.nlh())->cmd, GAPPACE_CMD_RULE_GET);
	EXPECT_EQ(Attrs::of_message(all.nlh(), sizeof(genlmsghdr)).count, 0);

	RequestBuffer one;
	encode_rule_dump(one, kFamily, 3u);
	const auto attrs = Attrs::of_message(one.nlh(), sizeof(genlmsghdr));
	EXPECT_EQ(attrs.count, 1);
	EXPECT_EQ(mnl_attr_get_u32(attrs[GAPPACE_A_IFINDEX]), 3u);
}

TEST(StatsEncoder, GetAndDump)
{
	RequestBuffer get;
	encode_stats_get(get, kFamily, 4);
	EXPECT_EQ(get.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(get.nlh())->cmd, GAPPACE_CMD_STATS_GET);
	EXPECT_EQ(mnl_attr_get_u32(Attrs::of_message(get.nlh(), sizeof(genlmsghdr))[GAPPACE_A_IFINDEX]), 4u);

	RequestBuffer dump;
	encode_stats_dump(dump, kFamily);
	EXPECT_EQ(dump.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	EXPECT_EQ(genl_header(dump.nlh())->cmd, GAPPACE_CMD_STATS_GET);
}

// ------------------------------------------------------------------ genl decoders

// A RULE_GET reply as the module would send it (with PAD attributes before u64s).
MessageBuilder rule_reply(bool ipv6, bool with_stats)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RULE_GET);
	nlmsghdr *nlh = msg.nlh();
	mnl_attr_put_u32(nlh, GAPPACE_A_IFINDEX, 7);
	nlattr *rule = mnl_attr_nest_start(nlh, GAPPACE_A_RULE | NLA_F_NESTED);
	if (ipv6) {
		const uint8_t dst[16] = {0x20, 0x01, 0x0d, 0xb8, 0, 1};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV6, sizeof(dst), dst);
		mnl_attr_put_u8(nlh, GAPPACE_A_RULE_PREFIX_LEN, 48);
	} else {
		const uint8_t dst[4] = {10, 0, 1, 0};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
		mnl_attr_put_u8(nlh, GAPPACE_A_RULE_PREFIX_LEN, 24);
	}
	msg.put_u64_padded(GAPPACE_A_RULE_PAD, GAPPACE_A_RULE_RATE, 100000000);
	if (with_stats) {
		nlattr *stats = mnl_attr_nest_start(nlh, GAPPACE_A_RULE_STATS | NLA_F_NESTED);
		msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_DATA_PACKETS, 1000);
		msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_DATA_BYTES, 1514000);
		msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_GAP_FRAMES, 12);
		msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_ACHIEVED_RATE, 99500000);
		mnl_attr_put_u32(nlh, GAPPACE_A_STATS_BACKLOG, 3);
		mnl_attr_put_u64(nlh, GAPPACE_A_STATS_MAX + 1, 77); // unknown to us: ignored
		mnl_attr_nest_end(nlh, stats);
	}
	mnl_attr_nest_end(nlh, rule);
	return msg;
}

// A RULE_GET reply {IFINDEX 1, RULE{what `fill` puts in the nest}}.
MessageBuilder rule_get_reply(const std::function<void(nlmsghdr *)> &fill)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RULE_GET);
	mnl_attr_put_u32(msg.nlh(), GAPPACE_A_IFINDEX, 1);
	nlattr *rule = mnl_attr_nest_start(msg.nlh(), GAPPACE_A_RULE);
	fill(msg.nlh());
	mnl_attr_nest_end(msg.nlh(), rule);
	return msg;
}

TEST(RuleDecoder, IPv4WithStats)
{
	auto msg = rule_reply(false, true);
	auto rule = decode_rule(msg.nlh());
	ASSERT_TRUE(rule) << rule.error().message;
	EXPECT_EQ(rule->ifindex, 7u);
	EXPECT_EQ(format_prefix(rule->dst), "10.0.1.0/24");
	EXPECT_EQ(rule->rate, 100000000u);
	ASSERT_TRUE(rule->stats);
	const Counters &stats = *rule->stats;
	EXPECT_EQ(stats[GAPPACE_A_STATS_DATA_PACKETS], 1000u);
	EXPECT_EQ(stats[GAPPACE_A_STATS_DATA_BYTES], 1514000u);
	EXPECT_EQ(stats[GAPPACE_A_STATS_GAP_FRAMES], 12u);
	EXPECT_EQ(stats[GAPPACE_A_STATS_ACHIEVED_RATE], 99500000u);
	EXPECT_EQ(stats[GAPPACE_A_STATS_BACKLOG], 3u);
	EXPECT_FALSE(stats[GAPPACE_A_STATS_DROPS]);
}

TEST(RuleDecoder, IPv6WithoutStats)
{
	auto msg = rule_reply(true, false);
	auto rule = decode_rule(msg.nlh());
	ASSERT_TRUE(rule) << rule.error().message;
	EXPECT_EQ(format_prefix(rule->dst), "2001:db8:1::/48");
	EXPECT_FALSE(rule->stats);
}

TEST(RuleDecoder, GroupWhenTheKernelSendsIt)
{
	auto ungrouped = rule_reply(false, false);
	auto plain = decode_rule(ungrouped.nlh());
	ASSERT_TRUE(plain) << plain.error().message;
	EXPECT_FALSE(plain->group);

	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		const uint8_t dst[4] = {192, 0, 2, 1};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
		mnl_attr_put_u32(nlh, GAPPACE_A_RULE_GROUP, 9);
	});
	auto decoded = decode_rule(msg.nlh());
	ASSERT_TRUE(decoded) << decoded.error().message;
	EXPECT_EQ(decoded->group, 9u);
}

TEST(RuleDecoder, RejectsMalformedGroup)
{
	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		const uint8_t dst[4] = {192, 0, 2, 1};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
		mnl_attr_put_u8(nlh, GAPPACE_A_RULE_GROUP, 9);
	});
	auto decoded = decode_rule(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().message, "malformed GAPPACE_A_RULE_GROUP in kernel reply");
}

TEST(RuleDecoder, PrefixLenDefaultsToFullLength)
{
	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		const uint8_t dst[4] = {192, 0, 2, 1};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
	});
	auto decoded = decode_rule(msg.nlh());
	ASSERT_TRUE(decoded);
	EXPECT_EQ(format_prefix(decoded->dst), "192.0.2.1/32");
	EXPECT_FALSE(decoded->rate);
}

TEST(RuleDecoder, RejectsMissingDestination)
{
	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		mnl_attr_put_u64(nlh, GAPPACE_A_RULE_RATE, 1000);
	});
	auto decoded = decode_rule(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().message, "GAPPACE_A_RULE_DST_IPV4/IPV6 missing in kernel reply");
}

TEST(RuleDecoder, RejectsWrongAddressLength)
{
	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		const uint8_t dst[5] = {1, 2, 3, 4, 5};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
	});
	auto decoded = decode_rule(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().message, "malformed GAPPACE_A_RULE_DST_IPV4 in kernel reply");
}

TEST(RuleDecoder, RejectsPrefixLenBeyondAddress)
{
	auto msg = rule_get_reply([](nlmsghdr *nlh) {
		const uint8_t dst[4] = {1, 2, 3, 4};
		mnl_attr_put(nlh, GAPPACE_A_RULE_DST_IPV4, sizeof(dst), dst);
		mnl_attr_put_u8(nlh, GAPPACE_A_RULE_PREFIX_LEN, 33);
	});
	EXPECT_FALSE(decode_rule(msg.nlh()));
}

TEST(RuleDecoder, RejectsMissingIfindex)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RULE_GET);
	auto decoded = decode_rule(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().message, "GAPPACE_A_IFINDEX missing in kernel reply");
}

MessageBuilder stats_reply()
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_STATS_GET);
	nlmsghdr *nlh = msg.nlh();
	mnl_attr_put_u32(nlh, GAPPACE_A_IFINDEX, 3);
	nlattr *qdisc = mnl_attr_nest_start(nlh, GAPPACE_A_QDISC | NLA_F_NESTED);
	msg.put_u64_padded(GAPPACE_A_QDISC_PAD, GAPPACE_A_QDISC_LINKRATE, 10000000000);
	mnl_attr_put(nlh, GAPPACE_A_QDISC_LINKRATE_AUTO, 0, nullptr);
	mnl_attr_put_u32(nlh, GAPPACE_A_QDISC_IFG, 12);
	mnl_attr_put_u32(nlh, GAPPACE_A_QDISC_LIMIT, 1000);
	mnl_attr_put_u32(nlh, GAPPACE_A_QDISC_RULES, 2);
	nlattr *stats = mnl_attr_nest_start(nlh, GAPPACE_A_QDISC_STATS | NLA_F_NESTED);
	msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_DATA_PACKETS, 5);
	msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_DROPS, 1);
	msg.put_u64_padded(GAPPACE_A_STATS_PAD, GAPPACE_A_STATS_GAP_ALLOC_FAILURES, 0);
	mnl_attr_put_u32(nlh, GAPPACE_A_STATS_BACKLOG, 0);
	mnl_attr_nest_end(nlh, stats);
	mnl_attr_nest_end(nlh, qdisc);
	return msg;
}

TEST(StatsDecoder, FullReply)
{
	auto msg = stats_reply();
	auto stats = decode_device_stats(msg.nlh());
	ASSERT_TRUE(stats) << stats.error().message;
	EXPECT_EQ(stats->ifindex, 3u);
	EXPECT_EQ(stats->linkrate, 10000000000u);
	EXPECT_TRUE(stats->linkrate_auto);
	EXPECT_EQ(stats->ifg, 12u);
	EXPECT_EQ(stats->limit, 1000u);
	EXPECT_EQ(stats->rules, 2u);
	ASSERT_TRUE(stats->stats);
	EXPECT_EQ((*stats->stats)[GAPPACE_A_STATS_DATA_PACKETS], 5u);
	EXPECT_EQ((*stats->stats)[GAPPACE_A_STATS_DROPS], 1u);
	EXPECT_EQ((*stats->stats)[GAPPACE_A_STATS_GAP_ALLOC_FAILURES], 0u);
	EXPECT_EQ((*stats->stats)[GAPPACE_A_STATS_BACKLOG], 0u);
	EXPECT_FALSE((*stats->stats)[GAPPACE_A_STATS_GAP_FRAMES]);
}

TEST(StatsDecoder, RejectsBacklogOfWrongSize)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_STATS_GET);
	mnl_attr_put_u32(msg.nlh(), GAPPACE_A_IFINDEX, 3);
	nlattr *qdisc = mnl_attr_nest_start(msg.nlh(), GAPPACE_A_QDISC);
	nlattr *stats = mnl_attr_nest_start(msg.nlh(), GAPPACE_A_QDISC_STATS);
	mnl_attr_put_u64(msg.nlh(), GAPPACE_A_STATS_BACKLOG, 1); // u32 in the contract
	mnl_attr_nest_end(msg.nlh(), stats);
	mnl_attr_nest_end(msg.nlh(), qdisc);
	auto decoded = decode_device_stats(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().message, "malformed backlog in kernel reply");
}

// ------------------------------------------------------------------ RTO overrides

RtoTarget connection(std::string_view local, std::string_view peer)
{
	RtoTarget target;
	auto l = parse_endpoint(local);
	auto p = parse_endpoint(peer);
	EXPECT_TRUE(l && p) << local << " " << peer;
	if (l && p) {
		target.local = *l;
		target.peer = *p;
	}
	return target;
}

RtoTarget peer_only(std::string_view address)
{
	RtoTarget target;
	auto parsed = parse_host_address(address);
	EXPECT_TRUE(parsed) << address;
	if (parsed)
		target.peer = *parsed;
	return target;
}

// A be16 port attribute as the kernel reads it (nla_get_be16).
uint16_t be16_port(const nlattr *attr)
{
	EXPECT_EQ(mnl_attr_get_payload_len(attr), 2u);
	const auto *bytes = static_cast<const uint8_t *>(mnl_attr_get_payload(attr));
	return static_cast<uint16_t>(bytes[0] << 8 | bytes[1]);
}

TEST(RtoEncoder, SetConnectionIPv4)
{
	RequestBuffer buf;
	RtoSettings settings;
	settings.rto_min_us = 5000;
	encode_rto_set(buf, kFamily, connection("10.0.0.1:40000", "10.0.0.2:5001"), settings);

	const nlmsghdr *nlh = buf.nlh();
	EXPECT_EQ(nlh->nlmsg_type, kFamily);
	EXPECT_EQ(nlh->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(nlh)->cmd, GAPPACE_CMD_RTO_SET);
	EXPECT_EQ(genl_header(nlh)->version, GAPPACE_GENL_VERSION);

	const auto attrs = Attrs::of_message(nlh, sizeof(genlmsghdr));
	EXPECT_EQ(attrs.count, 1);
	ASSERT_TRUE(attrs[GAPPACE_A_RTO]);
	EXPECT_TRUE(attrs[GAPPACE_A_RTO]->nla_type & NLA_F_NESTED);

	const auto rto = Attrs::of_nest(attrs[GAPPACE_A_RTO]);
	EXPECT_EQ(rto.count, 5);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_SADDR_IPV4]);
	ASSERT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_SADDR_IPV4]), 4u);
	const uint8_t saddr[4] = {10, 0, 0, 1}, daddr[4] = {10, 0, 0, 2};
	EXPECT_EQ(std::memcmp(mnl_attr_get_payload(rto[GAPPACE_A_RTO_SADDR_IPV4]), saddr, 4), 0);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_DADDR_IPV4]);
	ASSERT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_DADDR_IPV4]), 4u);
	EXPECT_EQ(std::memcmp(mnl_attr_get_payload(rto[GAPPACE_A_RTO_DADDR_IPV4]), daddr, 4), 0);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_SADDR_IPV6]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_DADDR_IPV6]);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_SPORT]);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_DPORT]);
	EXPECT_EQ(be16_port(rto[GAPPACE_A_RTO_SPORT]), 40000);
	EXPECT_EQ(be16_port(rto[GAPPACE_A_RTO_DPORT]), 5001);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_RTO_MIN_US]);
	ASSERT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_RTO_MIN_US]), 4u);
	EXPECT_EQ(mnl_attr_get_u32(rto[GAPPACE_A_RTO_RTO_MIN_US]), 5000u);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_DELACK_MAX_US]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_TTL_MS]);
}

TEST(RtoEncoder, SetPeerIPv6WithOptions)
{
	RequestBuffer buf;
	RtoSettings settings;
	settings.rto_min_us = 8000;
	settings.delack_max_us = 4000;
	settings.ttl_ms = 60000;
	encode_rto_set(buf, kFamily, peer_only("fd00::2"), settings);

	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(genlmsghdr));
	const auto rto = Attrs::of_nest(attrs[GAPPACE_A_RTO]);
	EXPECT_EQ(rto.count, 4); // DADDR_IPV6, RTO_MIN_US, DELACK_MAX_US, TTL_MS: no ports, no SADDR
	EXPECT_FALSE(rto[GAPPACE_A_RTO_SADDR_IPV4]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_SADDR_IPV6]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_SPORT]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_DPORT]);
	ASSERT_TRUE(rto[GAPPACE_A_RTO_DADDR_IPV6]);
	ASSERT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_DADDR_IPV6]), 16u);
	const auto *daddr = static_cast<const uint8_t *>(mnl_attr_get_payload(rto[GAPPACE_A_RTO_DADDR_IPV6]));
	EXPECT_EQ(daddr[0], 0xfd);
	EXPECT_EQ(daddr[15], 2);
	EXPECT_EQ(mnl_attr_get_u32(rto[GAPPACE_A_RTO_RTO_MIN_US]), 8000u);
	EXPECT_EQ(mnl_attr_get_u32(rto[GAPPACE_A_RTO_DELACK_MAX_US]), 4000u);
	ASSERT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_TTL_MS]), 4u);
	EXPECT_EQ(mnl_attr_get_u32(rto[GAPPACE_A_RTO_TTL_MS]), 60000u);
}

TEST(RtoEncoder, PeerOnlyNeverSendsAPort)
{
	RtoTarget target = peer_only("10.0.0.2");
	target.peer.port = 5001; // whatever the struct says, "peer" means every port
	RequestBuffer buf;
	encode_rto_clear(buf, kFamily, target);
	const auto rto = Attrs::of_nest(Attrs::of_message(buf.nlh(), sizeof(genlmsghdr))[GAPPACE_A_RTO]);
	EXPECT_EQ(rto.count, 1);
	EXPECT_TRUE(rto[GAPPACE_A_RTO_DADDR_IPV4]);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_DPORT]);
}

TEST(RtoEncoder, ClearConnectionIPv6)
{
	RequestBuffer buf;
	encode_rto_clear(buf, kFamily, connection("[fd00::1]:40000", "[fd00::2]:443"));
	EXPECT_EQ(buf.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
	EXPECT_EQ(genl_header(buf.nlh())->cmd, GAPPACE_CMD_RTO_CLEAR);
	const auto attrs = Attrs::of_message(buf.nlh(), sizeof(genlmsghdr));
	ASSERT_TRUE(attrs[GAPPACE_A_RTO]);
	EXPECT_TRUE(attrs[GAPPACE_A_RTO]->nla_type & NLA_F_NESTED);
	const auto rto = Attrs::of_nest(attrs[GAPPACE_A_RTO]);
	EXPECT_EQ(rto.count, 4);
	EXPECT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_SADDR_IPV6]), 16u);
	EXPECT_EQ(mnl_attr_get_payload_len(rto[GAPPACE_A_RTO_DADDR_IPV6]), 16u);
	EXPECT_EQ(be16_port(rto[GAPPACE_A_RTO_SPORT]), 40000);
	EXPECT_EQ(be16_port(rto[GAPPACE_A_RTO_DPORT]), 443);
	EXPECT_FALSE(rto[GAPPACE_A_RTO_RTO_MIN_US]);
}

TEST(RtoEncoder, Dump)
{
	RequestBuffer buf;
	encode_rto_dump(buf, kFamily);
	EXPECT_EQ(buf.nlh()->nlmsg_flags, NLM_F_REQUEST | NLM_F_DUMP);
	EXPECT_EQ(genl_header(buf.nlh())->cmd, GAPPACE_CMD_RTO_GET);
	EXPECT_EQ(Attrs::of_message(buf.nlh(), sizeof(genlmsghdr)).count, 0);
	EXPECT_EQ(buf.nlh()->nlmsg_len, NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(genlmsghdr)));
}

TEST(RtoDecoder, SetReply)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RTO_SET);
	nlattr *rto = mnl_attr_nest_start(msg.nlh(), GAPPACE_A_RTO | NLA_F_NESTED);
	mnl_attr_put_u32(msg.nlh(), GAPPACE_A_RTO_COUNT, 1);
	mnl_attr_put_u32(msg.nlh(), GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US, 8000);
	mnl_attr_put_u32(msg.nlh(), GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US, 4000);
	mnl_attr_put_u64(msg.nlh(), GAPPACE_A_RTO_MAX + 3, 1); // from a newer module: ignored
	mnl_attr_nest_end(msg.nlh(), rto);

	auto reply = decode_rto(msg.nlh());
	ASSERT_TRUE(reply) << reply.error().message;
	EXPECT_FALSE(reply->local);
	EXPECT_FALSE(reply->peer);
	EXPECT_EQ(reply->values[GAPPACE_A_RTO_COUNT], 1u);
	EXPECT_EQ(reply->values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US], 8000u);
	EXPECT_EQ(reply->values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US], 4000u);
	EXPECT_FALSE(reply->values[GAPPACE_A_RTO_RTO_MIN_US]);
	EXPECT_FALSE(reply->values[GAPPACE_A_RTO_TTL_LEFT_MS]);
}

// An RTO_GET dump message as the module would send it.
MessageBuilder rto_dump_reply(bool ipv6, bool with_ttl)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RTO_GET);
	nlmsghdr *nlh = msg.nlh();
	nlattr *rto = mnl_attr_nest_start(nlh, GAPPACE_A_RTO | NLA_F_NESTED);
	if (ipv6) {
		const uint8_t saddr[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
		const uint8_t daddr[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2};
		mnl_attr_put(nlh, GAPPACE_A_RTO_SADDR_IPV6, sizeof(saddr), saddr);
		mnl_attr_put(nlh, GAPPACE_A_RTO_DADDR_IPV6, sizeof(daddr), daddr);
	} else {
		const uint8_t saddr[4] = {10, 0, 0, 1}, daddr[4] = {10, 0, 0, 2};
		mnl_attr_put(nlh, GAPPACE_A_RTO_SADDR_IPV4, sizeof(saddr), saddr);
		mnl_attr_put(nlh, GAPPACE_A_RTO_DADDR_IPV4, sizeof(daddr), daddr);
	}
	mnl_attr_put_u16(nlh, GAPPACE_A_RTO_SPORT, htons(40000));
	mnl_attr_put_u16(nlh, GAPPACE_A_RTO_DPORT, htons(5001));
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_RTO_MIN_US, 5000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_DELACK_MAX_US, 3000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US, 8000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US, 4000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_ORIG_RTO_MIN_US, 200000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_ORIG_DELACK_MAX_US, 40000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_RTO_US, 208000);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_OWNER_PORTID, 2151680);
	mnl_attr_put_u32(nlh, GAPPACE_A_RTO_OWNER_PID, 1234);
	if (with_ttl)
		mnl_attr_put_u32(nlh, GAPPACE_A_RTO_TTL_LEFT_MS, 59000);
	mnl_attr_nest_end(nlh, rto);
	return msg;
}

TEST(RtoDecoder, DumpIPv4WithTtl)
{
	auto msg = rto_dump_reply(false, true);
	auto rto = decode_rto(msg.nlh());
	ASSERT_TRUE(rto) << rto.error().message;
	ASSERT_TRUE(rto->local);
	ASSERT_TRUE(rto->peer);
	EXPECT_EQ(format_endpoint(*rto->local), "10.0.0.1:40000");
	EXPECT_EQ(format_endpoint(*rto->peer), "10.0.0.2:5001");
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_RTO_MIN_US], 5000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_DELACK_MAX_US], 3000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US], 8000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US], 4000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_ORIG_RTO_MIN_US], 200000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_ORIG_DELACK_MAX_US], 40000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_RTO_US], 208000u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_OWNER_PORTID], 2151680u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_OWNER_PID], 1234u);
	EXPECT_EQ(rto->values[GAPPACE_A_RTO_TTL_LEFT_MS], 59000u);
	EXPECT_FALSE(rto->values[GAPPACE_A_RTO_COUNT]);
}

TEST(RtoDecoder, DumpIPv6WithoutTtl)
{
	auto msg = rto_dump_reply(true, false);
	auto rto = decode_rto(msg.nlh());
	ASSERT_TRUE(rto) << rto.error().message;
	EXPECT_EQ(format_endpoint(*rto->local), "[fd00::1]:40000");
	EXPECT_EQ(format_endpoint(*rto->peer), "[fd00::2]:5001");
	EXPECT_FALSE(rto->values[GAPPACE_A_RTO_TTL_LEFT_MS]);
}

TEST(RtoDecoder, RejectsMissingNest)
{
	MessageBuilder msg;
	msg.genl(kFamily, GAPPACE_CMD_RTO_SET);
	auto decoded = decode_rto(msg.nlh());
	ASSERT_FALSE(decoded);
	EXPECT_EQ(decoded.error().err, EBADMSG);
	EXPECT_EQ(decoded.error().message, "GAPPACE_A_RTO missing in kernel reply");
}

TEST(RtoDecoder, RejectsMalformedAttributes)
{
	auto decode_with = [](auto put) {
		MessageBuilder msg;
		msg.genl(kFamily, GAPPACE_CMD_RTO_GET);
		nlattr *rto = mnl_attr_nest_start(msg.nlh(), GAPPACE_A_RTO | NLA_F_NESTED);
		put(msg.nlh());
		mnl_attr_nest_end(msg.nlh(), rto);
		auto decoded = decode_rto(msg.nlh());
		return decoded ? std::string("decoded") : decoded.error().message;
	};
	EXPECT_EQ(decode_with([](nlmsghdr *nlh) { mnl_attr_put_u64(nlh, GAPPACE_A_RTO_RTO_US, 1); }),
		  "malformed rto_us in kernel reply");
	EXPECT_EQ(decode_with([](nlmsghdr *nlh) { mnl_attr_put_u32(nlh, GAPPACE_A_RTO_SPORT, 1); }),
		  "malformed GAPPACE_A_RTO_SPORT in kernel reply");
	EXPECT_EQ(decode_with([](nlmsghdr *nlh) {
			  const uint8_t five[5] = {};
			  mnl_attr_put(nlh, GAPPACE_A_RTO_DADDR_IPV4, sizeof(five), five);
		  }),
		  "malformed GAPPACE_A_RTO_DADDR_IPV4 in kernel reply");
	EXPECT_EQ(decode_with([](nlmsghdr *nlh) {
			  const uint8_t four[4] = {};
			  mnl_attr_put(nlh, GAPPACE_A_RTO_SADDR_IPV6, sizeof(four), four);
		  }),
		  "malformed GAPPACE_A_RTO_SADDR_IPV6 in kernel reply");
}

TEST(FieldTables, CoverTheWholeUapi)
{
	// Every GAPPACE_A_STATS_* counter and every tc_gappace_xstats member has a row.
	EXPECT_EQ(kCounterFields.size(), size_t{GAPPACE_A_STATS_MAX - GAPPACE_A_STATS_PAD});
	size_t xstats_bytes = 0;
	for (const auto &field : kXstatsFields)
		xstats_bytes += field.size;
	EXPECT_EQ(xstats_bytes, sizeof(tc_gappace_xstats));
	// Every u32 GAPPACE_A_RTO_* value (all but PAD, the addresses and the ports) has a row.
	EXPECT_EQ(kRtoFields.size(), size_t{GAPPACE_A_RTO_MAX - GAPPACE_A_RTO_DPORT});
	for (size_t i = 0; i < kRtoFields.size(); ++i)
		EXPECT_EQ(kRtoFields[i].attr, GAPPACE_A_RTO_DPORT + 1 + i) << kRtoFields[i].key;
}

} // namespace
} // namespace gp
