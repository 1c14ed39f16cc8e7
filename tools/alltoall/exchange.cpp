#include "exchange.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace gp::alltoall {
namespace {

constexpr uint64_t kPatternPeriod = 65521; // prime: shifts of different pairs do not alias early
constexpr size_t kIoChunk = 256 * 1024;	   // largest single send/recv
// Bytes written per pump() before the loop looks at readable sockets again: a peer that takes
// everything (same side, big buffers) must not starve this rank's receives.
constexpr uint64_t kWriteBudget = 1 << 20;

// period + one chunk: any window of up to kIoChunk bytes starting inside the period is contiguous.
const std::vector<uint8_t> &pattern_buffer()
{
	static const std::vector<uint8_t> buffer = [] {
		std::vector<uint8_t> bytes(kPatternPeriod + kIoChunk);
		uint32_t x = 0x9e3779b9u;
		for (size_t i = 0; i < kPatternPeriod; ++i) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			bytes[i] = static_cast<uint8_t>(x >> 24);
		}
		for (size_t i = kPatternPeriod; i < bytes.size(); ++i)
			bytes[i] = bytes[i - kPatternPeriod];
		return bytes;
	}();
	return buffer;
}

uint64_t stream_shift(int sender, int receiver)
{
	return (static_cast<uint64_t>(sender) * 7919 + static_cast<uint64_t>(receiver) * 104729 + 17) % kPatternPeriod;
}

} // namespace

Exchange::Exchange(ExchangeShape shape, std::vector<PeerLink> &links, Schedule schedule, PhaseHints &hints)
	: shape_(shape), links_(links), schedule_(std::move(schedule)), hints_(hints),
	  streams_(static_cast<size_t>(shape.ranks)), expected_per_peer_(shape.msg * shape.iterations)
{
	for (int peer : schedule_.peers) {
		Stream &s = streams_[peer];
		s.link = &links_[peer];
		s.send_shift = stream_shift(shape_.rank, peer);
		s.recv_shift = stream_shift(peer, shape_.rank);
	}
	pattern_buffer(); // built now, not inside the measured run
}

Expected<void> Exchange::attach(EventLoop &loop)
{
	for (int peer : schedule_.peers) {
		Stream &s = streams_[peer];
		auto id = loop.add(s.link->fd.get(), EPOLLIN | EPOLLOUT | EPOLLRDHUP, [this, &s](uint32_t events) {
			auto ok = on_event(s, events);
			failed_ |= !ok;
			return ok;
		});
		if (!id)
			return id.error();
		s.id = *id;
	}
	if (shape_.think_ns) {
		think_timer_ = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
		if (!think_timer_)
			return system_error("timerfd_create (--think-ms)");
		auto id = loop.add(think_timer_.get(), EPOLLIN, [this](uint32_t) { return on_think_timer(); });
		if (!id)
			return id.error();
		think_id_ = *id;
	}
	attached_ = true;
	return {};
}

Expected<void> Exchange::on_think_timer()
{
	uint64_t expirations = 0;
	if (::read(think_timer_.get(), &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
		return system_error("reading the think timer");
	if (thinking_ && running_) {
		thinking_ = false;
		start_iteration(monotonic_ns());
	}
	return {};
}

void Exchange::begin()
{
	const uint64_t now = monotonic_ns();
	run_start_ns_ = now;
	running_ = true;
	if (shape_.trace)
		retrans_seen_ = sockets_retrans();
	hints_.run_begin();
	start_iteration(now);
}

void Exchange::start_iteration(uint64_t now)
{
	iteration_start_ns_ = now;
	phase_ = 0;
	phase_written_ = 0;
	sends_done_ = false;
	const uint64_t threshold = (iterations_done_ + 1) * shape_.msg;
	behind_ = 0;
	for (int peer : schedule_.peers)
		behind_ += streams_[peer].received < threshold;
	hints_.iteration_begin();
}

Expected<void> Exchange::on_event(Stream &stream, uint32_t events)
{
	if (events & EPOLLOUT)
		stream.writable = true;
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP))
		return read_all(stream);
	return {};
}

Expected<void> Exchange::read_all(Stream &s)
{
	static std::vector<uint8_t> buffer(kIoChunk);
	const auto &pattern = pattern_buffer();
	const int peer = s.link->rank;
	for (;;) {
		const ssize_t n = ::recv(s.link->fd.get(), buffer.data(), buffer.size(), 0);
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return {};
			if (errno == EINTR)
				continue;
			return system_error("data connection from rank " + std::to_string(peer));
		}
		if (n == 0) {
			if (s.received == expected_per_peer_)
				return {}; // all there: the peer may leave
			return make_error(ECONNRESET, "rank " + std::to_string(peer) + " closed its data connection after " +
							      std::to_string(s.received) + " of " +
							      std::to_string(expected_per_peer_) + " bytes");
		}
		const uint64_t got = static_cast<uint64_t>(n);
		if (s.received + got > expected_per_peer_)
			return make_error(EPROTO, "rank " + std::to_string(peer) + " sent more than " +
							  std::to_string(expected_per_peer_) + " bytes");
		if (shape_.verify) {
			const size_t start = static_cast<size_t>((s.received + s.recv_shift) % kPatternPeriod);
			if (std::memcmp(buffer.data(), pattern.data() + start, got) != 0)
				return make_error(EPROTO, "wrong payload from rank " + std::to_string(peer) +
								  " within stream bytes " + std::to_string(s.received) + ".." +
								  std::to_string(s.received + got));
		}
		const uint64_t threshold = (iterations_done_ + 1) * shape_.msg;
		if (s.received < threshold && s.received + got >= threshold && behind_ > 0)
			--behind_;
		s.received += got;
		bytes_received_ += got;
		if (s.link->cross)
			bytes_cross_received_ += got;
	}
}

Expected<Step> Exchange::pump()
{
	if (!running_ || finished())
		return finished() ? Step::Finished : Step::Wait;
	if (thinking_)
		return Step::Wait; // the think timer starts the next iteration
	const auto &pattern = pattern_buffer();
	uint64_t budget = kWriteBudget;
	for (;;) {
		if (!sends_done_) {
			Stream &s = streams_[schedule_.send_order[phase_]];
			if (!s.writable)
				return Step::Wait;
			if (budget == 0)
				return Step::Busy;
			const uint64_t want = std::min<uint64_t>({shape_.msg - phase_written_, kIoChunk, budget});
			const size_t start = static_cast<size_t>((s.sent + s.send_shift) % kPatternPeriod);
			const ssize_t n = ::send(s.link->fd.get(), pattern.data() + start, want, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK) {
					s.writable = false; // EPOLLOUT (edge) will say when it has room
					return Step::Wait;
				}
				if (errno == EINTR)
					continue;
				failed_ = true;
				return system_error("data connection to rank " + std::to_string(s.link->rank));
			}
			const uint64_t wrote = static_cast<uint64_t>(n);
			s.sent += wrote;
			bytes_sent_ += wrote;
			if (s.link->cross)
				bytes_cross_sent_ += wrote;
			phase_written_ += wrote;
			budget -= wrote;
			if (phase_written_ == shape_.msg) {
				phase_written_ = 0;
				if (++phase_ == schedule_.send_order.size())
					sends_done_ = true;
			}
			continue;
		}
		if (behind_ > 0)
			return Step::Wait;
		const uint64_t now = monotonic_ns();
		const uint64_t took = now - iteration_start_ns_;
		iteration_ns_.push_back(took);
		if (shape_.trace) {
			const uint64_t retrans = sockets_retrans();
			iteration_retrans_.push_back(static_cast<uint32_t>(std::min<uint64_t>(retrans - retrans_seen_, UINT32_MAX)));
			retrans_seen_ = retrans;
		}
		hints_.iteration_end(took);
		++iterations_done_;
		if (finished()) {
			run_end_ns_ = now;
			running_ = false;
			hints_.run_end(now - run_start_ns_);
			return Step::Finished;
		}
		if (shape_.think_ns) {
			itimerspec at{};
			at.it_value.tv_sec = static_cast<time_t>(shape_.think_ns / 1000000000);
			at.it_value.tv_nsec = static_cast<long>(shape_.think_ns % 1000000000);
			if (::timerfd_settime(think_timer_.get(), 0, &at, nullptr) < 0)
				return system_error("arming the think timer");
			thinking_ = true;
			return Step::Wait;
		}
		start_iteration(now);
	}
}

void Exchange::detach(EventLoop &loop)
{
	if (running_) {
		const uint64_t now = monotonic_ns();
		run_end_ns_ = now;
		running_ = false;
		if (!thinking_) // a stop between iterations leaves no phase open
			hints_.end_open_phase(now - iteration_start_ns_);
	}
	if (!attached_)
		return;
	for (int peer : schedule_.peers)
		loop.remove(streams_[peer].id);
	if (think_id_)
		loop.remove(think_id_);
	attached_ = false;
}

uint64_t Exchange::sockets_retrans() const
{
	uint64_t total = 0;
	for (int peer : schedule_.peers) {
		tcp_info info{};
		socklen_t length = sizeof(info);
		if (::getsockopt(streams_[peer].link->fd.get(), IPPROTO_TCP, TCP_INFO, &info, &length) == 0)
			total += info.tcpi_total_retrans;
	}
	return total;
}

void Exchange::fill(RankResult &result) const
{
	result.wall_ns = run_end_ns_ >= run_start_ns_ ? run_end_ns_ - run_start_ns_ : 0;
	result.bytes_sent = bytes_sent_;
	result.bytes_received = bytes_received_;
	result.bytes_cross_sent = bytes_cross_sent_;
	result.bytes_cross_received = bytes_cross_received_;
	result.iterations_done = iterations_done_;
	result.iteration_ns = iteration_ns_;
	result.iteration_retrans = iteration_retrans_;
	result.tcp_info = {};
	for (int peer : schedule_.peers) {
		tcp_info info{};
		socklen_t length = sizeof(info);
		if (::getsockopt(streams_[peer].link->fd.get(), IPPROTO_TCP, TCP_INFO, &info, &length) < 0)
			continue;
		result.tcp_info.total_retrans += info.tcpi_total_retrans;
		result.tcp_info.rto_max_us = std::max(result.tcp_info.rto_max_us, info.tcpi_rto);
	}
}

} // namespace gp::alltoall
