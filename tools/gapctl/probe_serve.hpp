// The responder of `gapctl probe --serve`: serves probe sessions (probe_protocol.hpp) one at a
// time. Bounded in every way: it exits after `timeout`; a connection that sends no valid HELLO
// within `first_frame` is refused, a session that makes no progress for `stall` is dropped, and
// every RUN's work is capped by the protocol. Garbage gets an ERROR frame and a close, never a
// crash: a connection's failure is logged and the responder goes on with the next one.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "expected.hpp"
#include "probe_transport.hpp"

namespace gp::probe {

struct ServeOptions {
	bool once = false; // return after the first session (completed or not)
	std::chrono::milliseconds timeout{600000};
	std::chrono::milliseconds stall{30000};
	std::chrono::milliseconds first_frame{5000};
	FILE *log = stderr; // one line per session and per refused connection; nullptr: quiet
};

struct ServeSummary {
	uint32_t sessions = 0;	// connections that completed HELLO
	uint32_t completed = 0; // sessions that ended with BYE
	uint32_t refused = 0;	// connections refused before or instead of a session
	bool timed_out = false; // returned because `timeout` passed
};

// Serves on an open listener until `timeout` (or after one session with `once`).
ServeSummary serve(const Listener &listener, const ServeOptions &options);

} // namespace gp::probe
