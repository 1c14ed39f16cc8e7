// The loss-free rate through a buffered bottleneck: Ooi et al. (ATM cluster) and its k-sender
// generalisation (Documentation/models.md, "Rate bound").
#include <gtest/gtest.h>

#include <cmath>

#include "rate_bound.hpp"

namespace gp::models {
namespace {

constexpr double kKiB = 1024;	// the paper's buffer sizes: binary
constexpr double kKB = 1000;	// the paper's message sizes: decimal
constexpr double kMB = 1000 * kKB;

long mbit(double bps)
{
	return std::lround(bps / 1e6);
}

// Ooi's table, S <= R / (1 - B/M) rounded to whole Mbit/s:
//   R =  52 Mbit/s, B =  64 KB: 60 at M = 500 KB, 53 at M = 5 MB
//   R = 101 Mbit/s, B = 128 KB: 137 at 500 KB (above the 135.6 Mbit/s link), 104 at 5 MB
// Reproduced with B in KiB, M in decimal kB/MB, and rounding to the nearest Mbit/s (exact
// values 59.84, 52.69, 136.88, 103.72: ceiling would round the same, truncation would not).
TEST(RateBound, ReproducesOoisTable)
{
	EXPECT_EQ(mbit(ooi_max_rate_bps(52e6, 64 * kKiB, 500 * kKB)), 60);
	EXPECT_EQ(mbit(ooi_max_rate_bps(52e6, 64 * kKiB, 5 * kMB)), 53);
	EXPECT_EQ(mbit(ooi_max_rate_bps(101e6, 128 * kKiB, 500 * kKB)), 137);
	EXPECT_EQ(mbit(ooi_max_rate_bps(101e6, 128 * kKiB, 5 * kMB)), 104);
	// The 137 cell is above the link: a sender cannot exceed 135.6 Mbit/s anyway.
	EXPECT_DOUBLE_EQ(std::min(ooi_max_rate_bps(101e6, 128 * kKiB, 500 * kKB), 135.6e6), 135.6e6);
}

// Only that convention gives the 137 cell: B/M = 0.256 with both in the same unit gives 135.75.
TEST(RateBound, OtherKilobyteConventionsMissTheTable)
{
	EXPECT_EQ(mbit(ooi_max_rate_bps(101e6, 128 * kKB, 500 * kKB)), 136);	  // both decimal
	EXPECT_EQ(mbit(ooi_max_rate_bps(101e6, 128 * kKiB, 500 * kKiB)), 136);	  // both binary
	EXPECT_EQ(mbit(ooi_max_rate_bps(52e6, 64 * kKB, 500 * kKiB)), 59);	  // the other way round
}

// M <= B: the buffer holds the whole message, no rate is too fast.
TEST(RateBound, UnboundedWhenTheMessageFitsTheBuffer)
{
	EXPECT_TRUE(std::isinf(ooi_max_rate_bps(52e6, 64 * kKiB, 64 * kKiB)));
	EXPECT_TRUE(std::isinf(shared_max_rate_bps(200e6, 60000, 15000, 4)));	// k M = q
	EXPECT_TRUE(std::isinf(shared_max_rate_bps(200e6, 60000, 1 << 20, 0)));
}

// S_k = C M / (k M - q); with k = 1 it is Ooi's R / (1 - B/M).
TEST(RateBound, SharedBoundGeneralisesOoi)
{
	EXPECT_DOUBLE_EQ(shared_max_rate_bps(52e6, 64 * kKiB, 500 * kKB, 1), ooi_max_rate_bps(52e6, 64 * kKiB, 500 * kKB));
	const double C = 200e6, q = 60000, M = 262144;
	for (uint64_t k = 1; k <= 64; k *= 2)
		EXPECT_DOUBLE_EQ(shared_max_rate_bps(C, q, M, k), C * M / (k * M - q)) << k;
}

// The derivation: at S = bound the backlog (k S - C) M / S equals q; a little faster overflows,
// a little slower does not. overflows() must agree with that at both sides.
TEST(RateBound, BoundIsExactlyWhereTheQueueFills)
{
	const double C = 200e6, q = 60000, M = 262144;
	for (uint64_t k : {1, 3, 12}) {
		const double S = shared_max_rate_bps(C, q, M, k);
		EXPECT_NEAR((k * S - C) * M / S, q, q * 1e-9) << k;
		EXPECT_FALSE(overflows(C, q, M, k, S)) << k;
		EXPECT_FALSE(overflows(C, q, M, k, S * (1 - 1e-6))) << k;
		EXPECT_TRUE(overflows(C, q, M, k, S * (1 + 1e-6))) << k;
	}
	// Unpaced (as fast as possible): the burst k M against q.
	EXPECT_TRUE(overflows(C, q, 20000, 4, kUnboundedRate));
	EXPECT_FALSE(overflows(C, q, 15000, 4, kUnboundedRate));
}

// T(S) = L + max(8 M / S, 8 k M / C) + [overflows] T_RTO.
TEST(RateBound, PacedPhaseTime)
{
	const double C = 200e6, q = 60000, M = 262144, L = 45, rto = 200000;
	const uint64_t k = 4;
	const double S = shared_max_rate_bps(C, q, M, k);
	const double drain_us = 8e6 * k * M / C;
	EXPECT_DOUBLE_EQ(paced_phase_us(M, S, k, C, q, L, rto), L + std::max(8e6 * M / S, drain_us));
	// Paced below the fair share the senders are the limit, not the bottleneck.
	EXPECT_DOUBLE_EQ(paced_phase_us(M, C / 8, k, C, q, L, rto), L + 8e6 * M / (C / 8));
	// Too fast: the tail loss costs one RTO.
	EXPECT_DOUBLE_EQ(paced_phase_us(M, 2 * S, k, C, q, L, rto), L + drain_us + rto);
	EXPECT_DOUBLE_EQ(paced_phase_us(M, kUnboundedRate, k, C, q, L, rto), L + drain_us + rto);
}

} // namespace
} // namespace gp::models
