// Decision support (Documentation/models.md, "Decision"): predicted phase time per plan,
//   T(plan) = (max(f g(m), r 8 m / S, 8 n m / C) + L) (1 + [floored] k) + P(stall) T_RTO(plan) + setup(plan),
// on the 200 Mbit/s path of the parameter file's example with a 40-frame queue.
#include <gtest/gtest.h>

#include <cmath>

#include "decision.hpp"
#include "fixtures.hpp"
#include "rate_bound.hpp"
#include "units.hpp"

namespace gp::models {
namespace {

constexpr double kC = 200e6;
constexpr double kStockRto = 200000, kFloor = 5000;

BottleneckShape bottleneck()
{
	BottleneckShape b;
	b.capacity_bps = kC;
	b.queue_packets = 40;
	b.mtu_bytes = 1500;
	return b;
}

PhaseShape phase(uint64_t senders, uint64_t fanout, double bytes)
{
	PhaseShape p;
	p.kind = 1;
	p.processes = senders + fanout;
	p.senders = senders;
	p.fanout = fanout;
	p.bytes_per_peer = bytes;
	return p;
}

DecisionBounds bounds()
{
	DecisionBounds b;
	b.min_rate_bps = 1e6;
	b.rto_min_us = 1000;
	b.rto_max_us = 200000;
	return b;
}

const RtoChoices kRto{kStockRto, kFloor};

// A burst that fits the queue (3 x 4 KiB < 60000 B): no loss, so no remedy can shorten the phase;
// the model asks for no pacing rate, and "nothing" wins the tie.
TEST(Decision, BurstThatFitsNeedsNothing)
{
	const Decision d = decide(phase(3, 1, 4096), bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_EQ(d.best, PlanKind::Nothing) << d.explanation;
	EXPECT_FALSE(d.prediction(PlanKind::Nothing).loss_expected);
	EXPECT_EQ(d.prediction(PlanKind::Pace).rate_bps, 0);
	EXPECT_DOUBLE_EQ(d.prediction(PlanKind::Rto).time_us, d.prediction(PlanKind::Nothing).time_us);
	// With the control plane's cost of applying a remedy, both remedies are strictly dearer.
	DecisionBounds costly = bounds();
	costly.pace_setup_us = costly.rto_setup_us = 140;
	const Decision c = decide(phase(3, 1, 4096), bottleneck(), test::path_table(), kRto, costly);
	EXPECT_EQ(c.best, PlanKind::Nothing);
	EXPECT_GT(c.prediction(PlanKind::Rto).time_us, c.prediction(PlanKind::Nothing).time_us);
	EXPECT_GE(c.prediction(PlanKind::Pace).time_us, c.prediction(PlanKind::Nothing).time_us);
}

// A large burst (4 senders x 3 connections x 256 KiB) overflows the queue (E_q = 1): pacing at
// S = C m / (n m - q/2) (half of q: the previous phase's planned fill may still be queued)
// removes the loss and wins over both the stock RTO and the floor; the floor on top only adds
// its running cost while no paced phase of the key has stalled.
TEST(Decision, LargeBurstIsPaced)
{
	const double m = 262144;
	const Decision d = decide(phase(4, 3, m), bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_EQ(d.best, PlanKind::Pace) << d.explanation;
	const PlanPrediction &pace = d.prediction(PlanKind::Pace);
	EXPECT_DOUBLE_EQ(pace.rate_bps, shared_max_rate_bps(kC, 60000 / 2, m, 12));
	EXPECT_FALSE(pace.loss_expected);
	EXPECT_TRUE(d.prediction(PlanKind::Nothing).loss_expected);
	// The paced phase is bottleneck-bound: 8 n m / C + L; with the floor, that times 1 + k.
	const double paced = 8e6 * 12 * m / kC + test::kPathLatencyUs;
	EXPECT_NEAR(pace.time_us, paced, 1e-6);
	EXPECT_NEAR(d.prediction(PlanKind::Both).time_us, paced * (1 + kFloorRunningCost), 1e-6);
	EXPECT_LT(pace.time_us, d.prediction(PlanKind::Rto).time_us);
	EXPECT_LT(d.prediction(PlanKind::Rto).time_us, d.prediction(PlanKind::Nothing).time_us);
	EXPECT_NE(d.explanation.find("pace"), std::string::npos);
}

// A floor makes receivers acknowledge every segment: where the reverse direction carries data,
// the floored plans see less of the link for their data (C_f), so "both" paces at the rate
// bound of C_f and takes its drain time, and "rto" drains at C_f too; "pace" and "nothing"
// keep C. Where C_f is not given, or not less than C, every plan sees C.
TEST(Decision, FlooredPlansLeaveRoomForAnAckPerSegment)
{
	const double m = 262144, n = 12;
	BottleneckShape acked = bottleneck();
	const double floored_c = kC / 1.05;
	acked.floored_capacity_bps = floored_c;
	const Decision d = decide(phase(4, 3, m), acked, test::path_table(), kRto, bounds());
	const PlanPrediction &pace = d.prediction(PlanKind::Pace), &both = d.prediction(PlanKind::Both);
	EXPECT_DOUBLE_EQ(pace.rate_bps, shared_max_rate_bps(kC, 60000 / 2, m, 12));
	EXPECT_DOUBLE_EQ(both.rate_bps, shared_max_rate_bps(floored_c, 60000 / 2, m, 12));
	EXPECT_LT(both.rate_bps, pace.rate_bps);
	EXPECT_NEAR(pace.time_us, 8e6 * n * m / kC + test::kPathLatencyUs, 1e-6);
	EXPECT_NEAR(both.time_us, (8e6 * n * m / floored_c + test::kPathLatencyUs) * (1 + kFloorRunningCost), 1e-6);
	EXPECT_NEAR(d.prediction(PlanKind::Rto).time_us, 8e6 * n * m / floored_c + test::kPathLatencyUs + kFloor, 1e-6);
	EXPECT_NE(d.explanation.find(format_rate(static_cast<uint64_t>(std::llround(pace.rate_bps)))), std::string::npos)
		<< d.explanation;

	const Decision plain = decide(phase(4, 3, m), bottleneck(), test::path_table(), kRto, bounds());
	BottleneckShape above = bottleneck();
	above.floored_capacity_bps = 2 * kC;
	const Decision ignored = decide(phase(4, 3, m), above, test::path_table(), kRto, bounds());
	for (PlanKind kind : kAllPlans) {
		EXPECT_DOUBLE_EQ(ignored.prediction(kind).time_us, plain.prediction(kind).time_us) << plan_name(kind);
		EXPECT_DOUBLE_EQ(ignored.prediction(kind).rate_bps, plain.prediction(kind).rate_bps) << plan_name(kind);
	}
	EXPECT_DOUBLE_EQ(plain.prediction(PlanKind::Both).rate_bps, pace.rate_bps);
}

// Paced phases of this kind that stalled (waited on a 200 ms timer) make the floor worth its
// running cost: P(stall) T_stock against P(stall) floor + k paced. Short phases flip at a small
// stall chance, long ones only at a large one; with the floor switched off, pacing stays.
TEST(Decision, StallsOfPacedPhasesBuyTheFloor)
{
	RtoChoices stalls = kRto;
	stalls.paced_stall_chance = 0.1; // Open MPI's paced 16 KB phases: about one in ten
	const Decision short_phase = decide(phase(4, 4, 16384), bottleneck(), test::path_table(), stalls, bounds());
	EXPECT_EQ(short_phase.best, PlanKind::Both) << short_phase.explanation;
	EXPECT_NEAR(short_phase.prediction(PlanKind::Pace).time_us - short_phase.prediction(PlanKind::Both).time_us,
		    0.1 * (kStockRto - kFloor) - kFloorRunningCost * (8e6 * 16 * 16384 / kC + test::kPathLatencyUs), 1e-6);
	const Decision long_phase = decide(phase(4, 4, 4 << 20), bottleneck(), test::path_table(), stalls, bounds());
	// 4 MB: the floor's running cost (8 % of 2.7 s) outweighs 10 % of 200 ms. Stalls never
	// trade pacing for the floor alone (whose one predicted loss would cost less than 20 ms):
	// the phase stays paced.
	EXPECT_EQ(long_phase.best, PlanKind::Pace) << long_phase.explanation;
	EXPECT_GT(long_phase.prediction(PlanKind::Both).time_us, long_phase.prediction(PlanKind::Pace).time_us);
	DecisionBounds off = bounds();
	off.rto_allowed = false;
	EXPECT_EQ(decide(phase(4, 4, 16384), bottleneck(), test::path_table(), stalls, off).best, PlanKind::Pace);
	// A host where the floor costs nothing while in place ([planner] floor_cost = 0): the same
	// stall chance buys it for the 4 MB phase too, and "both" costs exactly the paced time plus
	// the stalls at the floor.
	RtoChoices free_floor = stalls;
	free_floor.floor_running_cost = 0;
	const Decision long_free = decide(phase(4, 4, 4 << 20), bottleneck(), test::path_table(), free_floor, bounds());
	EXPECT_EQ(long_free.best, PlanKind::Both) << long_free.explanation;
	EXPECT_NEAR(long_free.prediction(PlanKind::Both).time_us,
		    8e6 * 16 * (4 << 20) / kC + test::kPathLatencyUs + 0.1 * kFloor, 1e-6);
}

// Rendezvous on connections with data both ways: the clear-to-send of a paced message waits
// behind the receiver's paced data to the sender, so the paced transfer takes 2 x 8 m / S.
// Measured (Open MPI, 4+4 hosts, 1 MB, performance.md): paced phases took 2.1 x the one-way
// prediction, and the floor alone moved the collective at 0.67 of C against 0.44 paced. With
// the turns in the model the floor alone wins where one RTO floor is less than the paced
// transfer's extra time, and pacing stays where the messages go eagerly.
TEST(Decision, RendezvousBothWaysPrefersTheFloorToPacing)
{
	const double m = 1048576;
	PhaseShape eager = phase(4, 4, m);
	const Decision e = decide(eager, bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_EQ(e.best, PlanKind::Pace) << e.explanation;
	PhaseShape rendezvous = eager;
	rendezvous.rendezvous_both_ways = true;
	const Decision r = decide(rendezvous, bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_EQ(r.best, PlanKind::Rto) << r.explanation;
	const double S = r.prediction(PlanKind::Pace).rate_bps;
	EXPECT_NEAR(r.prediction(PlanKind::Pace).time_us,
		    std::max(8e6 * 16 * m / kC, 2 * 8e6 * m / S) + test::kPathLatencyUs, 1e-6);
	// Unpaced plans do not change: the clear-to-send waits behind data that leaves at the
	// rate TCP finds, not at a paced one.
	EXPECT_DOUBLE_EQ(r.prediction(PlanKind::Rto).time_us, e.prediction(PlanKind::Rto).time_us);
	EXPECT_NE(r.explanation.find("rendezvous"), std::string::npos);
}

// Flooring T_RTO shrinks the loss penalty by exactly stock - floor.
TEST(Decision, FlooredRtoShrinksThePenalty)
{
	const Decision d = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_DOUBLE_EQ(d.prediction(PlanKind::Nothing).time_us - d.prediction(PlanKind::Rto).time_us,
			 kStockRto - kFloor);
	EXPECT_DOUBLE_EQ(d.prediction(PlanKind::Rto).rto_us, kFloor);
}

// Configuration bounds win: a minimum rate above the model's rate re-admits the loss, and then
// the floor is what saves time (both < pace).
TEST(Decision, MinimumRateWinsOverTheModel)
{
	DecisionBounds b = bounds();
	b.min_rate_bps = 150e6; // the model asks for about 17 Mbit/s
	const Decision d = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), kRto, b);
	EXPECT_DOUBLE_EQ(d.prediction(PlanKind::Pace).rate_bps, 150e6);
	EXPECT_TRUE(d.prediction(PlanKind::Pace).loss_expected);
	EXPECT_LT(d.prediction(PlanKind::Both).time_us, d.prediction(PlanKind::Pace).time_us);
	EXPECT_TRUE(d.best == PlanKind::Rto || d.best == PlanKind::Both) << d.explanation;
}

// The floor is clamped to [rto_min, rto_max].
TEST(Decision, FloorIsClampedToTheBounds)
{
	DecisionBounds b = bounds();
	b.rto_min_us = 8000;
	const Decision low = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), {kStockRto, 2000}, b);
	EXPECT_DOUBLE_EQ(low.prediction(PlanKind::Rto).rto_us, 8000);
	b.rto_max_us = 100000;
	const Decision high = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), {kStockRto, 1e9}, b);
	EXPECT_DOUBLE_EQ(high.prediction(PlanKind::Rto).rto_us, 100000);
}

// A remedy switched off is never chosen.
TEST(Decision, SwitchedOffRemediesAreNeverChosen)
{
	DecisionBounds b = bounds();
	b.pacing_allowed = false;
	const Decision no_pacing = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), kRto, b);
	EXPECT_EQ(no_pacing.best, PlanKind::Rto) << no_pacing.explanation;
	EXPECT_FALSE(no_pacing.prediction(PlanKind::Both).allowed);
	b.rto_allowed = false;
	const Decision neither = decide(phase(4, 3, 262144), bottleneck(), test::path_table(), kRto, b);
	EXPECT_EQ(neither.best, PlanKind::Nothing);
	EXPECT_NE(neither.explanation.find("pace off"), std::string::npos) << neither.explanation;
}

// Senders no faster than the bottleneck: the unpaced loss test is (k S - C) M / S > q with S = C,
// i.e. (n - 1) m > q, PlogP-BR's E_q with n converging flows.
TEST(Decision, SenderLinkRateEntersTheLossTest)
{
	BottleneckShape b = bottleneck();
	b.sender_link_bps = kC;
	// 4 x 18000 B: 72000 > q unpaced at infinite rate, but (4 - 1) x 18000 = 54000 <= q at S = C.
	const Decision same_speed = decide(phase(4, 1, 18000), b, test::path_table(), kRto, bounds());
	EXPECT_FALSE(same_speed.prediction(PlanKind::Nothing).loss_expected);
	const Decision fast = decide(phase(4, 1, 18000), bottleneck(), test::path_table(), kRto, bounds());
	EXPECT_TRUE(fast.prediction(PlanKind::Nothing).loss_expected);
}

// Without a bottleneck there is no queue to overflow: T = f g(m) + L.
TEST(Decision, NoBottleneckNoRemedy)
{
	const Decision d = decide(phase(8, 8, 1 << 20), BottleneckShape{}, test::path_table(), kRto, bounds());
	EXPECT_EQ(d.best, PlanKind::Nothing);
	EXPECT_FALSE(d.prediction(PlanKind::Nothing).loss_expected);
	// f g(m) + L: the sender's own gap is all that limits it.
	EXPECT_DOUBLE_EQ(d.prediction(PlanKind::Nothing).time_us, 8 * test::path_gap_us(1 << 20) + test::kPathLatencyUs);
}

} // namespace
} // namespace gp::models
