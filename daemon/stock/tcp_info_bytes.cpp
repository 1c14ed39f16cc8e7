// One field of the kernel's struct tcp_info, in a file of its own: <linux/tcp.h> has the field
// (glibc's <netinet/tcp.h> stops before it) and cannot share a file with <netinet/tcp.h>.
#include <linux/tcp.h>

#include <cstddef>
#include <cstring>

#include "internal.hpp"

namespace gp::stock::detail {

std::optional<uint64_t> tcp_info_bytes_acked(const void *info, size_t length)
{
	// Kernels older than the field (4.1) send a shorter struct.
	constexpr size_t offset = offsetof(struct tcp_info, tcpi_bytes_acked);
	if (length < offset + sizeof(uint64_t))
		return std::nullopt;
	uint64_t acked = 0;
	std::memcpy(&acked, static_cast<const char *>(info) + offset, sizeof(acked));
	return acked;
}

} // namespace gp::stock::detail
