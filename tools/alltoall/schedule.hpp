// Who sends to whom, in which order: the phases of one all-to-all iteration for one rank, and how
// many iterations a --volume asks for. Pure functions (unit-tested).
//
// pairwise  phase i = 1..P-1. P a power of two: partner = rank XOR i, both directions (every
//           phase is a perfect matching, as MPICH's and Open MPI's pairwise exchange). Otherwise
//           XOR does not stay inside 0..P-1, so the shift order is used: send to (rank+i) mod P,
//           receive from (rank-i) mod P; every phase is still a permutation without fixed point.
// ring      phase i = 1..P-1: send to (rank+i) mod P, receive from (rank-i+P) mod P, for any P.
// half      only ranks on the other side of the bottleneck: with K ranks over there, phase
//           i = 0..K-1 sends to other[(j+i) mod K], j this rank's index among its own side (both
//           lists by rank). With equal sides every phase is a matching across the bottleneck.
//
// Receives are not ordered: a rank reads whatever any peer has sent, so the receive partner of a
// phase is only descriptive (it matters for hints and for reading this file, not for the loop).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "expected.hpp"
#include "types.hpp"

namespace gp::alltoall {

struct PhasePartners {
	int send_to = -1;
	int recv_from = -1;
};

struct Schedule {
	std::vector<int> send_order; // peer rank of every phase, in order
	std::vector<int> peers;	     // every rank this one exchanges with, ascending
};

struct IterationPlan {
	uint64_t iterations = 0;
	bool capped = false; // the volume asked for more than kMaxIterations
};

constexpr bool is_power_of_two(uint64_t n) { return n != 0 && (n & (n - 1)) == 0; }

// phase in 1..ranks-1
PhasePartners pairwise_partners(int rank, int ranks, int phase);
PhasePartners ring_partners(int rank, int ranks, int phase);

// sides has one entry per rank (Side::None where not given; half needs every rank's side).
Expected<Schedule> make_schedule(Pattern pattern, int rank, std::span<const Side> sides);

// Ordered (sender, receiver) pairs that carry m bytes per iteration: P(P-1), for half only the
// pairs across the bottleneck, 2·L·R.
uint64_t data_pairs(Pattern pattern, std::span<const Side> sides);
// Ordered pairs of ranks on different sides (ranks without a side take no part): 2·L·R.
uint64_t cross_pairs(std::span<const Side> sides);

// iterations = ceil(volume / (pairs·msg)), at least 1, at most kMaxIterations (then capped).
IterationPlan plan_iterations(uint64_t volume, uint64_t msg, uint64_t pairs);

} // namespace gp::alltoall
