// Parsing and printing of quantities the way iproute2 users write them.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gp {

// Rate in bit/s. Accepts tc's units: bit, kbit, mbit, gbit, tbit (powers of 1000),
// kibit, mibit, gibit, tibit (powers of 1024), bps/kbps/mbps/gbps/tbps (bytes/s,
// times 8), and a bare number (bit/s). Case-insensitive. nullopt on junk or overflow.
std::optional<uint64_t> parse_rate(std::string_view text);
// Size in bytes: b, k/kb, m/mb, g/gb (powers of 1024) and bare numbers.
std::optional<uint64_t> parse_size(std::string_view text);
// Time in microseconds: ns (rounded up), us, usec, ms, msec, s, sec; a bare number is microseconds.
std::optional<uint64_t> parse_time_us(std::string_view text);
// Plain unsigned decimal (no sign, no suffix).
std::optional<uint64_t> parse_u64(std::string_view text);

// "1Gbit", "250Mbit", "1.5Kbit": tc's way of printing a rate.
std::string format_rate(uint64_t bits_per_second);

} // namespace gp
