#include "segments.hpp"

#include <sys/socket.h>

#include <algorithm>

namespace gp::daemon {
namespace {

constexpr double kTcpHeaderBytes = 20 + 12; // with the timestamp option
constexpr double kEthernetHeaderBytes = 14;

} // namespace

SegmentBytes full_segment(const Config &config, int family)
{
	const bool v6 = family == AF_INET6;
	const double ip_header = v6 ? 40 : 20;
	const double mtu = static_cast<double>(config.mtu);
	const double min_mss = v6 ? 1220 : 536;
	SegmentBytes s;
	s.payload = mtu > ip_header + kTcpHeaderBytes ? mtu - ip_header - kTcpHeaderBytes : min_mss;
	// frame_overhead is an IPv4 segment's: an IPv6 header is 20 bytes longer.
	s.on_wire = s.payload + static_cast<double>(config.frame_overhead) + (v6 ? 20 : 0);
	s.at_device = s.payload + kEthernetHeaderBytes + ip_header + kTcpHeaderBytes;
	return s;
}

uint64_t payload_rate_bps(uint64_t wire_bps, const Config &config, int family)
{
	const SegmentBytes s = full_segment(config, family);
	return std::max<uint64_t>(8, static_cast<uint64_t>(static_cast<double>(wire_bps) * s.payload / s.on_wire));
}

uint64_t bucket_bytes_per_second(uint64_t wire_bps, const Config &config, int family)
{
	const SegmentBytes s = full_segment(config, family);
	return std::max<uint64_t>(1, static_cast<uint64_t>(static_cast<double>(wire_bps) / 8 * s.at_device / s.on_wire));
}

uint64_t bucket_payload_rate_bps(uint64_t bytes_per_second, const Config &config, int family)
{
	const SegmentBytes s = full_segment(config, family);
	return std::max<uint64_t>(8, static_cast<uint64_t>(static_cast<double>(bytes_per_second) * 8 * s.payload / s.at_device));
}

} // namespace gp::daemon
