#include "asserts.hpp"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace gp::wirecheck {
namespace {

std::optional<double> parse_nonnegative(std::string_view text)
{
	double value = 0;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
	if (text.empty() || ec != std::errc() || end != text.data() + text.size() || !(value >= 0))
		return std::nullopt;
	return value;
}

std::string format_number(double value)
{
	char text[32];
	std::snprintf(text, sizeof(text), "%.6g", value);
	return text;
}

std::string where(const PhaseReport &phase) { return "phase '" + phase.name + "'"; }

void check_phase(const PhaseReport &phase, const AssertSpec &asserts, std::vector<std::string> &failures)
{
	for (const FlowReport &flow : phase.flows) {
		if (!flow.expected_rate_bps)
			continue;
		const std::string who = where(phase) + " flow '" + flow.name + "'";
		if (asserts.spacing && flow.spacing.violations > 0)
			failures.push_back(who + ": " + std::to_string(flow.spacing.violations) +
					   " spacing violations (min deviation " +
					   format_number(flow.spacing.deviation_min.value_or(0)) + " wire bytes)");
		if (asserts.rate_tolerance && flow.rate_error && std::fabs(*flow.rate_error) > *asserts.rate_tolerance)
			failures.push_back(who + ": rate error " + format_number(*flow.rate_error) + " beyond " +
					   format_number(*asserts.rate_tolerance));
	}
	if (asserts.integrity) {
		for (const UdpStreamReport &udp : phase.integrity.udp)
			if (udp.lost || udp.reordered || udp.duplicated)
				failures.push_back(where(phase) + " udp flow id " + std::to_string(udp.flow_id) + ": lost " +
						   std::to_string(udp.lost) + ", reordered " + std::to_string(udp.reordered) +
						   ", duplicated " + std::to_string(udp.duplicated));
		if (phase.integrity.tcp_out_of_order)
			failures.push_back(where(phase) + ": " + std::to_string(phase.integrity.tcp_out_of_order) +
					   " TCP segments out of order");
	}
	if (asserts.ifg_tolerance && phase.ifg && phase.ifg->pairs > 0 &&
	    std::fabs(phase.ifg->deviation_mean) > *asserts.ifg_tolerance)
		failures.push_back(where(phase) + ": mean IFG gap deviation " + format_number(phase.ifg->deviation_mean) +
				   " wire bytes beyond " + format_number(*asserts.ifg_tolerance));
}

} // namespace

Expected<AssertSpec> parse_asserts(std::string_view text, bool have_ifg)
{
	AssertSpec spec;
	std::string_view rest = text;
	while (!rest.empty()) {
		const size_t comma = rest.find(',');
		const std::string_view item = rest.substr(0, comma);
		rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
		const size_t equals = item.find('=');
		const std::string_view name = item.substr(0, equals);
		const std::optional<std::string_view> value =
			equals == std::string_view::npos ? std::nullopt : std::optional(item.substr(equals + 1));
		const auto number_or = [&](double fallback) -> std::optional<double> {
			return value ? parse_nonnegative(*value) : std::optional(fallback);
		};
		const auto bad = [&](const std::string &why) {
			return make_error(EINVAL, "invalid --assert '" + std::string(text) + "': " + why);
		};
		if ((name == "gaps" || name == "spacing" || name == "integrity" || name == "all") && value)
			return bad("'" + std::string(name) + "' takes no value");
		if (name == "gaps") {
			spec.gaps = true;
		} else if (name == "spacing") {
			spec.spacing = true;
		} else if (name == "integrity") {
			spec.integrity = true;
		} else if (name == "rate") {
			if (!(spec.rate_tolerance = number_or(kDefaultRateTolerance)))
				return bad("rate=REL wants a relative error such as 0.01");
		} else if (name == "ifg") {
			if (!have_ifg)
				return bad("'ifg' needs --ifg");
			if (!(spec.ifg_tolerance = number_or(kDefaultIfgTolerance)))
				return bad("ifg=BYTES wants wire bytes such as 1");
		} else if (name == "all") {
			spec.gaps = spec.spacing = spec.integrity = true;
			if (!spec.rate_tolerance)
				spec.rate_tolerance = kDefaultRateTolerance;
			if (have_ifg && !spec.ifg_tolerance)
				spec.ifg_tolerance = kDefaultIfgTolerance;
		} else {
			return bad("unknown check '" + std::string(name) + "' (gaps, spacing, rate, integrity, ifg, all)");
		}
	}
	if (!spec.any())
		return make_error(EINVAL, "--assert names no check");
	return spec;
}

std::vector<std::string> check_asserts(const CaptureReport &report, const AssertSpec &asserts)
{
	std::vector<std::string> failures;
	if (asserts.gaps && report.total.invalid_gaps.count > 0) {
		const auto &invalid = report.total.invalid_gaps;
		failures.push_back(std::to_string(invalid.count) + " invalid gap frames, first: " +
				   (invalid.examples.empty() ? std::string("?") : invalid.examples.front()));
	}
	// Spacing, rate, integrity and IFG are judged per phase: the total would mix phases that may
	// deliberately differ (and a sender restarting its sequence numbers in a later phase).
	for (const PhaseReport &phase : report.phases)
		check_phase(phase, asserts, failures);
	return failures;
}

} // namespace gp::wirecheck
