// One captured Ethernet frame, decoded as far as gp-wirecheck needs: is it a gap frame (and a valid
// one), which IP destination does it go to, is it a phase marker or a gp-traffic datagram.
//
// Frames in our captures are truncated to a snap length: sizes always come from the original
// length, and only the captured bytes are ever read.
#pragma once
#include <algorithm>
#include <array>
#include <bitset>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "traffic_proto.hpp"

namespace gp::wirecheck {

inline constexpr uint64_t kFcsBytes = 4;
inline constexpr uint64_t kMinFrameWithFcs = 64;
inline constexpr uint64_t kPreambleBytes = 8; // preamble + start frame delimiter
inline constexpr uint64_t kStandardIfgBytes = 12;

// Bytes a frame of `frame_length` (without FCS) occupies on the wire, gap after it included.
constexpr uint64_t wire_bytes(uint64_t frame_length)
{
	return std::max(frame_length + kFcsBytes, kMinFrameWithFcs) + kPreambleBytes + kStandardIfgBytes;
}

using MacAddress = std::array<uint8_t, 6>;
inline constexpr MacAddress kGapDestination{0x01, 0x80, 0xc2, 0x00, 0x00, 0x01};
inline constexpr uint16_t kMacControlEthertype = 0x8808;
inline constexpr uint16_t kPauseOpcode = 0x0001;
inline constexpr uint64_t kMinGapLength = 60;
inline constexpr uint64_t kMaxGapLength = 1514;

std::string format_mac(const MacAddress &mac);

struct IpAddress {
	uint8_t version = 0; // 4 or 6; IPv4 uses the first 4 bytes
	std::array<uint8_t, 16> bytes{};
	auto operator<=>(const IpAddress &) const = default;
	size_t size() const { return version == 4 ? 4 : 16; }
};

std::string format_ip(const IpAddress &address);

// A frame as a capture holds it: `length` is the original length, `bytes` what was captured.
struct CapturedFrame {
	uint32_t length = 0;
	std::span<const uint8_t> bytes;
};

// Why a MAC control (ethertype 0x8808) frame is not a proper gap frame.
enum class GapDefect : size_t {
	wrong_dst,	   // destination is not 01:80:c2:00:00:01
	wrong_src,	   // source is not the device MAC (checked only when it is known)
	wrong_opcode,	   // not PAUSE (0x0001)
	nonzero_pause_time, // a real PAUSE: it would stop the peer
	nonzero_padding,   // padding bytes (as far as captured) are not all zero
	bad_length,	   // outside 60..1514 bytes
	truncated,	   // opcode or pause_time not captured: could not be verified
	count_
};
inline constexpr size_t kGapDefectCount = static_cast<size_t>(GapDefect::count_);
using GapDefects = std::bitset<kGapDefectCount>;
std::string_view gap_defect_name(GapDefect defect);
std::string describe_gap_defects(const GapDefects &defects); // "wrong_dst,bad_length"

struct TcpSegment {
	IpAddress src, dst;
	uint16_t src_port = 0, dst_port = 0;
	uint32_t seq = 0;
	uint32_t payload_length = 0;
};

struct DecodedFrame {
	bool is_gap = false;		// MAC control frame: wire time between data frames
	GapDefects gap_defects;		// only for gap frames
	bool is_ip = false;		// IPv4 or IPv6 data frame
	bool headers_truncated = false; // headers the analysis needs lie beyond the captured bytes
	std::optional<IpAddress> destination;
	uint64_t transport_payload_bytes = 0; // UDP or TCP payload
	std::optional<std::string> marker_name;
	std::optional<traffic::PayloadHeader> traffic_header;
	std::optional<TcpSegment> tcp;
};

// `device_mac`: the source every gap frame must carry; unchecked when nullopt.
DecodedFrame decode_frame(const CapturedFrame &frame, const std::optional<MacAddress> &device_mac);

} // namespace gp::wirecheck
