#include <gtest/gtest.h>
#include <sys/socket.h>

#include "output.hpp"
#include "test_util.hpp"

namespace gp {
namespace {

std::string fake_ifname(uint32_t ifindex)
{
	return ifindex == 7 ? "eth0" : "";
}

RuleInfo sample_rule()
{
	RuleInfo rule;
	rule.ifindex = 7;
	rule.dst = *parse_prefix("10.0.1.1/32");
	rule.rate = 100000000;
	Counters stats;
	stats.by_attr[GAPPACE_A_STATS_DATA_PACKETS] = 1000;
	stats.by_attr[GAPPACE_A_STATS_DATA_BYTES] = 1514000;
	stats.by_attr[GAPPACE_A_STATS_GAP_FRAMES] = 12;
	stats.by_attr[GAPPACE_A_STATS_DROPS] = 0;
	stats.by_attr[GAPPACE_A_STATS_ACHIEVED_RATE] = 99500000;
	stats.by_attr[GAPPACE_A_STATS_BACKLOG] = 3;
	rule.stats = stats;
	return rule;
}

DeviceStats sample_device_stats()
{
	DeviceStats stats;
	stats.ifindex = 7;
	stats.linkrate = 1000000000;
	stats.linkrate_auto = true;
	stats.ifg = 12;
	stats.limit = 1000;
	stats.rules = 1;
	Counters counters;
	counters.by_attr[GAPPACE_A_STATS_DATA_PACKETS] = 5;
	counters.by_attr[GAPPACE_A_STATS_PACED_PACKETS] = 4;
	stats.stats = counters;
	return stats;
}

TEST(RuleOutput, Text)
{
	EXPECT_EQ(format_rule_text(sample_rule(), fake_ifname),
		  "dev eth0 dst 10.0.1.1/32 rate 100Mbit\n"
		  "    data_packets 1000 data_bytes 1514000\n"
		  "    gap_frames 12\n"
		  "    drops 0 achieved_rate 99.5Mbit backlog 3\n");
}

TEST(RuleOutput, TextForAVanishedDeviceAndNoStats)
{
	RuleInfo rule;
	rule.ifindex = 9;
	rule.dst = *parse_prefix("2001:db8::/32");
	rule.rate = 1500;
	EXPECT_EQ(format_rule_text(rule, fake_ifname), "ifindex 9 dst 2001:db8::/32 rate 1.5Kbit\n");
}

TEST(RuleOutput, Json)
{
	JsonWriter json;
	write_rule_json(json, sample_rule(), fake_ifname);
	EXPECT_EQ(json.str(), "{\"ifname\":\"eth0\",\"ifindex\":7,\"dst\":\"10.0.1.1/32\",\"rate\":100000000,"
			      "\"stats\":{\"data_packets\":1000,\"data_bytes\":1514000,\"gap_frames\":12,"
			      "\"drops\":0,\"achieved_rate\":99500000,\"backlog\":3}}");
}

TEST(DeviceStatsOutput, TextAndJson)
{
	EXPECT_EQ(format_device_stats_text(sample_device_stats(), fake_ifname),
		  "dev eth0 linkrate 1Gbit (auto) ifg 12 limit 1000 rules 1\n"
		  "    data_packets 5\n"
		  "    paced_packets 4\n");
	JsonWriter json;
	write_device_stats_json(json, sample_device_stats(), fake_ifname);
	EXPECT_EQ(json.str(), "{\"ifname\":\"eth0\",\"ifindex\":7,\"linkrate\":1000000000,\"linkrate_auto\":true,"
			      "\"ifg\":12,\"limit\":1000,\"rules\":1,"
			      "\"stats\":{\"data_packets\":5,\"paced_packets\":4}}");
}

QdiscInfo sample_qdisc(size_t xstats_len)
{
	QdiscInfo qdisc;
	qdisc.ifindex = 7;
	qdisc.handle = 0x80010000;
	qdisc.parent = TC_H_ROOT;
	qdisc.kind = "gappace";
	qdisc.options.linkrate = 0;
	qdisc.options.ifg = 100;
	QdiscXstats xstats;
	xstats.values.linkrate = 1000000000;
	xstats.values.data_packets = 10;
	xstats.values.qlen = 2;
	xstats.received_len = xstats_len;
	qdisc.xstats = xstats;
	return qdisc;
}

TEST(QdiscOutput, Text)
{
	EXPECT_EQ(format_qdisc_text(sample_qdisc(sizeof(tc_gappace_xstats)), fake_ifname),
		  "dev eth0 qdisc gappace 8001: root linkrate auto ifg 100\n"
		  "    linkrate 1Gbit rules 0 ifg 0 limit 0 qlen 2\n"
		  "    data_packets 10 data_bytes 0 data_wire_bytes 0\n"
		  "    gap_frames 0 gap_bytes 0 gap_wire_bytes 0\n"
		  "    paced_packets 0 gso_segmented 0 drops 0 idle_resyncs 0 gap_alloc_failures 0 lookahead_waits 0\n");
}

TEST(QdiscOutput, JsonShowsOnlyReceivedXstats)
{
	JsonWriter json;
	write_qdisc_json(json, sample_qdisc(16), fake_ifname); // an old module: 2 fields
	EXPECT_EQ(json.str(), "{\"ifname\":\"eth0\",\"ifindex\":7,\"kind\":\"gappace\",\"handle\":\"8001:\","
			      "\"root\":true,\"options\":{\"linkrate\":0,\"ifg\":100},"
			      "\"xstats\":{\"linkrate\":1000000000,\"data_packets\":10}}");
}

TEST(QdiscOutput, TextShowsOnlyReceivedXstats)
{
	EXPECT_EQ(format_qdisc_text(sample_qdisc(16), fake_ifname),
		  "dev eth0 qdisc gappace 8001: root linkrate auto ifg 100\n"
		  "    linkrate 1Gbit\n"
		  "    data_packets 10\n");
}

TEST(Report, EmptyJsonIsAnEmptyArray)
{
	Report report(OutputFormat::Json, fake_ifname);
	EXPECT_EQ(report.finish(), "[]\n");
	Report text(OutputFormat::Text, fake_ifname);
	EXPECT_EQ(text.finish(), "");
}

TEST(Report, JsonArrayOfRules)
{
	Report report(OutputFormat::Json, fake_ifname);
	RuleInfo rule;
	rule.ifindex = 7;
	rule.dst = *parse_prefix("10.0.0.0/8");
	rule.rate = 1000;
	report.add(rule);
	rule.dst = *parse_prefix("::1");
	report.add(rule);
	EXPECT_EQ(report.finish(), "[{\"ifname\":\"eth0\",\"ifindex\":7,\"dst\":\"10.0.0.0/8\",\"rate\":1000},"
				   "{\"ifname\":\"eth0\",\"ifindex\":7,\"dst\":\"::1/128\",\"rate\":1000}]\n");
}

TEST(Report, PrettyJson)
{
	Report report(OutputFormat::PrettyJson, fake_ifname);
	RuleInfo rule;
	rule.ifindex = 7;
	rule.dst = *parse_prefix("10.0.0.0/8");
	rule.rate = 1000;
	rule.stats = Counters{};
	report.add(rule);
	EXPECT_EQ(report.finish(), "[\n"
				   "    {\n"
				   "        \"ifname\": \"eth0\",\n"
				   "        \"ifindex\": 7,\n"
				   "        \"dst\": \"10.0.0.0/8\",\n"
				   "        \"rate\": 1000,\n"
				   "        \"stats\": {}\n"
				   "    }\n"
				   "]\n");
}

// ------------------------------------------------------------------ rto

RtoTarget rto_connection()
{
	RtoTarget target;
	target.local = *parse_endpoint("10.0.0.1:40000");
	target.peer = *parse_endpoint("10.0.0.2:5001");
	return target;
}

RtoTarget rto_peer()
{
	RtoTarget target;
	target.peer = *parse_host_address("fd00::2");
	return target;
}

RtoInfo rto_set_reply(uint32_t count)
{
	RtoInfo reply;
	reply.values[GAPPACE_A_RTO_COUNT] = count;
	reply.values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US] = 8000;
	reply.values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US] = 4000;
	return reply;
}

RtoInfo rto_override(bool with_ttl)
{
	RtoInfo rto;
	rto.local = *parse_endpoint("[fd00::1]:40000");
	rto.peer = *parse_endpoint("[fd00::2]:5001");
	rto.values[GAPPACE_A_RTO_RTO_MIN_US] = 5000;
	rto.values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US] = 8000;
	rto.values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US] = 4000;
	rto.values[GAPPACE_A_RTO_ORIG_RTO_MIN_US] = 200000;
	rto.values[GAPPACE_A_RTO_ORIG_DELACK_MAX_US] = 40000;
	rto.values[GAPPACE_A_RTO_RTO_US] = 208000;
	rto.values[GAPPACE_A_RTO_OWNER_PORTID] = 2151680;
	rto.values[GAPPACE_A_RTO_OWNER_PID] = 1234;
	if (with_ttl)
		rto.values[GAPPACE_A_RTO_TTL_LEFT_MS] = 59000;
	return rto;
}

TEST(RtoOutput, SetTextSaysWhatWasAppliedAndThatItIsHeld)
{
	RtoSettings asked;
	asked.rto_min_us = 5000;
	EXPECT_EQ(format_rto_set_text(rto_connection(), asked, rto_set_reply(1)),
		  "rto 10.0.0.1:40000 -> 10.0.0.2:5001: floor 8000us (asked 5000us), delack 4000us; "
		  "held until gapctl exits (Ctrl-C)\n");

	asked.rto_min_us = 8000;
	asked.delack_max_us = 3000;
	asked.ttl_ms = 60000;
	EXPECT_EQ(format_rto_set_text(rto_peer(), asked, rto_set_reply(3)),
		  "rto peer fd00::2: 3 connections, floor 8000us, delack 4000us (asked 3000us); "
		  "held for 60000ms or until gapctl exits (Ctrl-C)\n");
}

TEST(RtoOutput, SetJsonIsOneObjectInBaseUnits)
{
	JsonWriter json;
	write_rto_set_json(json, rto_set_reply(1));
	EXPECT_EQ(finish_json(OutputFormat::Json, json),
		  "{\"count\":1,\"effective_rto_min_us\":8000,\"effective_delack_max_us\":4000}\n");
	EXPECT_EQ(finish_json(OutputFormat::PrettyJson, json), "{\n"
							       "    \"count\": 1,\n"
							       "    \"effective_rto_min_us\": 8000,\n"
							       "    \"effective_delack_max_us\": 4000\n"
							       "}\n");
}

TEST(RtoOutput, Clear)
{
	RtoInfo reply;
	reply.values[GAPPACE_A_RTO_COUNT] = 2;
	EXPECT_EQ(format_rto_clear_text(rto_peer(), reply), "rto peer fd00::2: restored 2 connections\n");
	reply.values[GAPPACE_A_RTO_COUNT] = 1;
	EXPECT_EQ(format_rto_clear_text(rto_connection(), reply),
		  "rto 10.0.0.1:40000 -> 10.0.0.2:5001: restored 1 connection\n");
	JsonWriter json;
	write_rto_clear_json(json, reply);
	EXPECT_EQ(json.str(), "{\"count\":1}");
}

TEST(RtoOutput, ShowText)
{
	EXPECT_EQ(format_rto_text(rto_override(true)),
		  "[fd00::1]:40000 -> [fd00::2]:5001 rto_min 8000us (asked 5000us) delack_max 4000us rto 208000us\n"
		  "    orig rto_min 200000us delack_max 40000us\n"
		  "    owner pid 1234 portid 2151680 ttl_left 59000ms\n");
	EXPECT_EQ(format_rto_text(rto_override(false)),
		  "[fd00::1]:40000 -> [fd00::2]:5001 rto_min 8000us (asked 5000us) delack_max 4000us rto 208000us\n"
		  "    orig rto_min 200000us delack_max 40000us\n"
		  "    owner pid 1234 portid 2151680\n");
}

TEST(RtoOutput, ShowJsonHasTtlLeftOnlyWhenSent)
{
	JsonWriter with;
	write_rto_json(with, rto_override(true));
	EXPECT_EQ(with.str(), "{\"local\":\"[fd00::1]:40000\",\"peer\":\"[fd00::2]:5001\",\"rto_min_us\":5000,"
			      "\"effective_rto_min_us\":8000,\"effective_delack_max_us\":4000,"
			      "\"orig_rto_min_us\":200000,\"orig_delack_max_us\":40000,\"rto_us\":208000,"
			      "\"owner_portid\":2151680,\"owner_pid\":1234,\"ttl_left_ms\":59000}");
	JsonWriter without;
	write_rto_json(without, rto_override(false));
	EXPECT_EQ(without.str().find("ttl_left_ms"), std::string::npos);
}

TEST(RtoOutput, ShowReport)
{
	Report empty(OutputFormat::Json, fake_ifname);
	EXPECT_EQ(empty.finish(), "[]\n");

	RtoInfo rto;
	rto.local = *parse_endpoint("10.0.0.1:40000");
	rto.peer = *parse_endpoint("10.0.0.2:5001");
	rto.values[GAPPACE_A_RTO_RTO_MIN_US] = 5000;
	rto.values[GAPPACE_A_RTO_DELACK_MAX_US] = 3000;
	Report json(OutputFormat::Json, fake_ifname);
	json.add(rto);
	json.add(rto);
	EXPECT_EQ(json.finish(), "[{\"local\":\"10.0.0.1:40000\",\"peer\":\"10.0.0.2:5001\",\"rto_min_us\":5000,"
				 "\"delack_max_us\":3000},"
				 "{\"local\":\"10.0.0.1:40000\",\"peer\":\"10.0.0.2:5001\",\"rto_min_us\":5000,"
				 "\"delack_max_us\":3000}]\n");
	Report text(OutputFormat::Text, fake_ifname);
	text.add(rto);
	EXPECT_EQ(text.finish(), "10.0.0.1:40000 -> 10.0.0.2:5001\n");
}

TEST(PrettyJson, LeavesStringsAlone)
{
	EXPECT_EQ(pretty_json("{\"a,b\":\"{x:[y]}\\\"\"}"), "{\n    \"a,b\": \"{x:[y]}\\\"\"\n}");
}

} // namespace
} // namespace gp
