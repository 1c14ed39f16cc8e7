#include "probe_serve.hpp"

#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <optional>
#include <thread>
#include <vector>

#include "probe_protocol.hpp"

namespace gp::probe {
namespace {

using std::chrono::milliseconds;

// The responder streams through fixed buffers whatever the message size.
constexpr size_t kServeBuffer = 1u << 20;
constexpr size_t kSinkChunk = 1u << 20;
constexpr int kSinkReceiveBuffer = 8 << 20;

void log_line(const ServeOptions &options, const std::string &line)
{
	if (!options.log)
		return;
	std::fprintf(options.log, "gapctl probe: %s\n", line.c_str());
	std::fflush(options.log);
}

// ERROR, then an orderly close: half-close, read what the peer still sends (briefly, bounded)
// so that the kernel does not answer it with a reset that could destroy the ERROR frame.
void refuse(int fd, const std::string &reason, uint16_t version = kProbeProtocolVersion)
{
	(void)send_frame(fd, encode_error(reason, version));
	::shutdown(fd, SHUT_WR);
	uint8_t scratch[4096];
	size_t drained = 0;
	const Deadline deadline(milliseconds(200));
	while (drained < (64u << 10) && !deadline.expired()) {
		pollfd p{fd, POLLIN, 0};
		if (::poll(&p, 1, deadline.left_ms()) <= 0)
			break;
		const ssize_t n = ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
		if (n <= 0)
			break;
		drained += static_cast<size_t>(n);
	}
}

uint64_t new_token()
{
	uint64_t token = 0;
	if (::getrandom(&token, sizeof(token), GRND_NONBLOCK) != sizeof(token))
		token = static_cast<uint64_t>(monotonic_ns()) ^ (static_cast<uint64_t>(::getpid()) << 32);
	return token ? token : 1;
}

// The receiving end of the bulk stream: counts and drops bytes until stopped or closed.
class BulkSink {
public:
	BulkSink() = default;
	BulkSink(const BulkSink &) = delete;
	BulkSink &operator=(const BulkSink &) = delete;
	~BulkSink() { stop(); }

	bool running() const { return thread_.joinable(); }

	void start(UniqueFd fd, int64_t deadline_ns)
	{
		fd_ = std::move(fd);
		stop_ = false;
		bytes_ = 0;
		first_ns_ = 0;
		thread_ = std::thread([this, deadline_ns] { run(deadline_ns); });
	}

	void stop()
	{
		stop_ = true;
		if (thread_.joinable())
			thread_.join();
		fd_.reset();
	}

	// Bytes so far, and ns since the first of them.
	std::pair<uint64_t, uint64_t> mark() const
	{
		const int64_t first = first_ns_;
		const uint64_t bytes = bytes_;
		return {bytes, first ? static_cast<uint64_t>(monotonic_ns() - first) : 0};
	}

private:
	void run(int64_t deadline_ns)
	{
		// A deep receive buffer, so that a sink thread that is not scheduled for a while (a
		// busy machine) does not close the window and idle the link it is meant to fill.
		const int want = kSinkReceiveBuffer;
		if (::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof(want)) < 0)
			::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &want, sizeof(want));
		std::vector<uint8_t> chunk(kSinkChunk);
		while (!stop_ && monotonic_ns() < deadline_ns) {
			pollfd p{fd_.get(), POLLIN, 0};
			if (::poll(&p, 1, 50) <= 0) // wakes up to look at stop_
				continue;
			const ssize_t n = ::recv(fd_.get(), chunk.data(), chunk.size(), MSG_DONTWAIT);
			if (n > 0) {
				if (first_ns_ == 0)
					first_ns_ = monotonic_ns();
				bytes_ += static_cast<uint64_t>(n);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				return; // closed or broken: the client learns it from bulk marks
			}
		}
	}

	UniqueFd fd_;
	std::thread thread_;
	std::atomic<bool> stop_{false};
	std::atomic<uint64_t> bytes_{0};
	std::atomic<int64_t> first_ns_{0};
};

class Session {
public:
	Session(Connection &connection, const Listener &listener, uint64_t token, const Deadline &deadline,
		int64_t deadline_ns, const ServeOptions &options)
		: conn_(connection), listener_(listener), token_(token), deadline_(deadline), deadline_ns_(deadline_ns),
		  options_(options), send_buffer_(kServeBuffer, 0x3c), recv_buffer_(kServeBuffer)
	{
	}

	// Runs until BYE (success) or the first failure, which the client is told about if possible.
	Expected<uint32_t> run()
	{
		uint32_t runs = 0;
		// Kernel receive times for trains and stamped pings (see probe_transport.hpp).
		if (auto on = enable_rx_timestamps(fd(), true); !on)
			return fail(on.error().message);
		for (;;) {
			if (deadline_.expired())
				return fail("the responder's --timeout passed");
			auto frame = recv_frame(fd());
			if (!frame) {
				const Error &e = frame.error();
				if (e.err == EBADMSG || e.err == EMSGSIZE || e.err == EPROTONOSUPPORT)
					return fail(e.message);
				return e; // closed, reset or stalled: nobody to tell
			}
			if (frame->header.type == FrameType::Bye) {
				if (!frame->payload.empty())
					return fail("BYE carries no payload");
				return runs;
			}
			if (frame->header.type != FrameType::Run)
				return fail("unexpected " + std::string(frame_type_name(frame->header.type)) + " in a session");
			auto run = decode_run(frame->payload);
			if (!run)
				return fail(run.error().message);
			if (auto done = execute(*run); !done)
				return done.error();
			++runs;
		}
	}

private:
	int fd() const { return conn_.fd.get(); }

	Error fail(const std::string &reason)
	{
		refuse(fd(), reason);
		return make_error(EPROTO, reason);
	}

	Expected<void> reply(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0)
	{
		return send_frame(fd(), encode_result({{a, b, c, d}}));
	}

	Expected<void> execute(const Run &run)
	{
		const uint64_t wire = wire_size(run.size);
		switch (run.kind) {
		case RunKind::PingPong: {
			int64_t recv_cpu = 0, send_cpu = 0;
			for (uint32_t i = 0; i < run.count; ++i) {
				const int64_t c0 = thread_cpu_ns();
				if (auto got = discard_exact(fd(), wire, recv_buffer_); !got)
					return got;
				const int64_t c1 = thread_cpu_ns();
				if (auto sent = send_repeated(fd(), wire, send_buffer_); !sent)
					return sent;
				send_cpu += thread_cpu_ns() - c1;
				recv_cpu += c1 - c0;
			}
			return reply(static_cast<uint64_t>(recv_cpu), static_cast<uint64_t>(send_cpu), run.count);
		}
		case RunKind::StampedPing: {
			uint8_t message[kStampedPingSize];
			for (uint32_t i = 0; i < run.count; ++i) {
				int64_t received = 0;
				if (auto got = recv_with_timestamp(fd(), message, sizeof(message), received); !got)
					return got;
				const int64_t now = realtime_ns();
				const uint64_t turnaround = received > 0 && now > received ? static_cast<uint64_t>(now - received) : 0;
				for (size_t b = 0; b < sizeof(message); ++b)
					message[b] = static_cast<uint8_t>(turnaround >> (56 - 8 * b));
				if (auto sent = send_all(fd(), message, sizeof(message)); !sent)
					return sent;
			}
			return reply(0, 0, run.count);
		}
		case RunKind::Exchange:
			for (uint32_t i = 0; i < run.count; ++i)
				if (auto done = transfer(fd(), run.size, 1, 1, send_buffer_, recv_buffer_, options_.stall); !done)
					return done.error();
			return reply(0, 0, run.count);
		case RunKind::Train: {
			auto times = transfer(fd(), run.size, run.count, run.count, send_buffer_, recv_buffer_, options_.stall);
			if (!times)
				return times.error();
			return reply(static_cast<uint64_t>(std::max<int64_t>(0, times->arrival_span_ns())), 0, run.count);
		}
		case RunKind::BulkStart:
			if (sink_.running())
				return fail("a bulk stream is already running");
			if (auto accepted = accept_bulk(); !accepted)
				return accepted;
			return reply(0);
		case RunKind::BulkMark: {
			if (!sink_.running())
				return fail("no bulk stream is running");
			const auto [bytes, ns] = sink_.mark();
			return reply(bytes, ns);
		}
		case RunKind::BulkStop: {
			if (!sink_.running())
				return fail("no bulk stream is running");
			const auto [bytes, ns] = sink_.mark();
			sink_.stop();
			return reply(bytes, ns);
		}
		}
		return fail("unknown RUN kind");
	}

	// The session's second connection; strangers that connect meanwhile are refused.
	Expected<void> accept_bulk()
	{
		const Deadline wait(std::min(options_.stall, options_.first_frame * 2));
		for (;;) {
			auto incoming = accept_tcp(listener_.fd.get(), wait, options_.first_frame);
			if (!incoming) {
				if (incoming.error().err == ETIMEDOUT)
					return fail("the bulk connection did not come");
				return incoming.error();
			}
			auto frame = recv_frame(incoming->fd.get());
			if (!frame) {
				refuse(incoming->fd.get(), frame.error().message);
				continue;
			}
			auto hello = frame->header.type == FrameType::Hello ? decode_hello(frame->payload)
									    : Expected<Hello>(make_error(EPROTO, "expected HELLO"));
			if (!hello || hello->role != Role::Bulk || hello->token != token_) {
				refuse(incoming->fd.get(), "busy: a probe session is running");
				log_line(options_, "refused " + format_endpoint(incoming->peer) + " during a session");
				continue;
			}
			sink_.start(std::move(incoming->fd), deadline_ns_);
			return {};
		}
	}

	Connection &conn_;
	const Listener &listener_;
	const uint64_t token_;
	const Deadline &deadline_;
	const int64_t deadline_ns_;
	const ServeOptions &options_;
	std::vector<uint8_t> send_buffer_, recv_buffer_;
	BulkSink sink_;
};

} // namespace

ServeSummary serve(const Listener &listener, const ServeOptions &options)
{
	ServeSummary summary;
	const Deadline deadline(options.timeout);
	const int64_t deadline_ns = monotonic_ns() + options.timeout.count() * 1000000;
	for (;;) {
		auto connection = accept_tcp(listener.fd.get(), deadline, options.first_frame);
		if (!connection) {
			if (connection.error().err == ETIMEDOUT) {
				summary.timed_out = true;
				return summary;
			}
			log_line(options, "accept failed: " + connection.error().message);
			// Not fatal (e.g. EMFILE): back off a little, bounded by the deadline.
			std::this_thread::sleep_for(milliseconds(std::min(100, deadline.left_ms())));
			continue;
		}
		const int fd = connection->fd.get();
		const std::string who = format_endpoint(connection->peer);
		auto frame = recv_frame(fd);
		std::optional<Hello> hello;
		std::string refusal;
		if (!frame) {
			refusal = frame.error().err == ETIMEDOUT ? "no HELLO within " + seconds_text(options.first_frame)
								 : frame.error().message;
		} else if (frame->header.type != FrameType::Hello) {
			refusal = "expected HELLO, got " + std::string(frame_type_name(frame->header.type));
		} else if (auto decoded = decode_hello(frame->payload); !decoded) {
			refusal = decoded.error().message;
		} else if (decoded->role != Role::Control) {
			refusal = "no probe session is waiting for a bulk connection";
		} else {
			hello = *decoded;
		}
		if (!hello) {
			if (frame.has_value() || frame.error().err != ECONNRESET)
				refuse(fd, refusal.empty() ? "refused" : refusal);
			log_line(options, "refused " + who + ": " + refusal);
			++summary.refused;
			continue;
		}
		(void)set_stall_timeout(fd, options.stall);
		const uint64_t token = new_token();
		++summary.sessions;
		if (auto sent = send_frame(fd, encode_welcome({token, kMaxMessageSize})); !sent) {
			log_line(options, "session with " + who + " failed: " + sent.error().message);
		} else {
			Session session(*connection, listener, token, deadline, deadline_ns, options);
			auto runs = session.run();
			if (runs) {
				++summary.completed;
				log_line(options, "session with " + who + " done (" + std::to_string(*runs) + " runs)");
			} else {
				log_line(options, "session with " + who + " failed: " + runs.error().message);
			}
		}
		if (options.once)
			return summary;
	}
}

} // namespace gp::probe
