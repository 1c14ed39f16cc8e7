// Unit tests of gp-wirecheck's analysis: captures are built in memory (or written with libpcap)
// and every expectation is an exact number, so that a wrong formula fails loudly.
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analysis.hpp"
#include "asserts.hpp"
#include "capture.hpp"
#include "frame.hpp"
#include "options.hpp"
#include "report.hpp"
#include "sequence_tracker.hpp"
#include "traffic_proto.hpp"

namespace gp::wirecheck {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr MacAddress kDevMac{0x52, 0x54, 0x00, 0x12, 0x34, 0x56};
constexpr MacAddress kPeerMac{0x52, 0x54, 0x00, 0xab, 0xcd, 0xef};
constexpr uint64_t kGigabit = 1000ULL * 1000 * 1000;
constexpr uint64_t kFullFrame = 1514;
constexpr uint64_t kFullWire = 1538;

// ---- frame builders

void put16(Bytes &b, uint16_t v)
{
	b.push_back(static_cast<uint8_t>(v >> 8));
	b.push_back(static_cast<uint8_t>(v));
}

void put32(Bytes &b, uint32_t v)
{
	put16(b, static_cast<uint16_t>(v >> 16));
	put16(b, static_cast<uint16_t>(v));
}

Bytes ethernet_header(const MacAddress &dst, const MacAddress &src, uint16_t ethertype)
{
	Bytes b(dst.begin(), dst.end());
	b.insert(b.end(), src.begin(), src.end());
	put16(b, ethertype);
	return b;
}

Bytes pad_to_minimum(Bytes frame)
{
	if (frame.size() < 60)
		frame.resize(60, 0);
	return frame;
}

Bytes gap_frame(size_t length = 60)
{
	Bytes b = ethernet_header(kGapDestination, kDevMac, 0x8808);
	put16(b, 0x0001); // PAUSE
	put16(b, 0);	  // pause_time
	b.resize(length, 0);
	return b;
}

std::array<uint8_t, 4> ipv4(const char *text)
{
	std::array<uint8_t, 4> a{};
	EXPECT_EQ(inet_pton(AF_INET, text, a.data()), 1);
	return a;
}

std::array<uint8_t, 16> ipv6(const char *text)
{
	std::array<uint8_t, 16> a{};
	EXPECT_EQ(inet_pton(AF_INET6, text, a.data()), 1);
	return a;
}

Bytes ipv4_packet(const char *dst, uint8_t protocol, const Bytes &transport)
{
	Bytes b = ethernet_header(kPeerMac, kDevMac, 0x0800);
	b.push_back(0x45);
	b.push_back(0);
	put16(b, static_cast<uint16_t>(20 + transport.size()));
	put32(b, 0); // id, flags, fragment offset
	b.push_back(64);
	b.push_back(protocol);
	put16(b, 0); // checksum: nobody looks
	const auto src = ipv4("10.0.0.1"), dst_bytes = ipv4(dst);
	b.insert(b.end(), src.begin(), src.end());
	b.insert(b.end(), dst_bytes.begin(), dst_bytes.end());
	b.insert(b.end(), transport.begin(), transport.end());
	return pad_to_minimum(b);
}

Bytes udp_segment(uint16_t dst_port, const Bytes &payload)
{
	Bytes b;
	put16(b, 40000);
	put16(b, dst_port);
	put16(b, static_cast<uint16_t>(8 + payload.size()));
	put16(b, 0);
	b.insert(b.end(), payload.begin(), payload.end());
	return b;
}

Bytes tcp_segment(uint32_t seq, size_t payload_length)
{
	Bytes b;
	put16(b, 40000);
	put16(b, 5001);
	put32(b, seq);
	put32(b, 0);	  // ack
	b.push_back(0x50); // data offset 5
	b.push_back(0x18); // PSH ACK
	put16(b, 65535);
	put32(b, 0); // checksum, urgent
	b.resize(b.size() + payload_length, 0);
	return b;
}

Bytes traffic_payload(uint32_t flow_id, uint64_t seq, size_t size = 1472)
{
	Bytes payload(size, 0);
	traffic::encode_payload_header({flow_id, seq}, std::span<uint8_t, traffic::kPayloadHeaderSize>(payload.data(), traffic::kPayloadHeaderSize));
	return payload;
}

// A full 1514-byte frame of gp-traffic's udp-send to `dst`.
Bytes udp_frame(const char *dst, uint32_t flow_id = 1, uint64_t seq = 0, size_t payload = 1472)
{
	return ipv4_packet(dst, IPPROTO_UDP, udp_segment(7000, traffic_payload(flow_id, seq, payload)));
}

Bytes marker_frame(const std::string &text, const char *dst = "10.0.1.1")
{
	const std::string payload = std::string(traffic::kMarkerPrefix) + text;
	return ipv4_packet(dst, IPPROTO_UDP, udp_segment(traffic::kMarkerPort, Bytes(payload.begin(), payload.end())));
}

Bytes arp_frame()
{
	Bytes b = ethernet_header({0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, kDevMac, 0x0806);
	b.resize(42, 0x01);
	return b;
}

Bytes ipv6_udp_frame(const char *dst)
{
	Bytes b = ethernet_header(kPeerMac, kDevMac, 0x86dd);
	const Bytes udp = udp_segment(7000, traffic_payload(2, 0, 100));
	put32(b, 0x60000000);
	put16(b, static_cast<uint16_t>(udp.size()));
	b.push_back(IPPROTO_UDP);
	b.push_back(64);
	const auto src = ipv6("fd00::1"), dst_bytes = ipv6(dst);
	b.insert(b.end(), src.begin(), src.end());
	b.insert(b.end(), dst_bytes.begin(), dst_bytes.end());
	b.insert(b.end(), udp.begin(), udp.end());
	return b;
}

// ---- capture helpers

struct TestFrame {
	Bytes bytes;
	size_t captured = SIZE_MAX; // caplen; the whole frame by default
};

class TestCapture {
public:
	TestCapture &add(Bytes frame, size_t captured = SIZE_MAX)
	{
		frames.push_back({std::move(frame), captured});
		return *this;
	}
	TestCapture &add_gaps(size_t count, size_t length = kFullFrame)
	{
		for (size_t i = 0; i < count; ++i)
			add(gap_frame(length));
		return *this;
	}
	std::vector<TestFrame> frames;
};

CaptureReport analyze(const AnalysisConfig &config, const TestCapture &capture)
{
	Analyzer analyzer(config);
	for (const auto &frame : capture.frames)
		analyzer.add(CapturedFrame{static_cast<uint32_t>(frame.bytes.size()),
					   std::span<const uint8_t>(frame.bytes).first(std::min(frame.captured, frame.bytes.size()))});
	return analyzer.finish();
}

FlowSpec flow(const char *name, const char *prefix, std::optional<uint64_t> rate = std::nullopt)
{
	auto parsed = parse_prefix(prefix);
	EXPECT_TRUE(parsed.has_value());
	return FlowSpec{name, prefix, *parsed, rate};
}

AnalysisConfig gigabit_config(std::vector<FlowSpec> flows = {})
{
	AnalysisConfig config;
	config.linkrate_bps = kGigabit;
	config.device_mac = kDevMac;
	config.flows = std::move(flows);
	return config;
}

const FlowReport &find_flow(const PhaseReport &phase, std::string_view name)
{
	for (const auto &flow : phase.flows)
		if (flow.name == name)
			return flow;
	ADD_FAILURE() << "no flow " << name;
	static FlowReport none;
	return none;
}

GapDefects defects_of(const Bytes &frame, size_t captured = SIZE_MAX)
{
	const DecodedFrame decoded = decode_frame(
		CapturedFrame{static_cast<uint32_t>(frame.size()), std::span<const uint8_t>(frame).first(std::min(captured, frame.size()))},
		kDevMac);
	EXPECT_TRUE(decoded.is_gap);
	return decoded.gap_defects;
}

GapDefects only(GapDefect defect)
{
	GapDefects d;
	d.set(static_cast<size_t>(defect));
	return d;
}

// ---- wire cost

TEST(WireCost, CountsFcsMinimumPreambleAndGap)
{
	EXPECT_EQ(wire_bytes(42), 84u); // ARP: padded to the 64-byte minimum on the wire
	EXPECT_EQ(wire_bytes(60), 84u);
	EXPECT_EQ(wire_bytes(61), 85u);
	EXPECT_EQ(wire_bytes(1514), 1538u);
	EXPECT_EQ(wire_bytes(0), 84u);
}

// ---- gap frame validation

TEST(GapFrame, ProperGapFramesOfEverySizeAreValid)
{
	EXPECT_TRUE(defects_of(gap_frame(60)).none());
	EXPECT_TRUE(defects_of(gap_frame(1514)).none());
	EXPECT_TRUE(defects_of(gap_frame(777)).none());
}

TEST(GapFrame, EachDefectIsReportedAlone)
{
	Bytes wrong_dst = gap_frame();
	wrong_dst[5] = 0x02;
	EXPECT_EQ(defects_of(wrong_dst), only(GapDefect::wrong_dst));

	Bytes wrong_src = gap_frame();
	wrong_src[11] ^= 1;
	EXPECT_EQ(defects_of(wrong_src), only(GapDefect::wrong_src));

	Bytes pfc = gap_frame();
	pfc[14] = 0x01; // opcode 0x0101: priority flow control
	EXPECT_EQ(defects_of(pfc), only(GapDefect::wrong_opcode));

	Bytes real_pause = gap_frame();
	real_pause[17] = 0x10;
	EXPECT_EQ(defects_of(real_pause), only(GapDefect::nonzero_pause_time));

	Bytes dirty = gap_frame();
	dirty[59] = 0xaa;
	EXPECT_EQ(defects_of(dirty), only(GapDefect::nonzero_padding));

	EXPECT_EQ(defects_of(gap_frame(59)), only(GapDefect::bad_length));
	EXPECT_EQ(defects_of(gap_frame(1515)), only(GapDefect::bad_length));

	EXPECT_EQ(defects_of(gap_frame(), 16), only(GapDefect::truncated)); // pause_time not captured
}

TEST(GapFrame, SourceIsUncheckedWithoutDeviceMac)
{
	Bytes wrong_src = gap_frame();
	wrong_src[11] ^= 1;
	const auto decoded = decode_frame(CapturedFrame{60, wrong_src}, std::nullopt);
	EXPECT_TRUE(decoded.is_gap);
	EXPECT_TRUE(decoded.gap_defects.none());
}

TEST(GapFrame, PaddingBeyondTheCapturedBytesIsNotJudged)
{
	Bytes frame = gap_frame(1514);
	frame[1000] = 0xff;
	EXPECT_TRUE(defects_of(frame, 128).none());
	EXPECT_EQ(defects_of(frame), only(GapDefect::nonzero_padding));
}

TEST(GapFrame, InvalidGapsAreCountedPerReasonWithExamples)
{
	Bytes real_pause = gap_frame();
	real_pause[16] = 0xff;
	Bytes both = gap_frame(59);
	both[0] = 0x00;
	TestCapture capture;
	capture.add(gap_frame()).add(real_pause).add(both).add(udp_frame("10.0.1.1"));
	const auto report = analyze(gigabit_config(), capture);
	const auto &invalid = report.total.invalid_gaps;
	EXPECT_EQ(report.total.gap.frames, 3u);
	EXPECT_EQ(invalid.count, 2u);
	EXPECT_EQ(invalid.by_defect[static_cast<size_t>(GapDefect::nonzero_pause_time)], 1u);
	EXPECT_EQ(invalid.by_defect[static_cast<size_t>(GapDefect::wrong_dst)], 1u);
	EXPECT_EQ(invalid.by_defect[static_cast<size_t>(GapDefect::bad_length)], 1u);
	ASSERT_EQ(invalid.examples.size(), 2u);
	EXPECT_EQ(invalid.examples[0], "frame 2: nonzero_pause_time");
	EXPECT_EQ(invalid.examples[1], "frame 3: wrong_dst,bad_length");
}

// ---- phases

TEST(Phases, MarkersSplitTheCaptureAndBelongToOther)
{
	TestCapture capture;
	capture.add(arp_frame()).add(gap_frame());			  // (start)
	capture.add(marker_frame("warmup")).add(udp_frame("10.0.1.1")).add(gap_frame()); // warmup
	capture.add(marker_frame(std::string("run 2\nignored") + '\0')).add(udp_frame("10.0.1.1")); // "run 2"
	const auto report = analyze(gigabit_config({flow("f", "10.0.1.1/32")}), capture);

	ASSERT_EQ(report.phases.size(), 3u);
	EXPECT_EQ(report.phases[0].name, "(start)");
	EXPECT_EQ(report.phases[0].all.frames, 2u);
	EXPECT_EQ(report.phases[0].non_ip, 1u);
	EXPECT_EQ(report.phases[0].markers, 0u);
	EXPECT_EQ(find_flow(report.phases[0], "other").data.frames, 1u); // the ARP frame

	EXPECT_EQ(report.phases[1].name, "warmup");
	EXPECT_EQ(report.phases[1].first_frame, 3u);
	EXPECT_EQ(report.phases[1].all.frames, 3u);
	EXPECT_EQ(report.phases[1].markers, 1u);
	EXPECT_EQ(report.phases[1].data.frames, 2u);
	EXPECT_EQ(report.phases[1].gap.frames, 1u);
	// The marker goes to 10.0.1.1 too, but it is not part of the flow.
	EXPECT_EQ(find_flow(report.phases[1], "f").data.frames, 1u);
	EXPECT_EQ(find_flow(report.phases[1], "other").data.frames, 1u);

	EXPECT_EQ(report.phases[2].name, "run 2");
	EXPECT_EQ(report.phases[2].all.frames, 2u);

	EXPECT_EQ(report.total.name, "(total)");
	EXPECT_EQ(report.total.all.frames, 7u);
	EXPECT_EQ(report.total.markers, 2u);
	EXPECT_EQ(report.total.non_ip, 1u);
	EXPECT_EQ(find_flow(report.total, "f").data.frames, 2u);
	// ARP, 2 gap frames and the first marker (padded to 60 bytes) cost 84 each; the second marker is
	// 64 bytes long (22 bytes of payload).
	EXPECT_EQ(report.total.all.wire_bytes, 4 * 84 + 88 + 2 * kFullWire);
}

TEST(Phases, NoStartPhaseWhenTheCaptureBeginsWithAMarker)
{
	TestCapture capture;
	capture.add(marker_frame("only")).add(gap_frame());
	const auto report = analyze(gigabit_config(), capture);
	ASSERT_EQ(report.phases.size(), 1u);
	EXPECT_EQ(report.phases[0].name, "only");
}

TEST(Phases, NonMarkerTrafficToPortNineIsData)
{
	const std::string not_marker = "GPPHASX oops";
	TestCapture capture;
	capture.add(ipv4_packet("10.0.1.1", IPPROTO_UDP, udp_segment(9, Bytes(not_marker.begin(), not_marker.end()))));
	const auto report = analyze(gigabit_config(), capture);
	ASSERT_EQ(report.phases.size(), 1u);
	EXPECT_EQ(report.phases[0].name, "(start)");
}

// ---- flows: achieved rate and spacing

// A flow at 10% of a gigabit: every 1514-byte frame is followed by exactly 9 full-size gap
// frames, so frame starts are 10 * 1538 = 15380 wire bytes apart: the planned spacing.
TestCapture paced_capture(const std::vector<size_t> &gaps_after_each_frame)
{
	TestCapture capture;
	for (size_t i = 0; i <= gaps_after_each_frame.size(); ++i) {
		capture.add(udp_frame("10.0.1.1", 1, i));
		if (i < gaps_after_each_frame.size())
			capture.add_gaps(gaps_after_each_frame[i]);
	}
	return capture;
}

TEST(Flows, PerfectlyPacedFlowHasNoError)
{
	const auto config = gigabit_config({flow("f", "10.0.1.1/32", 100'000'000)});
	const auto report = analyze(config, paced_capture(std::vector<size_t>(9, 9)));
	const FlowReport &f = find_flow(report.total, "f");
	EXPECT_EQ(f.data.frames, 10u);
	EXPECT_EQ(f.data.bytes, 10 * kFullFrame);
	EXPECT_EQ(f.data.wire_bytes, 10 * kFullWire);
	EXPECT_EQ(f.payload_bytes, 10 * 1472u);
	ASSERT_TRUE(f.achieved_rate_bps);
	EXPECT_DOUBLE_EQ(*f.achieved_rate_bps, 100'000'000.0);
	ASSERT_TRUE(f.rate_error);
	EXPECT_DOUBLE_EQ(*f.rate_error, 0.0);
	// First start to last end: 10 frames in 9 * 15380 + 1538 wire bytes.
	EXPECT_DOUBLE_EQ(*f.achieved_rate_inclusive_bps, 1e9 * 10 / 91);
	EXPECT_DOUBLE_EQ(f.phase_rate_bps, 1e9 * 10 / 91);
	EXPECT_EQ(f.spacing.count, 9u);
	EXPECT_EQ(f.spacing.min, 15380u);
	EXPECT_EQ(f.spacing.max, 15380u);
	EXPECT_DOUBLE_EQ(f.spacing.mean, 15380.0);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_max, 0.0);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_min, 0.0);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_mean_abs, 0.0);
	EXPECT_EQ(f.spacing.violations, 0u);
	EXPECT_EQ(f.spacing.back_to_back, 0u);
	EXPECT_EQ(find_flow(report.total, "other").data.frames, 0u);
}

TEST(Flows, PerturbedSpacingShowsDeviationsAndViolations)
{
	// Gaps after frames: one short (8), one long (10), one missing entirely (0), the rest 9.
	const auto config = gigabit_config({flow("f", "10.0.1.1/32", 100'000'000)});
	const auto report = analyze(config, paced_capture({9, 8, 9, 10, 0, 9}));
	const FlowReport &f = find_flow(report.total, "f");
	EXPECT_EQ(f.spacing.count, 6u);
	EXPECT_EQ(f.spacing.min, kFullWire);
	EXPECT_EQ(f.spacing.max, 11 * kFullWire);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_max, 1538.0);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_min, -13842.0);
	EXPECT_DOUBLE_EQ(*f.spacing.deviation_mean_abs, (1538.0 + 1538.0 + 13842.0) / 6);
	EXPECT_EQ(f.spacing.violations, 2u); // the short one and the missing one
	EXPECT_EQ(f.spacing.back_to_back, 1u);
	// 6 frames' wire over 45 gap frames + 6 frames: 6 / 51 of the link instead of 6 / 60.
	EXPECT_DOUBLE_EQ(*f.achieved_rate_bps, 1e9 * 6 / 51);
	EXPECT_DOUBLE_EQ(*f.rate_error, 60.0 / 51 - 1);
}

TEST(Flows, ToleranceIsTheViolationThreshold)
{
	// Shorten one spacing by exactly 84 wire bytes (a 1430-byte gap frame instead of 1514): at the
	// threshold, not a violation; by 85 it is.
	auto build = [](size_t short_gap_length) {
		TestCapture capture;
		capture.add(udp_frame("10.0.1.1")).add_gaps(8).add(gap_frame(short_gap_length)).add(udp_frame("10.0.1.1"));
		return capture;
	};
	const auto config = gigabit_config({flow("f", "10.0.1.1/32", 100'000'000)});
	const FlowReport at_threshold = find_flow(analyze(config, build(1430)).total, "f");
	EXPECT_DOUBLE_EQ(*at_threshold.spacing.deviation_min, -84.0);
	EXPECT_EQ(at_threshold.spacing.violations, 0u);
	const FlowReport beyond = find_flow(analyze(config, build(1429)).total, "f");
	EXPECT_DOUBLE_EQ(*beyond.spacing.deviation_min, -85.0);
	EXPECT_EQ(beyond.spacing.violations, 1u);

	auto strict = config;
	strict.tolerance_bytes = 0;
	EXPECT_EQ(find_flow(analyze(strict, build(1430)).total, "f").spacing.violations, 1u);
}

TEST(Flows, OtherFlowsFramesCountAsSpaceBetweenFrames)
{
	// Two flows at 50% each, alternating back to back: each sees the other's frame as its gap.
	TestCapture capture;
	for (int i = 0; i < 4; ++i)
		capture.add(udp_frame("10.0.1.1", 1, i)).add(udp_frame("10.0.2.1", 2, i));
	const auto config = gigabit_config({flow("a", "10.0.1.0/24", 500'000'000), flow("b", "10.0.2.1", 500'000'000)});
	const auto report = analyze(config, capture);
	for (const char *name : {"a", "b"}) {
		const FlowReport &f = find_flow(report.total, name);
		EXPECT_EQ(f.data.frames, 4u) << name;
		EXPECT_DOUBLE_EQ(*f.achieved_rate_bps, 5e8) << name;
		EXPECT_EQ(f.spacing.back_to_back, 0u) << name;
		EXPECT_EQ(f.spacing.violations, 0u) << name;
		EXPECT_DOUBLE_EQ(f.phase_rate_bps, 5e8) << name;
	}
}

TEST(Flows, LongestPrefixWinsAndIpv6Matches)
{
	TestCapture capture;
	capture.add(udp_frame("10.0.1.1")).add(udp_frame("10.0.1.2")).add(udp_frame("10.9.9.9"));
	capture.add(ipv6_udp_frame("fd00:1::5")).add(ipv6_udp_frame("fd00:2::5"));
	const auto config = gigabit_config(
		{flow("wide", "10.0.0.0/8"), flow("host", "10.0.1.1/32"), flow("net", "10.0.1.0/24"), flow("v6", "fd00:1::/64")});
	const auto report = analyze(config, capture);
	EXPECT_EQ(find_flow(report.total, "host").data.frames, 1u);
	EXPECT_EQ(find_flow(report.total, "net").data.frames, 1u);
	EXPECT_EQ(find_flow(report.total, "wide").data.frames, 1u);
	EXPECT_EQ(find_flow(report.total, "v6").data.frames, 1u);
	EXPECT_EQ(find_flow(report.total, "other").data.frames, 1u);
	EXPECT_EQ(report.total.non_ip, 0u);
	EXPECT_EQ(report.total.integrity.udp.size(), 2u); // flow ids 1 (IPv4) and 2 (IPv6)
}

TEST(Flows, SingleFrameHasNoAchievedRate)
{
	TestCapture capture;
	capture.add(udp_frame("10.0.1.1")).add_gaps(3);
	const auto report = analyze(gigabit_config({flow("f", "10.0.1.1", 100'000'000)}), capture);
	const FlowReport &f = find_flow(report.total, "f");
	EXPECT_FALSE(f.achieved_rate_bps);
	EXPECT_FALSE(f.rate_error);
	EXPECT_DOUBLE_EQ(*f.achieved_rate_inclusive_bps, 1e9);
	EXPECT_DOUBLE_EQ(f.phase_rate_bps, 1e9 / 4);
	EXPECT_EQ(f.spacing.count, 0u);
}

// ---- device IFG mode

TEST(Ifg, ExactGapsFollowTheLaw)
{
	// IFG 96: 84 wire bytes of gap after each frame: one minimum gap frame.
	TestCapture capture;
	for (int i = 0; i < 10; ++i)
		capture.add(udp_frame("10.0.1.1", 1, i)).add(gap_frame(60));
	auto config = gigabit_config();
	config.ifg_bytes = 96;
	const auto report = analyze(config, capture);
	ASSERT_TRUE(report.total.ifg);
	const IfgReport &ifg = *report.total.ifg;
	EXPECT_EQ(ifg.planned_gap_bytes, 84u);
	EXPECT_EQ(ifg.pairs, 9u);
	EXPECT_EQ(ifg.mismatched_pairs, 0u);
	EXPECT_DOUBLE_EQ(ifg.deviation_max_abs, 0.0);
	EXPECT_DOUBLE_EQ(ifg.deviation_mean, 0.0);
	EXPECT_DOUBLE_EQ(ifg.data_wire_ratio, 1538.0 / 1622);
	EXPECT_DOUBLE_EQ(ifg.law_ratio, 1538.0 / 1622);
	// payload / (8 + 1514 + 4 + IFG) of the link
	EXPECT_DOUBLE_EQ(ifg.payload_rate_bps, 1e9 * 1472 / (8 + 1514 + 4 + 96));
}

TEST(Ifg, GapsBelowOneGapFrameAverageOut)
{
	// IFG 24: 12 wire bytes per frame; a device can only send 84-byte gap frames, one per 7 frames.
	TestCapture capture;
	for (int i = 0; i < 15; ++i) {
		capture.add(udp_frame("10.0.1.1", 1, i));
		if (i % 7 == 6)
			capture.add(gap_frame(60));
	}
	auto config = gigabit_config();
	config.ifg_bytes = 24;
	const IfgReport ifg = *analyze(config, capture).total.ifg;
	EXPECT_EQ(ifg.planned_gap_bytes, 12u);
	EXPECT_EQ(ifg.pairs, 14u);
	EXPECT_EQ(ifg.mismatched_pairs, 14u);
	EXPECT_EQ(ifg.gap_wire_bytes_between, 168u);
	EXPECT_DOUBLE_EQ(ifg.deviation_max_abs, 72.0);
	EXPECT_DOUBLE_EQ(ifg.deviation_mean, 0.0); // 2 * 72 == 12 * 12
	EXPECT_DOUBLE_EQ(ifg.data_wire_ratio, 15.0 * 1538 / (15 * 1538 + 168));
	EXPECT_DOUBLE_EQ(ifg.law_ratio, 15.0 * 1538 / (15 * 1538 + 15 * 12));
}

TEST(Ifg, AbsentWithoutIfgOption)
{
	TestCapture capture;
	capture.add(udp_frame("10.0.1.1"));
	EXPECT_FALSE(analyze(gigabit_config(), capture).total.ifg);
}

// ---- integrity

TEST(Integrity, UdpLossReorderAndDuplicates)
{
	TestCapture capture;
	for (uint64_t seq : {0, 1, 3, 2, 2, 5, 7})
		capture.add(udp_frame("10.0.1.1", 1, seq));
	capture.add(udp_frame("10.0.1.1", 9, 100));
	const auto report = analyze(gigabit_config(), capture);
	ASSERT_EQ(report.total.integrity.udp.size(), 2u);
	const UdpStreamReport &one = report.total.integrity.udp[0];
	EXPECT_EQ(one.flow_id, 1u);
	EXPECT_EQ(one.received, 7u);
	EXPECT_EQ(one.lost, 2u); // 4 and 6
	EXPECT_EQ(one.reordered, 1u);
	EXPECT_EQ(one.duplicated, 1u);
	EXPECT_EQ(one.first_seq, 0u);
	EXPECT_EQ(one.highest_seq, 7u);
	const UdpStreamReport &nine = report.total.integrity.udp[1];
	EXPECT_EQ(nine.flow_id, 9u);
	EXPECT_EQ(nine.received, 1u);
	EXPECT_EQ(nine.lost, 0u);
}

TEST(Integrity, CountedPerPhaseAndOverall)
{
	TestCapture capture;
	capture.add(marker_frame("a")).add(udp_frame("10.0.1.1", 1, 0)).add(udp_frame("10.0.1.1", 1, 1));
	capture.add(marker_frame("b")).add(udp_frame("10.0.1.1", 1, 3)).add(udp_frame("10.0.1.1", 1, 4));
	const auto report = analyze(gigabit_config(), capture);
	ASSERT_EQ(report.phases.size(), 2u);
	EXPECT_EQ(report.phases[0].integrity.udp.at(0).lost, 0u);
	EXPECT_EQ(report.phases[1].integrity.udp.at(0).lost, 0u); // counting starts at the phase's first
	EXPECT_EQ(report.total.integrity.udp.at(0).lost, 1u);	    // 2 went missing between the phases
}

TEST(Integrity, SequenceTrackerWithKnownStart)
{
	traffic::SequenceTracker tracker(0);
	for (uint64_t seq : {3, 1, 2, 0, 0, 10, 9})
		tracker.observe(seq);
	EXPECT_EQ(tracker.received(), 7u);
	EXPECT_EQ(tracker.lost(), 5u); // 4..8 except 9
	EXPECT_EQ(tracker.reordered(), 4u);
	EXPECT_EQ(tracker.duplicated(), 1u);
	EXPECT_EQ(tracker.lowest(), 0u);

	traffic::SequenceTracker from_capture; // starts where the capture starts
	from_capture.observe(5);
	from_capture.observe(3); // below the lowest: reordered, and 4 now missing
	EXPECT_EQ(from_capture.reordered(), 1u);
	EXPECT_EQ(from_capture.lost(), 1u);
	from_capture.observe(4);
	EXPECT_EQ(from_capture.lost(), 0u);
	EXPECT_EQ(from_capture.reordered(), 2u);
}

TEST(Integrity, TcpRetransmissionsAndWrapAround)
{
	TestCapture capture;
	capture.add(ipv4_packet("10.0.1.1", IPPROTO_TCP, tcp_segment(1000, 100)));
	capture.add(ipv4_packet("10.0.1.1", IPPROTO_TCP, tcp_segment(1100, 100)));
	capture.add(ipv4_packet("10.0.1.1", IPPROTO_TCP, tcp_segment(1000, 100))); // retransmission
	capture.add(ipv4_packet("10.0.1.1", IPPROTO_TCP, tcp_segment(1200, 0)));   // pure ACK: ignored
	capture.add(ipv4_packet("10.0.2.1", IPPROTO_TCP, tcp_segment(0xfffffff0u, 32)));
	capture.add(ipv4_packet("10.0.2.1", IPPROTO_TCP, tcp_segment(0x10, 10))); // in order across the wrap
	const auto report = analyze(gigabit_config(), capture);
	EXPECT_EQ(report.total.integrity.tcp_connections, 2u);
	EXPECT_EQ(report.total.integrity.tcp_data_segments, 5u);
	EXPECT_EQ(report.total.integrity.tcp_out_of_order, 1u);
	EXPECT_EQ(report.total.payload_bytes, 342u);
}

// ---- truncated captures

TEST(Truncation, SizesComeFromTheOriginalLength)
{
	TestCapture capture;
	capture.add(udp_frame("10.0.1.1", 1, 0), 58); // exactly Ethernet + IP + UDP + traffic header
	capture.add(udp_frame("10.0.1.1", 1, 1), 128);
	capture.add(gap_frame(1514), 64);
	capture.add(udp_frame("10.0.1.1", 1, 2), 20); // IP header cut: destination unknown
	const auto report = analyze(gigabit_config({flow("f", "10.0.1.1")}), capture);
	EXPECT_EQ(report.total.all.bytes, 4 * kFullFrame);
	EXPECT_EQ(report.total.all.wire_bytes, 4 * kFullWire);
	EXPECT_EQ(report.total.gap.wire_bytes, kFullWire);
	EXPECT_EQ(report.total.invalid_gaps.count, 0u);
	EXPECT_EQ(find_flow(report.total, "f").data.frames, 2u);
	EXPECT_EQ(find_flow(report.total, "f").payload_bytes, 2 * 1472u);
	EXPECT_EQ(find_flow(report.total, "other").data.frames, 1u);
	EXPECT_EQ(report.total.headers_truncated, 1u);
	EXPECT_EQ(report.total.non_ip, 0u);
	ASSERT_EQ(report.total.integrity.udp.size(), 1u);
	EXPECT_EQ(report.total.integrity.udp[0].received, 2u);
}

TEST(Truncation, MarkerNameEndsWithTheCapturedBytes)
{
	TestCapture capture;
	capture.add(marker_frame("abcdefgh"), 42 + 8 + 3);
	const auto report = analyze(gigabit_config(), capture);
	ASSERT_EQ(report.phases.size(), 1u);
	EXPECT_EQ(report.phases[0].name, "abc");
}

// ---- pcap files

class PcapFile : public ::testing::Test {
protected:
	void SetUp() override
	{
		path_ = (std::filesystem::temp_directory_path() / ("wirecheck_test_" + std::to_string(getpid()) + ".pcap")).string();
	}
	void TearDown() override { std::filesystem::remove(path_); }

	void write(int linktype, int snaplen, const std::vector<Bytes> &frames)
	{
		pcap_t *dead = pcap_open_dead(linktype, snaplen);
		ASSERT_NE(dead, nullptr);
		pcap_dumper_t *dumper = pcap_dump_open(dead, path_.c_str());
		ASSERT_NE(dumper, nullptr) << pcap_geterr(dead);
		for (const auto &frame : frames) {
			pcap_pkthdr header{};
			header.len = static_cast<uint32_t>(frame.size());
			header.caplen = std::min<uint32_t>(header.len, static_cast<uint32_t>(snaplen));
			pcap_dump(reinterpret_cast<u_char *>(dumper), &header, frame.data());
		}
		pcap_dump_close(dumper);
		pcap_close(dead);
	}

	std::string path_;
};

TEST_F(PcapFile, ReadsOriginalAndCapturedLengths)
{
	write(DLT_EN10MB, 128, {udp_frame("10.0.1.1"), gap_frame(60), arp_frame()});
	std::vector<std::pair<uint32_t, size_t>> seen;
	const auto summary = read_capture(path_, [&](const CapturedFrame &f) { seen.emplace_back(f.length, f.bytes.size()); });
	ASSERT_TRUE(summary) << summary.error().message;
	EXPECT_EQ(summary->frames, 3u);
	EXPECT_EQ(summary->snap_length, 128u);
	EXPECT_TRUE(summary->warning.empty());
	const std::vector<std::pair<uint32_t, size_t>> expected{{1514, 128}, {60, 60}, {42, 42}};
	EXPECT_EQ(seen, expected);
}

TEST_F(PcapFile, CutOffLastRecordIsAWarning)
{
	write(DLT_EN10MB, 128, {udp_frame("10.0.1.1"), gap_frame(60)});
	std::filesystem::resize_file(path_, std::filesystem::file_size(path_) - 10);
	uint64_t frames = 0;
	const auto summary = read_capture(path_, [&](const CapturedFrame &) { ++frames; });
	ASSERT_TRUE(summary);
	EXPECT_EQ(frames, 1u);
	EXPECT_FALSE(summary->warning.empty());
}

TEST_F(PcapFile, RejectsOtherLinkTypesAndMissingFiles)
{
	write(DLT_RAW, 128, {});
	EXPECT_FALSE(read_capture(path_, [](const CapturedFrame &) {}));
	EXPECT_FALSE(read_capture(path_ + ".missing", [](const CapturedFrame &) {}));
}

TEST_F(PcapFile, ReadsFromAStream)
{
	write(DLT_EN10MB, 128, {gap_frame(60)});
	FILE *file = std::fopen(path_.c_str(), "rb");
	ASSERT_NE(file, nullptr);
	uint64_t frames = 0;
	EXPECT_TRUE(read_capture(file, [&](const CapturedFrame &) { ++frames; }));
	EXPECT_EQ(frames, 1u);
}

// ---- command line and asserts

Expected<Options> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "gp-wirecheck");
	std::vector<char *> argv;
	for (auto &arg : args)
		argv.push_back(arg.data());
	argv.push_back(nullptr);
	return parse_command_line(static_cast<int>(args.size()), argv.data());
}

TEST(CommandLine, ParsesEverything)
{
	const auto options = parse({"-j", "--linkrate", "1gbit", "--dev-mac", "52:54:00:12:34:56", "--ifg", "96",
				    "--flow", "a=10.0.1.1/32,rate=100mbit", "--flow", "b=fd00::/64", "--tolerance", "0",
				    "--assert", "gaps,rate=0.05", "cap.pcap"});
	ASSERT_TRUE(options) << options.error().message;
	EXPECT_TRUE(options->json);
	EXPECT_EQ(options->analysis.linkrate_bps, kGigabit);
	EXPECT_EQ(options->analysis.device_mac, kDevMac);
	EXPECT_EQ(options->analysis.ifg_bytes, 96u);
	ASSERT_EQ(options->analysis.flows.size(), 2u);
	EXPECT_EQ(options->analysis.flows[0].name, "a");
	EXPECT_EQ(options->analysis.flows[0].rate_bps, 100'000'000u);
	EXPECT_EQ(options->analysis.flows[0].prefix.length, 32u);
	EXPECT_EQ(options->analysis.flows[1].prefix.address.version, 6);
	EXPECT_FALSE(options->analysis.flows[1].rate_bps);
	EXPECT_EQ(options->analysis.tolerance_bytes, 0u);
	EXPECT_TRUE(options->asserts.gaps);
	EXPECT_FALSE(options->asserts.spacing);
	EXPECT_EQ(options->asserts.rate_tolerance, 0.05);
	EXPECT_EQ(options->capture_path, "cap.pcap");
}

TEST(CommandLine, RejectsBadInput)
{
	EXPECT_FALSE(parse({"cap.pcap"}));					 // no --linkrate
	EXPECT_FALSE(parse({"--linkrate", "fast", "cap.pcap"}));
	EXPECT_FALSE(parse({"--linkrate", "1gbit"}));				 // no file
	EXPECT_FALSE(parse({"--linkrate", "1gbit", "a.pcap", "b.pcap"}));
	EXPECT_FALSE(parse({"--linkrate", "1gbit", "--ifg", "11", "cap.pcap"})); // below the standard 12
	EXPECT_FALSE(parse({"--linkrate", "1gbit", "--flow", "a=10.0.0.1", "--flow", "a=10.0.0.2", "cap.pcap"}));
	EXPECT_FALSE(parse({"--linkrate", "1gbit", "--assert", "ifg", "cap.pcap"})); // ifg needs --ifg
	EXPECT_FALSE(parse({"--linkrate", "1gbit", "--bogus", "cap.pcap"}));
	EXPECT_FALSE(parse({"--linkrate"}));
	EXPECT_TRUE(parse({"--linkrate", "1gbit", "cap.pcap"}));
}

TEST(CommandLine, FlowAndAddressSyntax)
{
	EXPECT_FALSE(parse_flow("10.0.0.1"));
	EXPECT_FALSE(parse_flow("other=10.0.0.1"));
	EXPECT_FALSE(parse_flow("a=10.0.0.1/33"));
	EXPECT_FALSE(parse_flow("a=10.0.0.1,rate=0"));
	EXPECT_FALSE(parse_flow("a=10.0.0.1,speed=1mbit"));
	EXPECT_FALSE(parse_flow("a=example.com"));
	EXPECT_TRUE(parse_flow("a=fd00::1/128,rate=1.5gbit"));
	EXPECT_EQ(parse_flow("a=10.0.0.0/8,rate=1.5gbit")->rate_bps, 1'500'000'000u);
	EXPECT_FALSE(parse_mac("52:54:00:12:34"));
	EXPECT_FALSE(parse_mac("52:54:00:12:34:56:78"));
	EXPECT_FALSE(parse_mac("52:54:00:12:34:5g"));
	EXPECT_EQ(*parse_mac("2:54:0:12:34:FF"), (MacAddress{0x02, 0x54, 0x00, 0x12, 0x34, 0xff}));
}

TEST(Asserts, ParsesChecks)
{
	const auto all = parse_asserts("all", true);
	ASSERT_TRUE(all);
	EXPECT_TRUE(all->gaps && all->spacing && all->integrity);
	EXPECT_EQ(all->rate_tolerance, kDefaultRateTolerance);
	EXPECT_EQ(all->ifg_tolerance, kDefaultIfgTolerance);
	EXPECT_FALSE(parse_asserts("all", false)->ifg_tolerance);
	EXPECT_EQ(parse_asserts("ifg=2.5", true)->ifg_tolerance, 2.5);
	EXPECT_FALSE(parse_asserts("rate=-1", false));
	EXPECT_FALSE(parse_asserts("gaps=1", false));
	EXPECT_FALSE(parse_asserts("speed", false));
	EXPECT_FALSE(parse_asserts("", false));
}

TEST(Asserts, FailuresNameThePhaseAndFlow)
{
	TestCapture capture = paced_capture({9, 8, 9});
	Bytes real_pause = gap_frame();
	real_pause[16] = 1;
	capture.frames.insert(capture.frames.begin(), TestFrame{marker_frame("run")});
	capture.add(real_pause);
	const auto report = analyze(gigabit_config({flow("f", "10.0.1.1", 100'000'000)}), capture);

	AssertSpec spacing;
	spacing.spacing = true;
	auto failures = check_asserts(report, spacing);
	ASSERT_EQ(failures.size(), 1u);
	EXPECT_EQ(failures[0], "phase 'run' flow 'f': 1 spacing violations (min deviation -1538 wire bytes)");

	AssertSpec gaps;
	gaps.gaps = true;
	failures = check_asserts(report, gaps);
	ASSERT_EQ(failures.size(), 1u);
	EXPECT_EQ(failures[0], "1 invalid gap frames, first: frame 32: nonzero_pause_time");

	AssertSpec integrity;
	integrity.integrity = true;
	EXPECT_TRUE(check_asserts(report, integrity).empty());

	AssertSpec loose_rate;
	loose_rate.rate_tolerance = 0.05;
	EXPECT_TRUE(check_asserts(report, loose_rate).empty()); // 4 frames in 3 * 15380 - 1538: +3.4%
	AssertSpec tight_rate;
	tight_rate.rate_tolerance = 0.03;
	EXPECT_EQ(check_asserts(report, tight_rate).size(), 1u);
}

// ---- output

TEST(Output, JsonHasTheDocumentedLayout)
{
	TestCapture capture = paced_capture({9});
	auto config = gigabit_config({flow("f", "10.0.1.1", 100'000'000)});
	config.ifg_bytes = 12;
	const auto report = analyze(config, capture);
	ReportContext context;
	context.capture_path = "cap.pcap";
	context.config = &config;
	context.capture.frames = capture.frames.size();
	const std::string json = format_json(report, context);
	for (const char *key : {"\"linkrate\":1000000000", "\"phases\":[{\"name\":\"(start)\"", "\"total\":{\"name\":\"(total)\"",
				"\"achieved_rate\":100000000", "\"rate_error\":0", "\"spacing\":{\"count\":1,\"min\":15380",
				"\"invalid_gaps\":{\"count\":0,\"wrong_dst\":0", "\"ifg\":{\"ifg\":12,\"planned_gap\":0",
				"\"integrity\":{\"udp\":[{\"flow_id\":1,\"received\":2,\"lost\":0",
				"\"name\":\"other\",\"prefix\":null", "\"dev_mac\":\"52:54:00:12:34:56\""})
		EXPECT_NE(json.find(key), std::string::npos) << key << "\nnot in\n" << json;
	EXPECT_NE(format_text(report, context).find("phase '(total)'"), std::string::npos);
}

} // namespace
} // namespace gp::wirecheck
