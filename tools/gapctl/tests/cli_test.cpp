#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "cli.hpp"
#include "commands.hpp"
#include "endpoint.hpp"

namespace gp {
namespace {

using Words = std::vector<std::string_view>;

// ------------------------------------------------------------------ keyword grammar

TEST(ParseKeywords, AcceptsValuesAndFlags)
{
	const std::vector<Keyword> grammar{{"dev", KeywordKind::Value, true}, {"replace", KeywordKind::Flag}};
	const Words args{"replace", "dev", "eth0"};
	auto values = parse_keywords(args, grammar);
	ASSERT_TRUE(values) << values.error().message;
	EXPECT_EQ(values->size(), 2u);
	EXPECT_EQ(values->at("dev"), "eth0");
	EXPECT_EQ(values->at("replace"), "");
}

TEST(ParseKeywords, RejectsUnknownKeyword)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev", "eth0", "speed", "1"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "unknown keyword \"speed\"");
	EXPECT_EQ(values.error().err, EINVAL);
}

TEST(ParseKeywords, RejectsMissingValue)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "missing value after \"dev\"");
}

TEST(ParseKeywords, RejectsDuplicateKeyword)
{
	const std::vector<Keyword> grammar{{"dev"}};
	const Words args{"dev", "eth0", "dev", "eth1"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "duplicate keyword \"dev\"");
}

TEST(ParseKeywords, RejectsMissingRequiredKeyword)
{
	const std::vector<Keyword> grammar{{"dev", KeywordKind::Value, true}, {"limit"}};
	const Words args{"limit", "5"};
	auto values = parse_keywords(args, grammar);
	ASSERT_FALSE(values);
	EXPECT_EQ(values.error().message, "missing \"dev\"");
}

// ------------------------------------------------------------------ qdisc

TEST(QdiscArgs, AttachWithAllOptions)
{
	const Words args{"dev", "eth0", "linkrate", "1gbit", "ifg", "100", "limit", "1000"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dev, "eth0");
	EXPECT_EQ(parsed->options.linkrate, 1000000000u);
	EXPECT_EQ(parsed->options.ifg, 100u);
	EXPECT_EQ(parsed->options.limit, 1000u);
}

TEST(QdiscArgs, AttachWithOnlyDeviceSendsNoOptions)
{
	const Words args{"dev", "eth0"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->options.empty());
}

TEST(QdiscArgs, LinkrateAutoIsZero)
{
	const Words args{"dev", "eth0", "linkrate", "auto"};
	auto parsed = parse_qdisc_change_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_EQ(parsed->options.linkrate, 0u);
	EXPECT_FALSE(parsed->options.ifg);
}

TEST(QdiscArgs, FractionalRateWithUnits)
{
	const Words args{"dev", "eth0", "linkrate", "2.5gbit"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_EQ(parsed->options.linkrate, 2500000000u);
}

TEST(QdiscArgs, ChangeNeedsSomethingToChange)
{
	const Words args{"dev", "eth0"};
	auto parsed = parse_qdisc_change_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "nothing to change: give linkrate, ifg, limit or lookahead");
}

TEST(QdiscArgs, RejectsBadLinkrate)
{
	const Words args{"dev", "eth0", "linkrate", "fast"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid linkrate \"fast\" (a rate: e.g. 100mbit, 1gbit, 2.5gbit)");
}

TEST(QdiscArgs, RejectsIfgBeyondU32)
{
	const Words args{"dev", "eth0", "ifg", "4294967296"};
	auto parsed = parse_qdisc_attach_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid ifg \"4294967296\" (a number up to 4294967295)");
}

TEST(QdiscArgs, LookaheadIsATimeUpToOneSecond)
{
	auto parsed = parse_qdisc_change_args(Words{"dev", "veth0", "lookahead", "200us"});
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->options.lookahead_ns, 200000u);
	parsed = parse_qdisc_change_args(Words{"dev", "veth0", "lookahead", "1s"});
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->options.lookahead_ns, 1000000000u);
	parsed = parse_qdisc_change_args(Words{"dev", "veth0", "lookahead", "0"});
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->options.lookahead_ns, 0u) << "0 switches the bound off";
	for (const char *bad : {"2s", "1001ms", "soon", "-5us"}) {
		auto rejected = parse_qdisc_change_args(Words{"dev", "veth0", "lookahead", bad});
		ASSERT_FALSE(rejected) << bad;
		EXPECT_EQ(rejected.error().message,
			  "invalid lookahead \"" + std::string(bad) + "\" (a time up to 1s, such as 200us; 0 for none)");
	}
}

TEST(QdiscArgs, RejectsSizeWithSuffix)
{
	const Words args{"dev", "eth0", "limit", "10k"};
	EXPECT_FALSE(parse_qdisc_attach_args(args));
}

TEST(QdiscArgs, DetachNeedsDevice)
{
	const Words args{};
	auto parsed = parse_device_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "missing \"dev\"");
}

TEST(QdiscArgs, ShowDeviceIsOptional)
{
	const Words none{};
	auto all = parse_device_filter_args(none);
	ASSERT_TRUE(all);
	EXPECT_FALSE(all->dev);
	const Words one{"dev", "veth0"};
	auto filtered = parse_device_filter_args(one);
	ASSERT_TRUE(filtered);
	EXPECT_EQ(filtered->dev, "veth0");
}

// ------------------------------------------------------------------ pace

TEST(PaceArgs, AddIPv4HostDefaultsToFullLength)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.1", "rate", "100mbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dev, "eth0");
	EXPECT_EQ(parsed->dst.family, AF_INET);
	EXPECT_EQ(parsed->dst.length, 32);
	EXPECT_EQ(parsed->dst.address[0], 10);
	EXPECT_EQ(parsed->dst.address[3], 1);
	EXPECT_EQ(parsed->rate, 100000000u);
	EXPECT_FALSE(parsed->replace);
}

TEST(PaceArgs, AddWithReplaceFlag)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.0/24", "rate", "1mbit", "replace"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->replace);
	EXPECT_EQ(parsed->dst.length, 24);
}

TEST(PaceArgs, ReplaceCommandImpliesReplace)
{
	const Words args{"dev", "eth0", "dst", "10.0.1.0/24", "rate", "1mbit"};
	auto parsed = parse_pace_replace_args(args);
	ASSERT_TRUE(parsed);
	EXPECT_TRUE(parsed->replace);
}

TEST(PaceArgs, IPv6Prefix)
{
	const Words args{"dev", "eth0", "dst", "2001:db8::/32", "rate", "10gbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->dst.family, AF_INET6);
	EXPECT_EQ(parsed->dst.length, 32);
	EXPECT_EQ(parsed->dst.address[0], 0x20);
	EXPECT_EQ(parsed->dst.address[1], 0x01);
	EXPECT_EQ(parsed->dst.address[2], 0x0d);
	EXPECT_EQ(parsed->dst.address[3], 0xb8);
	EXPECT_EQ(parsed->rate, 10000000000u);
	EXPECT_EQ(format_prefix(parsed->dst), "2001:db8::/32");
}

TEST(PaceArgs, IPv6HostDefaultsTo128)
{
	auto prefix = parse_prefix("fe80::1");
	ASSERT_TRUE(prefix);
	EXPECT_EQ(prefix->length, 128);
	EXPECT_EQ(format_prefix(*prefix), "fe80::1/128");
}

TEST(PaceArgs, RejectsBadRate)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1", "rate", "10 furlongs"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid rate \"10 furlongs\" (a rate: e.g. 100mbit, 1gbit, 2.5gbit)");
}

TEST(PaceArgs, RejectsPrefixLengthBeyondAddress)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1/33", "rate", "1mbit"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "invalid prefix \"10.0.0.1/33\": prefix length must be 0..32");
}

TEST(PaceArgs, RejectsIPv6PrefixLengthBeyondAddress)
{
	auto prefix = parse_prefix("2001:db8::/129");
	ASSERT_FALSE(prefix);
	EXPECT_EQ(prefix.error().message, "invalid prefix \"2001:db8::/129\": prefix length must be 0..128");
}

TEST(PaceArgs, RejectsHostBitsBeyondLength)
{
	auto prefix = parse_prefix("10.0.1.1/24");
	ASSERT_FALSE(prefix);
	EXPECT_EQ(prefix.error().message, "invalid prefix \"10.0.1.1/24\": host bits set (did you mean 10.0.1.0/24?)");
}

TEST(PaceArgs, RejectsGarbageAddressAndLength)
{
	EXPECT_FALSE(parse_prefix("10.0.0.256"));
	EXPECT_FALSE(parse_prefix("10.0.0.0/"));
	EXPECT_FALSE(parse_prefix("10.0.0.0/-1"));
	EXPECT_FALSE(parse_prefix("eth0"));
	auto bad = parse_prefix("example.com");
	ASSERT_FALSE(bad);
	EXPECT_EQ(bad.error().message, "invalid prefix \"example.com\": not an IPv4 or IPv6 address");
}

TEST(PaceArgs, DefaultRouteIsAValidPrefix)
{
	auto prefix = parse_prefix("0.0.0.0/0");
	ASSERT_TRUE(prefix);
	EXPECT_EQ(prefix->length, 0);
}

TEST(PaceArgs, DelTakesNoRate)
{
	const Words ok{"dev", "eth0", "dst", "10.0.0.1"};
	auto parsed = parse_pace_del_args(ok);
	ASSERT_TRUE(parsed);
	EXPECT_FALSE(parsed->rate);
	const Words with_rate{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit"};
	auto rejected = parse_pace_del_args(with_rate);
	ASSERT_FALSE(rejected);
	EXPECT_EQ(rejected.error().message, "unknown keyword \"rate\"");
}

TEST(PaceArgs, GroupIsANumberFromOne)
{
	auto grouped = parse_pace_add_args(Words{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "group", "7"});
	ASSERT_TRUE(grouped) << grouped.error().message;
	EXPECT_EQ(grouped->group, 7u);
	auto plain = parse_pace_replace_args(Words{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit"});
	ASSERT_TRUE(plain);
	EXPECT_FALSE(plain->group);
	auto zero = parse_pace_add_args(Words{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "group", "0"});
	ASSERT_FALSE(zero);
	EXPECT_EQ(zero.error().message,
		  "invalid group \"0\" (groups are numbered from 1; leave it out for a rule of its own)");
	EXPECT_FALSE(parse_pace_add_args(Words{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "group", "x"}));
	EXPECT_FALSE(parse_pace_add_args(Words{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "group", "4294967296"}));
	auto del = parse_pace_del_args(Words{"dev", "eth0", "dst", "10.0.0.1", "group", "7"});
	ASSERT_FALSE(del);
	EXPECT_EQ(del.error().message, "unknown keyword \"group\"");
}

TEST(PaceArgs, ReplaceCommandRejectsReplaceFlag)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1", "rate", "1mbit", "replace"};
	EXPECT_FALSE(parse_pace_replace_args(args));
}

TEST(PaceArgs, AddNeedsRate)
{
	const Words args{"dev", "eth0", "dst", "10.0.0.1"};
	auto parsed = parse_pace_add_args(args);
	ASSERT_FALSE(parsed);
	EXPECT_EQ(parsed.error().message, "missing \"rate\"");
}

// ------------------------------------------------------------------ rto

TEST(Endpoint, IPv4AndBracketedIPv6LikeSs)
{
	auto v4 = parse_endpoint("10.0.0.1:5001");
	ASSERT_TRUE(v4) << v4.error().message;
	EXPECT_EQ(v4->family, AF_INET);
	EXPECT_EQ(v4->address[0], 10);
	EXPECT_EQ(v4->address[3], 1);
	EXPECT_EQ(v4->port, 5001);
	EXPECT_EQ(format_endpoint(*v4), "10.0.0.1:5001");

	auto v6 = parse_endpoint("[fd00::1]:65535");
	ASSERT_TRUE(v6) << v6.error().message;
	EXPECT_EQ(v6->family, AF_INET6);
	EXPECT_EQ(v6->address[0], 0xfd);
	EXPECT_EQ(v6->address[15], 1);
	EXPECT_EQ(v6->port, 65535);
	EXPECT_EQ(format_endpoint(*v6), "[fd00::1]:65535");

	// a dual-stack socket's IPv4 connection, as ss prints it: an IPv4 connection to the kernel
	auto mapped = parse_endpoint("[::ffff:10.0.0.1]:22");
	ASSERT_TRUE(mapped);
	EXPECT_EQ(mapped->family, AF_INET);
	EXPECT_EQ(format_endpoint(*mapped), "10.0.0.1:22");
	auto mapped_peer = parse_host_address("::ffff:10.0.0.2");
	ASSERT_TRUE(mapped_peer);
	EXPECT_EQ(format_endpoint(*mapped_peer), "10.0.0.2");
}

TEST(Endpoint, RejectsBadAddressesAndPorts)
{
	const std::vector<std::pair<std::string_view, std::string_view>> cases{
		{"10.0.0.1", "invalid address \"10.0.0.1\": missing :PORT (ADDR:PORT, [IPV6]:PORT)"},
		{"10.0.0.1:0", "invalid address \"10.0.0.1:0\": port must be 1..65535"},
		{"10.0.0.1:65536", "invalid address \"10.0.0.1:65536\": port must be 1..65535"},
		{"10.0.0.1:ssh", "invalid address \"10.0.0.1:ssh\": port must be 1..65535"},
		{"10.0.0.1:", "invalid address \"10.0.0.1:\": port must be 1..65535"},
		{"10.0.0.256:1", "invalid address \"10.0.0.256:1\": not an IPv4 address"},
		{"fd00::1:5001", "invalid address \"fd00::1:5001\": an IPv6 address needs brackets: [ADDR]:PORT"},
		{"[fd00::1]", "invalid address \"[fd00::1]\": missing :PORT after ']'"},
		{"[fd00::1:5001", "invalid address \"[fd00::1:5001\": missing ']'"},
		{"[10.0.0.1]:80", "invalid address \"[10.0.0.1]:80\": not an IPv6 address in brackets"},
		{"[fe80::1%nosuchdev9]:22", "invalid address \"[fe80::1%nosuchdev9]:22\": zone index \"nosuchdev9\" is no network interface here"},
		{"10.0.0.1%:22", "invalid address \"10.0.0.1%:22\": empty zone index after '%'"},
		{"10.0.0.1%lo%lo:22", "invalid address \"10.0.0.1%lo%lo:22\": more than one zone index (%IFACE)"},
		{"10.0.0.1%4000000000:22", "invalid address \"10.0.0.1%4000000000:22\": zone index \"4000000000\" is no network interface here"},
		{"10.0.0.256%lo:1", "invalid address \"10.0.0.256%lo:1\": not an IPv4 address"},
	};
	for (const auto &[text, message] : cases) {
		auto parsed = parse_endpoint(text);
		ASSERT_FALSE(parsed) << text;
		EXPECT_EQ(parsed.error().message, message);
		EXPECT_EQ(parsed.error().err, EINVAL);
	}
}

// ss shows a socket bound to a device as ADDR%DEV:PORT; the zone is checked and dropped (the
// module finds a bound socket by its tuple). lo exists in every namespace, as index 1.
TEST(Endpoint, ZoneOfABoundSocketIsAccepted)
{
	auto v4 = parse_endpoint("10.0.0.1%lo:5001");
	ASSERT_TRUE(v4) << v4.error().message;
	EXPECT_EQ(format_endpoint(*v4), "10.0.0.1:5001");
	auto v6 = parse_endpoint("[fe80::1%lo]:22");
	ASSERT_TRUE(v6) << v6.error().message;
	EXPECT_EQ(format_endpoint(*v6), "[fe80::1]:22");
	auto by_index = parse_endpoint("[fe80::1%1]:22");
	ASSERT_TRUE(by_index) << by_index.error().message;
	EXPECT_EQ(*by_index, *v6);
	// A peer address takes none: dropped, it would widen the peer to every link.
	auto peer = parse_host_address("fe80::1%lo");
	ASSERT_FALSE(peer);
	EXPECT_EQ(peer.error().message,
		  "invalid peer address \"fe80::1%lo\": zone indexes (%IFACE) are not supported for a peer address");
}

TEST(Endpoint, PeerAddressHasNoPort)
{
	auto v4 = parse_host_address("10.0.0.2");
	ASSERT_TRUE(v4);
	EXPECT_EQ(v4->family, AF_INET);
	EXPECT_EQ(v4->port, 0);
	EXPECT_EQ(format_endpoint(*v4), "10.0.0.2");
	auto v6 = parse_host_address("fd00::2");
	ASSERT_TRUE(v6);
	EXPECT_EQ(v6->family, AF_INET6);
	EXPECT_EQ(format_endpoint(*v6), "fd00::2");
	auto bracketed = parse_host_address("[fd00::2]");
	ASSERT_TRUE(bracketed);
	EXPECT_EQ(*bracketed, *v6);

	auto with_port = parse_host_address("10.0.0.2:5001");
	ASSERT_FALSE(with_port);
	EXPECT_EQ(with_port.error().message, "invalid peer address \"10.0.0.2:5001\": an address without a port "
					     "(for one connection give both ends)");
	EXPECT_FALSE(parse_host_address("[fd00::2]:5001"));
	EXPECT_FALSE(parse_host_address("[10.0.0.2]"));
	auto junk = parse_host_address("host.example");
	ASSERT_FALSE(junk);
	EXPECT_EQ(junk.error().message, "invalid peer address \"host.example\": not an IPv4 or IPv6 address");
}

TEST(RtoArgs, SetConnectionWithUnits)
{
	const Words args{"10.0.0.1:40000", "10.0.0.2:5001", "5ms", "delack", "2ms", "ttl", "60s"};
	auto parsed = parse_rto_set_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	ASSERT_TRUE(parsed->target.local);
	EXPECT_FALSE(parsed->target.is_peer_only());
	EXPECT_EQ(format_endpoint(*parsed->target.local), "10.0.0.1:40000");
	EXPECT_EQ(format_endpoint(parsed->target.peer), "10.0.0.2:5001");
	EXPECT_EQ(parsed->settings.rto_min_us, 5000u);
	EXPECT_EQ(parsed->settings.delack_max_us, 2000u);
	EXPECT_EQ(parsed->settings.ttl_ms, 60000u);
}

TEST(RtoArgs, SetBareNumberIsMicrosecondsAndOptionsAreOptional)
{
	const Words args{"[fd00::1]:40000", "[fd00::2]:5001", "8000"};
	auto parsed = parse_rto_set_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->target.local->family, AF_INET6);
	EXPECT_EQ(parsed->target.peer.family, AF_INET6);
	EXPECT_EQ(parsed->target.peer.port, 5001);
	EXPECT_EQ(parsed->settings.rto_min_us, 8000u);
	EXPECT_FALSE(parsed->settings.delack_max_us);
	EXPECT_FALSE(parsed->settings.ttl_ms);
}

TEST(RtoArgs, SetPeerInAnyKeywordOrder)
{
	const Words args{"peer", "fd00::2", "0.01s", "ttl", "1500us", "delack", "200us"};
	auto parsed = parse_rto_set_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_TRUE(parsed->target.is_peer_only());
	EXPECT_EQ(parsed->target.peer.family, AF_INET6);
	EXPECT_EQ(parsed->target.peer.port, 0);
	EXPECT_EQ(parsed->settings.rto_min_us, 10000u);
	EXPECT_EQ(parsed->settings.delack_max_us, 200u);
	EXPECT_EQ(parsed->settings.ttl_ms, 2u); // rounded up to whole milliseconds
}

TEST(RtoArgs, SetRejects)
{
	const std::vector<std::pair<Words, std::string_view>> cases{
		{{}, "missing the connection: SADDR:SPORT DADDR:DPORT, or peer ADDR"},
		{{"peer"}, "missing address after \"peer\""},
		{{"peer", "10.0.0.2"}, "missing TIME (the RTO floor, e.g. 5ms)"},
		{{"peer", "10.0.0.2", "delack", "1ms"}, "missing TIME (the RTO floor, e.g. 5ms) before \"delack\""},
		{{"peer", "10.0.0.2:5001", "5ms"},
		 "invalid peer address \"10.0.0.2:5001\": an address without a port (for one connection give both ends)"},
		{{"10.0.0.1:40000"}, "missing the peer end DADDR:DPORT after \"10.0.0.1:40000\""},
		{{"10.0.0.1:40000", "[fd00::2]:5001", "5ms"},
		 "both ends must be IPv4 or both IPv6: \"10.0.0.1:40000\" \"[fd00::2]:5001\""},
		{{"10.0.0.1:0", "10.0.0.2:5001", "5ms"}, "invalid address \"10.0.0.1:0\": port must be 1..65535"},
		{{"10.0.0.1:40000", "10.0.0.2:5001"}, "missing TIME (the RTO floor, e.g. 5ms)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "5 ms"},
		 "invalid TIME \"5 ms\" (a time: e.g. 5ms, 200us, 0.01s; a bare number is microseconds)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "5min"},
		 "invalid TIME \"5min\" (a time: e.g. 5ms, 200us, 0.01s; a bare number is microseconds)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "0"}, "invalid TIME \"0\" (must be 1us .. 4294967295us)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "0ms"}, "invalid TIME \"0ms\" (must be 1us .. 4294967295us)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "4294967296"},
		 "invalid TIME \"4294967296\" (must be 1us .. 4294967295us)"},
		{{"10.0.0.1:40000", "10.0.0.2:5001", "4295s"}, "invalid TIME \"4295s\" (must be 1us .. 4294967295us)"},
		{{"peer", "10.0.0.2", "5ms", "delack", "0"}, "invalid delack \"0\" (must be 1us .. 4294967295us)"},
		{{"peer", "10.0.0.2", "5ms", "delack", "fast"},
		 "invalid delack \"fast\" (a time: e.g. 5ms, 200us, 0.01s; a bare number is microseconds)"},
		{{"peer", "10.0.0.2", "5ms", "ttl", "0s"}, "invalid ttl \"0s\" (must be 1ms .. 4294967295ms)"},
		{{"peer", "10.0.0.2", "5ms", "ttl", "4294968s"}, "invalid ttl \"4294968s\" (must be 1ms .. 4294967295ms)"},
		{{"peer", "10.0.0.2", "5ms", "ttl", "forever"},
		 "invalid ttl \"forever\" (a time: e.g. 30s, 500ms; a bare number is microseconds)"},
		{{"peer", "10.0.0.2", "5ms", "ttl", "1s", "ttl", "2s"}, "duplicate keyword \"ttl\""},
		{{"peer", "10.0.0.2", "5ms", "delack", "1ms", "delack", "1ms"}, "duplicate keyword \"delack\""},
		{{"peer", "10.0.0.2", "5ms", "6ms"}, "unknown keyword \"6ms\""},
		{{"peer", "10.0.0.2", "5ms", "ttl"}, "missing value after \"ttl\""},
	};
	for (const auto &[args, message] : cases) {
		auto parsed = parse_rto_set_args(args);
		ASSERT_FALSE(parsed) << message;
		EXPECT_EQ(parsed.error().message, message);
		EXPECT_EQ(parsed.error().err, EINVAL);
	}
}

TEST(RtoArgs, SetLargestValues)
{
	const Words args{"peer", "10.0.0.2", "4294967295", "ttl", "4294967295ms"};
	auto parsed = parse_rto_set_args(args);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(parsed->settings.rto_min_us, 4294967295u);
	EXPECT_EQ(parsed->settings.ttl_ms, 4294967295u);
}

TEST(RtoArgs, Clear)
{
	const Words tuple{"[fd00::1]:40000", "[fd00::2]:5001"};
	auto parsed = parse_rto_clear_args(tuple);
	ASSERT_TRUE(parsed) << parsed.error().message;
	EXPECT_EQ(format_endpoint(*parsed->target.local), "[fd00::1]:40000");
	EXPECT_EQ(format_endpoint(parsed->target.peer), "[fd00::2]:5001");

	const Words peer{"peer", "10.0.0.2"};
	auto by_peer = parse_rto_clear_args(peer);
	ASSERT_TRUE(by_peer);
	EXPECT_TRUE(by_peer->target.is_peer_only());

	const Words extra{"peer", "10.0.0.2", "5ms"};
	auto rejected = parse_rto_clear_args(extra);
	ASSERT_FALSE(rejected);
	EXPECT_EQ(rejected.error().message, "unexpected \"5ms\"");
	const Words mixed{"[fd00::1]:1", "10.0.0.2:2"};
	EXPECT_FALSE(parse_rto_clear_args(mixed));
}

TEST(RtoArgs, ShowTakesNothing)
{
	EXPECT_TRUE(parse_no_args(Words{}));
	auto rejected = parse_no_args(Words{"dev", "eth0"});
	ASSERT_FALSE(rejected);
	EXPECT_EQ(rejected.error().message, "unexpected \"dev\"");
}

// ------------------------------------------------------------------ global options

TEST(CommandLine, JsonAndPretty)
{
	const char *argv[] = {"gapctl", "-j", "-p", "pace", "show"};
	auto line = parse_command_line(argv);
	ASSERT_TRUE(line);
	EXPECT_EQ(line->options.format, OutputFormat::PrettyJson);
	ASSERT_EQ(line->words.size(), 2u);
	EXPECT_EQ(line->words[0], "pace");
	EXPECT_EQ(line->words[1], "show");
}

TEST(CommandLine, PrettyAloneIsText)
{
	const char *argv[] = {"gapctl", "-p", "stats"};
	auto line = parse_command_line(argv);
	ASSERT_TRUE(line);
	EXPECT_EQ(line->options.format, OutputFormat::Text);
}

TEST(CommandLine, UnknownOption)
{
	const char *argv[] = {"gapctl", "-x", "stats"};
	auto line = parse_command_line(argv);
	ASSERT_FALSE(line);
	EXPECT_EQ(line.error().message, "unknown option \"-x\"");
}

// ------------------------------------------------------------------ dispatch (no kernel needed)

struct Captured {
	int status;
	std::string out;
	std::string err;
};

std::string read_all(FILE *f)
{
	std::fflush(f);
	std::rewind(f);
	std::string text;
	char chunk[512];
	size_t n;
	while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0)
		text.append(chunk, n);
	std::fclose(f);
	return text;
}

Captured run_words(Words words, GlobalOptions options = {})
{
	FILE *out = std::tmpfile();
	FILE *err = std::tmpfile();
	const int status = dispatch(options, words, out, err);
	return {status, read_all(out), read_all(err)};
}

TEST(Dispatch, UsageErrorPrintsThatCommandsUsageAndExits2)
{
	auto result = run_words({"pace", "add", "dev", "eth0", "dst", "10.0.0.1/33", "rate", "1mbit"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.out, "");
	EXPECT_EQ(result.err, "gapctl: invalid prefix \"10.0.0.1/33\": prefix length must be 0..32\n"
			      "Usage: gapctl pace add dev DEV dst PREFIX rate RATE [group N] [replace]\n");
}

TEST(Dispatch, UnknownObject)
{
	auto result = run_words({"route", "show"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.err.rfind("gapctl: unknown object \"route\"\nUsage: gapctl", 0), 0u) << result.err;
}

TEST(Dispatch, UnknownVerb)
{
	auto result = run_words({"qdisc", "frobnicate"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.err.rfind("gapctl: unknown command \"frobnicate\" for qdisc\n", 0), 0u) << result.err;
}

TEST(Dispatch, NoArgumentsIsAUsageError)
{
	auto result = run_words({});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_NE(result.err.find("Usage: gapctl"), std::string::npos);
}

TEST(Dispatch, HelpGoesToStdout)
{
	auto all = run_words({"help"});
	EXPECT_EQ(all.status, kExitSuccess);
	EXPECT_NE(all.out.find("gapctl stats [dev DEV]"), std::string::npos);
	EXPECT_NE(all.out.find("gapctl qdisc detach dev DEV"), std::string::npos);

	auto object = run_words({"pace", "help"});
	EXPECT_EQ(object.status, kExitSuccess);
	EXPECT_EQ(object.out, "Usage: gapctl pace add dev DEV dst PREFIX rate RATE [group N] [replace]\n"
			      "       gapctl pace replace dev DEV dst PREFIX rate RATE [group N]\n"
			      "       gapctl pace del dev DEV dst PREFIX\n"
			      "       gapctl pace show [dev DEV]\n");

	auto verb = run_words({"qdisc", "detach", "help"});
	EXPECT_EQ(verb.status, kExitSuccess);
	EXPECT_EQ(verb.out, "Usage: gapctl qdisc detach dev DEV\n");
}

TEST(Dispatch, RtoUsageErrorsExit2BeforeTouchingTheKernel)
{
	auto result = run_words({"rto", "set", "10.0.0.1:40000", "[fd00::2]:5001", "5ms"});
	EXPECT_EQ(result.status, kExitUsage);
	EXPECT_EQ(result.out, "");
	EXPECT_EQ(result.err,
		  "gapctl: both ends must be IPv4 or both IPv6: \"10.0.0.1:40000\" \"[fd00::2]:5001\"\n"
		  "Usage: gapctl rto set { SADDR:SPORT DADDR:DPORT | peer ADDR } TIME [delack TIME] [ttl TIME]\n");

	auto clear = run_words({"rto", "clear", "peer"});
	EXPECT_EQ(clear.status, kExitUsage);
	EXPECT_EQ(clear.err, "gapctl: missing address after \"peer\"\n"
			     "Usage: gapctl rto clear { SADDR:SPORT DADDR:DPORT | peer ADDR }\n");

	auto show = run_words({"rto", "show", "all"});
	EXPECT_EQ(show.status, kExitUsage);
}

TEST(Dispatch, RtoHelpExplainsTheLease)
{
	auto object = run_words({"rto", "help"});
	EXPECT_EQ(object.status, kExitSuccess);
	EXPECT_EQ(object.out,
		  "Usage: gapctl rto set { SADDR:SPORT DADDR:DPORT | peer ADDR } TIME [delack TIME] [ttl TIME]\n"
		  "       gapctl rto clear { SADDR:SPORT DADDR:DPORT | peer ADDR }\n"
		  "       gapctl rto show\n"
		  "rto set keeps running: the override is a lease of its netlink socket, and the kernel\n"
		  "restores the connection when gapctl exits (Ctrl-C, SIGTERM, SIGHUP) or ttl passes.\n");

	auto verb = run_words({"rto", "set", "help"});
	EXPECT_EQ(verb.status, kExitSuccess);
	EXPECT_NE(verb.out.find("lease of its netlink socket"), std::string::npos);

	auto all = run_words({"help"});
	EXPECT_NE(all.out.find("gapctl rto show\n"), std::string::npos);
	EXPECT_NE(all.out.find("TIME   := microseconds"), std::string::npos);
	EXPECT_NE(all.out.find("lease of its netlink socket"), std::string::npos);

	auto pace = run_words({"pace", "help"});
	EXPECT_EQ(pace.out.find("lease"), std::string::npos);
}

TEST(Dispatch, UnknownDeviceFailsLikeIp)
{
	auto result = run_words({"qdisc", "attach", "dev", "gp-no-such-dev"});
	EXPECT_EQ(result.status, kExitFailure);
	EXPECT_EQ(result.err, "gapctl: Cannot find device \"gp-no-such-dev\"\n");
}

TEST(Dispatch, EveryTableEntryHasAHandlerAndItsObjectAndVerbInTheUsage)
{
	for (const auto &command : kCommands) {
		EXPECT_NE(command.handler, nullptr);
		EXPECT_EQ(command.usage.rfind(std::string(command.object) + " " + std::string(command.verb), 0), 0u)
			<< command.usage;
	}
}

} // namespace
} // namespace gp
