// Unit tests of gp-traffic: the payload header, argument validation, and short loopback runs of
// each mode (the modes print their JSON to stdout; here only exit codes are checked).
#include <unistd.h>

#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "args.hpp"
#include "modes.hpp"
#include "traffic_proto.hpp"

namespace gp::traffic {
namespace {

TEST(PayloadHeader, EncodesBigEndianAndRoundTrips)
{
	std::array<uint8_t, kPayloadHeaderSize> bytes{};
	encode_payload_header({0x01020304, 0x1122334455667788ULL}, bytes);
	const std::array<uint8_t, kPayloadHeaderSize> expected{'G',  'P',  'T',  'R',  0x01, 0x02, 0x03, 0x04,
							       0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};
	EXPECT_EQ(bytes, expected);
	const auto decoded = decode_payload_header(bytes);
	ASSERT_TRUE(decoded);
	EXPECT_EQ(*decoded, (PayloadHeader{0x01020304, 0x1122334455667788ULL}));
}

TEST(PayloadHeader, RejectsShortOrForeignPayloads)
{
	std::array<uint8_t, kPayloadHeaderSize> bytes{};
	encode_payload_header({1, 2}, bytes);
	EXPECT_FALSE(decode_payload_header(std::span<const uint8_t>(bytes).first(15)));
	bytes[0] = 'X';
	EXPECT_FALSE(decode_payload_header(bytes));
}

TEST(MarkerName, PrintableAndShortEnough)
{
	EXPECT_TRUE(is_valid_marker_name("rate 100mbit"));
	EXPECT_FALSE(is_valid_marker_name(""));
	EXPECT_FALSE(is_valid_marker_name("a\nb"));
	EXPECT_FALSE(is_valid_marker_name(std::string(kMaxMarkerNameLength + 1, 'x')));
	EXPECT_TRUE(is_valid_marker_name(std::string(kMaxMarkerNameLength, 'x')));
}

Expected<Command> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "gp-traffic");
	std::vector<char *> argv;
	for (auto &arg : args)
		argv.push_back(arg.data());
	argv.push_back(nullptr);
	return parse_arguments(static_cast<int>(args.size()), argv.data());
}

TEST(Arguments, UdpSendDefaultsAndValues)
{
	const auto command = parse({"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "10"});
	ASSERT_TRUE(command) << command.error().message;
	const auto &args = std::get<UdpSendArgs>(*command);
	EXPECT_EQ(args.dst, "10.0.0.2");
	EXPECT_EQ(args.port, 5000);
	EXPECT_EQ(args.count, 10u);
	EXPECT_EQ(args.size, 1472u);
	EXPECT_EQ(args.flow_id, 0u);
	EXPECT_EQ(args.timeout_seconds, 60.0);
	EXPECT_FALSE(args.src_port);
	EXPECT_FALSE(args.sndbuf);

	const auto full = parse({"udp-send", "--dst", "fd00::2", "--port", "5000", "--count", "1", "--size", "16",
				 "--flow", "7", "--src-port", "4000", "--timeout", "0.5", "--sndbuf", "1m"});
	ASSERT_TRUE(full) << full.error().message;
	const auto &f = std::get<UdpSendArgs>(*full);
	EXPECT_EQ(f.size, 16u);
	EXPECT_EQ(f.flow_id, 7u);
	EXPECT_EQ(f.src_port, 4000);
	EXPECT_EQ(f.timeout_seconds, 0.5);
	EXPECT_EQ(f.sndbuf, 1u << 20);
}

TEST(Arguments, OtherModes)
{
	const auto sink = parse({"tcp-sink", "--port", "5001", "--bytes", "10m", "--once"});
	ASSERT_TRUE(sink) << sink.error().message;
	EXPECT_EQ(std::get<TcpSinkArgs>(*sink).bytes, 10u << 20);
	EXPECT_TRUE(std::get<TcpSinkArgs>(*sink).once);

	const auto send = parse({"tcp-send", "--dst", "10.0.0.2", "--port", "5001", "--bytes", "1000", "--cc", "bbr"});
	ASSERT_TRUE(send) << send.error().message;
	EXPECT_EQ(std::get<TcpSendArgs>(*send).congestion_control, "bbr");
	EXPECT_FALSE(std::get<TcpSendArgs>(*send).bind_device);
	const auto bound = parse({"tcp-send", "--dst", "10.0.0.2", "--port", "5001", "--bytes", "1000", "--bind-dev", "eth0"});
	ASSERT_TRUE(bound) << bound.error().message;
	EXPECT_EQ(std::get<TcpSendArgs>(*bound).bind_device, "eth0");
	EXPECT_FALSE(parse({"tcp-send", "--dst", "10.0.0.2", "--port", "5001", "--bytes", "1000", "--bind-dev",
			    "a-name-of-sixteen"}));

	const auto marker = parse({"marker", "--dst", "10.0.0.2", "--name", "phase one"});
	ASSERT_TRUE(marker) << marker.error().message;
	EXPECT_EQ(std::get<MarkerArgs>(*marker).port, 9);
	EXPECT_TRUE(std::get<MarkerArgs>(*marker).wait_for_transmit);

	EXPECT_TRUE(std::holds_alternative<HelpArgs>(*parse({"--help"})));
	EXPECT_TRUE(std::holds_alternative<HelpArgs>(*parse({"udp-sink", "--help"})));
}

TEST(Arguments, RejectsInvalid)
{
	const std::vector<std::vector<std::string>> invalid{
		{},
		{"flood"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000"},			      // no --count
		{"udp-send", "--dst", "10.0.0.2", "--port", "0", "--count", "1"},	      // port 0
		{"udp-send", "--dst", "10.0.0.2", "--port", "65536", "--count", "1"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "0"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "1", "--size", "15"}, // < header
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "1", "--size", "65508"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "1", "--timeout", "0"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "1", "--flow", "4294967296"},
		{"udp-send", "--dst", "10.0.0.2", "--port", "5000", "--count", "1", "extra"},
		{"udp-sink", "--port", "5000", "--count", "1", "--dst", "10.0.0.2"}, // not an option of the sink
		{"tcp-send", "--dst", "10.0.0.2", "--port", "5001"},		     // no --bytes
		{"tcp-send", "--dst", "10.0.0.2", "--port", "5001", "--bytes", "1", "--cc", ""},
		{"marker", "--dst", "10.0.0.2", "--name", "bad\tname"},
		{"marker", "--dst", "10.0.0.2"},
		{"marker", "--name", "x"},
		{"udp-sink", "--port"},
	};
	for (const auto &args : invalid)
		EXPECT_FALSE(parse(args)) << ::testing::PrintToString(args);
}

// ---- loopback runs

uint16_t test_port(int offset) { return static_cast<uint16_t>(20000 + (getpid() % 20000) + offset); }

TEST(Loopback, UdpSendToSink)
{
	UdpSinkArgs sink;
	sink.port = test_port(0);
	sink.count = 50;
	sink.timeout_seconds = 10;
	auto sink_done = std::async(std::launch::async, [&] { return run_udp_sink(sink); });
	std::this_thread::sleep_for(std::chrono::milliseconds(100)); // let it bind

	UdpSendArgs send;
	send.dst = "127.0.0.1";
	send.port = sink.port;
	send.count = 50;
	send.size = 100;
	send.flow_id = 3;
	send.timeout_seconds = 10;
	EXPECT_EQ(run_udp_send(send), kExitDone);
	EXPECT_EQ(sink_done.get(), kExitDone);
}

TEST(Loopback, UdpSinkTimesOutWithExitOne)
{
	UdpSinkArgs sink;
	sink.port = test_port(1);
	sink.count = 1;
	sink.timeout_seconds = 0.2;
	EXPECT_EQ(run_udp_sink(sink), kExitFailure);
}

TEST(Loopback, TcpSendToSink)
{
	TcpSinkArgs sink;
	sink.port = test_port(2);
	sink.bytes = 3u << 20;
	sink.once = true;
	sink.timeout_seconds = 10;
	auto sink_done = std::async(std::launch::async, [&] { return run_tcp_sink(sink); });
	std::this_thread::sleep_for(std::chrono::milliseconds(100));

	TcpSendArgs send;
	send.dst = "127.0.0.1";
	send.port = sink.port;
	send.bytes = 3u << 20;
	send.timeout_seconds = 10;
	EXPECT_EQ(run_tcp_send(send), kExitDone);
	EXPECT_EQ(sink_done.get(), kExitDone);
}

TEST(Loopback, TcpSendWithoutSinkFails)
{
	TcpSendArgs send;
	send.dst = "127.0.0.1";
	send.port = test_port(3);
	send.bytes = 1;
	send.timeout_seconds = 2;
	EXPECT_EQ(run_tcp_send(send), kExitFailure);
}

TEST(Loopback, MarkerWaitsUntilTransmitted)
{
	MarkerArgs marker;
	marker.dst = "127.0.0.1";
	marker.name = "loopback";
	marker.timeout_seconds = 5;
	EXPECT_EQ(run_marker(marker), kExitDone);
}

} // namespace
} // namespace gp::traffic
