// Broadcast cost models after Yamada et al. (dynamic multicast / broadcast on clusters;
// Documentation/models.md, "Broadcast"). A transfer of c bytes costs a start-up S plus c times a
// per-byte time M(c) that depends on the chunk size actually sent (the M, M', M'' refinement):
//   one-way  (only one side sends):   S1 + c M1(c)
//   two-way  (both sides send at once, as in a ring step):   S2 + c M2(c)
// For p nodes and n bytes (lg = ceil(log2)):
//   binomial          T_bin  = lg(p) (S1 + n M1(n))
//   scatter           T_sc(d) = sum_{k=1..lg(d)} (S1 + (n/2^k) M1(n/2^k))      (binomial scatter to d)
//   ring allgather    T_ring(d) = (d-1) (S2 + (n/d) M2(n/d))
//   scatter+ring      T_sr   = T_sc(p) + T_ring(p)                                 (van de Geijn)
//   hybrid-d          T_hyb(d) = T_sc(d) + lg(ceil(p/d)) (S1 + (n/d) M1(n/d)) + T_ring(d)
// Hybrid-d: the p nodes form d groups of p/d. The root scatters the message into d chunks, one
// to a leader in each group; each leader broadcasts its chunk in its group by a binomial tree;
// then the d nodes with the same place in their groups run a ring allgather of the d chunks.
// d = 1 is the binomial tree, d = p the scatter+ring.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "plogp.hpp"

namespace gp::models {

struct BcastParams {
	double s1_us = 0;	// one-way start-up (ping-pong / 2 of a small message)
	double s2_us = 0;	// two-way start-up (both sides sending at once)
	PlogpTable table;	// per-byte times m1 (M1) and m2 (M2) per chunk size
};

enum class BcastAlgorithm { Binomial, Hybrid, ScatterRing };

struct BcastEstimate {
	BcastAlgorithm algorithm;
	uint64_t d = 1;		// groups: 1 binomial, p scatter+ring
	double time_us = 0;
};

const char *bcast_algorithm_name(BcastAlgorithm algorithm); // "binomial", "hybrid", "scatter+ring"

// ceil(log2(x)) for x >= 1; 0 for x <= 1.
unsigned ceil_log2(uint64_t x);

double binomial_bcast_us(const BcastParams &params, uint64_t nodes, double bytes);
double binomial_scatter_us(const BcastParams &params, uint64_t nodes, double bytes);
double ring_allgather_us(const BcastParams &params, uint64_t nodes, double chunk_bytes);
double scatter_ring_bcast_us(const BcastParams &params, uint64_t nodes, double bytes);
// d must be 1 .. nodes (clamped).
double hybrid_bcast_us(const BcastParams &params, uint64_t nodes, double bytes, uint64_t d);

// Binomial (d = 1), hybrid for d = 2, 4, 8, ... < p, and scatter+ring (d = p), in that order.
// Empty for nodes < 2 (nothing to send).
std::vector<BcastEstimate> bcast_estimates(const BcastParams &params, uint64_t nodes, double bytes);

// The choice among estimates: the smallest d whose time is within kBcastTieTolerance of the
// fastest. The models cannot resolve differences that small, and each ring step adds a
// synchronisation whose latency fluctuation they ignore (latency_fluctuation.hpp), so a near-tie
// goes to fewer groups. Requires a non-empty span.
inline constexpr double kBcastTieTolerance = 0.01;
BcastEstimate best_bcast(std::span<const BcastEstimate> estimates);

// Built-in parameters for `gapctl advise bcast` without --params and for the unit tests: a
// 10 Gbit-class network, S1 = 1.5 us, S2 = 2.0 us, and per-byte times whose bandwidth saturates
// with the chunk size:
//   M1(c) = (1 / 1250 B/us) (c + 2 K) / (c + K),  M2(c) = (1 / 1100 B/us) (c + 2 K) / (c + K),
//   K = 16 KiB
// i.e. half the asymptotic bandwidth for tiny chunks, 10 Gbit/s one-way and 8.8 Gbit/s per
// direction two-way for large ones. Sampled at 0 and 2^0 .. 2^26 bytes; latency_us = S1.
BcastParams default_bcast_params();

} // namespace gp::models
