#include "probe_measure.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>
#include <thread>

#include "probe_protocol.hpp"
#include "probe_transport.hpp"

namespace gp::probe {
namespace {

using std::chrono::milliseconds;

// The longest a blocking call may wait without progress (bounded by --timeout as well).
constexpr milliseconds kStall{30000};
// Receives larger than this go in several recv() calls (their CPU time is summed).
constexpr size_t kRecvChunk = 4u << 20;
constexpr size_t kMaxSendBuffer = 64u << 20;
constexpr size_t kBulkChunk = 1u << 20;
constexpr int kBulkSendBuffer = 4 << 20;
constexpr uint32_t kWarmupTrains = 3;
// Idle pings (1 ms apart) for the empty-queue delay, right before the bulk stream starts.
constexpr uint32_t kIdleQueueSamples = 100;

Error with_context(const std::string &what, const Error &error)
{
	return make_error(error.err, what + ": " + error.message);
}

std::string utc_now()
{
	const time_t now = ::time(nullptr);
	tm utc{};
	::gmtime_r(&now, &utc);
	char text[32];
	std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%SZ", &utc);
	return text;
}

void sleep_until_ns(int64_t when_ns)
{
	const timespec at{static_cast<time_t>(when_ns / 1000000000), static_cast<long>(when_ns % 1000000000)};
	while (::clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr) == EINTR) {
	}
}

double seconds_since(int64_t start_ns)
{
	return static_cast<double>(monotonic_ns() - start_ns) * 1e-9;
}

// Unmeasured exchanges before the measured ones: the responder starts one latency late, which
// only matters while a message's transfer time is not much longer than that.
uint32_t exchange_warmup(uint64_t size)
{
	return wire_size(size) < (1u << 20) ? 2 : 0;
}

struct StampedSamples {
	std::vector<double> net_us, app_us;
	size_t retransmitted = 0;
};

struct PingPongSamples {
	std::vector<double> rtt_us, os_us, or_us;
	double elapsed_s = 0;
};

// The second connection of the queue measurement: a thread streams into it until stopped.
class BulkStream {
public:
	BulkStream() = default;
	BulkStream(const BulkStream &) = delete;
	BulkStream &operator=(const BulkStream &) = delete;
	~BulkStream() { stop(); }

	void start(UniqueFd fd, int64_t deadline_ns)
	{
		fd_ = std::move(fd);
		stop_ = false;
		thread_ = std::thread([this, deadline_ns] { run(deadline_ns); });
	}
	// Stops the stream and closes the connection; returns the sender's error, if any.
	Expected<void> stop()
	{
		stop_ = true;
		if (thread_.joinable())
			thread_.join();
		if (fd_) {
			// An abortive close: megabytes still in the send buffer would otherwise keep
			// the bottleneck busy after the measurement ended.
			const linger abort{1, 0};
			::setsockopt(fd_.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof(abort));
			fd_.reset();
		}
		if (failed_)
			return error_;
		return {};
	}

private:
	void run(int64_t deadline_ns)
	{
		// A deep send buffer: the kernel keeps the link busy from it on every ACK even when
		// this thread is not scheduled for a while (a busy machine), so the bottleneck queue
		// stays full. Blocking sends, woken as soon as there is room; the short send timeout
		// only lets the loop look at stop_.
		const int want = kBulkSendBuffer;
		if (::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUFFORCE, &want, sizeof(want)) < 0)
			::setsockopt(fd_.get(), SOL_SOCKET, SO_SNDBUF, &want, sizeof(want));
		(void)set_stall_timeout(fd_.get(), milliseconds(100));
		std::vector<uint8_t> chunk(kBulkChunk, 0x5a);
		while (!stop_ && monotonic_ns() < deadline_ns) {
			const ssize_t n = ::send(fd_.get(), chunk.data(), chunk.size(), MSG_NOSIGNAL);
			if (n >= 0 || errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			error_ = make_error(errno, "bulk stream: send: " + errno_text(errno));
			failed_ = true;
			return;
		}
	}

	UniqueFd fd_;
	std::thread thread_;
	std::atomic<bool> stop_{false};
	bool failed_ = false; // written by the thread, read after join
	Error error_;
};

class ProbeClient {
public:
	explicit ProbeClient(const ProbeOptions &options)
		: options_(options), deadline_ns_(monotonic_ns() + options.timeout.count() * 1000000),
		  stall_(std::min(kStall, options.timeout))
	{
	}

	Expected<void> open()
	{
		const milliseconds connect_timeout = std::min(milliseconds(5000), options_.timeout);
		auto connection = connect_tcp(options_.peer, options_.port, connect_timeout, stall_);
		if (!connection) {
			std::string hint;
			if (connection.error().err == ECONNREFUSED)
				hint = " (is `gapctl probe --serve` running there?)";
			return make_error(connection.error().err, "cannot connect to port " + std::to_string(options_.port) +
									  ": " + connection.error().message + hint);
		}
		control_ = std::move(*connection);
		if (auto sent = send_frame(fd(), encode_hello({Role::Control, 0})); !sent)
			return with_context("HELLO", sent.error());
		auto frame = recv_expected(FrameType::Welcome, "HELLO");
		if (!frame)
			return frame.error();
		auto welcome = decode_welcome(frame->payload);
		if (!welcome)
			return with_context("WELCOME", welcome.error());
		token_ = welcome->token;
		if (welcome->max_message < options_.max_size)
			return make_error(EMSGSIZE, "the responder accepts messages up to " + std::to_string(welcome->max_message) +
							    " bytes, --max-size is " + std::to_string(options_.max_size));
		const size_t largest = static_cast<size_t>(wire_size(options_.max_size));
		send_buffer_.assign(std::min(largest, kMaxSendBuffer), 0xa5);
		recv_buffer_.resize(std::min(largest, kRecvChunk));
		path_ = path_info(fd(), control_.peer.family);
		// Kernel receive times for trains and stamped pings (see probe_transport.hpp).
		if (auto on = enable_rx_timestamps(fd(), true); !on)
			return on;
		return {};
	}

	const Connection &control() const { return control_; }
	const PathInfo &path() const { return path_; }
	bool expired() const { return monotonic_ns() >= deadline_ns_; }

	Expected<void> check_deadline(std::string_view during) const
	{
		if (expired())
			return make_error(ETIMEDOUT, "timed out after " + seconds_text(options_.timeout) + " (during " +
							     std::string(during) + ")");
		return {};
	}

	Expected<PingPongSamples> pingpong(uint64_t size, uint32_t count, double clock_cost_ns)
	{
		const std::string what = "ping-pong of " + std::to_string(size) + " B";
		if (auto ok = check_deadline(what); !ok)
			return ok.error();
		if (auto sent = send_frame(fd(), encode_run({RunKind::PingPong, count, size})); !sent)
			return with_context(what, sent.error());
		const uint64_t wire = wire_size(size);
		PingPongSamples samples;
		const int64_t start = monotonic_ns();
		for (uint32_t i = 0; i < count; ++i) {
			const int64_t t0 = monotonic_ns();
			const int64_t c0 = thread_cpu_ns();
			auto sent = send_repeated(fd(), wire, send_buffer_);
			const int64_t c1 = thread_cpu_ns();
			if (!sent)
				return with_context(what, sent.error());
			auto got = receive(wire);
			const int64_t c2 = thread_cpu_ns();
			const int64_t t1 = monotonic_ns();
			if (!got)
				return with_context(what, got.error());
			samples.rtt_us.push_back(static_cast<double>(t1 - t0) / 1e3);
			samples.os_us.push_back(std::max(0.0, static_cast<double>(c1 - c0) - clock_cost_ns) / 1e3);
			samples.or_us.push_back(std::max(0.0, static_cast<double>(c2 - c1) - clock_cost_ns) / 1e3);
		}
		samples.elapsed_s = seconds_since(start);
		if (auto result = expect_result(what); !result)
			return result.error();
		return samples;
	}

	// Small ping-pongs timed to the kernel: from before our send() to the kernel's receive
	// timestamp of the reply, minus the responder's turnaround (protocol: STAMPED_PING). What
	// is left is the network's round trip without either process's wake-up time, which on a
	// busy machine is milliseconds and grows with the bulk stream's CPU load. Needs
	// enable_rx_timestamps() on the control socket. spacing_ns > 0 starts the pings on a
	// fixed time grid (when one is late, the next starts at once): samples uniform in time,
	// not in number (see measure_queue()). watch_retransmits leaves out the pings whose
	// segment TCP had to send again.
	Expected<StampedSamples> stamped_ping(uint32_t count, bool watch_retransmits, int64_t spacing_ns)
	{
		const std::string what = "timed ping-pong";
		if (auto ok = check_deadline(what); !ok)
			return ok.error();
		if (auto sent = send_frame(fd(), encode_run({RunKind::StampedPing, count, kStampedPingSize})); !sent)
			return with_context(what, sent.error());
		StampedSamples samples;
		const int64_t start = monotonic_ns();
		uint8_t message[kStampedPingSize] = {};
		for (uint32_t i = 0; i < count; ++i) {
			if (spacing_ns > 0 && i > 0)
				sleep_until_ns(start + spacing_ns * i);
			const uint64_t resent_before = watch_retransmits ? total_retransmits(fd()) : 0;
			const int64_t t0 = monotonic_ns();
			const int64_t t0_real = realtime_ns();
			if (auto sent = send_all(fd(), message, sizeof(message)); !sent)
				return with_context(what, sent.error());
			int64_t rx_real = 0;
			if (auto got = recv_with_timestamp(fd(), message, sizeof(message), rx_real); !got)
				return with_context(what, got.error());
			const int64_t t1 = monotonic_ns();
			if (watch_retransmits && total_retransmits(fd()) != resent_before) {
				++samples.retransmitted;
				continue;
			}
			uint64_t turnaround = 0;
			for (uint8_t b : message)
				turnaround = turnaround << 8 | b;
			const double app_us = static_cast<double>(t1 - t0) / 1e3;
			double net_us = app_us; // without a kernel timestamp: what the application saw
			if (rx_real > t0_real && turnaround < static_cast<uint64_t>(rx_real - t0_real))
				net_us = static_cast<double>(rx_real - t0_real - static_cast<int64_t>(turnaround)) / 1e3;
			samples.app_us.push_back(app_us);
			samples.net_us.push_back(net_us);
		}
		if (auto result = expect_result(what); !result)
			return result.error();
		return samples;
	}

	// Per-exchange times in us, the first pair (the responder's start-up) left out when it
	// matters (exchange_warmup()).
	Expected<std::vector<double>> exchange(uint64_t size, uint32_t count, double &elapsed_s)
	{
		const std::string what = "exchange of " + std::to_string(size) + " B";
		if (auto ok = check_deadline(what); !ok)
			return ok.error();
		const uint32_t warmup = exchange_warmup(size);
		const uint32_t total = count + warmup;
		if (auto sent = send_frame(fd(), encode_run({RunKind::Exchange, total, size})); !sent)
			return with_context(what, sent.error());
		std::vector<double> times;
		int64_t previous = monotonic_ns();
		const int64_t start = previous;
		for (uint32_t i = 0; i < total; ++i) {
			auto done = transfer(fd(), size, 1, 1, send_buffer_, recv_buffer_, stall_);
			if (!done)
				return with_context(what, done.error());
			const int64_t now = monotonic_ns();
			if (i >= warmup)
				times.push_back(static_cast<double>(now - previous) / 1e3);
			previous = now;
		}
		elapsed_s = seconds_since(start);
		if (auto result = expect_result(what); !result)
			return result.error();
		return times;
	}

	// One bidirectional train: the time per message in us, both directions averaged.
	Expected<double> train(uint64_t size, uint32_t length)
	{
		const std::string what = "train of " + std::to_string(length) + " x " + std::to_string(size) + " B";
		if (auto ok = check_deadline(what); !ok)
			return ok.error();
		if (auto sent = send_frame(fd(), encode_run({RunKind::Train, length, size})); !sent)
			return with_context(what, sent.error());
		auto times = transfer(fd(), size, length, length, send_buffer_, recv_buffer_, stall_);
		if (!times)
			return with_context(what, times.error());
		auto result = expect_result(what);
		if (!result)
			return result.error();
		const double ours = static_cast<double>(std::max<int64_t>(0, times->arrival_span_ns()));
		const double theirs = static_cast<double>(result->values[0]);
		return (ours + theirs) / 2 / static_cast<double>(length - 1) / 1e3;
	}

	Expected<void> bulk_start()
	{
		const std::string what = "starting the bulk stream";
		if (auto sent = send_frame(fd(), encode_run({RunKind::BulkStart, 0, 0})); !sent)
			return with_context(what, sent.error());
		Endpoint peer = control_.peer;
		peer.port = 0;
		auto bulk = connect_tcp(format_endpoint(peer), options_.port, std::min(milliseconds(5000), stall_), stall_);
		if (!bulk)
			return with_context(what, bulk.error());
		if (auto sent = send_frame(bulk->fd.get(), encode_hello({Role::Bulk, token_})); !sent)
			return with_context(what, sent.error());
		if (auto result = expect_result(what); !result)
			return result.error();
		bulk_.start(std::move(bulk->fd), deadline_ns_);
		return {};
	}

	// Bytes the responder received on the bulk connection, and when (ns since its first byte).
	Expected<std::pair<uint64_t, uint64_t>> bulk_mark()
	{
		if (auto sent = send_frame(fd(), encode_run({RunKind::BulkMark, 0, 0})); !sent)
			return with_context("bulk mark", sent.error());
		auto result = expect_result("bulk mark");
		if (!result)
			return result.error();
		return std::pair{result->values[0], result->values[1]};
	}

	Expected<void> bulk_stop()
	{
		auto stopped = bulk_.stop();
		if (auto sent = send_frame(fd(), encode_run({RunKind::BulkStop, 0, 0})); !sent)
			return with_context("stopping the bulk stream", sent.error());
		if (auto result = expect_result("stopping the bulk stream"); !result)
			return result.error();
		return stopped;
	}

	Expected<void> bye()
	{
		if (auto sent = send_frame(fd(), encode_bye()); !sent)
			return with_context("BYE", sent.error());
		return {};
	}

private:
	int fd() const { return control_.fd.get(); }

	Expected<void> receive(uint64_t wire)
	{
		while (wire > 0) {
			const size_t chunk = static_cast<size_t>(std::min<uint64_t>(wire, recv_buffer_.size()));
			if (auto got = recv_exact(fd(), recv_buffer_.data(), chunk); !got)
				return got;
			wire -= chunk;
		}
		return {};
	}

	// The next frame, which must be `type`; an ERROR frame becomes the responder's message.
	Expected<ReceivedFrame> recv_expected(FrameType type, const std::string &what)
	{
		auto frame = recv_frame(fd());
		if (!frame) {
			if (frame.error().err == EPROTONOSUPPORT)
				return make_error(EPROTONOSUPPORT, "responder version mismatch: " + frame.error().message);
			return with_context(what, frame.error());
		}
		if (frame->header.type == FrameType::Error)
			return make_error(EPROTO, what + ": the responder refused: " + decode_error_text(frame->payload));
		if (frame->header.type != type)
			return make_error(EPROTO, what + ": expected " + std::string(frame_type_name(type)) + " from the responder, got " +
							  std::string(frame_type_name(frame->header.type)));
		return frame;
	}

	Expected<Result> expect_result(const std::string &what)
	{
		auto frame = recv_expected(FrameType::Result, what);
		if (!frame)
			return frame.error();
		auto result = decode_result(frame->payload);
		if (!result)
			return with_context(what, result.error());
		return *result;
	}

	const ProbeOptions &options_;
	const int64_t deadline_ns_;
	const milliseconds stall_;
	Connection control_;
	uint64_t token_ = 0;
	PathInfo path_;
	std::vector<uint8_t> send_buffer_, recv_buffer_;
	BulkStream bulk_;
};

std::string fixed(double v, int digits = 1)
{
	char text[48];
	std::snprintf(text, sizeof(text), "%.*f", digits, v);
	return text;
}

void say(const ProbeOptions &options, const std::string &line)
{
	if (options.progress)
		options.progress(line);
}

// Ping-pongs of one size: min_reps first, then as many more (up to reps) as fit the time cap.
Expected<PingPongSamples> measure_pingpong(ProbeClient &client, uint64_t size, uint32_t reps, const Budget &budget,
					   double clock_cost_ns)
{
	// Small messages get one unmeasured round first (the responder's start of the run).
	const uint32_t warmup = size <= (256u << 10) ? 1 : 0;
	const uint32_t first = std::min(reps, budget.min_reps);
	auto samples = client.pingpong(size, first + warmup, clock_cost_ns);
	if (!samples)
		return samples;
	if (warmup) {
		samples->rtt_us.erase(samples->rtt_us.begin());
		samples->os_us.erase(samples->os_us.begin());
		samples->or_us.erase(samples->or_us.begin());
	}
	const double per_rep = samples->elapsed_s / (first + warmup);
	const double left_s = budget.size_seconds - samples->elapsed_s;
	const uint32_t more = per_rep > 0 ? static_cast<uint32_t>(std::clamp(left_s / per_rep, 0.0, double(reps - first)))
					  : reps - first;
	if (more == 0)
		return samples;
	auto rest = client.pingpong(size, more, clock_cost_ns);
	if (!rest)
		return rest;
	samples->rtt_us.insert(samples->rtt_us.end(), rest->rtt_us.begin(), rest->rtt_us.end());
	samples->os_us.insert(samples->os_us.end(), rest->os_us.begin(), rest->os_us.end());
	samples->or_us.insert(samples->or_us.end(), rest->or_us.begin(), rest->or_us.end());
	samples->elapsed_s += rest->elapsed_s;
	return samples;
}

// Exchanges of one size as pair averages: 4 first, then more up to reps within the time cap.
Expected<std::vector<double>> measure_exchange(ProbeClient &client, uint64_t size, uint32_t reps, const Budget &budget)
{
	double elapsed = 0;
	auto times = client.exchange(size, 4, elapsed);
	if (!times)
		return times;
	std::vector<double> pairs = pair_averages(*times);
	const double per_rep = elapsed / (4 + exchange_warmup(size));
	const double left_s = budget.size_seconds - elapsed;
	uint32_t more = reps > 4 ? reps - 4 : 0;
	if (per_rep > 0)
		more = static_cast<uint32_t>(std::clamp(left_s / per_rep, 0.0, double(more)));
	more -= more % 2;
	if (more >= 2) {
		double elapsed_more = 0;
		auto rest = client.exchange(size, more, elapsed_more);
		if (!rest)
			return rest;
		auto rest_pairs = pair_averages(*rest);
		pairs.insert(pairs.end(), rest_pairs.begin(), rest_pairs.end());
	}
	return pairs;
}

Expected<std::vector<double>> measure_gap(ProbeClient &client, uint64_t size, const Schedule &schedule,
					  const Budget &budget)
{
	std::vector<double> gaps;
	const int64_t start = monotonic_ns();
	for (uint32_t i = 0; i < schedule.trains; ++i) {
		if (i >= budget.min_reps && seconds_since(start) > budget.size_seconds)
			break;
		auto gap = client.train(size, schedule.train_length);
		if (!gap)
			return gap.error();
		gaps.push_back(*gap);
	}
	return gaps;
}

Expected<SwitchQueue> measure_queue(ProbeClient &client, const ProbeOptions &options, double clock_cost_ns)
{
	const Budget &budget = options.budget;
	SwitchQueue queue;
	queue.mtu = client.path().mtu;
	// Both delays end at the kernel's receive timestamp of the reply: the time our thread needs
	// to wake up is not queueing, and it grows with the bulk stream's CPU load.
	auto idle = client.stamped_ping(kIdleQueueSamples, false, 1000000);
	if (!idle)
		return idle.error();
	queue.delay_empty_us = trimmed_mean(idle->net_us);
	if (auto started = client.bulk_start(); !started)
		return started.error();

	// Pings on a time grid: a ping through an empty queue returns 50 times sooner than one
	// through a full queue, so back-to-back pings would sample the empty moments of cubic's
	// sawtooth (and the stalls after a loss) far more often than they last.
	const int64_t spacing_ns = static_cast<int64_t>(budget.queue_sample_s * 1e9 / std::max(1u, budget.queue_samples));

	// Wait until the bottleneck queue is full: batch medians of the loaded RTT stop moving.
	std::vector<double> medians;
	const int64_t warm_start = monotonic_ns();
	for (;;) {
		auto batch = client.stamped_ping(10, true, spacing_ns);
		if (!batch)
			return batch.error();
		if (!batch->net_us.empty())
			medians.push_back(median(batch->net_us));
		const double elapsed = seconds_since(warm_start);
		if (elapsed >= budget.queue_warmup_min_s && delay_stable(medians)) {
			queue.stable = true;
			break;
		}
		if (elapsed >= budget.queue_warmup_max_s)
			break;
	}
	queue.warmup_s = seconds_since(warm_start);
	say(options, "queue: loaded delay " + std::string(queue.stable ? "settled" : "did not settle") + " after " +
			     fixed(queue.warmup_s) + " s");

	auto mark_before = client.bulk_mark();
	if (!mark_before)
		return mark_before.error();
	std::vector<double> loaded, loaded_app;
	const int64_t sample_start = monotonic_ns();
	while (loaded.size() < budget.queue_samples && seconds_since(sample_start) < budget.queue_sample_s) {
		auto batch = client.stamped_ping(25, true, spacing_ns);
		if (!batch)
			return batch.error();
		loaded.insert(loaded.end(), batch->net_us.begin(), batch->net_us.end());
		loaded_app.insert(loaded_app.end(), batch->app_us.begin(), batch->app_us.end());
		queue.retransmitted += batch->retransmitted;
	}
	auto mark_after = client.bulk_mark();
	if (!mark_after)
		return mark_after.error();
	if (auto stopped = client.bulk_stop(); !stopped)
		return stopped.error();
	if (loaded.empty())
		return make_error(EIO, "every loaded RTT sample was lost and retransmitted: no queue estimate");

	queue.delay_loaded_mean_us = trimmed_mean(loaded);
	queue.delay_full_us = quantile(loaded, kFullQueueQuantile);
	queue.app_delay_full_us = quantile(loaded_app, kFullQueueQuantile);
	queue.samples = loaded.size();
	const uint64_t bytes = mark_after->first - mark_before->first;
	const double seconds = static_cast<double>(mark_after->second - mark_before->second) * 1e-9;
	queue.bulk_goodput_bps = seconds > 0 ? static_cast<double>(bytes) * 8 / seconds : 0;
	if (options.bottleneck_bps) {
		queue.rate_bps = static_cast<double>(*options.bottleneck_bps);
		queue.rate_source = "given";
	} else {
		queue.rate_bps = wire_rate_bps(queue.bulk_goodput_bps, client.path().mss, client.path().mtu);
		queue.rate_source = "bulk";
	}
	const QueueEstimate q = estimate_queue(queue.delay_empty_us, queue.delay_full_us, queue.rate_bps, queue.mtu);
	queue.bytes = q.bytes;
	queue.packets = q.packets;
	return queue;
}

} // namespace

Expected<ProbeResult> run_probe(const ProbeOptions &options)
{
	const int64_t start = monotonic_ns();
	const Budget &budget = options.budget;
	ProbeClient client(options);
	if (auto opened = client.open(); !opened)
		return opened.error();

	ProbeResult result;
	Endpoint local = client.control().local, peer = client.control().peer;
	local.port = peer.port = 0;
	result.local = format_endpoint(local);
	result.peer = format_endpoint(peer);
	result.port = options.port;
	result.measured_at = utc_now();
	result.quick = options.quick;
	result.max_size = options.max_size;
	result.cpu_clock_overhead_ns = thread_cpu_clock_overhead_ns();
	const double clock_cost = result.cpu_clock_overhead_ns;

	// The idle path's small-message RTT: mean, sigma, S1, and the empty-queue delay.
	say(options, "rtt: " + std::to_string(budget.rtt_samples) + " ping-pongs of 0 B");
	auto rtt = client.pingpong(0, budget.rtt_samples + 10, clock_cost);
	if (!rtt)
		return rtt.error();
	rtt->rtt_us.erase(rtt->rtt_us.begin(), rtt->rtt_us.begin() + 10); // warm-up
	result.rtt = summarize(rtt->rtt_us);
	result.s1_us = result.rtt.mean / 2;

	// Unmeasured trains of small messages first: TCP batches tiny messages into one segment
	// while its congestion window is small (a fresh connection), so the first trains would
	// show a gap far below the steady state, where every message is a segment of its own.
	for (uint32_t i = 0; i < kWarmupTrains; ++i)
		if (auto warm = client.train(0, budget.max_train_length); !warm)
			return warm.error();

	for (const uint64_t size : size_ladder(options.max_size)) {
		const Schedule schedule = schedule_for(size, budget);
		SizePoint point;
		point.bytes = size;
		auto pingpong = measure_pingpong(client, size, schedule.pingpong, budget, clock_cost);
		if (!pingpong)
			return pingpong.error();
		point.rtt_us = robust_mean(pingpong->rtt_us);
		point.os_us = robust_mean(pingpong->os_us);
		point.or_us = robust_mean(pingpong->or_us);
		point.reps = static_cast<uint32_t>(pingpong->rtt_us.size());
		auto exchange = measure_exchange(client, size, schedule.exchange, budget);
		if (!exchange)
			return exchange.error();
		point.exchange_us = robust_mean(*exchange);
		point.exchange_reps = static_cast<uint32_t>(exchange->size() * 2);
		auto gaps = measure_gap(client, size, schedule, budget);
		if (!gaps)
			return gaps.error();
		point.g_us = robust_mean(*gaps);
		point.trains = static_cast<uint32_t>(gaps->size());
		point.train_length = schedule.train_length;
		say(options, "size " + std::to_string(size) + " B: rtt " + fixed(point.rtt_us) + " us, exchange " +
				     fixed(point.exchange_us) + " us, g " + fixed(point.g_us, 2) + " us (" +
				     std::to_string(point.reps) + " reps)");
		result.points.push_back(point);
	}

	result.s2_us = result.points.front().exchange_us;
	for (auto &point : result.points) {
		point.m1_us_per_byte = per_byte_us(point.rtt_us / 2, result.s1_us, point.bytes);
		point.m2_us_per_byte = per_byte_us(point.exchange_us, result.s2_us, point.bytes);
	}
	result.latency_us = plogp_latency_us(result.points.front().rtt_us, result.points.front().g_us);
	result.mss = client.path().mss;
	result.mtu = client.path().mtu;
	const SizePoint &largest = result.points.back();
	result.link_bps = wire_rate_bps(goodput_bps(wire_size(largest.bytes), largest.g_us), result.mss, result.mtu);

	if (options.measure_queue) {
		auto queue = measure_queue(client, options, clock_cost);
		if (!queue)
			return queue.error();
		result.queue = *queue;
	} else {
		result.queue.delay_empty_us = result.queue.delay_full_us = result.rtt.mean;
		result.queue.mtu = result.mtu;
		result.queue.rate_source = "none";
	}
	if (auto done = client.bye(); !done)
		return done.error();
	result.duration_s = seconds_since(start);
	return result;
}

} // namespace gp::probe
