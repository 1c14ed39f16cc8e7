#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

namespace gp::traffic {

std::string SocketAddress::text() const
{
	char host[INET6_ADDRSTRLEN] = "?";
	uint16_t port = 0;
	if (family() == AF_INET) {
		const auto *in = reinterpret_cast<const sockaddr_in *>(&storage);
		inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
		port = ntohs(in->sin_port);
		return std::string(host) + ":" + std::to_string(port);
	}
	const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&storage);
	port = ntohs(in6->sin6_port);
	if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) { // an IPv4 peer of our dual-stack socket
		inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], host, sizeof(host));
		return std::string(host) + ":" + std::to_string(port);
	}
	inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
	return "[" + std::string(host) + "]:" + std::to_string(port);
}

Error system_error(const std::string &what)
{
	const int err = errno;
	return make_error(err, what + ": " + std::strerror(err));
}

Expected<SocketAddress> numeric_address(const std::string &host, uint16_t port)
{
	addrinfo hints{};
	hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;
	hints.ai_socktype = SOCK_DGRAM; // any: only the address is used
	addrinfo *found = nullptr;
	const std::string service = std::to_string(port);
	const int rc = getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
	if (rc != 0)
		return make_error(EINVAL, "'" + host + "' is not a numeric IPv4/IPv6 address: " + gai_strerror(rc));
	SocketAddress address;
	std::memcpy(&address.storage, found->ai_addr, found->ai_addrlen);
	address.length = found->ai_addrlen;
	freeaddrinfo(found);
	return address;
}

SocketAddress any_address(int family, uint16_t port)
{
	SocketAddress address;
	if (family == AF_INET6) {
		auto *in6 = reinterpret_cast<sockaddr_in6 *>(&address.storage);
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_any;
		in6->sin6_port = htons(port);
		address.length = sizeof(sockaddr_in6);
	} else {
		auto *in = reinterpret_cast<sockaddr_in *>(&address.storage);
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_ANY);
		in->sin_port = htons(port);
		address.length = sizeof(sockaddr_in);
	}
	return address;
}

Expected<UniqueFd> open_socket(int family, int type)
{
	UniqueFd fd(::socket(family, type | SOCK_CLOEXEC, 0));
	if (!fd)
		return system_error("socket");
	return fd;
}

Expected<void> set_socket_option(int fd, int level, int name, int value, const char *what)
{
	if (setsockopt(fd, level, name, &value, sizeof(value)) != 0)
		return system_error(std::string("setsockopt ") + what);
	return {};
}

Expected<void> set_buffer_size(int fd, bool send_side, uint64_t bytes)
{
	const int value = bytes > INT32_MAX / 2 ? INT32_MAX / 2 : static_cast<int>(bytes);
	const int forced = send_side ? SO_SNDBUFFORCE : SO_RCVBUFFORCE;
	if (setsockopt(fd, SOL_SOCKET, forced, &value, sizeof(value)) == 0)
		return {};
	return set_socket_option(fd, SOL_SOCKET, send_side ? SO_SNDBUF : SO_RCVBUF, value,
				 send_side ? "SO_SNDBUF" : "SO_RCVBUF");
}

Expected<void> set_io_timeout(int fd, int ms)
{
	const timeval tv{ms / 1000, (ms % 1000) * 1000};
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) != 0)
		return system_error("setsockopt SO_SNDTIMEO/SO_RCVTIMEO");
	return {};
}

Expected<UniqueFd> bound_socket(int type, uint16_t port)
{
	auto fd = open_socket(AF_INET6, type);
	int family = AF_INET6;
	if (!fd && (fd.error().err == EAFNOSUPPORT || fd.error().err == EPROTONOSUPPORT)) {
		family = AF_INET;
		fd = open_socket(AF_INET, type);
	}
	if (!fd)
		return fd.error();
	if (family == AF_INET6)
		if (auto ok = set_socket_option(fd->get(), IPPROTO_IPV6, IPV6_V6ONLY, 0, "IPV6_V6ONLY"); !ok)
			return ok.error();
	if (type == SOCK_STREAM)
		if (auto ok = set_socket_option(fd->get(), SOL_SOCKET, SO_REUSEADDR, 1, "SO_REUSEADDR"); !ok)
			return ok.error();
	const SocketAddress any = any_address(family, port);
	if (::bind(fd->get(), any.get(), any.length) != 0)
		return system_error("bind to port " + std::to_string(port));
	return std::move(*fd);
}

Expected<void> connect_within(int fd, const SocketAddress &address, const Deadline &deadline)
{
	const int flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0)
		return system_error("fcntl");
	if (::connect(fd, address.get(), address.length) != 0) {
		if (errno != EINPROGRESS)
			return system_error("connect to " + address.text());
		pollfd pending{fd, POLLOUT, 0};
		int ready;
		while ((ready = ::poll(&pending, 1, deadline.remaining_ms())) < 0 && errno == EINTR) {
		}
		if (ready < 0)
			return system_error("poll");
		if (ready == 0)
			return make_error(ETIMEDOUT, "connect to " + address.text() + ": timed out");
		int error = 0;
		socklen_t length = sizeof(error);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) != 0)
			return system_error("getsockopt SO_ERROR");
		if (error != 0) {
			errno = error;
			return system_error("connect to " + address.text());
		}
	}
	if (fcntl(fd, F_SETFL, flags) != 0)
		return system_error("fcntl");
	return {};
}

} // namespace gp::traffic
