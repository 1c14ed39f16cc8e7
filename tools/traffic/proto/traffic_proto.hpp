// What gp-traffic puts on the wire so that gp-wirecheck (and gp-traffic udp-sink) can read it back:
// the payload header of test datagrams and the phase marker. Both sides include this one header,
// so the format cannot drift apart.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace gp::traffic {

// Test datagram payload: "GPTR", flow id (u32), sequence number (u64, from 0), both big-endian,
// then zero fill to the requested size.
inline constexpr std::string_view kPayloadMagic = "GPTR";
inline constexpr size_t kPayloadHeaderSize = 16;

struct PayloadHeader {
	uint32_t flow_id = 0;
	uint64_t seq = 0;
	bool operator==(const PayloadHeader &) const = default;
};

inline void encode_payload_header(const PayloadHeader &header, std::span<uint8_t, kPayloadHeaderSize> out)
{
	std::copy(kPayloadMagic.begin(), kPayloadMagic.end(), out.begin());
	for (size_t i = 0; i < 4; ++i)
		out[4 + i] = static_cast<uint8_t>(header.flow_id >> (8 * (3 - i)));
	for (size_t i = 0; i < 8; ++i)
		out[8 + i] = static_cast<uint8_t>(header.seq >> (8 * (7 - i)));
}

// nullopt unless `payload` starts with a complete header carrying the magic.
inline std::optional<PayloadHeader> decode_payload_header(std::span<const uint8_t> payload)
{
	if (payload.size() < kPayloadHeaderSize ||
	    !std::equal(kPayloadMagic.begin(), kPayloadMagic.end(), payload.begin()))
		return std::nullopt;
	PayloadHeader header;
	for (size_t i = 0; i < 4; ++i)
		header.flow_id = (header.flow_id << 8) | payload[4 + i];
	for (size_t i = 0; i < 8; ++i)
		header.seq = (header.seq << 8) | payload[8 + i];
	return header;
}

// Phase marker: one UDP datagram to port 9 (discard) whose payload is "GPPHASE " + name.
inline constexpr std::string_view kMarkerPrefix = "GPPHASE ";
inline constexpr uint16_t kMarkerPort = 9;
// Captures are truncated (QEMU filter-dump, snap length 128 or so): 128 - 14 (Ethernet) - 40 (IPv6)
// - 8 (UDP) - 8 (prefix) leaves 58 bytes; 48 keeps a margin.
inline constexpr size_t kMaxMarkerNameLength = 48;

inline bool is_marker_name_char(unsigned char c) { return c >= 0x20 && c < 0x7f; }

inline bool is_valid_marker_name(std::string_view name)
{
	return !name.empty() && name.size() <= kMaxMarkerNameLength &&
	       std::all_of(name.begin(), name.end(),
			   [](char c) { return is_marker_name_char(static_cast<unsigned char>(c)); });
}

} // namespace gp::traffic
