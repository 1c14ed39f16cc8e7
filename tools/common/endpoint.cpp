#include "endpoint.hpp"

#include <arpa/inet.h>
#include <net/if.h>
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

// ss prints a socket bound to a device (SO_BINDTODEVICE, a VRF, an IPv6 link-local address)
// with the device as a zone: "10.0.0.1%veth0:5001", "[fe80::1%eth0]:5001". The addresses and
// ports alone name the connection (the module asks each device for a bound one), so the zone
// is dropped once checked: it must name a network interface of this namespace (or be one's
// index), so that a mistyped one is not silently ignored.
Expected<std::string> without_zone(std::string_view what, std::string_view text)
{
	const size_t percent = text.find('%');
	if (percent == std::string_view::npos)
		return std::string(text);
	if (text.find('%', percent + 1) != std::string_view::npos)
		return invalid(what, text, "more than one zone index (%IFACE)");
	// Interface names cannot contain ':' (the kernel refuses them), so the zone ends at the
	// port's colon, at the closing bracket, or with the text.
	size_t end = text.find_first_of("]:", percent + 1);
	if (end == std::string_view::npos)
		end = text.size();
	const std::string zone(text.substr(percent + 1, end - percent - 1));
	if (zone.empty())
		return invalid(what, text, "empty zone index after '%'");
	if (zone.size() >= IF_NAMESIZE)
		return invalid(what, text, "zone index \"" + zone + "\" is longer than an interface name");
	const auto index = parse_u64(zone);
	char name[IF_NAMESIZE] = {};
	if (index ? *index > UINT32_MAX || !if_indextoname(static_cast<unsigned>(*index), name)
		  : if_nametoindex(zone.c_str()) == 0)
		return invalid(what, text, "zone index \"" + zone + "\" is no network interface here");
	return std::string(text.substr(0, percent)) + std::string(text.substr(end));
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

Expected<Endpoint> parse_endpoint(std::string_view written)
{
	constexpr std::string_view what = "address";
	auto zoneless = without_zone(what, written);
	if (!zoneless)
		return zoneless.error();
	// Messages quote what was written, zone and all; the parse reads it without the zone.
	const std::string_view text = *zoneless;
	const auto bad = [&](std::string_view why) { return invalid(what, written, why); };
	Endpoint endpoint;
	std::string_view address, port;
	if (!text.empty() && text.front() == '[') {
		const size_t close = text.find(']');
		if (close == std::string_view::npos)
			return bad("missing ']'");
		address = text.substr(1, close - 1);
		if (close + 1 >= text.size() || text[close + 1] != ':')
			return bad("missing :PORT after ']'");
		port = text.substr(close + 2);
		if (!parse_bare_address(address, endpoint) || endpoint.family != AF_INET6)
			return bad("not an IPv6 address in brackets");
	} else {
		const size_t colon = text.rfind(':');
		if (colon == std::string_view::npos)
			return bad("missing :PORT (ADDR:PORT, [IPV6]:PORT)");
		address = text.substr(0, colon);
		port = text.substr(colon + 1);
		if (address.find(':') != std::string_view::npos)
			return bad("an IPv6 address needs brackets: [ADDR]:PORT");
		if (!parse_bare_address(address, endpoint) || endpoint.family != AF_INET)
			return bad("not an IPv4 address");
	}
	const auto number = parse_u64(port);
	if (!number || *number == 0 || *number > 65535)
		return bad("port must be 1..65535");
	endpoint.port = static_cast<uint16_t>(*number);
	return unmapped(endpoint);
}

Expected<Endpoint> parse_host_address(std::string_view text)
{
	constexpr std::string_view what = "peer address";
	const auto bad = [&](std::string_view why) { return invalid(what, text, why); };
	// A peer address names every connection to it; dropping a zone would widen that to
	// every link, so none is taken.
	if (text.find('%') != std::string_view::npos)
		return bad("zone indexes (%IFACE) are not supported for a peer address");
	std::string_view address = text;
	const bool bracketed = text.size() >= 2 && text.front() == '[' && text.back() == ']';
	if (bracketed)
		address = text.substr(1, text.size() - 2);
	Endpoint endpoint;
	if (parse_bare_address(address, endpoint) && (!bracketed || endpoint.family == AF_INET6))
		return unmapped(endpoint);
	if (parse_endpoint(text))
		return bad("an address without a port (for one connection give both ends)");
	return bad("not an IPv4 or IPv6 address");
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
