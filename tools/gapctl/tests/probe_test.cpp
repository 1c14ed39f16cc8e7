// gapctl probe: statistics, size ladder and schedule, the wire protocol and its rejection of
// malformed frames, the responder against garbage (real sockets on loopback), client errors,
// the parameter file (schema checks on synthetic and on measured results), the command line.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "commands.hpp"
#include "params_file.hpp"
#include "probe_command.hpp"
#include "probe_measure.hpp"
#include "probe_output.hpp"
#include "probe_protocol.hpp"
#include "probe_serve.hpp"
#include "probe_stats.hpp"
#include "probe_transport.hpp"

namespace gp::probe {
namespace {

using namespace std::chrono_literals;
using Bytes = std::vector<uint8_t>;

// ------------------------------------------------------------------ statistics

TEST(ProbeStats, TrimmedMeanDropsTenPercentAtEachEnd)
{
	const std::vector<double> samples{1000, 2, 3, 4, 5, 6, 7, 8, 9, 1};
	const Summary s = summarize(samples);
	EXPECT_EQ(s.samples, 10u);
	EXPECT_EQ(s.used, 8u);		// 1 and 1000 are cut
	EXPECT_DOUBLE_EQ(s.mean, 5.5); // mean of 2..9
	// Sample standard deviation (n - 1) of 2..9: variance 6.
	EXPECT_NEAR(s.sigma, std::sqrt(6.0), 1e-12);
	EXPECT_DOUBLE_EQ(s.raw_mean, 104.5);
	EXPECT_GT(s.raw_sigma, 300);
	EXPECT_EQ(s.min, 1);
	EXPECT_EQ(s.max, 1000);
}

TEST(ProbeStats, SmallSamplesAreNotTrimmedAndEmptyIsZero)
{
	const std::vector<double> five{10, 20, 30, 40, 1000};
	const Summary s = summarize(five);
	EXPECT_EQ(s.used, 5u); // floor(0.5) = 0 cut
	EXPECT_DOUBLE_EQ(s.mean, 220);
	const Summary one = summarize(std::vector<double>{7});
	EXPECT_DOUBLE_EQ(one.mean, 7);
	EXPECT_DOUBLE_EQ(one.sigma, 0);
	const Summary none = summarize(std::vector<double>{});
	EXPECT_EQ(none.samples, 0u);
	EXPECT_DOUBLE_EQ(none.mean, 0);
	EXPECT_DOUBLE_EQ(median(std::vector<double>{3, 1, 2}), 2);
	EXPECT_DOUBLE_EQ(median(std::vector<double>{4, 1, 2, 3}), 2.5);
}

// The per-size figures: three trains of a large message, one of which paid a 200 ms timeout,
// give the other two's figure, not a third of the timeout on top; where the trim cuts (10
// values and more) it is the trimmed mean.
TEST(ProbeStats, RobustMeanIsTheMedianWhereTheTrimCutsNothing)
{
	EXPECT_DOUBLE_EQ(robust_mean(std::vector<double>{84000, 284000, 84500}), 84500);
	EXPECT_DOUBLE_EQ(robust_mean(std::vector<double>{10, 20, 30, 1000}), 25);
	EXPECT_DOUBLE_EQ(robust_mean(std::vector<double>{7}), 7);
	EXPECT_DOUBLE_EQ(robust_mean(std::vector<double>{}), 0);
	const std::vector<double> ten{1000, 2, 3, 4, 5, 6, 7, 8, 9, 1};
	EXPECT_DOUBLE_EQ(robust_mean(ten), trimmed_mean(ten));
}

TEST(ProbeStats, TrimmedSigmaIgnoresOutliers)
{
	std::vector<double> samples(100, 50.0);
	for (int i = 0; i < 100; i += 2)
		samples[i] = 52;
	samples[3] = 200000; // a retransmission
	samples[7] = 0.5;
	const Summary s = summarize(samples);
	EXPECT_EQ(s.used, 80u);
	EXPECT_NEAR(s.mean, 51, 0.1);
	EXPECT_LT(s.sigma, 1.1);
	EXPECT_GT(s.raw_sigma, 10000);
}

TEST(ProbeStats, QuantileInterpolatesBetweenOrderStatistics)
{
	const std::vector<double> v{50, 10, 40, 20, 30};
	EXPECT_DOUBLE_EQ(quantile(v, 0), 10);
	EXPECT_DOUBLE_EQ(quantile(v, 1), 50);
	EXPECT_DOUBLE_EQ(quantile(v, 0.5), 30);
	EXPECT_DOUBLE_EQ(quantile(v, 0.9), 46);	   // 40 + 0.6 * 10
	EXPECT_DOUBLE_EQ(quantile(v, 0.125), 15); // 10 + 0.5 * 10
	EXPECT_DOUBLE_EQ(quantile(std::vector<double>{}, 0.9), 0);
	EXPECT_DOUBLE_EQ(quantile(std::vector<double>{7}, 0.9), 7);
}

// The full-queue delay from a loaded sample shaped like cubic's sawtooth over a 40-packet
// FIFO at 200 Mbit/s (2.42 ms when full), with stalls where the queue empties: the 90th
// percentile finds the full port where the mean would not.
TEST(ProbeStats, FullQueueFromASawtoothSample)
{
	const double full_us = 40 * 1514 * 8 / 200.0; // 2422.4 us
	std::vector<double> loaded;
	for (int i = 0; i < 80; ++i) // the sawtooth: 0.7 Q .. Q, uniformly in time
		loaded.push_back(30 + full_us * (0.7 + 0.3 * i / 79.0));
	for (int i = 0; i < 20; ++i) // stalls: empty queue
		loaded.push_back(30 + i);
	const QueueEstimate by_quantile = estimate_queue(30, quantile(loaded, kFullQueueQuantile), 200e6, 1500);
	EXPECT_NEAR(by_quantile.packets, 38.5, 1.0);
	const QueueEstimate by_mean = estimate_queue(30, trimmed_mean(loaded), 200e6, 1500);
	EXPECT_LT(by_mean.packets, 30);
}

// ------------------------------------------------------------------ sizes and schedule

TEST(ProbeStats, SizeLadderIsZeroThenPowersOfTwoUpToTheMaximum)
{
	const auto ladder = size_ladder(16ull << 20);
	ASSERT_EQ(ladder.size(), 26u); // 0, then 2^0 .. 2^24
	EXPECT_EQ(ladder[0], 0u);
	EXPECT_EQ(ladder[1], 1u);
	EXPECT_EQ(ladder[2], 2u);
	EXPECT_EQ(ladder.back(), 16ull << 20);
	for (size_t i = 2; i < ladder.size(); ++i)
		EXPECT_EQ(ladder[i], ladder[i - 1] * 2);
	EXPECT_EQ(size_ladder(0), (std::vector<uint64_t>{0}));
	EXPECT_EQ(size_ladder(1), (std::vector<uint64_t>{0, 1}));
	const auto odd = size_ladder(1000);
	EXPECT_EQ(odd.back(), 1000u);
	EXPECT_EQ(odd[odd.size() - 2], 512u);
	for (size_t i = 1; i < odd.size(); ++i)
		EXPECT_LT(odd[i - 1], odd[i]);
}

TEST(ProbeStats, RepetitionsScaleDownWithSizeWithinBounds)
{
	const Budget budget = make_budget(false, std::nullopt);
	const Schedule tiny = schedule_for(0, budget);
	EXPECT_EQ(tiny.pingpong, budget.max_reps);
	EXPECT_EQ(tiny.train_length, budget.max_train_length);
	const Schedule huge = schedule_for(16ull << 20, budget);
	EXPECT_EQ(huge.pingpong, budget.min_reps);
	EXPECT_EQ(huge.train_length, 2u);
	EXPECT_EQ(huge.trains, budget.min_reps);
	Schedule previous = tiny;
	for (uint64_t size : size_ladder(16ull << 20)) {
		const Schedule s = schedule_for(size, budget);
		EXPECT_LE(s.pingpong, previous.pingpong) << size;
		EXPECT_GE(s.pingpong, budget.min_reps);
		EXPECT_EQ(s.exchange % 2, 0u) << size;
		EXPECT_GE(s.exchange, 4u);
		EXPECT_GE(s.train_length, 2u);
		EXPECT_GE(s.trains, budget.min_reps);
		EXPECT_LE(s.trains, budget.max_trains);
		previous = s;
	}
	const Budget quick = make_budget(true, std::nullopt);
	EXPECT_LT(quick.max_reps, budget.max_reps);
	EXPECT_LT(quick.rtt_samples, budget.rtt_samples);
	const Budget custom = make_budget(false, 50);
	EXPECT_EQ(custom.max_reps, 50u);
	EXPECT_EQ(custom.rtt_samples, 500u);
	EXPECT_EQ(schedule_for(0, custom).pingpong, 50u);
}

// Bytes each size moves with the default budget stay near the per-size budget: the whole
// probe is bounded (about 60 s at 200 Mbit/s, see README).
TEST(ProbeStats, DefaultBudgetBoundsTheBytesOfTheWholeLadder)
{
	const Budget budget = make_budget(false, std::nullopt);
	double bytes = 0;
	for (uint64_t size : size_ladder(16ull << 20)) {
		const Schedule s = schedule_for(size, budget);
		const double wire = static_cast<double>(wire_size(size));
		bytes += wire * s.pingpong * 2;		       // there and back, one after the other
		bytes += wire * s.exchange;		       // both ways at once
		bytes += wire * s.train_length * s.trains; // both ways at once
	}
	const double seconds_at_200mbit = bytes * 8 / 191e6;
	EXPECT_LT(seconds_at_200mbit, 45) << bytes;
}

// ------------------------------------------------------------------ derived figures

TEST(ProbeStats, PlogpLatencyAndPerByteTimes)
{
	EXPECT_DOUBLE_EQ(plogp_latency_us(100, 5), 45);
	EXPECT_DOUBLE_EQ(plogp_latency_us(8, 5), 0); // never negative
	EXPECT_DOUBLE_EQ(per_byte_us(1500, 40, 0), 0);
	EXPECT_DOUBLE_EQ(per_byte_us(1040, 40, 1000), 1);
	EXPECT_DOUBLE_EQ(per_byte_us(30, 40, 8), 0);
	EXPECT_EQ(pair_averages(std::vector<double>{10, 30, 0, 40, 7}), (std::vector<double>{20, 20}));
}

TEST(ProbeStats, QueueIsExtraDelayTimesRateInBytesAndFrames)
{
	// 200 Mbit/s, 2410 us more delay when full: 60250 bytes = 39.8 frames of 1514 bytes.
	const QueueEstimate q = estimate_queue(90, 2500, 200e6, 1500);
	EXPECT_NEAR(q.bytes, 60250, 1e-6);
	EXPECT_NEAR(q.packets, 60250.0 / 1514, 1e-9);
	const QueueEstimate jumbo = estimate_queue(0, 1000, 1e9, 9000);
	EXPECT_NEAR(jumbo.bytes, 125000, 1e-6);
	EXPECT_NEAR(jumbo.packets, 125000.0 / 9014, 1e-9);
	const QueueEstimate none = estimate_queue(100, 90, 200e6, 1500); // noise: no queue
	EXPECT_EQ(none.bytes, 0);
	EXPECT_EQ(none.packets, 0);
}

TEST(ProbeStats, WireRateFromGoodput)
{
	// One TCP flow at 200mbit tbf: goodput 200e6 * 1448 / 1514.
	EXPECT_NEAR(wire_rate_bps(200e6 * 1448 / 1514, 1448, 1500), 200e6, 1);
	EXPECT_NEAR(goodput_bps(1 << 20, 1e6), 8.0 * (1 << 20), 1e-6);
	EXPECT_EQ(goodput_bps(100, 0), 0);
}

TEST(ProbeStats, DelayIsStableWhenTheLastMediansAgree)
{
	EXPECT_FALSE(delay_stable(std::vector<double>{100, 100}));
	EXPECT_FALSE(delay_stable(std::vector<double>{100, 800, 1600, 2400}));
	EXPECT_TRUE(delay_stable(std::vector<double>{100, 800, 2300, 2500, 2400}));
	EXPECT_FALSE(delay_stable(std::vector<double>{2300, 2500, 1000}));
	EXPECT_FALSE(delay_stable(std::vector<double>{0, 0, 0}));
}

// ------------------------------------------------------------------ protocol

FrameHeader header_of(const Frame &frame)
{
	auto header = decode_header(frame);
	EXPECT_TRUE(header) << header.error().message;
	return header ? *header : FrameHeader{};
}

std::span<const uint8_t> payload_of(const Frame &frame)
{
	return std::span<const uint8_t>(frame).subspan(kFrameHeaderSize);
}

TEST(ProbeProtocol, FramesRoundTrip)
{
	const Hello hello{Role::Bulk, 0x1122334455667788ull};
	Frame frame = encode_hello(hello);
	EXPECT_EQ(frame.size(), kFrameHeaderSize + 12);
	EXPECT_EQ(header_of(frame).type, FrameType::Hello);
	EXPECT_EQ(header_of(frame).version, kProbeProtocolVersion);
	EXPECT_EQ(header_of(frame).length, 12u);
	EXPECT_EQ(*decode_hello(payload_of(frame)), hello);

	const Welcome welcome{42, kMaxMessageSize};
	EXPECT_EQ(*decode_welcome(payload_of(encode_welcome(welcome))), welcome);
	const probe::Run run{RunKind::Train, 1000, 65536};
	EXPECT_EQ(*decode_run(payload_of(encode_run(run))), run);
	const Result result{{1, 2, 3, ~0ull}};
	EXPECT_EQ(*decode_result(payload_of(encode_result(result))), result);
	const Frame error = encode_error("no\nway\x01");
	EXPECT_EQ(header_of(error).type, FrameType::Error);
	EXPECT_EQ(decode_error_text(payload_of(error)), "no?way?");
	EXPECT_EQ(header_of(encode_bye()).length, 0u);
	// Network byte order, magic first.
	EXPECT_EQ(frame[0], 'G');
	EXPECT_EQ(frame[3], 'R');
	EXPECT_EQ(encode_run(run)[kFrameHeaderSize + 4], 0u); // count 1000 = 00 00 03 e8
	EXPECT_EQ(encode_run(run)[kFrameHeaderSize + 7], 0xe8);
}

TEST(ProbeProtocol, HeaderRejectsGarbage)
{
	const std::string http = "GET / HTTP/1.0\r\n\r\n";
	auto garbage = decode_header(Bytes(http.begin(), http.end()));
	ASSERT_FALSE(garbage);
	EXPECT_EQ(garbage.error().err, EBADMSG);
	EXPECT_NE(garbage.error().message.find("bad magic"), std::string::npos);

	EXPECT_FALSE(decode_header(Bytes{'G', 'P', 'P', 'R', 0, 1}));

	Frame unknown_type = encode_bye();
	unknown_type[7] = 99;
	EXPECT_FALSE(decode_header(unknown_type));
	unknown_type[7] = 0;
	EXPECT_FALSE(decode_header(unknown_type));

	Frame huge = encode_bye();
	huge[8] = 0x7f; // a 2 GB payload
	auto oversized = decode_header(huge);
	ASSERT_FALSE(oversized);
	EXPECT_EQ(oversized.error().err, EMSGSIZE);

	Frame future = encode_bye();
	future[5] = 2; // version 2: decodes, so that the caller can say which version it is
	auto header = decode_header(future);
	ASSERT_TRUE(header);
	EXPECT_EQ(header->version, 2);
}

TEST(ProbeProtocol, PayloadsRejectMalformedFields)
{
	const Frame hello = encode_hello({Role::Control, 0});
	EXPECT_TRUE(decode_hello(payload_of(hello)));
	EXPECT_FALSE(decode_hello(payload_of(hello).first(11)));		  // short
	EXPECT_FALSE(decode_hello(Bytes(13, 0)));					  // long
	EXPECT_FALSE(decode_hello(Bytes{3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));	  // role 3
	EXPECT_FALSE(decode_hello(Bytes{1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}));	  // reserved
	EXPECT_FALSE(decode_hello(Bytes{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}));	  // control + token
	EXPECT_TRUE(decode_hello(Bytes{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9}));	  // bulk + token
	EXPECT_FALSE(decode_welcome(payload_of(encode_welcome({0, 1}))));	  // token 0

	auto run = [](RunKind kind, uint32_t count, uint64_t size) {
		return decode_run(payload_of(encode_run({kind, count, size})));
	};
	EXPECT_TRUE(run(RunKind::PingPong, 1, 0));
	EXPECT_FALSE(run(RunKind::PingPong, 0, 10));			       // count 0
	EXPECT_FALSE(run(RunKind::Exchange, kMaxRunCount + 1, 10));	       // too many
	EXPECT_FALSE(run(RunKind::Train, 2, kMaxMessageSize + 1));	       // too large
	EXPECT_FALSE(run(RunKind::Train, 1000, kMaxMessageSize));	       // too many bytes
	EXPECT_TRUE(run(RunKind::BulkStart, 0, 0));
	EXPECT_FALSE(run(RunKind::BulkMark, 1, 0));			       // bulk takes no count
	Bytes bad_kind(16, 0);
	bad_kind[0] = 7;
	bad_kind[7] = 1;
	EXPECT_FALSE(decode_run(bad_kind));
	const Frame good = encode_run({RunKind::PingPong, 1, 1});
	Bytes reserved(good.begin() + kFrameHeaderSize, good.end());
	reserved[2] = 1;
	EXPECT_FALSE(decode_run(reserved));
	EXPECT_TRUE(run(RunKind::StampedPing, 10, kStampedPingSize));
	EXPECT_FALSE(run(RunKind::StampedPing, 10, 1)); // the size is fixed
	EXPECT_FALSE(decode_result(Bytes(31, 0)));
	EXPECT_EQ(encode_error(std::string(5000, 'x')).size(), kFrameHeaderSize + kMaxErrorText);
	EXPECT_EQ(wire_size(0), 1u);
	EXPECT_EQ(wire_size(7), 7u);
}

// ------------------------------------------------------------------ responder on loopback

// A responder on 127.0.0.1 in a thread. It serves one session (`once`); garbage connections
// before it are refused without ending it. stop() finishes it with an empty session.
class Responder {
public:
	explicit Responder(ServeOptions options = {})
	{
		auto listener = listen_tcp("127.0.0.1", 0);
		EXPECT_TRUE(listener) << listener.error().message;
		listener_ = std::move(*listener);
		port = listener_.local.port;
		options.once = true;
		options.log = nullptr;
		options_ = options;
		thread_ = std::thread([this] {
			summary = serve(listener_, options_);
			done_ = true;
		});
	}
	~Responder() { stop(); }

	bool running() const { return thread_.joinable(); }

	void stop()
	{
		if (!thread_.joinable())
			return;
		// A session that just failed may still be closing (bounded: 200 ms drain).
		for (int i = 0; i < 100 && !finished(); ++i)
			std::this_thread::sleep_for(10ms);
		if (!finished()) {
			auto connection = connect_tcp("127.0.0.1", port, 2s, 2s);
			if (connection) {
				(void)send_frame(connection->fd.get(), encode_hello({Role::Control, 0}));
				(void)recv_frame(connection->fd.get());
				(void)send_frame(connection->fd.get(), encode_bye());
			}
		}
		thread_.join();
	}

	bool finished() const { return done_; }

	uint16_t port = 0;
	ServeSummary summary;

private:
	Listener listener_;
	ServeOptions options_;
	std::thread thread_;
	std::atomic<bool> done_{false};
};

ServeOptions short_timeouts()
{
	ServeOptions options;
	options.timeout = 30s;
	options.stall = 2s;
	options.first_frame = 300ms;
	return options;
}

// Sends raw bytes, returns everything the responder sends until it closes (bounded).
std::string exchange_raw(uint16_t port, const Bytes &bytes, bool half_close = false)
{
	auto connection = connect_tcp("127.0.0.1", port, 2s, 3s);
	EXPECT_TRUE(connection) << connection.error().message;
	if (!connection)
		return {};
	if (!bytes.empty()) {
		EXPECT_TRUE(send_all(connection->fd.get(), bytes.data(), bytes.size()));
	}
	if (half_close)
		::shutdown(connection->fd.get(), SHUT_WR);
	std::string reply;
	char buffer[4096];
	for (int i = 0; i < 100; ++i) {
		const ssize_t n = ::recv(connection->fd.get(), buffer, sizeof(buffer), 0);
		if (n <= 0)
			break;
		reply.append(buffer, static_cast<size_t>(n));
	}
	return reply;
}

// The ERROR frame the responder answered with, decoded.
std::pair<FrameHeader, std::string> error_reply(const std::string &reply)
{
	const Bytes bytes(reply.begin(), reply.end());
	auto header = decode_header(bytes);
	EXPECT_TRUE(header) << "reply of " << reply.size() << " bytes";
	if (!header)
		return {};
	EXPECT_EQ(header->type, FrameType::Error);
	EXPECT_EQ(bytes.size(), kFrameHeaderSize + header->length);
	return {*header, decode_error_text(std::span<const uint8_t>(bytes).subspan(kFrameHeaderSize))};
}

TEST(ProbeResponder, RefusesGarbageAndKeepsServing)
{
	Responder responder(short_timeouts());
	const std::string http = "GET / HTTP/1.0\r\n\r\n";
	auto [h1, text1] = error_reply(exchange_raw(responder.port, Bytes(http.begin(), http.end())));
	EXPECT_NE(text1.find("bad magic"), std::string::npos) << text1;

	Frame oversized = encode_bye();
	oversized[8] = 0xff;
	auto [h2, text2] = error_reply(exchange_raw(responder.port, oversized));
	EXPECT_NE(text2.find("exceeds"), std::string::npos) << text2;

	Frame future = encode_hello({Role::Control, 0});
	future[5] = 9; // version 9
	auto [h3, text3] = error_reply(exchange_raw(responder.port, future));
	EXPECT_EQ(h3.version, kProbeProtocolVersion); // the responder says which version it speaks
	EXPECT_NE(text3.find("version 9"), std::string::npos) << text3;

	// A bulk HELLO without a session, a RUN before HELLO, a short frame, silence.
	auto [h4, text4] = error_reply(exchange_raw(responder.port, encode_hello({Role::Bulk, 5})));
	EXPECT_NE(text4.find("bulk"), std::string::npos) << text4;
	auto [h5, text5] = error_reply(exchange_raw(responder.port, encode_run({RunKind::PingPong, 1, 1})));
	EXPECT_NE(text5.find("expected HELLO"), std::string::npos) << text5;
	const auto start = SteadyClock::now();
	auto [h6, text6] = error_reply(exchange_raw(responder.port, Bytes{'G', 'P'}));
	EXPECT_NE(text6.find("no HELLO"), std::string::npos) << text6;
	auto [h7, text7] = error_reply(exchange_raw(responder.port, {}));
	EXPECT_NE(text7.find("no HELLO"), std::string::npos) << text7;
	EXPECT_LT(SteadyClock::now() - start, 3s); // 2 x first_frame (300 ms), not forever

	// Still there: a real session works and ends it (once).
	EXPECT_FALSE(responder.finished());
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = responder.port;
	options.max_size = 4096;
	options.quick = true;
	options.budget = make_budget(true, 5);
	options.budget.queue_warmup_min_s = 0.1;
	options.budget.queue_warmup_max_s = 0.3;
	options.budget.queue_sample_s = 0.2;
	options.timeout = 20s;
	auto result = run_probe(options);
	ASSERT_TRUE(result) << result.error().message;
	responder.stop();
	EXPECT_EQ(responder.summary.refused, 7u);
	EXPECT_EQ(responder.summary.sessions, 1u);
	EXPECT_EQ(responder.summary.completed, 1u);
	EXPECT_EQ(result->points.size(), size_ladder(4096).size());
}

// Opens a session by hand and sends `frame` in it: the responder must answer ERROR and close.
std::string in_session(uint16_t port, const Bytes &frame)
{
	auto connection = connect_tcp("127.0.0.1", port, 2s, 3s);
	EXPECT_TRUE(connection);
	if (!connection)
		return {};
	const int fd = connection->fd.get();
	EXPECT_TRUE(send_frame(fd, encode_hello({Role::Control, 0})));
	auto welcome = recv_frame(fd);
	EXPECT_TRUE(welcome && welcome->header.type == FrameType::Welcome);
	EXPECT_TRUE(send_all(fd, frame.data(), frame.size()));
	std::string reply;
	char buffer[4096];
	for (int i = 0; i < 100; ++i) {
		const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
		if (n <= 0)
			break;
		reply.append(buffer, static_cast<size_t>(n));
	}
	return reply;
}

TEST(ProbeResponder, EndsASessionOnAMalformedRun)
{
	Frame bad_run = encode_run({RunKind::PingPong, 1, 1});
	bad_run[kFrameHeaderSize + 4] = 0xff; // count 4278190081
	{
		Responder responder(short_timeouts());
		auto [header, text] = error_reply(in_session(responder.port, bad_run));
		EXPECT_NE(text.find("count"), std::string::npos) << text;
		responder.stop();
		EXPECT_EQ(responder.summary.sessions, 1u);
		EXPECT_EQ(responder.summary.completed, 0u);
	}
	{
		Responder responder(short_timeouts());
		auto [header, text] = error_reply(in_session(responder.port, encode_run({RunKind::BulkMark, 0, 0})));
		EXPECT_NE(text.find("no bulk stream"), std::string::npos) << text;
	}
	{
		Responder responder(short_timeouts());
		auto [header, text] = error_reply(in_session(responder.port, encode_welcome({1, 1})));
		EXPECT_NE(text.find("unexpected WELCOME"), std::string::npos) << text;
	}
	{
		// Data that stops half-way: the stall timeout (2 s) ends the session.
		Responder responder(short_timeouts());
		const auto start = SteadyClock::now();
		const std::string reply = in_session(responder.port, encode_run({RunKind::PingPong, 1, 100000}));
		EXPECT_EQ(reply, "");
		EXPECT_LT(SteadyClock::now() - start, 5s);
		responder.stop();
		EXPECT_EQ(responder.summary.completed, 0u);
	}
}

// STAMPED_PING on loopback: each reply carries the responder's turnaround from the kernel's
// receive timestamp to its send, a few microseconds to milliseconds, never 0 or absurd.
TEST(ProbeResponder, StampedPingRepliesCarryTheTurnaround)
{
	Responder responder(short_timeouts());
	auto connection = connect_tcp("127.0.0.1", responder.port, 2s, 3s);
	ASSERT_TRUE(connection);
	const int fd = connection->fd.get();
	ASSERT_TRUE(send_frame(fd, encode_hello({Role::Control, 0})));
	auto welcome = recv_frame(fd);
	ASSERT_TRUE(welcome && welcome->header.type == FrameType::Welcome);
	ASSERT_TRUE(enable_rx_timestamps(fd, true));
	// The kernel switches receive timestamps on from a work item: give it a moment (the
	// probe enables them at the start of the session, long before it needs them).
	std::this_thread::sleep_for(100ms);
	constexpr uint32_t kPings = 10;
	ASSERT_TRUE(send_frame(fd, encode_run({RunKind::StampedPing, kPings, kStampedPingSize})));
	uint32_t stamped = 0;
	for (uint32_t i = 0; i < kPings; ++i) {
		uint8_t message[kStampedPingSize] = {1, 2, 3, 4, 5, 6, 7, 8};
		ASSERT_TRUE(send_all(fd, message, sizeof(message)));
		int64_t kernel_ns = 0;
		ASSERT_TRUE(recv_with_timestamp(fd, message, sizeof(message), kernel_ns));
		uint64_t turnaround = 0;
		for (uint8_t b : message)
			turnaround = turnaround << 8 | b;
		EXPECT_LT(turnaround, 1000000000u);
		if (kernel_ns > 0 && turnaround > 0)
			++stamped;
	}
	EXPECT_GE(stamped, kPings - 2);
	auto result = recv_frame(fd);
	ASSERT_TRUE(result);
	EXPECT_EQ(result->header.type, FrameType::Result);
	EXPECT_EQ(decode_result(result->payload)->values[2], kPings);
	ASSERT_TRUE(send_frame(fd, encode_bye()));
	responder.stop();
	EXPECT_EQ(responder.summary.completed, 1u);
}

TEST(ProbeTransport, ArrivalSpanPrefersKernelTimes)
{
	TransferTimes times;
	times.first_received_ns = 1000;
	times.last_received_ns = 1500;
	EXPECT_EQ(times.arrival_span_ns(), 500);
	times.first_kernel_ns = 2000;
	times.last_kernel_ns = 9000;
	EXPECT_EQ(times.arrival_span_ns(), 7000);
	times.last_kernel_ns = 0; // one missing: both from the application's clock
	EXPECT_EQ(times.arrival_span_ns(), 500);
}

// A two-message train on loopback: both sides see both messages, and the kernel's times give a
// span (the application's could be 0 when both arrive before this thread looks).
TEST(ProbeTransport, TrainOnASocketPair)
{
	int pair[2];
	ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
	UniqueFd a(pair[0]), b(pair[1]);
	const std::vector<uint8_t> out(4096, 1);
	std::vector<uint8_t> in_a(4096), in_b(4096);
	std::thread peer([&] { EXPECT_TRUE(transfer(b.get(), 3000, 5, 5, out, in_b, 2s)); });
	auto times = transfer(a.get(), 3000, 5, 5, out, in_a, 2s);
	peer.join();
	ASSERT_TRUE(times) << times.error().message;
	EXPECT_GE(times->first_received_ns, times->start_ns);
	EXPECT_GE(times->last_received_ns, times->first_received_ns);
	EXPECT_GE(times->arrival_span_ns(), 0);
}

TEST(ProbeResponder, ReturnsAtItsTimeout)
{
	auto listener = listen_tcp("127.0.0.1", 0);
	ASSERT_TRUE(listener);
	ServeOptions options = short_timeouts();
	options.timeout = 300ms;
	options.log = nullptr;
	const auto start = SteadyClock::now();
	const ServeSummary summary = serve(*listener, options);
	EXPECT_TRUE(summary.timed_out);
	EXPECT_EQ(summary.sessions, 0u);
	EXPECT_LT(SteadyClock::now() - start, 2s);
}

// ------------------------------------------------------------------ client errors

TEST(ProbeClient, RefusedConnectionIsAClearError)
{
	auto listener = listen_tcp("127.0.0.1", 0);
	ASSERT_TRUE(listener);
	const uint16_t port = listener->local.port;
	listener->fd.reset(); // nobody listens there now
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = port;
	options.timeout = 5s;
	auto result = run_probe(options);
	ASSERT_FALSE(result);
	EXPECT_EQ(result.error().err, ECONNREFUSED);
	EXPECT_NE(result.error().message.find("refused"), std::string::npos) << result.error().message;
	EXPECT_NE(result.error().message.find("--serve"), std::string::npos) << result.error().message;
}

TEST(ProbeClient, UnresolvableNameIsAClearError)
{
	ProbeOptions options;
	options.peer = "no-such-host.invalid";
	options.timeout = 5s;
	auto result = run_probe(options);
	ASSERT_FALSE(result);
	EXPECT_NE(result.error().message.find("cannot resolve"), std::string::npos) << result.error().message;
}

// A fake responder: accepts one connection, reads the HELLO, answers `reply` (or nothing).
class FakeResponder {
public:
	explicit FakeResponder(Frame reply)
	{
		auto listener = listen_tcp("127.0.0.1", 0);
		EXPECT_TRUE(listener);
		listener_ = std::move(*listener);
		port = listener_.local.port;
		thread_ = std::thread([this, reply] {
			auto connection = accept_tcp(listener_.fd.get(), Deadline(5s), 5s);
			if (!connection)
				return;
			Bytes hello(kFrameHeaderSize + 12);
			(void)recv_exact(connection->fd.get(), hello.data(), hello.size());
			if (!reply.empty())
				(void)send_all(connection->fd.get(), reply.data(), reply.size());
			char byte;
			(void)::recv(connection->fd.get(), &byte, 1, 0); // until the client goes (or 5 s)
		});
	}
	~FakeResponder() { thread_.join(); }
	uint16_t port = 0;

private:
	Listener listener_;
	std::thread thread_;
};

TEST(ProbeClient, VersionMismatchIsAClearError)
{
	Frame welcome = encode_welcome({7, kMaxMessageSize});
	welcome[5] = 2; // a responder of protocol version 2
	FakeResponder fake(welcome);
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = fake.port;
	options.timeout = 5s;
	auto result = run_probe(options);
	ASSERT_FALSE(result);
	EXPECT_EQ(result.error().err, EPROTONOSUPPORT);
	EXPECT_NE(result.error().message.find("version mismatch"), std::string::npos) << result.error().message;
	EXPECT_NE(result.error().message.find("version 2"), std::string::npos) << result.error().message;
}

TEST(ProbeClient, ResponderErrorIsShown)
{
	FakeResponder fake(encode_error("busy: a probe session is running"));
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = fake.port;
	options.timeout = 5s;
	auto result = run_probe(options);
	ASSERT_FALSE(result);
	EXPECT_NE(result.error().message.find("refused: busy"), std::string::npos) << result.error().message;
}

TEST(ProbeClient, SilentResponderTimesOut)
{
	FakeResponder fake({});
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = fake.port;
	options.timeout = 500ms;
	const auto start = SteadyClock::now();
	auto result = run_probe(options);
	ASSERT_FALSE(result);
	EXPECT_EQ(result.error().err, ETIMEDOUT) << result.error().message;
	EXPECT_LT(SteadyClock::now() - start, 2s);
}

// ------------------------------------------------------------------ parameter file

// The loader rules of the schema: format, required keys, finite numbers >= 0, points non-empty
// and strictly increasing in bytes. Returns "" when the document passes, else the first problem.
std::string schema_problem(const nlohmann::json &doc)
{
	if (!doc.is_object())
		return "not an object";
	if (doc.value("format", "") != "gappace-params/1")
		return "format";
	for (const char *key : {"local", "peer", "measured_at"})
		if (!doc.contains(key) || !doc[key].is_string() || doc[key].get<std::string>().empty())
			return key;
	for (const char *key : {"latency_us", "link_bps"})
		if (!doc.contains(key) || !doc[key].is_number())
			return key;
	for (const char *key : {"mean_us", "sigma_us", "samples"})
		if (!doc["rtt"].contains(key))
			return std::string("rtt.") + key;
	for (const char *key : {"delay_empty_us", "delay_full_us", "bytes", "packets", "mtu"})
		if (!doc["switch_queue"].contains(key))
			return std::string("switch_queue.") + key;
	if (!doc["oneway"].contains("S_us") || !doc["twoway"].contains("S_us"))
		return "S_us";
	if (!doc.contains("points") || !doc["points"].is_array() || doc["points"].empty())
		return "points";
	double previous = -1;
	for (const auto &p : doc["points"]) {
		for (const char *key : {"bytes", "g_us", "os_us", "or_us", "rtt_us", "m1_us_per_byte", "m2_us_per_byte", "reps"})
			if (!p.contains(key) || !p[key].is_number())
				return std::string("points[].") + key;
		if (p["bytes"].get<double>() <= previous)
			return "points not strictly increasing";
		previous = p["bytes"].get<double>();
	}
	std::string bad;
	std::function<void(const nlohmann::json &, const std::string &)> walk = [&](const nlohmann::json &v,
										   const std::string &path) {
		if (v.is_number() && !(std::isfinite(v.get<double>()) && v.get<double>() >= 0) && bad.empty())
			bad = path + ": must be >= 0";
		if (v.is_object())
			for (auto &[k, child] : v.items())
				walk(child, path + "." + k);
		if (v.is_array())
			for (size_t i = 0; i < v.size(); ++i)
				walk(v[i], path + "[" + std::to_string(i) + "]");
	};
	walk(doc, "params");
	return bad;
}

ProbeResult synthetic_result()
{
	ProbeResult r;
	r.local = "10.0.0.1";
	r.peer = "10.0.0.2";
	r.measured_at = "2026-11-22T10:00:00Z";
	r.latency_us = 45;
	r.link_bps = 199.6e6;
	r.mtu = 1500;
	r.mss = 1448;
	r.rtt = summarize(std::vector<double>{88, 90, 92, 91, 89});
	r.queue.delay_empty_us = 90;
	r.queue.delay_full_us = 2500;
	r.queue.rate_bps = 200e6;
	const QueueEstimate q = estimate_queue(90, 2500, 200e6, 1500);
	r.queue.bytes = q.bytes;
	r.queue.packets = q.packets;
	r.queue.rate_source = "given";
	r.s1_us = 45;
	r.s2_us = 55;
	for (uint64_t m : size_ladder(64)) {
		SizePoint p;
		p.bytes = m;
		p.g_us = 5 + m * 0.04;
		p.rtt_us = 90 + m * 0.08;
		p.reps = 200;
		p.m1_us_per_byte = m ? 0.04 : 0;
		r.points.push_back(p);
	}
	r.points[2].os_us = std::numeric_limits<double>::quiet_NaN(); // an empty sample somewhere
	r.points[3].m2_us_per_byte = -0.001;			       // noise below 0
	return r;
}

TEST(ProbeOutput, JsonFollowsTheSchema)
{
	const ProbeResult r = synthetic_result();
	for (auto format : {OutputFormat::Json, OutputFormat::PrettyJson}) {
		const std::string text = params_json(r, format);
		ASSERT_EQ(text.back(), '\n');
		const auto doc = nlohmann::json::parse(text, nullptr, false);
		ASSERT_FALSE(doc.is_discarded()) << text;
		EXPECT_EQ(schema_problem(doc), "") << text;
		EXPECT_EQ(doc["switch_queue"]["packets"].get<int>(), 40); // 39.8 rounded
		EXPECT_EQ(doc["switch_queue"]["bytes"].get<int>(), 60250);
		EXPECT_EQ(doc["link_bps"].get<uint64_t>(), 199600000u);
		EXPECT_EQ(doc["points"][2]["os_us"].get<double>(), 0);	       // NaN written as 0
		EXPECT_EQ(doc["points"][3]["m2_us_per_byte"].get<double>(), 0); // never negative
		EXPECT_EQ(doc["points"].size(), 8u);
		EXPECT_EQ(doc["rtt"]["samples"].get<int>(), 5);
		EXPECT_EQ(doc["probe"]["overhead_clock"], "CLOCK_THREAD_CPUTIME_ID");
	}
	const std::string table = params_table(r, "/tmp/x.json");
	EXPECT_NE(table.find("L 45.0 us"), std::string::npos) << table;
	EXPECT_NE(table.find("39.8 packets"), std::string::npos) << table;
	EXPECT_NE(table.find("wrote /tmp/x.json"), std::string::npos);
}

TEST(ProbeOutput, SchemaCheckerCatchesBrokenDocuments)
{
	// The checker above must be able to fail, or the schema test proves nothing.
	auto doc = nlohmann::json::parse(params_json(synthetic_result()));
	ASSERT_EQ(schema_problem(doc), "");
	auto wrong_format = doc;
	wrong_format["format"] = "gappace-params/2";
	EXPECT_EQ(schema_problem(wrong_format), "format");
	auto negative = doc;
	negative["points"][1]["g_us"] = -1;
	EXPECT_NE(schema_problem(negative), "");
	auto unordered = doc;
	std::swap(unordered["points"][1], unordered["points"][2]);
	EXPECT_EQ(schema_problem(unordered), "points not strictly increasing");
	auto empty = doc;
	empty["points"] = nlohmann::json::array();
	EXPECT_EQ(schema_problem(empty), "points");
}

TEST(ProbeOutput, FileIsReplacedAtomically)
{
	const auto dir = std::filesystem::temp_directory_path() / ("probe-test-" + std::to_string(::getpid()));
	std::filesystem::create_directories(dir);
	const std::string path = (dir / "params.json").string();
	ASSERT_TRUE(write_file_atomically(path, "old\n"));
	ASSERT_TRUE(write_file_atomically(path, "{\"new\":1}\n"));
	std::ifstream in(path);
	const std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
	EXPECT_EQ(content, "{\"new\":1}\n");
	size_t files = 0;
	for ([[maybe_unused]] const auto &entry : std::filesystem::directory_iterator(dir))
		++files;
	EXPECT_EQ(files, 1u); // no temporary left behind
	EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::others_read,
		  std::filesystem::perms::others_read);
	auto missing = write_file_atomically((dir / "no/such/dir/p.json").string(), "x");
	ASSERT_FALSE(missing);
	EXPECT_EQ(missing.error().err, ENOENT);
	std::filesystem::remove_all(dir);
}

// The planner's loader (daemon/models/params_file.hpp) takes what we write.
TEST(ProbeOutput, ThePlannersLoaderAcceptsTheFile)
{
	auto params = models::parse_params(params_json(synthetic_result(), OutputFormat::PrettyJson), "params.json");
	ASSERT_TRUE(params) << params.error().message;
	EXPECT_DOUBLE_EQ(params->latency_us, 45);
	EXPECT_EQ(params->points.size(), size_ladder(64).size());
	ASSERT_TRUE(params->switch_queue);
	EXPECT_EQ(params->switch_queue->packets, 40u);
	ASSERT_TRUE(params->twoway_s_us);
	EXPECT_DOUBLE_EQ(*params->twoway_s_us, 55);
}

// A short real probe on loopback: the measured document passes the schema too.
TEST(ProbeOutput, MeasuredResultFollowsTheSchema)
{
	Responder responder(short_timeouts());
	ProbeOptions options;
	options.peer = "127.0.0.1";
	options.port = responder.port;
	options.max_size = 65536;
	options.quick = true;
	options.budget = make_budget(true, 5);
	options.budget.queue_warmup_min_s = 0.1;
	options.budget.queue_warmup_max_s = 0.3;
	options.budget.queue_sample_s = 0.2;
	options.bottleneck_bps = 1000000000;
	options.timeout = 30s;
	auto result = run_probe(options);
	ASSERT_TRUE(result) << result.error().message;
	const auto doc = nlohmann::json::parse(params_json(*result));
	EXPECT_EQ(schema_problem(doc), "") << doc.dump(2);
	EXPECT_EQ(doc["peer"], "127.0.0.1");
	EXPECT_EQ(doc["switch_queue"]["rate_source"], "given");
	EXPECT_EQ(doc["switch_queue"]["rate_bps"].get<uint64_t>(), 1000000000u);
	EXPECT_GT(doc["rtt"]["mean_us"].get<double>(), 0);
	EXPECT_EQ(doc["points"].back()["bytes"].get<uint64_t>(), 65536u);
	auto loaded = models::parse_params(params_json(*result), "measured.json");
	EXPECT_TRUE(loaded) << loaded.error().message;
	for (const auto &p : doc["points"]) {
		EXPECT_GT(p["rtt_us"].get<double>(), 0);
		EXPECT_GE(p["reps"].get<int>(), 3);
	}
	responder.stop();
	EXPECT_EQ(responder.summary.completed, 1u);
}

} // namespace
} // namespace gp::probe

// ------------------------------------------------------------------ command line

namespace gp {
namespace {

using Words = std::vector<std::string_view>;

TEST(ProbeArgs, ServeAndClientForms)
{
	auto serve = parse_probe_args(Words{"--serve", "--bind", "10.0.0.2", "--port=0", "--once", "--timeout", "2.5"});
	ASSERT_TRUE(serve) << serve.error().message;
	EXPECT_TRUE(serve->serve);
	EXPECT_EQ(serve->bind, "10.0.0.2");
	EXPECT_EQ(serve->port, 0);
	EXPECT_TRUE(serve->once);
	EXPECT_EQ(serve->timeout, std::chrono::milliseconds(2500));

	auto client = parse_probe_args(Words{"10.0.0.2", "--quick", "--bottleneck-rate", "200mbit", "--max-size", "64k",
					     "--reps", "10", "--out", "/tmp/p.json", "-j", "--timeout", "500ms"});
	ASSERT_TRUE(client) << client.error().message;
	EXPECT_FALSE(client->serve);
	EXPECT_EQ(client->peer, "10.0.0.2");
	EXPECT_TRUE(client->quick);
	EXPECT_EQ(client->bottleneck_bps, 200000000u);
	EXPECT_EQ(client->max_size, 65536u);
	EXPECT_EQ(client->reps, 10u);
	EXPECT_EQ(client->out, "/tmp/p.json");
	EXPECT_TRUE(client->json);
	EXPECT_EQ(client->timeout, std::chrono::milliseconds(500));
	auto plain = parse_probe_args(Words{"h2"});
	ASSERT_TRUE(plain);
	EXPECT_EQ(plain->out, "./gappace-params.json");
	EXPECT_FALSE(plain->port);
}

TEST(ProbeArgs, RejectsBadOptions)
{
	const std::vector<std::pair<Words, std::string>> cases{
		{{}, "missing PEER"},
		{{"--serve", "h2"}, "takes no PEER"},
		{{"h2", "h3"}, "one PEER only"},
		{{"h2", "--once"}, "only goes with --serve"},
		{{"--serve", "--out", "x"}, "not of --serve"},
		{{"h2", "--reps", "2"}, "invalid --reps"},
		{{"h2", "--reps", "ten"}, "invalid --reps"},
		{{"h2", "--max-size", "2g"}, "invalid --max-size"},
		{{"h2", "--timeout", "soon"}, "invalid --timeout"},
		{{"h2", "--timeout", "0"}, "invalid --timeout"},
		{{"h2", "--port", "65536"}, "invalid --port"},
		{{"h2", "--port", "0"}, "invalid --port"},
		{{"h2", "--bottleneck-rate", "fast"}, "invalid --bottleneck-rate"},
		{{"h2", "--quick", "--quick"}, "duplicate option"},
		{{"h2", "--speed", "1"}, "unknown option"},
		{{"h2", "--port"}, "missing value"},
		{{"h2", "--quick=yes"}, "takes no value"},
		{{"--serve", "--bind", "eth0"}, "invalid --bind"},
	};
	for (const auto &[words, expected] : cases) {
		auto parsed = parse_probe_args(words);
		ASSERT_FALSE(parsed) << expected;
		EXPECT_EQ(parsed.error().err, EINVAL);
		EXPECT_NE(parsed.error().message.find(expected), std::string::npos)
			<< "got: " << parsed.error().message << ", expected: " << expected;
	}
}

struct Captured {
	int status;
	std::string out, err;
};

Captured run_words(const Words &words)
{
	FILE *out = std::tmpfile();
	FILE *err = std::tmpfile();
	const int status = dispatch(GlobalOptions{}, words, out, err);
	auto slurp = [](FILE *f) {
		std::string text;
		std::rewind(f);
		char buffer[4096];
		size_t n;
		while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
			text.append(buffer, n);
		std::fclose(f);
		return text;
	};
	return {status, slurp(out), slurp(err)};
}

TEST(ProbeArgs, DispatchExitCodes)
{
	auto bad = run_words({"probe", "--reps", "1", "h2"});
	EXPECT_EQ(bad.status, kExitUsage);
	EXPECT_NE(bad.err.find("invalid --reps"), std::string::npos) << bad.err;
	EXPECT_NE(bad.err.find("Usage: gapctl probe"), std::string::npos) << bad.err;
	auto help = run_words({"probe", "help"});
	EXPECT_EQ(help.status, kExitSuccess);
	EXPECT_NE(help.out.find("--serve"), std::string::npos);
	auto unreachable = run_words({"probe", "127.0.0.1", "--port", "1", "--timeout", "2", "--out", "/nonexistent/x"});
	EXPECT_EQ(unreachable.status, kExitFailure);
	EXPECT_NE(unreachable.err.find("gapctl: probe 127.0.0.1: cannot connect"), std::string::npos) << unreachable.err;
}

} // namespace
} // namespace gp
