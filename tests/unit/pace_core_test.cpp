// Unit tests of the pacing core: the arithmetic the kernel module runs, checked in userspace.
#include "pace_core.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <vector>

namespace {

constexpr uint64_t kGigabit = 1000ULL * 1000 * 1000;

TEST(WireBytes, MinimumFrameIsPadded)
{
	EXPECT_EQ(gp_wire_bytes(0), 84u);
	EXPECT_EQ(gp_wire_bytes(42), 84u);  // ARP: padded to 64 with FCS
	EXPECT_EQ(gp_wire_bytes(60), 84u);
	EXPECT_EQ(gp_wire_bytes(61), 85u);
}

TEST(WireBytes, FullFrameCosts1538)
{
	// 1514-byte frame + FCS 4 + preamble 8 + IPG 12: the paper's 1526 + 12.
	EXPECT_EQ(gp_wire_bytes(1514), 1538u);
	EXPECT_EQ(gp_wire_bytes(9014), 9038u);
}

TEST(WireBytes, GsoPacketCountsEverySegment)
{
	// 44 segments of 1514 bytes: the qdisc length counts all headers already.
	EXPECT_EQ(gp_wire_bytes_gso(44 * 1514, 44), 44u * 1538u);
}

TEST(GapPlan, BelowMinimumIsCarried)
{
	EXPECT_EQ(gp_gap_piece(0), 0u);
	EXPECT_EQ(gp_gap_piece(83), 0u);
	EXPECT_EQ(gp_gap_piece(84), 84u);
	EXPECT_EQ(gp_gap_frame_len(84), 60u);
	EXPECT_EQ(gp_gap_frame_len(1538), 1514u);
}

TEST(GapPlan, PiecesSumExactlyAndStayInRange)
{
	for (uint64_t deficit = 84; deficit < 20000; ++deficit) {
		uint64_t left = deficit;
		int pieces = 0;
		while (left >= GP_GAP_WIRE_MIN) {
			const uint32_t piece = gp_gap_piece(left);
			ASSERT_GE(piece, GP_GAP_WIRE_MIN) << "deficit " << deficit;
			ASSERT_LE(piece, GP_GAP_WIRE_MAX) << "deficit " << deficit;
			left -= piece;
			++pieces;
		}
		ASSERT_EQ(left, 0u) << "deficit " << deficit << " left a remainder";
		// never more pieces than needed plus one balancing piece
		ASSERT_LE(pieces, static_cast<int>((deficit + GP_GAP_WIRE_MAX - 1) / GP_GAP_WIRE_MAX) + 1);
	}
}

TEST(GapPlan, BalancesTheLastTwoPieces)
{
	// 1600 cannot be 1538 + 62: it must be 1516 + 84.
	EXPECT_EQ(gp_gap_piece(1600), 1516u);
	EXPECT_EQ(gp_gap_piece(1600 - 1516), 84u);
}

TEST(FlowClock, IntervalIsWireTimesLinkOverRate)
{
	gp_flow_clock c{1000, 0};
	gp_flow_charge(&c, 1000, 1538, kGigabit, kGigabit / 10);
	EXPECT_EQ(c.next, 1000u + 15380u);
	EXPECT_EQ(c.rem, 0u);
}

TEST(FlowClock, RemainderMakesTheLongRunExact)
{
	// 1 Gbit/s link, 333 Mbit/s flow: 1538 * 1e9 / 333e6 = 4618.618... byte times.
	const uint64_t rate = 333ULL * 1000 * 1000;
	gp_flow_clock c{0, 0};
	const int frames = 333000;
	for (int i = 0; i < frames; ++i)
		gp_flow_charge(&c, c.next, 1538, kGigabit, rate);
	// exact: frames * 1538 * 1e9 / 333e6 = 1538e6 byte times
	EXPECT_EQ(c.next, 1538ULL * 1000 * 1000);
	EXPECT_EQ(c.rem, 0u);
}

TEST(FlowClock, WakeForgetsIdleTime)
{
	gp_flow_clock c{500, 7};
	gp_flow_wake(&c, 10000);
	EXPECT_EQ(c.next, 10000u);
	EXPECT_EQ(c.rem, 0u);
	gp_flow_clock ahead{20000, 7};
	gp_flow_wake(&ahead, 10000);  // still owes its interval: keeps it
	EXPECT_EQ(ahead.next, 20000u);
	EXPECT_EQ(ahead.rem, 7u);
}

TEST(FlowClock, CatchUpIsBounded)
{
	gp_flow_clock c{0, 0};
	const uint64_t now = 10ULL * GP_MAX_LAG;
	gp_flow_charge(&c, now, 1538, kGigabit, kGigabit / 2);
	EXPECT_EQ(c.next, now - GP_MAX_LAG + 3076);
}

TEST(FlowClock, ComparisonsSurviveWrapAround)
{
	const uint64_t near_end = UINT64_MAX - 100;
	EXPECT_TRUE(gp_before(near_end, near_end + 200));  // wraps past zero
	EXPECT_EQ(gp_until(near_end, near_end + 200), 200u);
	gp_flow_clock c{near_end, 0};
	gp_flow_charge(&c, near_end, 1538, kGigabit, kGigabit / 10);
	EXPECT_EQ(c.next, near_end + 15380);  // modulo 2^64
}

TEST(Choose, IdleWhenNothingQueued)
{
	gp_wire w{};
	EXPECT_EQ(gp_choose(&w, false, false, 0).verdict, GP_IDLE);
}

TEST(Choose, IfgTailIsSentWithNothingQueued)
{
	gp_wire w{};
	w.ifg_extra = 100 - GP_IPG_BYTES;
	gp_wire_sent_data(&w, 1538, false, false);
	auto c = gp_choose(&w, false, false, 0);
	EXPECT_EQ(c.verdict, GP_SEND_GAP);
	EXPECT_EQ(c.gap_wire, 88u);
	gp_wire_sent_gap(&w, c.gap_wire);
	EXPECT_EQ(gp_choose(&w, false, false, 0).verdict, GP_IDLE);
}

TEST(Choose, TailBelowOneGapFrameIsCarriedNotSent)
{
	gp_wire w{};
	w.ifg_extra = 50 - GP_IPG_BYTES;  // 38 byte times: no gap frame is that short
	gp_wire_sent_data(&w, 1538, false, false);
	EXPECT_EQ(gp_choose(&w, false, false, 0).verdict, GP_IDLE);
	EXPECT_EQ(gp_choose(&w, true, false, 0).verdict, GP_SEND_UNPACED);  // sent early, carried
}

TEST(Choose, UnpacedGoesAtOnceWithStandardGap)
{
	gp_wire w{};
	EXPECT_EQ(gp_choose(&w, true, false, 0).verdict, GP_SEND_UNPACED);
}

TEST(Choose, GapFillsUpToThePacedDeadline)
{
	gp_wire w{};
	w.now = 1000;
	auto c = gp_choose(&w, false, true, 1000 + 500);
	EXPECT_EQ(c.verdict, GP_SEND_GAP);
	EXPECT_EQ(c.gap_wire, 500u);
	c = gp_choose(&w, false, true, 1000 + 83);  // too close for a gap: send early
	EXPECT_EQ(c.verdict, GP_SEND_PACED);
}

TEST(Choose, UnpacedFillsTheWaitInsteadOfGaps)
{
	gp_wire w{};
	auto c = gp_choose(&w, true, true, 5000);
	EXPECT_EQ(c.verdict, GP_SEND_UNPACED);
	EXPECT_FALSE(c.contended);
}

TEST(Choose, IfgDelaysEveryDataFrame)
{
	gp_wire w{};
	w.ifg_extra = 500 - GP_IPG_BYTES;
	gp_wire_sent_data(&w, 1538, false, false);
	auto c = gp_choose(&w, true, false, 0);
	EXPECT_EQ(c.verdict, GP_SEND_GAP);
	EXPECT_EQ(c.gap_wire, 488u);
}

// ---------------------------------------------------------------------------
// A simulated qdisc: backlogged flows of fixed-size frames, run through the
// core exactly as the module does, recording what goes on the wire.

struct SimFlow {
	uint64_t rate;		// 0 = unpaced
	uint32_t frame_len;	// bytes without FCS
	gp_flow_clock clock{0, 0};
	uint64_t wire_sent = 0;
	uint64_t frames_sent = 0;
};

struct SimResult {
	uint64_t total_wire = 0;
	uint64_t first_start = 0;	// wire time at the first frame of flow 0
	uint64_t last_start = 0;	// wire time at the last frame of flow 0
	uint64_t measured_wire = 0;	// flow 0's wire bytes in [first_start, last_start)
	uint64_t gap_wire = 0;
	uint64_t gap_frames = 0;
	std::vector<uint64_t> gaps_between_data;  // gap wire bytes between consecutive data frames
};

// Runs until flow 0 has sent `frames` + 1 frames; rates are measured start to start
// over its first `frames` frames, so no partial interval biases them.
SimResult simulate(std::vector<SimFlow> &flows, uint64_t link, uint32_t ifg, int frames)
{
	gp_wire w{};
	w.ifg_extra = ifg - GP_IPG_BYTES;
	SimResult r;
	uint64_t gap_run = 0;
	bool any_data = false;
	const size_t unpaced = flows.size();
	for (size_t i = 0; i < flows.size(); ++i)
		if (!flows[i].rate)
			const_cast<size_t &>(unpaced) = i;
	for (long step = 0; step < 100000000L; ++step) {
		// earliest paced flow
		SimFlow *lead = nullptr;
		for (auto &f : flows)
			if (f.rate && (!lead || gp_before(f.clock.next, lead->clock.next)))
				lead = &f;
		const bool have_unpaced = unpaced < flows.size();
		const gp_choice c = gp_choose(&w, have_unpaced, lead != nullptr, lead ? lead->clock.next : 0);
		if (c.verdict == GP_SEND_GAP) {
			EXPECT_GE(c.gap_wire, GP_GAP_WIRE_MIN);
			EXPECT_LE(c.gap_wire, GP_GAP_WIRE_MAX);
			gp_wire_sent_gap(&w, c.gap_wire);
			r.gap_wire += c.gap_wire;
			r.total_wire += c.gap_wire;
			++r.gap_frames;
			gap_run += c.gap_wire;
			continue;
		}
		SimFlow *f = c.verdict == GP_SEND_PACED ? lead : &flows[unpaced];
		const uint32_t wire = gp_wire_bytes(f->frame_len);
		if (f->rate)
			gp_flow_charge(&f->clock, w.now, wire, link, f->rate);
		gp_wire_sent_data(&w, wire, f->rate != 0, c.contended);
		if (f == &flows[0]) {
			if (f->frames_sent == 0)
				r.first_start = r.total_wire;
			r.last_start = r.total_wire;
			if (f->frames_sent == static_cast<uint64_t>(frames))
				break;
			r.measured_wire += wire;
		}
		f->wire_sent += wire;
		++f->frames_sent;
		r.total_wire += wire;
		if (any_data)
			r.gaps_between_data.push_back(gap_run);
		any_data = true;
		gap_run = 0;
	}
	return r;
}

// Flow 0's rate, start to start.
double achieved0(const SimResult &r, uint64_t link)
{
	return static_cast<double>(r.measured_wire) / static_cast<double>(r.last_start - r.first_start) *
	       static_cast<double>(link);
}

double achieved(const SimFlow &f, const SimResult &r, uint64_t link)
{
	return static_cast<double>(f.wire_sent) / static_cast<double>(r.total_wire) * static_cast<double>(link);
}

class SingleFlowRate : public ::testing::TestWithParam<int> {};

TEST_P(SingleFlowRate, AchievesItsRateExactly)
{
	const uint64_t link = kGigabit;
	const uint64_t rate = link * static_cast<uint64_t>(GetParam()) / 100;
	std::vector<SimFlow> flows{{rate, 1514}};
	const SimResult r = simulate(flows, link, GP_IPG_BYTES, 2000);
	// 2000 frames: the only error is the carried remainder (< one minimum gap) of the last gap.
	const double err = achieved0(r, link) / static_cast<double>(rate) - 1.0;
	EXPECT_LT(std::abs(err), 1e-6) << "rate " << GetParam() << "%";
	for (uint64_t gap : r.gaps_between_data) {
		const double planned = 1538.0 * 100.0 / GetParam() - 1538.0;
		EXPECT_LT(std::abs(static_cast<double>(gap) - planned), GP_GAP_WIRE_MIN);
	}
}

INSTANTIATE_TEST_SUITE_P(Percent, SingleFlowRate, ::testing::Values(1, 10, 25, 33, 50, 90, 97));

TEST(Simulation, OddRateOnTenGigabitWithSmallFrames)
{
	const uint64_t link = 10 * kGigabit;
	const uint64_t rate = 1234567891ULL;
	std::vector<SimFlow> flows{{rate, 200}};
	const SimResult r = simulate(flows, link, GP_IPG_BYTES, 100000);
	EXPECT_NEAR(achieved0(r, link) / static_cast<double>(rate), 1.0, 1e-6);
}

TEST(Simulation, IfgModeFollowsTheLaw)
{
	for (uint32_t ifg : {12u, 50u, 100u, 500u, 1500u, 5000u}) {
		// A single unpaced flow: stop after 5000 frames.
		gp_wire w{};
		w.ifg_extra = ifg - GP_IPG_BYTES;
		// measured from the first data frame to the start of the 5001st
		uint64_t data_wire = 0, all_wire = 0;
		int sent = 0;
		for (;;) {
			const gp_choice c = gp_choose(&w, true, false, 0);
			if (c.verdict == GP_SEND_GAP) {
				gp_wire_sent_gap(&w, c.gap_wire);
				all_wire += c.gap_wire;
				continue;
			}
			ASSERT_EQ(c.verdict, GP_SEND_UNPACED);
			if (sent == 5000)
				break;
			gp_wire_sent_data(&w, 1538, false, false);
			data_wire += 1538;
			all_wire += 1538;
			++sent;
		}
		// law: 1526 / (1526 + ifg) of the wire carries data frames
		const double expected = 1538.0 / (1526.0 + ifg);
		// the only error left is the carried remainder (< 84 byte times) over 5000 gaps
		EXPECT_NEAR(static_cast<double>(data_wire) / static_cast<double>(all_wire), expected,
			    expected * 84.0 / (5000.0 * 1538.0))
			<< "ifg " << ifg;
	}
}

TEST(Simulation, TwoPacedFlowsAndUnpacedShareTheWire)
{
	const uint64_t link = kGigabit;
	std::vector<SimFlow> flows{{link / 4, 1514}, {link / 10, 1514}, {0, 1514}};
	const SimResult r = simulate(flows, link, GP_IPG_BYTES, 5000);
	EXPECT_NEAR(achieved0(r, link) / (link / 4), 1.0, 1e-4);
	EXPECT_NEAR(achieved(flows[1], r, link) / (link / 10), 1.0, 1e-3);
	// unpaced takes the rest: no gap frames needed at all
	EXPECT_EQ(r.gap_frames, 0u);
	EXPECT_NEAR(achieved(flows[2], r, link) / link, 0.65, 1e-3);
}

TEST(Simulation, OvercommittedPacedFlowsLeaveUnpacedItsShare)
{
	const uint64_t link = kGigabit;
	std::vector<SimFlow> flows{{link, 1514}, {link / 2, 1514}, {0, 1514}};
	const SimResult r = simulate(flows, link, GP_IPG_BYTES, 20000);
	const double unpaced_share = achieved(flows[2], r, link) / static_cast<double>(link);
	EXPECT_GE(unpaced_share, 1.0 / GP_UNPACED_SHARE - 0.01);
}

} // namespace
