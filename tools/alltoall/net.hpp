// Socket plumbing for gp-alltoall: addresses, deadlines, TCP options, connecting with retries.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "endpoint.hpp"
#include "expected.hpp"
#include "unique_fd.hpp"

namespace gp::alltoall {

// "what: strerror(errno)", keeping errno.
Error system_error(const std::string &what);

struct SocketAddress {
	sockaddr_storage storage{};
	socklen_t length = 0;
	const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage); }
};
SocketAddress to_socket_address(const Endpoint &endpoint);
Expected<Endpoint> local_endpoint(int fd);
Expected<Endpoint> peer_endpoint(int fd);

// CLOCK_MONOTONIC in nanoseconds: durations only.
uint64_t monotonic_ns();

class Deadline {
public:
	using Clock = std::chrono::steady_clock;
	Deadline() : end_(Clock::time_point::max()) {}
	static Deadline after(double seconds)
	{
		Deadline d;
		d.end_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
		return d;
	}
	static Deadline earliest(const Deadline &a, const Deadline &b) { return a.end_ < b.end_ ? a : b; }
	static Deadline latest(const Deadline &a, const Deadline &b) { return a.end_ < b.end_ ? b : a; }
	bool expired() const { return Clock::now() >= end_; }
	// For poll/epoll_wait: >= 0, rounded up so that a wait never ends just before the deadline.
	int remaining_ms() const
	{
		if (end_ == Clock::time_point::max())
			return INT32_MAX;
		const auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - Clock::now()).count();
		return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : static_cast<int>(left);
	}
	bool operator==(const Deadline &) const = default;

private:
	Clock::time_point end_;
};

// What every data socket gets, before connect (or on the listener, whose children inherit it):
// buffers before the handshake, so that the window scale fits them.
struct SocketTuning {
	std::optional<uint64_t> sndbuf, rcvbuf;
	std::optional<uint64_t> pacing_rate_bps; // SO_MAX_PACING_RATE (TCP paces itself, no fq needed)
	std::optional<std::string> cc;
};

Expected<UniqueFd> tcp_socket(int family); // non-blocking, close-on-exec
Expected<void> set_int_option(int fd, int level, int name, int value, const char *what);
Expected<void> apply_buffers(int fd, const SocketTuning &tuning);
Expected<void> set_congestion_control(int fd, const std::string &name);
// The socket's congestion control, "" if unknown.
std::string congestion_control(int fd);
// SO_ERROR: the outcome of a non-blocking connect.
int pending_socket_error(int fd);

// A listening socket on `address` (port 0: ephemeral), non-blocking.
Expected<UniqueFd> listen_on(const Endpoint &address, int backlog, bool reuse_address, const SocketTuning *tuning);
// Binds to `from` (port 0) and starts a non-blocking connect: done or EINPROGRESS.
Expected<UniqueFd> start_connect(const Endpoint &to, const Endpoint &from, const SocketTuning *tuning);

// Connects to a listener that may not be up yet: refused, unreachable and timed-out attempts
// are retried every 50 ms until the deadline. The socket comes back connected, non-blocking.
Expected<UniqueFd> connect_with_retry(const Endpoint &to, const Endpoint &from, const Deadline &deadline);

// Raises the soft RLIMIT_NOFILE to the hard one: rank 0 of a big job holds about 2P sockets.
void raise_fd_limit();

} // namespace gp::alltoall
