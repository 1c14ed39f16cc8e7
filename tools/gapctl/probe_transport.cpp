#include "probe_transport.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

namespace gp::probe {
namespace {

constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

Endpoint endpoint_of(const sockaddr_storage &ss)
{
	if (ss.ss_family == AF_INET) {
		const auto &sin = reinterpret_cast<const sockaddr_in &>(ss);
		return make_endpoint(AF_INET, &sin.sin_addr, ntohs(sin.sin_port));
	}
	const auto &sin6 = reinterpret_cast<const sockaddr_in6 &>(ss);
	// A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d; they are IPv4 peers.
	if (std::memcmp(&sin6.sin6_addr, kMappedPrefix, sizeof(kMappedPrefix)) == 0)
		return make_endpoint(AF_INET, reinterpret_cast<const uint8_t *>(&sin6.sin6_addr) + 12,
				     ntohs(sin6.sin6_port));
	return make_endpoint(AF_INET6, &sin6.sin6_addr, ntohs(sin6.sin6_port));
}

Endpoint local_endpoint(int fd)
{
	sockaddr_storage ss{};
	socklen_t len = sizeof(ss);
	if (::getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len) < 0)
		return {};
	return endpoint_of(ss);
}

Endpoint peer_endpoint(int fd)
{
	sockaddr_storage ss{};
	socklen_t len = sizeof(ss);
	if (::getpeername(fd, reinterpret_cast<sockaddr *>(&ss), &len) < 0)
		return {};
	return endpoint_of(ss);
}

Expected<void> set_blocking(int fd)
{
	const int flags = ::fcntl(fd, F_GETFL);
	if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
		return make_error(errno, "fcntl: " + errno_text(errno));
	return {};
}

// The options every probe connection gets: no Nagle (each message is sent when written, as MPI
// does), and bounded blocking calls.
Expected<void> prepare_connection(int fd, std::chrono::milliseconds stall)
{
	const int one = 1;
	if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return make_error(errno, "TCP_NODELAY: " + errno_text(errno));
	if (auto blocking = set_blocking(fd); !blocking)
		return blocking;
	return set_stall_timeout(fd, stall);
}

Expected<UniqueFd> connect_one(const addrinfo &ai, std::chrono::milliseconds timeout)
{
	UniqueFd fd(::socket(ai.ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (!fd)
		return make_error(errno, "socket: " + errno_text(errno));
	if (::connect(fd.get(), ai.ai_addr, ai.ai_addrlen) == 0)
		return fd;
	if (errno != EINPROGRESS)
		return make_error(errno, errno_text(errno));
	const Deadline deadline(timeout);
	for (;;) {
		pollfd p{fd.get(), POLLOUT, 0};
		const int ready = ::poll(&p, 1, deadline.left_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return make_error(errno, "poll: " + errno_text(errno));
		if (ready == 0)
			return make_error(ETIMEDOUT, "no answer within " + seconds_text(timeout));
		break;
	}
	int err = 0;
	socklen_t len = sizeof(err);
	if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return make_error(errno, "SO_ERROR: " + errno_text(errno));
	if (err)
		return make_error(err, errno_text(err));
	return fd;
}

// One recvmsg(); the kernel's receive timestamp (SCM_TIMESTAMPNS, CLOCK_REALTIME ns) of the last
// segment read goes to kernel_ns when the socket has SO_TIMESTAMPNS on, else it stays 0.
ssize_t recv_timestamped(int fd, void *data, size_t size, int flags, int64_t &kernel_ns)
{
	iovec iov{data, size};
	alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
	msghdr msg{};
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = control;
	msg.msg_controllen = sizeof(control);
	const ssize_t n = ::recvmsg(fd, &msg, flags);
	if (n <= 0)
		return n;
	for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
			timespec ts{};
			std::memcpy(&ts, CMSG_DATA(c), sizeof(ts));
			kernel_ns = int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
		}
	}
	return n;
}

} // namespace

std::string seconds_text(std::chrono::milliseconds duration)
{
	char text[32];
	std::snprintf(text, sizeof(text), "%g s", static_cast<double>(duration.count()) / 1000);
	return text;
}

std::string errno_text(int err)
{
	return std::strerror(err);
}

int64_t monotonic_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_MONOTONIC, &ts);
	return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t realtime_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_REALTIME, &ts);
	return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t thread_cpu_ns()
{
	timespec ts{};
	::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

double thread_cpu_clock_overhead_ns()
{
	std::vector<int64_t> costs;
	for (int i = 0; i < 201; ++i) {
		const int64_t a = thread_cpu_ns();
		const int64_t b = thread_cpu_ns();
		costs.push_back(b - a);
	}
	std::nth_element(costs.begin(), costs.begin() + 100, costs.end());
	return static_cast<double>(costs[100]);
}

int Deadline::left_ms(int cap) const
{
	const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(at_ - SteadyClock::now()).count();
	return static_cast<int>(std::clamp<int64_t>(left, 0, cap));
}

Expected<void> set_stall_timeout(int fd, std::chrono::milliseconds stall)
{
	timeval tv{};
	tv.tv_sec = static_cast<time_t>(stall.count() / 1000);
	tv.tv_usec = static_cast<suseconds_t>(stall.count() % 1000 * 1000);
	if (tv.tv_sec == 0 && tv.tv_usec == 0)
		tv.tv_usec = 1000; // 0 would mean "wait forever"
	if (::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
	    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
		return make_error(errno, "SO_RCVTIMEO: " + errno_text(errno));
	return {};
}

Expected<Connection> connect_tcp(const std::string &host_text, uint16_t port, std::chrono::milliseconds timeout,
				 std::chrono::milliseconds stall)
{
	std::string host = host_text;
	if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
		host = host.substr(1, host.size() - 2);
	addrinfo hints{};
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	addrinfo *list = nullptr;
	const std::string service = std::to_string(port);
	if (const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &list); rc != 0)
		return make_error(rc == EAI_SYSTEM ? errno : EHOSTUNREACH,
				  "cannot resolve \"" + host + "\": " + ::gai_strerror(rc));
	std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> owner(list, ::freeaddrinfo);
	Error last = make_error(EHOSTUNREACH, "no address");
	for (const addrinfo *ai = list; ai; ai = ai->ai_next) {
		auto fd = connect_one(*ai, timeout);
		if (!fd) {
			last = fd.error();
			continue;
		}
		if (auto prepared = prepare_connection(fd->get(), stall); !prepared)
			return prepared.error();
		Connection connection{std::move(*fd), {}, {}};
		connection.local = local_endpoint(connection.fd.get());
		connection.peer = peer_endpoint(connection.fd.get());
		return connection;
	}
	return last;
}

Expected<Listener> listen_tcp(const std::string &bind_text, uint16_t port)
{
	std::string bind = bind_text;
	if (bind.size() >= 2 && bind.front() == '[' && bind.back() == ']')
		bind = bind.substr(1, bind.size() - 2);
	sockaddr_storage ss{};
	socklen_t len = 0;
	auto try_bind = [&](int family) -> Expected<UniqueFd> {
		UniqueFd fd(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
		if (!fd)
			return make_error(errno, "socket: " + errno_text(errno));
		const int one = 1, zero = 0;
		::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (family == AF_INET6 && bind.empty())
			::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		if (::bind(fd.get(), reinterpret_cast<sockaddr *>(&ss), len) < 0)
			return make_error(errno, errno_text(errno));
		if (::listen(fd.get(), 8) < 0)
			return make_error(errno, "listen: " + errno_text(errno));
		return fd;
	};
	auto set_any = [&](int family) {
		ss = {};
		if (family == AF_INET6) {
			auto &sin6 = reinterpret_cast<sockaddr_in6 &>(ss);
			sin6.sin6_family = AF_INET6;
			sin6.sin6_addr = in6addr_any;
			sin6.sin6_port = htons(port);
			len = sizeof(sin6);
		} else {
			auto &sin = reinterpret_cast<sockaddr_in &>(ss);
			sin.sin_family = AF_INET;
			sin.sin_addr.s_addr = htonl(INADDR_ANY);
			sin.sin_port = htons(port);
			len = sizeof(sin);
		}
	};
	Expected<UniqueFd> fd = make_error(EINVAL, "unset");
	if (bind.empty()) {
		set_any(AF_INET6);
		fd = try_bind(AF_INET6);
		if (!fd) { // no IPv6 here: IPv4 only
			set_any(AF_INET);
			fd = try_bind(AF_INET);
		}
	} else {
		auto address = parse_host_address(bind);
		if (!address)
			return make_error(EINVAL, "invalid bind address \"" + bind_text + "\" (an IPv4 or IPv6 address)");
		ss = {};
		if (address->family == AF_INET) {
			auto &sin = reinterpret_cast<sockaddr_in &>(ss);
			sin.sin_family = AF_INET;
			std::memcpy(&sin.sin_addr, address->address.data(), 4);
			sin.sin_port = htons(port);
			len = sizeof(sin);
		} else {
			auto &sin6 = reinterpret_cast<sockaddr_in6 &>(ss);
			sin6.sin6_family = AF_INET6;
			std::memcpy(&sin6.sin6_addr, address->address.data(), 16);
			sin6.sin6_port = htons(port);
			len = sizeof(sin6);
		}
		fd = try_bind(address->family);
	}
	if (!fd)
		return fd.error();
	Listener listener{std::move(*fd), {}};
	listener.local = local_endpoint(listener.fd.get());
	return listener;
}

Expected<Connection> accept_tcp(int listen_fd, const Deadline &deadline, std::chrono::milliseconds stall)
{
	for (;;) {
		pollfd p{listen_fd, POLLIN, 0};
		const int ready = ::poll(&p, 1, deadline.left_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return make_error(errno, "poll: " + errno_text(errno));
		if (ready == 0)
			return make_error(ETIMEDOUT, "no connection");
		UniqueFd fd(::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC));
		if (!fd) {
			// The connection may have gone between poll and accept; try again.
			if (errno == EINTR || errno == EAGAIN || errno == ECONNABORTED || errno == EPROTO)
				continue;
			return make_error(errno, "accept: " + errno_text(errno));
		}
		if (auto prepared = prepare_connection(fd.get(), stall); !prepared)
			return prepared.error();
		Connection connection{std::move(fd), {}, {}};
		connection.local = local_endpoint(connection.fd.get());
		connection.peer = peer_endpoint(connection.fd.get());
		return connection;
	}
}

Expected<void> send_all(int fd, const void *data, size_t size)
{
	const auto *bytes = static_cast<const uint8_t *>(data);
	size_t done = 0;
	while (done < size) {
		const ssize_t n = ::send(fd, bytes + done, size - done, MSG_NOSIGNAL);
		if (n > 0) {
			done += static_cast<size_t>(n);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return make_error(ETIMEDOUT, "send: no progress within the stall timeout");
		return make_error(errno, "send: " + errno_text(errno));
	}
	return {};
}

Expected<void> recv_exact(int fd, void *data, size_t size)
{
	auto *bytes = static_cast<uint8_t *>(data);
	size_t done = 0;
	while (done < size) {
		const ssize_t n = ::recv(fd, bytes + done, size - done, MSG_WAITALL);
		if (n > 0) {
			done += static_cast<size_t>(n);
			continue;
		}
		if (n == 0)
			return make_error(ECONNRESET, "connection closed by the peer");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return make_error(ETIMEDOUT, "recv: no data within the stall timeout");
		return make_error(errno, "recv: " + errno_text(errno));
	}
	return {};
}

Expected<void> enable_rx_timestamps(int fd, bool on)
{
	const int value = on ? 1 : 0;
	if (::setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &value, sizeof(value)) < 0)
		return make_error(errno, "SO_TIMESTAMPNS: " + errno_text(errno));
	return {};
}

Expected<void> recv_with_timestamp(int fd, void *data, size_t size, int64_t &kernel_rx_realtime_ns)
{
	auto *bytes = static_cast<uint8_t *>(data);
	size_t done = 0;
	kernel_rx_realtime_ns = 0;
	while (done < size) {
		const ssize_t n = recv_timestamped(fd, bytes + done, size - done, MSG_WAITALL, kernel_rx_realtime_ns);
		if (n > 0) {
			done += static_cast<size_t>(n);
			continue;
		}
		if (n == 0)
			return make_error(ECONNRESET, "connection closed by the peer");
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return make_error(ETIMEDOUT, "recv: no data within the stall timeout");
		return make_error(errno, "recv: " + errno_text(errno));
	}
	return {};
}

Expected<void> discard_exact(int fd, uint64_t size, std::vector<uint8_t> &scratch)
{
	while (size > 0) {
		const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, scratch.size()));
		if (auto got = recv_exact(fd, scratch.data(), chunk); !got)
			return got;
		size -= chunk;
	}
	return {};
}

Expected<void> send_repeated(int fd, uint64_t size, const std::vector<uint8_t> &pattern)
{
	while (size > 0) {
		const size_t chunk = static_cast<size_t>(std::min<uint64_t>(size, pattern.size()));
		if (auto sent = send_all(fd, pattern.data(), chunk); !sent)
			return sent;
		size -= chunk;
	}
	return {};
}

Expected<void> send_frame(int fd, const Frame &frame)
{
	return send_all(fd, frame.data(), frame.size());
}

Expected<ReceivedFrame> recv_frame(int fd)
{
	uint8_t raw[kFrameHeaderSize];
	if (auto got = recv_exact(fd, raw, sizeof(raw)); !got)
		return got.error();
	auto header = decode_header(raw);
	if (!header)
		return header.error();
	ReceivedFrame frame{*header, std::vector<uint8_t>(header->length)};
	if (header->version != kProbeProtocolVersion) {
		// Read what fits so that an ERROR frame's reason can be shown, but decode nothing else.
		std::string reason;
		if (header->type == FrameType::Error && recv_exact(fd, frame.payload.data(), frame.payload.size()))
			reason = ": " + decode_error_text(frame.payload);
		return make_error(EPROTONOSUPPORT, "the peer speaks probe protocol version " + std::to_string(header->version) +
							   ", this gapctl speaks version " +
							   std::to_string(kProbeProtocolVersion) + reason);
	}
	if (auto got = recv_exact(fd, frame.payload.data(), frame.payload.size()); !got)
		return got.error();
	return frame;
}

Expected<TransferTimes> transfer(int fd, uint64_t size, uint32_t send_count, uint32_t recv_count,
				 const std::vector<uint8_t> &send_buffer, std::vector<uint8_t> &recv_buffer,
				 std::chrono::milliseconds stall)
{
	const uint64_t wire = wire_size(size);
	const uint64_t to_receive = wire * recv_count;
	uint32_t sent_messages = 0;
	uint64_t sent_in_message = 0;
	uint64_t received = 0;
	TransferTimes times;
	times.start_ns = monotonic_ns();
	while (sent_messages < send_count || received < to_receive) {
		bool progress = false;
		if (sent_messages < send_count) {
			// One send() per message, as an application would call it; the buffer may be
			// smaller than the message (the responder's), then the message is several calls.
			const uint64_t left = wire - sent_in_message;
			const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, send_buffer.size()));
			const ssize_t n = ::send(fd, send_buffer.data(), chunk, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n > 0) {
				progress = true;
				sent_in_message += static_cast<uint64_t>(n);
				if (sent_in_message == wire) {
					sent_in_message = 0;
					++sent_messages;
				}
			} else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				return make_error(errno, "send: " + errno_text(errno));
			}
		}
		if (received < to_receive) {
			// Never past the end of the current message: each message's end is then seen by
			// its own recv(), with the kernel's receive timestamp of the segment it ended in.
			const uint64_t message_left = wire - received % wire;
			const size_t chunk = static_cast<size_t>(std::min<uint64_t>(message_left, recv_buffer.size()));
			int64_t kernel_ns = 0;
			const ssize_t n = recv_timestamped(fd, recv_buffer.data(), chunk, MSG_DONTWAIT, kernel_ns);
			if (n > 0) {
				progress = true;
				const uint64_t before = received / wire;
				received += static_cast<uint64_t>(n);
				const uint64_t after = received / wire;
				if (after > before) {
					const int64_t now = monotonic_ns();
					if (before == 0) {
						times.first_received_ns = now;
						times.first_kernel_ns = kernel_ns;
					}
					if (after == recv_count) {
						times.last_received_ns = now;
						times.last_kernel_ns = kernel_ns;
					}
				}
			} else if (n == 0) {
				return make_error(ECONNRESET, "connection closed by the peer");
			} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
				return make_error(errno, "recv: " + errno_text(errno));
			}
		}
		if (progress)
			continue;
		pollfd p{fd, 0, 0};
		if (sent_messages < send_count)
			p.events |= POLLOUT;
		if (received < to_receive)
			p.events |= POLLIN;
		const int ready = ::poll(&p, 1, static_cast<int>(stall.count()));
		if (ready < 0 && errno != EINTR)
			return make_error(errno, "poll: " + errno_text(errno));
		if (ready == 0)
			return make_error(ETIMEDOUT, "no progress within the stall timeout");
	}
	return times;
}

PathInfo path_info(int fd, int family)
{
	PathInfo info;
	int mtu = 0;
	socklen_t len = sizeof(mtu);
	const bool v6 = family == AF_INET6;
	if (::getsockopt(fd, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu, &len) == 0 && mtu >= 68)
		info.mtu = static_cast<uint32_t>(mtu);
	tcp_info ti{};
	len = sizeof(ti);
	if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) == 0 && ti.tcpi_snd_mss > 0)
		info.mss = ti.tcpi_snd_mss;
	else
		info.mss = info.mtu - 52;
	return info;
}

uint64_t total_retransmits(int fd)
{
	tcp_info ti{};
	socklen_t len = sizeof(ti);
	if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) < 0)
		return 0;
	return ti.tcpi_total_retrans;
}

} // namespace gp::probe
