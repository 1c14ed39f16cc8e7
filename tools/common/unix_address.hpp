// Unix socket addresses, with Linux's abstract namespace: "@name" is the abstract socket
// "\0name", which belongs to the network namespace of its creator. That is what lets one
// GAPPACE_HINTS_SOCK value reach a different gappaced in every namespace host of a cluster.
#pragma once

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>
#include <optional>
#include <string_view>

namespace gp {

struct UnixAddress {
	sockaddr_un addr{};
	socklen_t len = 0;
	bool abstract = false;

	const sockaddr *get() const { return reinterpret_cast<const sockaddr *>(&addr); }
};

// nullopt if the path is empty or too long (107 bytes; 106 after "@").
inline std::optional<UnixAddress> make_unix_address(std::string_view path)
{
	UnixAddress u;
	u.addr.sun_family = AF_UNIX;
	if (path.empty() || path.size() >= sizeof(u.addr.sun_path))
		return std::nullopt;
	u.abstract = path.front() == '@';
	std::memcpy(u.addr.sun_path, path.data(), path.size());
	if (u.abstract) {
		if (path.size() == 1)
			return std::nullopt;
		u.addr.sun_path[0] = '\0';
		u.len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
	} else {
		u.len = static_cast<socklen_t>(sizeof(sockaddr_un));
	}
	return u;
}

} // namespace gp
