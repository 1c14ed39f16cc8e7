// gp-wirecheck's command line, parsed into an analysis configuration.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis.hpp"
#include "asserts.hpp"
#include "expected.hpp"

namespace gp::wirecheck {

struct Options {
	AnalysisConfig analysis;
	bool json = false;
	bool help = false;
	AssertSpec asserts;
	std::string capture_path;
};

std::string usage_text();

// Error messages are meant for stderr as they are (usage errors: exit 2).
Expected<Options> parse_command_line(int argc, char *const argv[]);

Expected<MacAddress> parse_mac(std::string_view text);
Expected<IpPrefix> parse_prefix(std::string_view text); // "10.0.1.1", "10.0.1.0/24", "fd00::/64"
Expected<FlowSpec> parse_flow(std::string_view text);	// NAME=PREFIX[,rate=RATE]

} // namespace gp::wirecheck
