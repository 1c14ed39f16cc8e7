// What one rank measured, as it travels to rank 0 (wire.hpp) and into the report (report.hpp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "counters.hpp"

namespace gp::alltoall {

struct HintStats {
	bool open = false; // a libgapctl handle existed (--hints given and gapctl_open worked)
	uint64_t queued = 0, sent = 0, dropped = 0, rejected = 0;
};

struct TcpInfoSummary {
	uint64_t total_retrans = 0; // sum of tcpi_total_retrans over the rank's data sockets
	uint32_t rto_max_us = 0;    // largest tcpi_rto among them, at the end of the run
};

struct RankResult {
	uint32_t rank = 0;
	bool timed_out = false; // stopped before its last iteration (deadline, or rank 0's STOP)
	bool verified = false;	// every received byte was compared with the expected pattern
	uint64_t wall_ns = 0;	// start barrier .. last iteration done (or stop)
	uint64_t bytes_sent = 0;
	uint64_t bytes_received = 0;
	uint64_t bytes_cross_sent = 0; // to ranks on the other side of the bottleneck
	// From ranks on the other side: what crossed the bottleneck towards us. Bandwidth is
	// counted from these: a timed-out run's sent bytes include socket buffers never delivered.
	uint64_t bytes_cross_received = 0;
	uint64_t iterations_done = 0;
	std::vector<uint64_t> iteration_ns; // one per completed iteration
	// With --trace-iterations, one per completed iteration: how many segments the rank's data
	// sockets retransmitted between its end and the previous one's. Empty otherwise.
	std::vector<uint32_t> iteration_retrans;
	uint64_t netns_inode = 0;
	bool counters_valid = false; // both snapshots were read
	CounterSnapshot counters_before, counters_after;
	TcpInfoSummary tcp_info;
	HintStats hints;
	std::string cc; // congestion control of the rank's data sockets ("" unknown)
};

} // namespace gp::alltoall
