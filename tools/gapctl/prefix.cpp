#include "prefix.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "units.hpp"

namespace gp {
namespace {

Error invalid_prefix(std::string_view text, std::string_view why)
{
	return make_error(EINVAL, "invalid prefix \"" + std::string(text) + "\": " + std::string(why));
}

bool host_bits_set(const Prefix &prefix)
{
	for (size_t bit = prefix.length; bit < prefix.max_length(); ++bit)
		if (prefix.address[bit / 8] & (0x80u >> (bit % 8)))
			return true;
	return false;
}

Prefix with_host_bits_cleared(Prefix prefix)
{
	for (size_t bit = prefix.length; bit < prefix.max_length(); ++bit)
		prefix.address[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
	return prefix;
}

} // namespace

Expected<Prefix> parse_prefix(std::string_view text)
{
	const size_t slash = text.find('/');
	const std::string address(text.substr(0, slash));
	Prefix prefix;
	if (inet_pton(AF_INET, address.c_str(), prefix.address.data()) == 1)
		prefix.family = AF_INET;
	else if (inet_pton(AF_INET6, address.c_str(), prefix.address.data()) == 1)
		prefix.family = AF_INET6;
	else
		return invalid_prefix(text, "not an IPv4 or IPv6 address");

	prefix.length = prefix.max_length();
	if (slash != std::string_view::npos) {
		const auto length = parse_u64(text.substr(slash + 1));
		if (!length || *length > prefix.max_length())
			return invalid_prefix(text, "prefix length must be 0.." + std::to_string(prefix.max_length()));
		prefix.length = static_cast<uint8_t>(*length);
	}
	if (host_bits_set(prefix))
		return invalid_prefix(text, "host bits set (did you mean " +
						    format_prefix(with_host_bits_cleared(prefix)) + "?)");
	return prefix;
}

Prefix make_prefix(int family, const void *address, uint8_t length)
{
	Prefix prefix;
	prefix.family = family;
	std::memcpy(prefix.address.data(), address, prefix.address_size());
	prefix.length = length;
	return prefix;
}

std::string format_prefix(const Prefix &prefix)
{
	char text[INET6_ADDRSTRLEN] = "?";
	inet_ntop(prefix.family, prefix.address.data(), text, sizeof(text));
	return std::string(text) + "/" + std::to_string(prefix.length);
}

} // namespace gp
