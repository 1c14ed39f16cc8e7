// Socket plumbing shared by gp-traffic's modes: numeric addresses, listening sockets that take
// IPv4 and IPv6 alike, deadlines, and errno turned into messages.
#pragma once
#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "expected.hpp"
#include "unique_fd.hpp"

namespace gp::traffic {

struct SocketAddress {
	sockaddr_storage storage{};
	socklen_t length = 0;
	int family() const { return storage.ss_family; }
	const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&storage); }
	std::string text() const; // "10.0.0.2:5001", "[fd00::2]:5001"
};

// "what: strerror(errno)", keeping errno.
Error system_error(const std::string &what);

// Numeric IPv4 or IPv6 address (with %scope for link-local); the guest has no resolver.
Expected<SocketAddress> numeric_address(const std::string &host, uint16_t port);
SocketAddress any_address(int family, uint16_t port);

Expected<UniqueFd> open_socket(int family, int type);
Expected<void> set_socket_option(int fd, int level, int name, int value, const char *what);
// Socket buffer sizes: the FORCE variant (root) first, so that rmem_max/wmem_max do not clamp.
Expected<void> set_buffer_size(int fd, bool send_side, uint64_t bytes);
// Blocking calls on `fd` return EAGAIN after `ms` so that loops can look at their deadline.
Expected<void> set_io_timeout(int fd, int ms);

// A socket bound to `port` on every address: IPv6 accepting IPv4 too where the kernel has IPv6,
// plain IPv4 where it does not (minimal guests).
Expected<UniqueFd> bound_socket(int type, uint16_t port);

class Deadline {
public:
	using Clock = std::chrono::steady_clock;
	explicit Deadline(double seconds)
		: end_(Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds)))
	{
	}
	bool expired() const { return Clock::now() >= end_; }
	// For poll(): at least 0, rounded up so that a wait never ends just before the deadline.
	int remaining_ms() const
	{
		const auto left = std::chrono::ceil<std::chrono::milliseconds>(end_ - Clock::now()).count();
		return left <= 0 ? 0 : left > INT32_MAX ? INT32_MAX : static_cast<int>(left);
	}

private:
	Clock::time_point end_;
};

class Stopwatch {
public:
	Stopwatch() : start_(std::chrono::steady_clock::now()) {}
	double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

private:
	std::chrono::steady_clock::time_point start_;
};

// Connects within the deadline (non-blocking connect + poll), leaves the socket blocking.
Expected<void> connect_within(int fd, const SocketAddress &address, const Deadline &deadline);

} // namespace gp::traffic
