#include "planner.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>

#include "units.hpp"

namespace gp::daemon {
namespace {

bool behind(const Bottleneck &b, const Endpoint &address)
{
	return std::any_of(b.prefixes.begin(), b.prefixes.end(),
			   [&](const Prefix &p) { return prefix_contains(p, address); });
}

bool paced_kind(uint32_t kind)
{
	switch (kind) {
	case GAPPACE_HINT_KIND_ALLTOALL:
	case GAPPACE_HINT_KIND_ALLGATHER:
	case GAPPACE_HINT_KIND_REDUCE_SCATTER:
	case GAPPACE_HINT_KIND_ALLREDUCE:
	case GAPPACE_HINT_KIND_P2P_BURST:
		return true;
	default:
		return false;
	}
}

bool one_at_a_time(uint32_t algorithm)
{
	return algorithm == GAPPACE_HINT_ALGORITHM_PAIRWISE || algorithm == GAPPACE_HINT_ALGORITHM_RING;
}

} // namespace

bool prefix_contains(const Prefix &prefix, const Endpoint &address)
{
	if (prefix.family != address.family)
		return false;
	const unsigned full = prefix.length / 8, rest = prefix.length % 8;
	if (std::memcmp(prefix.address.data(), address.address.data(), full) != 0)
		return false;
	if (!rest)
		return true;
	const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
	return (prefix.address[full] & mask) == (address.address[full] & mask);
}

Plan DefaultPlanner::plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const
{
	Plan plan;
	plan.rate_bps.assign(peers.size(), 0);
	std::string reason;

	if (config.pacing && paced_kind(phase.kind) && phase.bytes_per_peer) {
		for (const Bottleneck &b : config.bottlenecks) {
			// Peers behind b, seen from a host that is not behind it.
			std::vector<size_t> crossing;
			std::set<int32_t> ranks_behind;
			size_t unranked_behind = 0;
			for (size_t i = 0; i < peers.size(); ++i) {
				if (!behind(b, peers[i].remote) || (peers[i].local && behind(b, *peers[i].local)))
					continue;
				crossing.push_back(i);
				if (peers[i].rank >= 0)
					ranks_behind.insert(peers[i].rank);
				else
					++unranked_behind;
			}
			if (crossing.empty())
				continue;
			const uint64_t n_behind = ranks_behind.size() + unranked_behind;
			uint64_t senders = phase.comm_size > n_behind ? phase.comm_size - n_behind : 0;
			if (!phase.comm_size) // unknown: us and the peers we know outside b
				senders = peers.size() - crossing.size() + 1;
			senders = std::max<uint64_t>(senders, 1);
			const uint64_t fanout = one_at_a_time(phase.algorithm) ? 1 : n_behind;
			const uint64_t queue_bytes = uint64_t{b.queue_packets ? b.queue_packets : config.queue_packets} * config.mtu;
			const uint64_t burst = senders * fanout * phase.bytes_per_peer;
			if (burst <= queue_bytes) {
				reason += b.name + ": burst " + std::to_string(burst) + " B fits the queue (" +
					  std::to_string(queue_bytes) + " B), not paced; ";
				continue;
			}
			const uint64_t rate = std::max(config.min_rate_bps, b.capacity_bps / (senders * fanout));
			for (size_t i : crossing)
				plan.rate_bps[i] = plan.rate_bps[i] ? std::min(plan.rate_bps[i], rate) : rate;
			reason += b.name + ": " + std::to_string(crossing.size()) + " peers, k=" + std::to_string(senders) +
				  " f=" + std::to_string(fanout) + " -> " + format_rate(rate) + " per connection; ";
		}
	}

	if (config.rto) {
		plan.rto_min_us = std::clamp(config.rto_floor_us, config.rto_min_us, config.rto_max_us);
		reason += "RTO floor " + std::to_string(plan.rto_min_us) + " us";
	}
	if (reason.empty())
		reason = "nothing to do";
	plan.reason = std::move(reason);
	return plan;
}

} // namespace gp::daemon
