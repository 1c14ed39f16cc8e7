// `gapctl advise bcast`: the broadcast models' prediction for a message size and node count
// (daemon/models/bcast_model.hpp, Documentation/models.md). Pure computation: no kernel, no daemon.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "commands.hpp"
#include "bcast_model.hpp"
#include "json.hpp"

namespace gp {

// advise bcast --nodes P --size N [--params FILE] [-j[son]] [-p[retty]]
// (the keywords also without dashes, like `hint`; -j/-p also before the object).
struct AdviseBcastArgs {
	uint64_t nodes = 0;
	uint64_t bytes = 0;
	std::optional<std::string> params_path;	// absent: the built-in defaults
	std::optional<OutputFormat> format;	// -j/-p given after the command
};
Expected<AdviseBcastArgs> parse_advise_bcast_args(Args args);

inline constexpr uint64_t kAdviseMaxNodes = uint64_t{1} << 20;
inline constexpr uint64_t kAdviseMaxBytes = uint64_t{1} << 40;

struct BcastAdvice {
	uint64_t nodes = 0;
	uint64_t bytes = 0;
	std::optional<std::string> params_path;	// absent: the built-in defaults
	double s1_us = 0, s2_us = 0;		// the start-ups used
	std::vector<models::BcastEstimate> estimates;
	models::BcastEstimate best{models::BcastAlgorithm::Binomial, 1, 0};
};
BcastAdvice advise_bcast_with(const models::BcastParams &params, uint64_t nodes, uint64_t bytes,
			      std::optional<std::string> params_path);

std::string format_bcast_advice_text(const BcastAdvice &advice);
void write_bcast_advice_json(JsonWriter &json, const BcastAdvice &advice);

int advise_bcast(const Invocation &invocation, Args args);

} // namespace gp
