// Ends of a TCP connection as `ss` prints them: "10.0.0.1:5001", "[fd00::1]:5001".
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "expected.hpp"

namespace gp {

struct Endpoint {
	int family = 0;			   // AF_INET or AF_INET6
	std::array<uint8_t, 16> address{}; // network order; IPv4 uses the first 4 bytes
	uint16_t port = 0;		   // host order; 0 = no port (a peer address alone)

	size_t address_size() const { return family == AF_INET6 ? 16 : 4; }
	bool operator==(const Endpoint &) const = default;
};

// ADDR:PORT with the port 1..65535; an IPv6 address needs brackets ("[fd00::1]:5001"),
// as ss prints it. A zone index, as ss prints a socket bound to a device
// ("10.0.0.1%veth0:5001", "[fe80::1%eth0]:22"), must name an interface of this namespace (or
// be one's index) and is then dropped: the tuple names the connection. No service names. An
// IPv4-mapped IPv6 address ("[::ffff:10.0.0.1]:22", a dual-stack socket's IPv4 connection)
// becomes IPv4.
Expected<Endpoint> parse_endpoint(std::string_view text);
// An address without a port: "10.0.0.2", "fd00::1" or "[fd00::1]"; no zone index (it would
// not narrow "every connection to this peer" to one link). port is 0; mapped addresses
// become IPv4 as above.
Expected<Endpoint> parse_host_address(std::string_view text);
// An IPv4-mapped IPv6 endpoint (::ffff:a.b.c.d, a dual-stack socket's IPv4 connection) as the
// IPv4 endpoint the kernel files it under; any other endpoint as it is.
Endpoint unmapped(Endpoint endpoint);
// Builds an endpoint from an address as the kernel sends it (4 or 16 bytes).
Endpoint make_endpoint(int family, const void *address, uint16_t port);
// An address as getsockname() and getpeername() give it (AF_INET6, else AF_INET). An
// IPv4-mapped IPv6 address stays IPv6.
Endpoint from_socket_address(const sockaddr_storage &storage);
// "10.0.0.1:5001", "[fd00::1]:5001"; without a port: "10.0.0.1", "fd00::1".
std::string format_endpoint(const Endpoint &endpoint);

} // namespace gp
