#include "schedule.hpp"

#include <cerrno>
#include <string>

#include "args.hpp"

namespace gp::alltoall {

PhasePartners pairwise_partners(int rank, int ranks, int phase)
{
	if (is_power_of_two(static_cast<uint64_t>(ranks))) {
		const int partner = rank ^ phase;
		return {partner, partner};
	}
	return ring_partners(rank, ranks, phase);
}

PhasePartners ring_partners(int rank, int ranks, int phase)
{
	return {(rank + phase) % ranks, (rank - phase + ranks) % ranks};
}

Expected<Schedule> make_schedule(Pattern pattern, int rank, std::span<const Side> sides)
{
	const int ranks = static_cast<int>(sides.size());
	if (ranks < 2 || rank < 0 || rank >= ranks)
		return make_error(EINVAL, "rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
						  ": no all-to-all schedule");
	Schedule schedule;
	if (pattern != Pattern::Half) {
		for (int phase = 1; phase < ranks; ++phase) {
			const auto partners = pattern == Pattern::Pairwise ? pairwise_partners(rank, ranks, phase)
									   : ring_partners(rank, ranks, phase);
			schedule.send_order.push_back(partners.send_to);
		}
		for (int peer = 0; peer < ranks; ++peer)
			if (peer != rank)
				schedule.peers.push_back(peer);
		return schedule;
	}

	std::vector<int> own_side, other_side;
	for (int r = 0; r < ranks; ++r) {
		if (sides[r] == Side::None)
			return make_error(EINVAL, "pattern half: rank " + std::to_string(r) + " has no side");
		(sides[r] == sides[rank] ? own_side : other_side).push_back(r);
	}
	if (other_side.empty())
		return make_error(EINVAL, "pattern half: every rank is on the " + std::string(side_name(sides[rank])) +
						  " side, nothing crosses the bottleneck");
	size_t index = 0;
	while (own_side[index] != rank)
		++index;
	const size_t k = other_side.size();
	for (size_t phase = 0; phase < k; ++phase)
		schedule.send_order.push_back(other_side[(index + phase) % k]);
	schedule.peers = other_side;
	return schedule;
}

uint64_t cross_pairs(std::span<const Side> sides)
{
	uint64_t left = 0, right = 0;
	for (Side side : sides) {
		left += side == Side::Left;
		right += side == Side::Right;
	}
	return 2 * left * right;
}

uint64_t data_pairs(Pattern pattern, std::span<const Side> sides)
{
	if (pattern == Pattern::Half)
		return cross_pairs(sides);
	const uint64_t ranks = sides.size();
	return ranks * (ranks - 1);
}

IterationPlan plan_iterations(uint64_t volume, uint64_t msg, uint64_t pairs)
{
	if (pairs == 0 || msg == 0)
		return {1, false};
	const unsigned __int128 per_iteration = static_cast<unsigned __int128>(pairs) * msg;
	unsigned __int128 iterations = (volume + per_iteration - 1) / per_iteration;
	if (iterations < 1)
		iterations = 1;
	if (iterations > kMaxIterations)
		return {kMaxIterations, true};
	return {static_cast<uint64_t>(iterations), false};
}

} // namespace gp::alltoall
