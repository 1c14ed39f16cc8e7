#include "frame.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdio>

namespace gp::wirecheck {
namespace {

constexpr size_t kEthernetHeaderBytes = 14;
constexpr uint16_t kIpv4Ethertype = 0x0800;
constexpr uint16_t kIpv6Ethertype = 0x86dd;
constexpr size_t kIpv6HeaderBytes = 40;
constexpr size_t kUdpHeaderBytes = 8;
constexpr size_t kMinTcpHeaderBytes = 20;

// Big-endian reads that refuse to look past the captured bytes.
class CapturedBytes {
public:
	explicit CapturedBytes(std::span<const uint8_t> bytes) : bytes_(bytes) {}
	bool has(size_t offset, size_t count) const { return offset <= bytes_.size() && count <= bytes_.size() - offset; }
	uint8_t u8(size_t offset) const { return bytes_[offset]; }
	uint16_t be16(size_t offset) const { return static_cast<uint16_t>(bytes_[offset] << 8 | bytes_[offset + 1]); }
	uint32_t be32(size_t offset) const
	{
		return static_cast<uint32_t>(be16(offset)) << 16 | be16(offset + 2);
	}
	std::span<const uint8_t> sub(size_t offset, size_t count) const
	{
		if (offset >= bytes_.size())
			return {};
		return bytes_.subspan(offset, std::min(count, bytes_.size() - offset));
	}
	size_t size() const { return bytes_.size(); }

private:
	std::span<const uint8_t> bytes_;
};

GapDefects check_gap_frame(const CapturedFrame &frame, const CapturedBytes &bytes,
			   const std::optional<MacAddress> &device_mac)
{
	GapDefects defects;
	auto set = [&](GapDefect d) { defects.set(static_cast<size_t>(d)); };
	if (!std::equal(kGapDestination.begin(), kGapDestination.end(), bytes.sub(0, 6).begin()))
		set(GapDefect::wrong_dst);
	if (device_mac && !std::equal(device_mac->begin(), device_mac->end(), bytes.sub(6, 6).begin()))
		set(GapDefect::wrong_src);
	if (frame.length < kMinGapLength || frame.length > kMaxGapLength)
		set(GapDefect::bad_length);
	if (!bytes.has(kEthernetHeaderBytes, 4))
		set(GapDefect::truncated);
	if (bytes.has(kEthernetHeaderBytes, 2) && bytes.be16(kEthernetHeaderBytes) != kPauseOpcode)
		set(GapDefect::wrong_opcode);
	if (bytes.has(kEthernetHeaderBytes + 2, 2) && bytes.be16(kEthernetHeaderBytes + 2) != 0)
		set(GapDefect::nonzero_pause_time);
	// Padding runs to the end of the frame; `bytes` ends there or, truncated, earlier.
	const auto padding = bytes.sub(kEthernetHeaderBytes + 4, bytes.size());
	if (std::any_of(padding.begin(), padding.end(), [](uint8_t b) { return b != 0; }))
		set(GapDefect::nonzero_padding);
	return defects;
}

struct IpHeader {
	IpAddress src, dst;
	uint8_t protocol = 0;
	size_t transport_offset = 0;
	size_t transport_length = 0; // per the IP header, bounded by the original frame length
	bool carries_transport_header = true; // false for non-first fragments
};

std::optional<IpHeader> read_ipv4(const CapturedFrame &frame, const CapturedBytes &bytes)
{
	const size_t at = kEthernetHeaderBytes;
	if (!bytes.has(at, 20) || bytes.u8(at) >> 4 != 4)
		return std::nullopt;
	const size_t header_length = (bytes.u8(at) & 0x0f) * 4u;
	if (header_length < 20)
		return std::nullopt;
	IpHeader ip;
	ip.src.version = ip.dst.version = 4;
	std::copy_n(bytes.sub(at + 12, 4).begin(), 4, ip.src.bytes.begin());
	std::copy_n(bytes.sub(at + 16, 4).begin(), 4, ip.dst.bytes.begin());
	ip.protocol = bytes.u8(at + 9);
	ip.transport_offset = at + header_length;
	// Short frames carry Ethernet padding: the IP total length says where the packet ends.
	const size_t total_length = std::min<size_t>(bytes.be16(at + 2), frame.length - at);
	ip.transport_length = total_length > header_length ? total_length - header_length : 0;
	ip.carries_transport_header = (bytes.be16(at + 6) & 0x1fff) == 0;
	return ip;
}

// Only packets whose transport header follows the fixed header directly are looked into;
// extension headers are rare in our traffic and would only cost a flow's payload accounting.
std::optional<IpHeader> read_ipv6(const CapturedFrame &frame, const CapturedBytes &bytes)
{
	const size_t at = kEthernetHeaderBytes;
	if (!bytes.has(at, kIpv6HeaderBytes) || bytes.u8(at) >> 4 != 6)
		return std::nullopt;
	IpHeader ip;
	ip.src.version = ip.dst.version = 6;
	std::copy_n(bytes.sub(at + 8, 16).begin(), 16, ip.src.bytes.begin());
	std::copy_n(bytes.sub(at + 24, 16).begin(), 16, ip.dst.bytes.begin());
	ip.protocol = bytes.u8(at + 6);
	ip.transport_offset = at + kIpv6HeaderBytes;
	const size_t available = frame.length > ip.transport_offset ? frame.length - ip.transport_offset : 0;
	ip.transport_length = std::min<size_t>(bytes.be16(at + 4), available);
	return ip;
}

std::string marker_name_from(std::span<const uint8_t> text)
{
	std::string name;
	for (const uint8_t c : text) {
		if (!traffic::is_marker_name_char(c))
			break; // NUL, newline or anything else unprintable ends the name
		name += static_cast<char>(c);
	}
	return name;
}

void decode_udp(const IpHeader &ip, const CapturedBytes &bytes, DecodedFrame &out)
{
	const size_t at = ip.transport_offset;
	if (ip.transport_length < kUdpHeaderBytes)
		return;
	if (!bytes.has(at, kUdpHeaderBytes)) {
		out.headers_truncated = true;
		return;
	}
	const size_t udp_length = std::clamp<size_t>(bytes.be16(at + 4), kUdpHeaderBytes, ip.transport_length);
	const size_t payload_length = udp_length - kUdpHeaderBytes;
	out.transport_payload_bytes = payload_length;
	const auto payload = bytes.sub(at + kUdpHeaderBytes, payload_length);
	const auto &prefix = traffic::kMarkerPrefix;
	if (bytes.be16(at + 2) == traffic::kMarkerPort && payload.size() >= prefix.size() &&
	    std::equal(prefix.begin(), prefix.end(), payload.begin()))
		out.marker_name = marker_name_from(payload.subspan(prefix.size()));
	out.traffic_header = traffic::decode_payload_header(payload);
}

void decode_tcp(const IpHeader &ip, const CapturedBytes &bytes, DecodedFrame &out)
{
	const size_t at = ip.transport_offset;
	if (ip.transport_length < kMinTcpHeaderBytes)
		return;
	if (!bytes.has(at, kMinTcpHeaderBytes)) {
		out.headers_truncated = true;
		return;
	}
	const size_t header_length = (bytes.u8(at + 12) >> 4) * 4u;
	if (header_length < kMinTcpHeaderBytes || header_length > ip.transport_length)
		return;
	TcpSegment segment;
	segment.src = ip.src;
	segment.dst = ip.dst;
	segment.src_port = bytes.be16(at);
	segment.dst_port = bytes.be16(at + 2);
	segment.seq = bytes.be32(at + 4);
	segment.payload_length = static_cast<uint32_t>(ip.transport_length - header_length);
	out.transport_payload_bytes = segment.payload_length;
	out.tcp = segment;
}

void decode_ip(const CapturedFrame &frame, const CapturedBytes &bytes, uint16_t ethertype, DecodedFrame &out)
{
	out.is_ip = true;
	const auto ip = ethertype == kIpv4Ethertype ? read_ipv4(frame, bytes) : read_ipv6(frame, bytes);
	if (!ip) {
		// Either not captured or not a sane header: in both cases the destination is unknown.
		out.headers_truncated = true;
		return;
	}
	out.destination = ip->dst;
	if (!ip->carries_transport_header)
		return;
	if (ip->protocol == IPPROTO_UDP)
		decode_udp(*ip, bytes, out);
	else if (ip->protocol == IPPROTO_TCP)
		decode_tcp(*ip, bytes, out);
}

} // namespace

std::string format_mac(const MacAddress &mac)
{
	char text[18];
	std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
		      mac[4], mac[5]);
	return text;
}

std::string format_ip(const IpAddress &address)
{
	char text[INET6_ADDRSTRLEN] = "";
	inet_ntop(address.version == 4 ? AF_INET : AF_INET6, address.bytes.data(), text, sizeof(text));
	return text;
}

std::string_view gap_defect_name(GapDefect defect)
{
	switch (defect) {
	case GapDefect::wrong_dst: return "wrong_dst";
	case GapDefect::wrong_src: return "wrong_src";
	case GapDefect::wrong_opcode: return "wrong_opcode";
	case GapDefect::nonzero_pause_time: return "nonzero_pause_time";
	case GapDefect::nonzero_padding: return "nonzero_padding";
	case GapDefect::bad_length: return "bad_length";
	case GapDefect::truncated: return "truncated";
	case GapDefect::count_: break;
	}
	return "unknown";
}

std::string describe_gap_defects(const GapDefects &defects)
{
	std::string text;
	for (size_t i = 0; i < kGapDefectCount; ++i) {
		if (!defects.test(i))
			continue;
		if (!text.empty())
			text += ',';
		text += gap_defect_name(static_cast<GapDefect>(i));
	}
	return text;
}

DecodedFrame decode_frame(const CapturedFrame &frame, const std::optional<MacAddress> &device_mac)
{
	DecodedFrame out;
	// Bytes past the original length (should a capture ever hold any) are not part of the frame.
	const CapturedBytes bytes(frame.bytes.first(std::min<size_t>(frame.bytes.size(), frame.length)));
	if (!bytes.has(0, kEthernetHeaderBytes)) {
		out.headers_truncated = frame.length >= kEthernetHeaderBytes;
		return out; // not even an Ethernet header: a data frame of unknown kind
	}
	const uint16_t ethertype = bytes.be16(12);
	if (ethertype == kMacControlEthertype) {
		out.is_gap = true;
		out.gap_defects = check_gap_frame(frame, bytes, device_mac);
	} else if (ethertype == kIpv4Ethertype || ethertype == kIpv6Ethertype) {
		decode_ip(frame, bytes, ethertype, out);
	}
	return out;
}

} // namespace gp::wirecheck
