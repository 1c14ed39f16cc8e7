// `gapctl probe`: the command line of the path prober and its responder.
//
//   gapctl probe --serve [--bind ADDR] [--port P] [--once] [--timeout S]
//   gapctl probe PEER [--port P] [--out FILE] [--max-size BYTES] [--reps N] [--quick]
//                     [--bottleneck-rate RATE] [--timeout S] [-j]
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "commands.hpp"
#include "expected.hpp"

namespace gp {

struct ProbeArgs {
	bool serve = false;
	// --serve
	std::string bind;
	bool once = false;
	// client
	std::string peer;
	std::string out = "./gappace-params.json";
	std::optional<uint64_t> max_size;
	std::optional<uint32_t> reps;
	bool quick = false;
	std::optional<uint64_t> bottleneck_bps;
	bool json = false;
	// both
	std::optional<uint16_t> port;
	std::optional<std::chrono::milliseconds> timeout;
};

// Options as --name VALUE or --name=VALUE, flags, and (client) one PEER. err EINVAL.
Expected<ProbeArgs> parse_probe_args(Args args);

int probe_command(const Invocation &invocation, Args args);

} // namespace gp
