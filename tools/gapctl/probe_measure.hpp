// The client side of `gapctl probe`: runs the measurements against a responder and derives the
// parameters (see probe_result.hpp). How each figure is measured:
//
//  * rtt(m), o_s(m), o_r(m): ping-pong of m bytes each way. rtt is wall time (CLOCK_MONOTONIC)
//    from before our send() to after the reply's last byte; o_s / o_r are CPU time of this
//    thread (CLOCK_THREAD_CPUTIME_ID) inside the send() / recv() calls of one message, minus the
//    cost of reading that clock. CPU time and not wall time, because a blocking call's wall time
//    is mostly waiting for the network, which PlogP counts in g and L, not in the overheads.
//    Note that on veth paths the sending CPU also runs the receive path of the next namespace.
//  * exchange(m): both sides send m bytes at once and then wait for the other's; repeated in
//    lock step, consecutive times averaged in pairs (one side is alternately ahead).
//  * g(m): both sides send a train of n messages while receiving the other's; per direction
//    the time between the arrivals (the kernel's receive timestamps, SO_TIMESTAMPNS) of the
//    first and the last message's final segment, / (n - 1); the two directions averaged. Each
//    recv() stops at a message's end. Kernel times, because the application sees arrivals late
//    when it is busy in a long send() of its own train: with 2 messages of 1 MiB, the end of
//    the first would be seen when most of the second is already there.
//  * L = rtt(0)/2 - g(0) (PlogP); S1 = mean small RTT / 2; S2 = exchange(0);
//    M1(m) = (rtt(m)/2 - S1) / m; M2(m) = (exchange(m) - S2) / m.
//  * RTT mean and sigma: many 0-byte ping-pongs on the idle path, trimmed (probe_stats.hpp).
//  * switch queue: small "stamped" ping-pongs (probe_protocol.hpp, STAMPED_PING), timed from
//    our send() to the kernel's receive timestamp of the reply, minus the responder's own
//    turnaround: the network's round trip, without process wake-up delays (milliseconds on a
//    busy machine, and growing with the bulk stream's CPU load). Idle first (delay_empty: their
//    trimmed mean), then while a second connection streams bulk data to the responder, after
//    the delay settled, on a fixed time grid (a ping through an empty queue returns 50 times
//    sooner, so back-to-back pings would over-sample the empty moments). Samples whose ping
//    segment was retransmitted (dropped by the full queue) are left out. A single cubic flow's
//    queue is a sawtooth between about 0.7 Q and Q, and an emulated link (namespaces) also
//    empties now and then when the machine starves the flow, so "the port full" is the 90th
//    percentile of the loaded samples (delay_full), not their mean (reported as
//    delay_loaded_mean_us). q = (delay_full - delay_empty) * rate / 8, rate from
//    --bottleneck-rate or the bulk stream's goodput as a frame rate.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "expected.hpp"
#include "probe_protocol.hpp"
#include "probe_result.hpp"
#include "probe_stats.hpp"

namespace gp::probe {

struct ProbeOptions {
	std::string peer;
	uint16_t port = kDefaultProbePort;
	uint64_t max_size = 16ull << 20;
	bool quick = false;
	std::optional<uint64_t> bottleneck_bps; // link rate for q; default: the bulk stream's
	std::chrono::milliseconds timeout{300000}; // the whole probe
	Budget budget;				   // from make_budget()
	bool measure_queue = true;
	// Called with one line of progress per phase and size (may be empty: no progress).
	std::function<void(std::string_view)> progress;
};

// Connects, measures, says goodbye. Errors name the phase ("connecting", "RUN pingpong 1024 B",
// ...) and the cause: refused, unreachable, timed out, version mismatch, the responder's ERROR.
Expected<ProbeResult> run_probe(const ProbeOptions &options);

} // namespace gp::probe
