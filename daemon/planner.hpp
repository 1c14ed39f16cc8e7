// The planner decides, per phase, how fast each connection may send and how low its RTO may
// go. This is the seam the communication models plug into (PlogP-BR, the rate bound, latency
// fluctuation: their own issue). DefaultPlanner is the simple documented rule:
//
//   * A peer is behind bottleneck B if its address is in one of B's prefixes and ours is not.
//   * k = processes sending into B at once = comm_size - (ranks behind B), at least 1.
//   * fanout f = connections one process drives into B at once: 1 for pairwise and ring
//     exchanges, every peer behind B for linear (all posted at once) or unknown algorithms.
//   * Pace each such connection to C_B / (k * f) — but only when the burst cannot fit the
//     switch queue: k * f * bytes_per_peer > q * mtu. Below that, pacing only costs time.
//   * Many-to-many kinds are paced (alltoall, allgather, reduce_scatter, allreduce, p2p
//     bursts); rooted ones (bcast, scatter, gather, reduce, barrier) are not: their
//     bottleneck is a single host link the map does not describe.
//   * RTO floor: [rto] floor for every connection of the phase, within [rto.min, rto.max].
// Remedies switched off in the config are never planned.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config.hpp"
#include "endpoint.hpp"
#include "hint_codec.hpp"

namespace gp::daemon {

struct PlannedPeer {
	Endpoint remote;		// address, port 0
	std::optional<Endpoint> local;	// our address towards it, if known
	int32_t rank = -1;
};

struct Plan {
	std::vector<uint64_t> rate_bps;	// per peer of the phase; 0: not paced
	uint32_t rto_min_us = 0;	// 0: RTO left alone
	std::string reason;		// one line for the log and `gapctl daemon show`

	bool empty() const
	{
		for (uint64_t r : rate_bps)
			if (r)
				return false;
		return rto_min_us == 0;
	}
};

class Planner {
public:
	virtual ~Planner() = default;
	virtual const char *name() const = 0;
	virtual Plan plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const = 0;
};

class DefaultPlanner final : public Planner {
public:
	const char *name() const override { return "default"; }
	Plan plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const override;
};

// Whether `address` is inside `prefix` (same family, first `length` bits equal).
bool prefix_contains(const Prefix &prefix, const Endpoint &address);

} // namespace gp::daemon
