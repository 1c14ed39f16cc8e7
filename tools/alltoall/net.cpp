#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <time.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace gp::alltoall {

Error system_error(const std::string &what)
{
	const int err = errno;
	return make_error(err, what + ": " + std::strerror(err));
}

SocketAddress to_socket_address(const Endpoint &endpoint)
{
	SocketAddress address;
	if (endpoint.family == AF_INET6) {
		auto *in6 = reinterpret_cast<sockaddr_in6 *>(&address.storage);
		in6->sin6_family = AF_INET6;
		std::memcpy(&in6->sin6_addr, endpoint.address.data(), 16);
		in6->sin6_port = htons(endpoint.port);
		address.length = sizeof(sockaddr_in6);
	} else {
		auto *in = reinterpret_cast<sockaddr_in *>(&address.storage);
		in->sin_family = AF_INET;
		std::memcpy(&in->sin_addr, endpoint.address.data(), 4);
		in->sin_port = htons(endpoint.port);
		address.length = sizeof(sockaddr_in);
	}
	return address;
}

Expected<Endpoint> local_endpoint(int fd)
{
	sockaddr_storage storage{};
	socklen_t length = sizeof(storage);
	if (::getsockname(fd, reinterpret_cast<sockaddr *>(&storage), &length) < 0)
		return system_error("getsockname");
	return from_socket_address(storage);
}

Expected<Endpoint> peer_endpoint(int fd)
{
	sockaddr_storage storage{};
	socklen_t length = sizeof(storage);
	if (::getpeername(fd, reinterpret_cast<sockaddr *>(&storage), &length) < 0)
		return system_error("getpeername");
	return from_socket_address(storage);
}

uint64_t monotonic_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_MONOTONIC, &ts);
	return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

Expected<UniqueFd> tcp_socket(int family)
{
	UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
	if (!fd)
		return system_error("socket");
	return fd;
}

Expected<void> set_int_option(int fd, int level, int name, int value, const char *what)
{
	if (::setsockopt(fd, level, name, &value, sizeof(value)) < 0)
		return system_error(std::string("setsockopt ") + what);
	return {};
}

namespace {

// The FORCE variants (root) first, so that wmem_max/rmem_max do not silently clamp.
Expected<void> set_buffer(int fd, bool send_side, uint64_t bytes)
{
	const int value = bytes > INT32_MAX / 2 ? INT32_MAX / 2 : static_cast<int>(bytes);
	if (::setsockopt(fd, SOL_SOCKET, send_side ? SO_SNDBUFFORCE : SO_RCVBUFFORCE, &value, sizeof(value)) == 0)
		return {};
	return set_int_option(fd, SOL_SOCKET, send_side ? SO_SNDBUF : SO_RCVBUF, value,
			      send_side ? "SO_SNDBUF" : "SO_RCVBUF");
}

} // namespace

Expected<void> apply_buffers(int fd, const SocketTuning &tuning)
{
	if (tuning.sndbuf)
		if (auto ok = set_buffer(fd, true, *tuning.sndbuf); !ok)
			return ok;
	if (tuning.rcvbuf)
		if (auto ok = set_buffer(fd, false, *tuning.rcvbuf); !ok)
			return ok;
	if (tuning.pacing_rate_bps) {
		// Set on the listener too: accepted sockets are clones of it and keep the cap.
		const uint64_t bytes_per_second = *tuning.pacing_rate_bps / 8;
		if (::setsockopt(fd, SOL_SOCKET, SO_MAX_PACING_RATE, &bytes_per_second, sizeof(bytes_per_second)) < 0)
			return make_error(errno, std::string("SO_MAX_PACING_RATE: ") + std::strerror(errno));
	}
	return {};
}

Expected<void> set_congestion_control(int fd, const std::string &name)
{
	if (::setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) < 0) {
		const int err = errno;
		std::string hint;
		if (err == ENOENT)
			hint = " (not available in this kernel)";
		else if (err == EPERM)
			hint = " (not in net.ipv4.tcp_allowed_congestion_control)";
		return make_error(err, "congestion control '" + name + "': " + std::strerror(err) + hint);
	}
	return {};
}

std::string congestion_control(int fd)
{
	char name[32] = {};
	socklen_t length = sizeof(name) - 1;
	if (::getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &length) < 0)
		return "";
	return std::string(name, strnlen(name, length));
}

int pending_socket_error(int fd)
{
	int err = 0;
	socklen_t length = sizeof(err);
	if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &length) < 0)
		return errno;
	return err;
}

Expected<UniqueFd> listen_on(const Endpoint &address, int backlog, bool reuse_address, const SocketTuning *tuning)
{
	auto fd = tcp_socket(address.family);
	if (!fd)
		return fd.error();
	if (reuse_address)
		if (auto ok = set_int_option(fd->get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR"); !ok)
			return ok.error();
	if (tuning) {
		if (auto ok = apply_buffers(fd->get(), *tuning); !ok)
			return ok.error();
		if (tuning->cc)
			if (auto ok = set_congestion_control(fd->get(), *tuning->cc); !ok)
				return ok.error();
	}
	const auto sa = to_socket_address(address);
	if (::bind(fd->get(), sa.get(), sa.length) < 0)
		return system_error("bind " + format_endpoint(address));
	if (::listen(fd->get(), backlog) < 0)
		return system_error("listen on " + format_endpoint(address));
	return std::move(*fd);
}

Expected<UniqueFd> start_connect(const Endpoint &to, const Endpoint &from, const SocketTuning *tuning)
{
	auto fd = tcp_socket(to.family);
	if (!fd)
		return fd.error();
	if (tuning) {
		if (auto ok = apply_buffers(fd->get(), *tuning); !ok)
			return ok.error();
		if (tuning->cc)
			if (auto ok = set_congestion_control(fd->get(), *tuning->cc); !ok)
				return ok.error();
	}
	// The source address is this rank's address on the test network, whatever the routes say.
	Endpoint source = from;
	source.port = 0;
	const auto local = to_socket_address(source);
	if (::bind(fd->get(), local.get(), local.length) < 0)
		return system_error("bind " + format_endpoint(source));
	const auto remote = to_socket_address(to);
	if (::connect(fd->get(), remote.get(), remote.length) < 0 && errno != EINPROGRESS)
		return system_error("connect to " + format_endpoint(to));
	return std::move(*fd);
}

Expected<UniqueFd> connect_with_retry(const Endpoint &to, const Endpoint &from, const Deadline &deadline)
{
	constexpr auto kRetryPause = std::chrono::milliseconds(50);
	constexpr int kAttemptMs = 1000;
	std::string last = "no attempt";
	for (;;) {
		auto fd = start_connect(to, from, nullptr);
		int err = 0;
		if (!fd) {
			err = fd.error().err;
			last = fd.error().message;
		} else {
			pollfd p{fd->get(), POLLOUT, 0};
			const int wait = std::min(kAttemptMs, deadline.remaining_ms());
			const int n = ::poll(&p, 1, wait);
			if (n > 0) {
				err = pending_socket_error(fd->get());
				if (err == 0)
					return std::move(*fd);
				last = std::strerror(err);
			} else if (n == 0) {
				err = ETIMEDOUT;
				last = "no answer";
			} else {
				return system_error("poll");
			}
		}
		// Worth another try while rank 0 is starting; anything else will not heal.
		if (err != ECONNREFUSED && err != ETIMEDOUT && err != EHOSTUNREACH && err != ENETUNREACH &&
		    err != ECONNRESET && err != EADDRNOTAVAIL && err != EINTR)
			return make_error(err, "connect to " + format_endpoint(to) + ": " + last);
		if (deadline.expired())
			return make_error(ETIMEDOUT, "cannot reach " + format_endpoint(to) + " (" + last + ")");
		std::this_thread::sleep_for(std::min<std::chrono::milliseconds>(
			kRetryPause, std::chrono::milliseconds(deadline.remaining_ms())));
	}
}

void raise_fd_limit()
{
	rlimit limit{};
	if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
		limit.rlim_cur = limit.rlim_max;
		::setrlimit(RLIMIT_NOFILE, &limit);
	}
}

} // namespace gp::alltoall
