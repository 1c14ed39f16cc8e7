// What `gapctl probe` measured: the content of the parameter file (Documentation in
// /work/notes/params-schema.md, summarised in tools/gapctl/README.md). Times in microseconds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe_stats.hpp"

namespace gp::probe {

inline constexpr std::string_view kParamsFormat = "gappace-params/1";

// One message size of the ladder.
struct SizePoint {
	uint64_t bytes = 0;
	double g_us = 0;	  // gap: time per message of a bidirectional train, steady state
	double os_us = 0;	  // CPU time in send() per message
	double or_us = 0;	  // CPU time in recv() per message
	double rtt_us = 0;	  // ping-pong, m bytes each way
	double exchange_us = 0;	  // simultaneous exchange of m bytes each way
	double m1_us_per_byte = 0; // (rtt/2 - S1) / m
	double m2_us_per_byte = 0; // (exchange - S2) / m
	uint32_t reps = 0;	  // ping-pong repetitions (rtt, os, or)
	uint32_t exchange_reps = 0;
	uint32_t trains = 0;
	uint32_t train_length = 0;
};

struct SwitchQueue {
	double delay_empty_us = 0; // small-message RTT, idle path (to the kernel's receive timestamp)
	double delay_full_us = 0;  // the same with a bulk stream filling the bottleneck: 90th percentile
	double delay_loaded_mean_us = 0; // their trimmed mean: the average queue of the sawtooth
	double app_delay_full_us = 0;	 // loaded RTT as the application sees it (with wake-up delays)
	double bytes = 0;
	double packets = 0;
	uint32_t mtu = 1500;
	double rate_bps = 0;	     // the link rate q was computed with
	std::string rate_source;     // "given" (--bottleneck-rate) or "bulk" (the stream's rate)
	double bulk_goodput_bps = 0; // the bulk stream's payload rate at the receiver
	size_t samples = 0;	     // loaded RTT samples used
	size_t retransmitted = 0;    // loaded samples dropped because the probe segment was resent
	bool stable = false;	     // the loaded delay settled before sampling (else: sampled at the cap)
	double warmup_s = 0;
};

struct ProbeResult {
	std::string local; // our address on the probe connection
	std::string peer;
	uint16_t port = 0;
	std::string measured_at; // UTC, ISO 8601
	double latency_us = 0;	 // PlogP L
	double link_bps = 0;	 // from the largest message's gap, as a wire (frame) rate
	Summary rtt;		 // small ping-pongs, idle path
	SwitchQueue queue;
	double s1_us = 0;
	double s2_us = 0;
	std::vector<SizePoint> points;
	// How it was measured.
	bool quick = false;
	uint64_t max_size = 0;
	uint32_t mss = 0;
	uint32_t mtu = 0;
	double cpu_clock_overhead_ns = 0;
	double duration_s = 0;
};

} // namespace gp::probe
