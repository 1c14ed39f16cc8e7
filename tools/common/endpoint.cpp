#include "endpoint.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "units.hpp"

namespace gp {
namespace {

Error invalid(std::string_view what, std::string_view text, std::string_view why)
{
	return make_error(EINVAL, "invalid " + std::string(what) + " \"" + std::string(text) + "\": " + std::string(why));
}

// Parses a bare address (no brackets, no port) of either family.
bool parse_bare_address(std::string_view text, Endpoint &endpoint)
{
	const std::string address(text);
	if (inet_pton(AF_INET, address.c_str(), endpoint.address.data()) == 1) {
		endpoint.family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, address.c_str(), endpoint.address.data()) == 1) {
		endpoint.family = AF_INET6;
		return true;
	}
	return false;
}

} // namespace

// ss prints the IPv4 connections of dual-stack sockets as [::ffff:a.b.c.d]; the kernel files
// them (and gappace matches them) as IPv4 connections.
Endpoint unmapped(Endpoint endpoint)
{
	static constexpr uint8_t kMappedPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	if (endpoint.family != AF_INET6 || std::memcmp(endpoint.address.data(), kMappedPrefix, 12) != 0)
		return endpoint;
	Endpoint v4;
	v4.family = AF_INET;
	std::memcpy(v4.address.data(), endpoint.address.data() + 12, 4);
	v4.port = endpoint.port;
	return v4;
}

Expected<Endpoint> parse_endpoint(std::string_view text)
{
	constexpr std::string_view what = "address";
	if (text.find('%') != std::string_view::npos)
		return invalid(what, text, "zone indexes (%IFACE) are not supported");
	Endpoint endpoint;
	std::string_view address, port;
	if (!text.empty() && text.front() == '[') {
		const size_t close = text.find(']');
		if (close == std::string_view::npos)
			return invalid(what, text, "missing ']'");
		address = text.substr(1, close - 1);
		if (close + 1 >= text.size() || text[close + 1] != ':')
			return invalid(what, text, "missing :PORT after ']'");
		port = text.substr(close + 2);
		if (!parse_bare_address(address, endpoint) || endpoint.family != AF_INET6)
			return invalid(what, text, "not an IPv6 address in brackets");
	} else {
		const size_t colon = text.rfind(':');
		if (colon == std::string_view::npos)
			return invalid(what, text, "missing :PORT (ADDR:PORT, [IPV6]:PORT)");
		address = text.substr(0, colon);
		port = text.substr(colon + 1);
		if (address.find(':') != std::string_view::npos)
			return invalid(what, text, "an IPv6 address needs brackets: [ADDR]:PORT");
		if (!parse_bare_address(address, endpoint) || endpoint.family != AF_INET)
			return invalid(what, text, "not an IPv4 address");
	}
	const auto number = parse_u64(port);
	if (!number || *number == 0 || *number > 65535)
		return invalid(what, text, "port must be 1..65535");
	endpoint.port = static_cast<uint16_t>(*number);
	return unmapped(endpoint);
}

Expected<Endpoint> parse_host_address(std::string_view text)
{
	constexpr std::string_view what = "peer address";
	if (text.find('%') != std::string_view::npos)
		return invalid(what, text, "zone indexes (%IFACE) are not supported");
	std::string_view address = text;
	const bool bracketed = text.size() >= 2 && text.front() == '[' && text.back() == ']';
	if (bracketed)
		address = text.substr(1, text.size() - 2);
	Endpoint endpoint;
	if (parse_bare_address(address, endpoint) && (!bracketed || endpoint.family == AF_INET6))
		return unmapped(endpoint);
	if (parse_endpoint(text))
		return invalid(what, text, "an address without a port (for one connection give both ends)");
	return invalid(what, text, "not an IPv4 or IPv6 address");
}

Endpoint make_endpoint(int family, const void *address, uint16_t port)
{
	Endpoint endpoint;
	endpoint.family = family;
	std::memcpy(endpoint.address.data(), address, endpoint.address_size());
	endpoint.port = port;
	return endpoint;
}

Endpoint from_socket_address(const sockaddr_storage &storage)
{
	if (storage.ss_family == AF_INET6) {
		const auto *in6 = reinterpret_cast<const sockaddr_in6 *>(&storage);
		return make_endpoint(AF_INET6, &in6->sin6_addr, ntohs(in6->sin6_port));
	}
	const auto *in = reinterpret_cast<const sockaddr_in *>(&storage);
	return make_endpoint(AF_INET, &in->sin_addr, ntohs(in->sin_port));
}

std::string format_endpoint(const Endpoint &endpoint)
{
	char text[INET6_ADDRSTRLEN] = "?";
	inet_ntop(endpoint.family, endpoint.address.data(), text, sizeof(text));
	if (endpoint.port == 0)
		return text;
	const std::string port = std::to_string(endpoint.port);
	if (endpoint.family == AF_INET6)
		return "[" + std::string(text) + "]:" + port;
	return std::string(text) + ":" + port;
}

} // namespace gp
