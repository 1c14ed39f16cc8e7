// The gappace parameter file: what `gapctl probe` measures and the models consume
// (format "gappace-params/1", described in Documentation/models.md, "Parameter file").
// JSON; times in microseconds, sizes in bytes, rates in bit/s. Loading validates everything and
// names the JSON path at fault ("params.json: points[3].g_us: must be >= 0"); unknown keys are
// ignored; // and /* */ comments are accepted.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "bcast_model.hpp"
#include "expected.hpp"
#include "plogp.hpp"

namespace gp::models {

inline constexpr std::string_view kParamsFormat = "gappace-params/1";

struct ParamsPoint {
	uint64_t bytes = 0;		// required
	double g_us = 0;		// required
	double os_us = 0;
	double or_us = 0;
	double rtt_us = 0;
	double m1_us_per_byte = 0;
	double m2_us_per_byte = 0;
	uint64_t reps = 0;
};

struct ParamsRtt {
	double mean_us = 0;		// required in "rtt"
	double sigma_us = 0;		// required in "rtt"
	uint64_t samples = 0;
};

struct ParamsSwitchQueue {
	double delay_empty_us = 0;
	double delay_full_us = 0;
	uint64_t bytes = 0;		// required in "switch_queue": q
	uint64_t packets = 0;
	uint64_t mtu = 0;
};

struct Params {
	std::string local, peer, measured_at;	// optional, informative
	double latency_us = 0;			// required: PlogP L
	std::optional<uint64_t> link_bps;
	std::optional<ParamsRtt> rtt;
	std::optional<ParamsSwitchQueue> switch_queue;
	std::optional<double> oneway_s_us;	// "oneway": {"S_us"}: S1
	std::optional<double> twoway_s_us;	// "twoway": {"S_us"}: S2
	std::vector<ParamsPoint> points;	// required, non-empty, strictly increasing bytes
};

// Parses and validates a parameter file's text; `source_name` prefixes every error (EINVAL).
Expected<Params> parse_params(std::string_view text, std::string_view source_name);
// Reads and parses a file (errors: the read's errno, or EINVAL, prefixed with the path).
Expected<Params> load_params(const std::string &path);
// The file text for `params` (2-space indented JSON, keys in the documented order).
std::string format_params(const Params &params);
// Validates `params` (as the loader would) and writes it atomically (temporary file + rename).
Expected<void> save_params(const std::string &path, const Params &params);

// The PlogP table of a parameter file.
Expected<PlogpTable> plogp_table(const Params &params);
// The broadcast model's parameters; needs oneway.S_us and twoway.S_us (EINVAL naming them).
Expected<BcastParams> bcast_params(const Params &params, std::string_view source_name);

} // namespace gp::models
