#include "units.hpp"

#include <array>
#include <cctype>
#include <charconv>
#include <cstdio>

namespace gp {
namespace {

struct Unit {
	std::string_view name;
	uint64_t multiplier;
};

std::string lower(std::string_view s)
{
	std::string out(s);
	for (auto &c : out)
		c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
	return out;
}

// Splits "12.5mbit" into a decimal number (as numerator / 10^frac_digits) and a unit.
template <size_t N>
std::optional<uint64_t> parse_scaled(std::string_view text, const std::array<Unit, N> &units,
				     uint64_t bare_multiplier, bool round_up = false)
{
	const std::string s = lower(text);
	size_t i = 0;
	uint64_t whole = 0, frac = 0, frac_scale = 1;
	bool digits = false;
	for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
		if (whole > (UINT64_MAX - 9) / 10)
			return std::nullopt;
		whole = whole * 10 + static_cast<uint64_t>(s[i] - '0');
		digits = true;
	}
	if (i < s.size() && s[i] == '.') {
		++i;
		for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
			if (frac_scale >= 1000000000000ULL)
				return std::nullopt; // more precision than any unit needs
			frac = frac * 10 + static_cast<uint64_t>(s[i] - '0');
			frac_scale *= 10;
			digits = true;
		}
	}
	if (!digits)
		return std::nullopt;
	const std::string_view suffix = std::string_view(s).substr(i);
	uint64_t mult = 0;
	if (suffix.empty()) {
		mult = bare_multiplier;
	} else {
		for (const auto &u : units)
			if (suffix == u.name)
				mult = u.multiplier;
	}
	if (mult == 0)
		return std::nullopt;
	if (whole != 0 && mult > UINT64_MAX / whole)
		return std::nullopt;
	const uint64_t int_part = whole * mult;
	// fractional part: frac * mult / frac_scale, computed without overflow for our ranges
	const unsigned __int128 f = static_cast<unsigned __int128>(frac) * mult;
	uint64_t frac_part = static_cast<uint64_t>(f / frac_scale);
	if (round_up && f % frac_scale)
		++frac_part;
	if (frac_part > UINT64_MAX - int_part)
		return std::nullopt;
	return int_part + frac_part;
}

} // namespace

std::optional<uint64_t> parse_rate(std::string_view text)
{
	static constexpr std::array<Unit, 18> units{{
		{"bit", 1},
		{"kbit", 1000ULL},
		{"mbit", 1000ULL * 1000},
		{"gbit", 1000ULL * 1000 * 1000},
		{"tbit", 1000ULL * 1000 * 1000 * 1000},
		{"kibit", 1ULL << 10},
		{"mibit", 1ULL << 20},
		{"gibit", 1ULL << 30},
		{"tibit", 1ULL << 40},
		{"bps", 8},
		{"kbps", 8ULL * 1000},
		{"mbps", 8ULL * 1000 * 1000},
		{"gbps", 8ULL * 1000 * 1000 * 1000},
		{"tbps", 8ULL * 1000 * 1000 * 1000 * 1000},
		{"kibps", 8ULL << 10},
		{"mibps", 8ULL << 20},
		{"gibps", 8ULL << 30},
		{"tibps", 8ULL << 40},
	}};
	return parse_scaled(text, units, 1);
}

std::optional<uint64_t> parse_size(std::string_view text)
{
	static constexpr std::array<Unit, 7> units{{
		{"b", 1},
		{"k", 1ULL << 10},
		{"kb", 1ULL << 10},
		{"m", 1ULL << 20},
		{"mb", 1ULL << 20},
		{"g", 1ULL << 30},
		{"gb", 1ULL << 30},
	}};
	return parse_scaled(text, units, 1);
}

std::optional<uint64_t> parse_time_us(std::string_view text)
{
	// Scaled to nanoseconds first so that "1500ns" rounds up to 2us, never down to 1us.
	static constexpr std::array<Unit, 7> units{{
		{"ns", 1},
		{"us", 1000},
		{"usec", 1000},
		{"ms", 1000ULL * 1000},
		{"msec", 1000ULL * 1000},
		{"s", 1000ULL * 1000 * 1000},
		{"sec", 1000ULL * 1000 * 1000},
	}};
	auto ns = parse_scaled(text, units, 1000, true);
	if (!ns)
		return std::nullopt;
	return *ns / 1000 + (*ns % 1000 ? 1 : 0);
}

std::optional<uint64_t> parse_u64(std::string_view text)
{
	uint64_t v = 0;
	auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
	if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
		return std::nullopt;
	return v;
}

std::string format_rate(uint64_t bps)
{
	static constexpr std::array<Unit, 4> units{{
		{"Tbit", 1000ULL * 1000 * 1000 * 1000},
		{"Gbit", 1000ULL * 1000 * 1000},
		{"Mbit", 1000ULL * 1000},
		{"Kbit", 1000ULL},
	}};
	char buf[64];
	for (const auto &u : units) {
		if (bps >= u.multiplier) {
			const double v = static_cast<double>(bps) / static_cast<double>(u.multiplier);
			std::snprintf(buf, sizeof(buf), "%.4g%.*s", v, static_cast<int>(u.name.size()),
				      u.name.data());
			return buf;
		}
	}
	std::snprintf(buf, sizeof(buf), "%llubit", static_cast<unsigned long long>(bps));
	return buf;
}

} // namespace gp
