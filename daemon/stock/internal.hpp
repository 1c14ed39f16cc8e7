// What the parts of the stock actuators share and the public header does not show.
#pragma once

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include "stock.hpp"

namespace gp::stock::detail {

// "what: strerror(err)", carrying err.
inline Error system_error(int err, std::string_view what)
{
	return make_error(err, std::string(what) + ": " + std::strerror(err));
}

// Prefixes an error's message with context, keeping its errno.
inline Error with_context(const Error &error, std::string_view context)
{
	return make_error(error.err, std::string(context) + ": " + error.message);
}

// The result of undoing one recorded setting.
enum class Undone {
	reverted, // we put the old value back
	gone,	  // the route, socket or process no longer exists: nothing to put back
};

// tcpi_bytes_acked of a struct tcp_info of `length` bytes as sock_diag sends it (INET_DIAG_INFO);
// nullopt if the kernel's struct is too short to hold it.
std::optional<uint64_t> tcp_info_bytes_acked(const void *info, size_t length);

// Deletes the route a record describes (only if it still has our protocol).
Expected<Undone> undo_route(const RouteRecord &record);
// Puts a socket's original pacing rate back, if the process and socket still exist.
Expected<Undone> undo_pacing(const PacingRecord &record);

// The address of an endpoint without its port.
inline Endpoint address_only(Endpoint endpoint)
{
	endpoint.port = 0;
	return endpoint;
}

} // namespace gp::stock::detail
