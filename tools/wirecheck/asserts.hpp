// --assert: which properties of the capture must hold for gp-wirecheck to exit 0.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis.hpp"
#include "expected.hpp"

namespace gp::wirecheck {

// What --assert checks; every check that is set must hold or gp-wirecheck exits 1.
struct AssertSpec {
	bool gaps = false;	// no invalid gap frame in the whole capture
	bool spacing = false;	// per phase, no spacing violation of a flow with an expected rate
	std::optional<double> rate_tolerance; // per phase, |rate_error| <= this (relative)
	bool integrity = false; // per phase, no UDP loss/reorder/duplicate, no TCP out-of-order
	std::optional<double> ifg_tolerance; // per phase, |ifg.deviation_mean| <= this (wire bytes)
	bool any() const { return gaps || spacing || rate_tolerance || integrity || ifg_tolerance; }
};

inline constexpr double kDefaultRateTolerance = 0.01;
inline constexpr double kDefaultIfgTolerance = 1.0;

// "gaps,spacing,rate=0.02,integrity,ifg=2" or "all" (ifg only with have_ifg).
Expected<AssertSpec> parse_asserts(std::string_view text, bool have_ifg);

// The failed checks, one human-readable line each; empty when all hold.
std::vector<std::string> check_asserts(const CaptureReport &report, const AssertSpec &asserts);

} // namespace gp::wirecheck
