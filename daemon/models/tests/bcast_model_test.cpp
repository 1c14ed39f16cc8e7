// Broadcast cost models after Yamada et al. (Documentation/models.md, "Broadcast").
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "bcast_model.hpp"

namespace gp::models {
namespace {

// A network with size-independent per-byte times, to check the formulas term by term.
BcastParams flat_params(double s1, double s2, double m1, double m2)
{
	std::vector<PlogpPoint> points(2);
	points[0].bytes = 1;
	points[1].bytes = 1 << 20;
	for (auto &p : points) {
		p.m1_us_per_byte = m1;
		p.m2_us_per_byte = m2;
	}
	return BcastParams{s1, s2, std::move(*PlogpTable::make(s1, std::move(points)))};
}

// lg = ceil(log2): the number of binomial steps for p nodes.
TEST(Bcast, CeilLog2)
{
	EXPECT_EQ(ceil_log2(0), 0u);
	EXPECT_EQ(ceil_log2(1), 0u);
	EXPECT_EQ(ceil_log2(2), 1u);
	EXPECT_EQ(ceil_log2(3), 2u);
	EXPECT_EQ(ceil_log2(1024), 10u);
	EXPECT_EQ(ceil_log2(1025), 11u);
}

// T_bin = lg p (S1 + n M1); T_sc(p) = sum_k (S1 + n/2^k M1); T_ring(p) = (p-1)(S2 + n/p M2).
TEST(Bcast, FormulasWithConstantPerByteTimes)
{
	const double S1 = 1.5, S2 = 2.0, M1 = 0.001, M2 = 0.0012, n = 65536;
	const BcastParams params = flat_params(S1, S2, M1, M2);
	EXPECT_DOUBLE_EQ(binomial_bcast_us(params, 16, n), 4 * (S1 + n * M1));
	EXPECT_DOUBLE_EQ(binomial_scatter_us(params, 16, n),
			 4 * S1 + (n / 2 + n / 4 + n / 8 + n / 16) * M1);
	EXPECT_DOUBLE_EQ(ring_allgather_us(params, 16, n / 16), 15 * (S2 + n / 16 * M2));
	EXPECT_DOUBLE_EQ(scatter_ring_bcast_us(params, 16, n),
			 binomial_scatter_us(params, 16, n) + ring_allgather_us(params, 16, n / 16));
	// hybrid-4 on 16 nodes: scatter to 4 leaders, binomial of n/4 in groups of 4, ring of 4.
	EXPECT_DOUBLE_EQ(hybrid_bcast_us(params, 16, n, 4),
			 (2 * S1 + (n / 2 + n / 4) * M1) + 2 * (S1 + n / 4 * M1) + 3 * (S2 + n / 4 * M2));
}

// Hybrid-d spans the two classic algorithms: d = 1 is the binomial tree, d = p scatter+ring.
TEST(Bcast, HybridEndsAreTheClassicAlgorithms)
{
	const BcastParams params = default_bcast_params();
	for (uint64_t p : {2, 8, 64})
		for (double n : {1.0, 4096.0, 1048576.0}) {
			EXPECT_DOUBLE_EQ(hybrid_bcast_us(params, p, n, 1), binomial_bcast_us(params, p, n));
			EXPECT_DOUBLE_EQ(hybrid_bcast_us(params, p, n, p), scatter_ring_bcast_us(params, p, n));
		}
}

// The M, M', M'' refinement: each transfer uses the per-byte time of the chunk it sends.
TEST(Bcast, PerByteTimeFollowsTheChunkSize)
{
	const BcastParams params = default_bcast_params();
	const double n = 1 << 20;
	const auto &t = params.table;
	EXPECT_DOUBLE_EQ(binomial_bcast_us(params, 8, n), 3 * (1.5 + n * t.oneway_us_per_byte(n)));
	EXPECT_DOUBLE_EQ(ring_allgather_us(params, 8, n / 8), 7 * (2.0 + n / 8 * t.twoway_us_per_byte(n / 8)));
	// Small chunks are sent less efficiently than big ones on this curve.
	EXPECT_GT(t.oneway_us_per_byte(n / 64), t.oneway_us_per_byte(n));
}

// The built-in 10 Gbit-class curve: per-byte time 2/1250 us for tiny chunks, 1/1250 us (10 Gbit/s)
// for large ones, two-way 1/1100; 1.5 times the asymptote at the 16 KiB knee.
TEST(Bcast, DefaultCurve)
{
	const BcastParams params = default_bcast_params();
	EXPECT_DOUBLE_EQ(params.s1_us, 1.5);
	EXPECT_DOUBLE_EQ(params.s2_us, 2.0);
	EXPECT_NEAR(params.table.oneway_us_per_byte(1), 2.0 / 1250, 1e-7);
	EXPECT_NEAR(params.table.oneway_us_per_byte(16384), 1.5 / 1250, 1e-12);
	EXPECT_NEAR(params.table.oneway_us_per_byte(1 << 26), 1.0 / 1250, 1e-6);
	EXPECT_NEAR(params.table.twoway_us_per_byte(1 << 26), 1.0 / 1100, 1e-6);
}

// Yamada's "model 3" pattern with S1 = 1.5 us, S2 = 2.0 us and the 10 Gbit-class curve: the best
// d never shrinks when the message (n) or the node count (p) grows, it moves from the binomial tree
// for small n p to many groups for large n p, and scatter+ring over all p is never the best.
// Checked over p = 2 .. 4096 and n = 1 B .. 64 MiB, powers of two.
TEST(Bcast, BestDGrowsWithSizeTimesNodesAndRingNeverWins)
{
	const BcastParams params = default_bcast_params();
	std::vector<uint64_t> nodes, sizes;
	for (uint64_t p = 2; p <= 4096; p *= 2)
		nodes.push_back(p);
	for (uint64_t n = 1; n <= (uint64_t{1} << 26); n *= 2)
		sizes.push_back(n);
	std::vector<std::vector<uint64_t>> best(nodes.size(), std::vector<uint64_t>(sizes.size()));
	for (size_t i = 0; i < nodes.size(); ++i)
		for (size_t j = 0; j < sizes.size(); ++j) {
			const auto estimates = bcast_estimates(params, nodes[i], static_cast<double>(sizes[j]));
			const BcastEstimate choice = best_bcast(estimates);
			best[i][j] = choice.d;
			EXPECT_NE(choice.algorithm, BcastAlgorithm::ScatterRing)
				<< "p=" << nodes[i] << " n=" << sizes[j];
		}
	for (size_t i = 0; i < nodes.size(); ++i)
		for (size_t j = 0; j < sizes.size(); ++j) {
			if (j > 0) {
				EXPECT_GE(best[i][j], best[i][j - 1]) << "p=" << nodes[i] << " n=" << sizes[j];
			}
			if (i > 0) {
				EXPECT_GE(best[i][j], best[i - 1][j]) << "p=" << nodes[i] << " n=" << sizes[j];
			}
		}
	EXPECT_EQ(best.back().front(), 1u) << "tiny messages: binomial";
	EXPECT_GE(best.back().back(), 16u) << "64 MiB to 4096 nodes: many groups";
	EXPECT_EQ(best.front().back(), 1u) << "2 nodes: one transfer is best";
}

// Near-ties (within 1%) go to the smaller d.
TEST(Bcast, NearTiesGoToFewerGroups)
{
	const std::vector<BcastEstimate> estimates{{BcastAlgorithm::Binomial, 1, 1000},
						   {BcastAlgorithm::Hybrid, 2, 995},
						   {BcastAlgorithm::Hybrid, 4, 900},
						   {BcastAlgorithm::Hybrid, 8, 895},
						   {BcastAlgorithm::ScatterRing, 16, 1200}};
	const BcastEstimate best = best_bcast(estimates);
	EXPECT_EQ(best.d, 4u);
	EXPECT_DOUBLE_EQ(best.time_us, 900);
}

// The candidates: binomial (d = 1), hybrid-d for d = 2, 4, ... < p, scatter+ring (d = p).
TEST(Bcast, EstimatesListEveryCandidate)
{
	const auto estimates = bcast_estimates(default_bcast_params(), 64, 1 << 20);
	ASSERT_EQ(estimates.size(), 7u); // binomial, d = 2 .. 32, scatter+ring
	EXPECT_EQ(estimates.front().algorithm, BcastAlgorithm::Binomial);
	EXPECT_EQ(estimates[1].d, 2u);
	EXPECT_EQ(estimates[5].d, 32u);
	EXPECT_EQ(estimates.back().algorithm, BcastAlgorithm::ScatterRing);
	EXPECT_EQ(estimates.back().d, 64u);
	EXPECT_TRUE(bcast_estimates(default_bcast_params(), 1, 1 << 20).empty());
}

} // namespace
} // namespace gp::models
