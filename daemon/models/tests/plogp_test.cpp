// PlogP (Kielmann et al. 2000) and PlogP-BR (Nomura & Ishikawa): Documentation/models.md.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "fixtures.hpp"
#include "plogp.hpp"

namespace gp::models {
namespace {

PlogpPoint point(double bytes, double g_us, double m1 = 0)
{
	PlogpPoint p;
	p.bytes = bytes;
	p.g_us = g_us;
	p.os_us = g_us / 2;
	p.m1_us_per_byte = m1;
	p.m2_us_per_byte = 2 * m1;
	return p;
}

// ------------------------------------------------------------------ the table

// Linear in m between neighbouring measured sizes (models.md, "PlogP table").
TEST(PlogpTable, InterpolatesLinearlyBetweenNeighbours)
{
	auto t = PlogpTable::make(10, {point(0, 4), point(1024, 14), point(2048, 34)});
	ASSERT_TRUE(t) << t.error().message;
	EXPECT_DOUBLE_EQ(t->gap_us(0), 4);
	EXPECT_DOUBLE_EQ(t->gap_us(512), 9);
	EXPECT_DOUBLE_EQ(t->gap_us(1024), 14);
	EXPECT_DOUBLE_EQ(t->gap_us(1536), 24);
	EXPECT_DOUBLE_EQ(t->send_overhead_us(1536), 12);
}

// Beyond the largest size: the per-byte slope of the last two points, (34 - 14) / 1024.
TEST(PlogpTable, ExtrapolatesWithTheSlopeOfTheLastTwoPoints)
{
	auto t = PlogpTable::make(10, {point(0, 4), point(1024, 14), point(2048, 34)});
	ASSERT_TRUE(t);
	EXPECT_DOUBLE_EQ(t->gap_us(4096), 34 + 2048 * (20.0 / 1024));
}

// A falling last segment is measurement noise: a bigger message never costs less.
TEST(PlogpTable, NeverExtrapolatesDownwards)
{
	auto t = PlogpTable::make(10, {point(1024, 14), point(2048, 12)});
	ASSERT_TRUE(t);
	EXPECT_DOUBLE_EQ(t->gap_us(1 << 20), 12);
	EXPECT_DOUBLE_EQ(t->gap_us(100), 14); // below the first point: held
}

// One measured size: the nearest (only) value everywhere.
TEST(PlogpTable, SinglePointHoldsEverywhere)
{
	auto t = PlogpTable::make(3, {point(64, 7)});
	ASSERT_TRUE(t);
	EXPECT_DOUBLE_EQ(t->gap_us(0), 7);
	EXPECT_DOUBLE_EQ(t->gap_us(1e9), 7);
}

// Per-byte times skip the 0-byte point (which has none) and are held beyond the largest size.
TEST(PlogpTable, PerByteTimesIgnoreTheZeroPointAndHoldBeyondTheLast)
{
	auto t = PlogpTable::make(3, {point(0, 1, 0), point(1024, 5, 0.004), point(2048, 7, 0.002)});
	ASSERT_TRUE(t);
	EXPECT_DOUBLE_EQ(t->oneway_us_per_byte(10), 0.004);
	EXPECT_DOUBLE_EQ(t->oneway_us_per_byte(1536), 0.003);
	EXPECT_DOUBLE_EQ(t->twoway_us_per_byte(1536), 0.006);
	EXPECT_DOUBLE_EQ(t->oneway_us_per_byte(1 << 30), 0.002);
}

// Non-empty, strictly increasing sizes, finite values >= 0.
TEST(PlogpTable, RefusesWhatCannotBeATable)
{
	EXPECT_FALSE(PlogpTable::make(1, {}));
	EXPECT_FALSE(PlogpTable::make(-1, {point(0, 1)}));
	EXPECT_FALSE(PlogpTable::make(1, {point(0, 1), point(0, 2)}));
	EXPECT_FALSE(PlogpTable::make(1, {point(8, 1), point(4, 2)}));
	EXPECT_FALSE(PlogpTable::make(1, {point(0, -1)}));
	EXPECT_FALSE(PlogpTable::make(1, {point(0, std::numeric_limits<double>::quiet_NaN())}));
	auto bad = PlogpTable::make(1, {point(0, 1), point(0, 2)});
	EXPECT_EQ(bad.error().message, "points[1].bytes: sizes must be strictly increasing");
}

// ------------------------------------------------------------------ PlogP costs

// Kielmann et al.: one message L + g(m); RTT(m) = 2 (L + g(m)); P-1 messages posted at once
// (P-1) g(m) + L; phase by phase (g(m) + L) per phase.
TEST(Plogp, StandardCosts)
{
	const PlogpTable t = test::path_table();
	const double m = 65536, g = test::path_gap_us(m), L = test::kPathLatencyUs;
	EXPECT_DOUBLE_EQ(message_us(t, m), L + g);
	EXPECT_DOUBLE_EQ(round_trip_us(t, m), 2 * (L + g));
	EXPECT_DOUBLE_EQ(posted_at_once_us(t, m, 7), 7 * g + L);
	EXPECT_DOUBLE_EQ(posted_at_once_us(t, m, 0), 0);
	EXPECT_DOUBLE_EQ(phase_by_phase_us(t, m, 7), 7 * (g + L));
}

// ------------------------------------------------------------------ PlogP-BR

// E_q(m, n) = 0 with switch flow control, 1 if q < (n-1) m, else 0.
TEST(PlogpBr, TailLossIndicator)
{
	EXPECT_FALSE(tail_loss_expected(60000, 20000, 4, false)); // (4-1) * 20000 = 60000: fits
	EXPECT_TRUE(tail_loss_expected(59999, 20000, 4, false));
	EXPECT_FALSE(tail_loss_expected(59999, 20000, 4, true)); // PAUSE: the switch never drops
	EXPECT_FALSE(tail_loss_expected(0, 1 << 20, 1, false));	 // nobody else sends
}

// g(m, C) = (T_C / T_Ce) (g(m, C_e) + L) - L.
TEST(PlogpBr, PatternGap)
{
	EXPECT_DOUBLE_EQ(pattern_gap_us(100, 45, 500, 500), 100);	    // same pattern: same gap
	EXPECT_DOUBLE_EQ(pattern_gap_us(100, 45, 1000, 500), 2 * 145 - 45); // twice as slow
}

// T_BR = sum_k g(m, C_k) + L + E_q T_RTO.
TEST(PlogpBr, PhaseTime)
{
	const double gaps[] = {10, 20, 30};
	EXPECT_DOUBLE_EQ(phase_br_us(gaps, 45, false, 200000), 105);
	EXPECT_DOUBLE_EQ(phase_br_us(gaps, 45, true, 200000), 200105);
}

// Alltoall A (all posted at once: (P-1) g + L + E_q T_RTO) against B (phase by phase with a
// rendezvous: (P-1)(g + L)). PlogP alone (E_q forced to 0 by flow control) always prefers A for
// P > 2; PlogP-BR reverses that exactly where E_q(m, P) = 1. Checked over a grid of m and P on the
// 200 Mbit/s path with a 40 x 1500-byte queue and Linux's 200 ms RTO minimum.
TEST(PlogpBr, PostedAtOnceBeatsPhaseByPhaseUnlessTheQueueOverflows)
{
	const PlogpTable t = test::path_table();
	const double q = 40 * 1500, rto = 200000;
	int reversals = 0, wins = 0;
	for (uint64_t P = 3; P <= 64; P *= 2) {
		for (double m = 256; m <= (1 << 22); m *= 4) {
			const double b = alltoall_phase_by_phase_us(t, m, P);
			const double plogp_a = alltoall_posted_at_once_us(t, m, P, q, /*flow control*/ true, rto);
			EXPECT_LT(plogp_a, b) << "PlogP alone must prefer A, P=" << P << " m=" << m;

			const double a = alltoall_posted_at_once_us(t, m, P, q, false, rto);
			if (tail_loss_expected(q, m, P, false)) {
				EXPECT_GT(a, b) << "E_q = 1: B must win, P=" << P << " m=" << m;
				++reversals;
			} else {
				EXPECT_LT(a, b) << "E_q = 0: A must win, P=" << P << " m=" << m;
				++wins;
			}
		}
	}
	// The grid covers both sides of the queue.
	EXPECT_GT(reversals, 0);
	EXPECT_GT(wins, 0);
}

// A - B = E_q T_RTO - (P-2) L: with P = 2 the two coincide without loss.
TEST(PlogpBr, TwoProcessesMakeBothPatternsEqual)
{
	const PlogpTable t = test::path_table();
	EXPECT_DOUBLE_EQ(alltoall_posted_at_once_us(t, 4096, 2, 60000, false, 200000),
			 alltoall_phase_by_phase_us(t, 4096, 2));
}

// q = (delay_full - delay_empty) * link rate / 8: 2410 us at 200 Mbit/s is 60250 bytes.
TEST(PlogpBr, SwitchQueueEstimate)
{
	EXPECT_DOUBLE_EQ(switch_queue_bytes(2500, 90, 200e6), 2410e-6 * 200e6 / 8);
	EXPECT_DOUBLE_EQ(switch_queue_bytes(90, 2500, 200e6), 0); // no queueing seen
	EXPECT_DOUBLE_EQ(switch_queue_bytes(2500, 90, 0), 0);
}

} // namespace
} // namespace gp::models
