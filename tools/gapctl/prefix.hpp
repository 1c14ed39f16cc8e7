// Destination prefixes of flow rules: "10.0.1.0/24", "2001:db8::1" (full length by default).
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "expected.hpp"

namespace gp {

struct Prefix {
	int family = 0;			// AF_INET or AF_INET6
	std::array<uint8_t, 16> address{}; // network order; IPv4 uses the first 4 bytes
	uint8_t length = 0;		// prefix length in bits

	size_t address_size() const { return family == AF_INET6 ? 16 : 4; }
	uint8_t max_length() const { return static_cast<uint8_t>(address_size() * 8); }
	bool operator==(const Prefix &) const = default;
};

// Parses ADDRESS[/LEN]. Rejects lengths beyond the address size and host bits set
// beyond the length, like `ip route` does ("10.0.1.1/24" is almost always a typo).
Expected<Prefix> parse_prefix(std::string_view text);
// Builds a prefix from an address as the kernel sends it (4 or 16 bytes).
Prefix make_prefix(int family, const void *address, uint8_t length);
// "10.0.1.0/24"; always with the length, so that output is unambiguous.
std::string format_prefix(const Prefix &prefix);

} // namespace gp
