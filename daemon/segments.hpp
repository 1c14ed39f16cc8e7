// What a full TCP segment of a connection costs where a rate counts it (Documentation/
// control-plane.md, "Rates and what they count").
//
// Planned rates are wire rates: what the bottleneck carries, a segment's payload plus
// [pacing] frame_overhead (TCP/IPv4 headers with timestamps 52, Ethernet header and FCS 18,
// preamble and gap 20: 90). SO_MAX_PACING_RATE counts payload; the host pacer's token bucket
// counts skb->len at the device (Ethernet, IP and TCP headers with the payload). An IPv6
// segment's network header is 20 bytes longer than IPv4's, so at one MTU it carries 20 bytes
// less payload and its headers cost 20 more: at 1500 bytes, 1428 of 1538 wire bytes against
// 1448 of 1538. Converting an IPv6 connection's rate as if it were IPv4 would cap its payload
// 1.4 % too high, and the bucket would let 1.3 % more wire bytes through than planned.
#pragma once

#include <cstdint>

#include "config.hpp"

namespace gp::daemon {

struct SegmentBytes {
	double payload = 0;	// mss: the MTU less IP and TCP headers with timestamps
	double on_wire = 0;	// what the bottleneck carries for it (payload + frame_overhead, + 20 for IPv6)
	double at_device = 0;	// skb->len at the sending device: Ethernet header + IP + TCP + payload
};

// A full segment of a connection of `family` (AF_INET or AF_INET6; anything else counts as
// IPv4) under the config's MTU and frame overhead. MTUs too small for headers fall back to the
// protocol's minimum MSS (536 for IPv4, 1220 for IPv6).
SegmentBytes full_segment(const Config &config, int family);

// A connection's planned wire rate as the payload rate SO_MAX_PACING_RATE caps (bits/s, >= 8).
uint64_t payload_rate_bps(uint64_t wire_bps, const Config &config, int family);

// A connection's wire share as the bytes per second the host pacer's bucket counts (>= 1).
uint64_t bucket_bytes_per_second(uint64_t wire_bps, const Config &config, int family);

// The payload rate (bits/s, >= 8) of a connection of `family` that has a whole bucket of
// `bytes_per_second` (as the bucket counts them) to itself: the inverse of the two above.
uint64_t bucket_payload_rate_bps(uint64_t bytes_per_second, const Config &config, int family);

} // namespace gp::daemon
