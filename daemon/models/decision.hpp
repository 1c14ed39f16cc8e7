// Decision support: which remedy a phase should get (Documentation/models.md, "Decision").
//
// For one phase the planner compares four plans by their predicted phase time:
//   nothing  the phase as the application sends it;
//   pace     every connection into the bottleneck paced at the rate bound (rate_bound.hpp);
//   rto      the connections' RTO floored at the candidate floor (latency_fluctuation.hpp);
//   both     pace and rto.
// Model (n = k f connections converge on the bottleneck, each with m bytes):
//   base      = max(f g(m), 8 n m / C) + L                     PlogP, bottleneck-limited
//   paced     = max(f g(m), r 8 m / S, 8 n m / C) + L          r = 2 for rendezvous messages on
//                                                              connections with data both ways, else 1
//   loss      = overflows(C, q, m, n, rate)                    (rate: S, or the senders' link rate
//                                                              when unpaced; rate_bound.hpp)
//   T(plan)   = (paced or base) + P(stall) T_RTO(plan) + setup(plan), and T(both) also pays
//               kFloorRunningCost x paced
// The floored plans (rto, both) take C, S and the loss test from the floored capacity C_f where
// one is given (BottleneckShape::floored_capacity_bps): a floor makes the receivers acknowledge
// every segment, and with data both ways those ACKs share the bottleneck with the data.
// with T_RTO = the stock RTO minimum, or the candidate floor clamped to [rto_min, rto_max]. With
// unpaced senders much faster than C the loss test is PlogP-BR's E_q: q < n m. P(stall) is 1 where
// the test says overflow, 0 for an unpaced burst it says fits, and the measured stall chance of
// the key's paced phases for a paced phase it says fits (RtoChoices::paced_stall_chance): the
// rate bound lets the queue fill exactly, so timing the model does not see (flows of the phase
// before, packets that reach the switch in batches) can still overflow it, and a slowed flow can
// wait on the delayed-ACK ceiling, which the floor lowers with the RTO. The measured stalls only
// choose between pace and both: whether to pace is decided as if there were none.
// Configuration bounds always win: the rate is never below min_rate, the floor never outside
// [rto_min, rto_max], and a remedy switched off is never chosen. Ties go to the plan that changes
// less: nothing, then rto, then pace, then both.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "plogp.hpp"

namespace gp::models {

enum class PlanKind { Nothing, Pace, Rto, Both };
// Every plan, in the order ties prefer: the one that changes less first.
inline constexpr PlanKind kAllPlans[] = {PlanKind::Nothing, PlanKind::Rto, PlanKind::Pace, PlanKind::Both};
const char *plan_name(PlanKind plan); // "nothing", "pace", "rto", "both"
std::string format_time(double us);    // "2.7 ms", "850.0 us", "inf"

struct PhaseShape {
	uint32_t kind = 0;		// the hint's collective kind (GAPPACE_HINT_KIND_*), for the text only
	uint64_t processes = 0;		// P
	double bytes_per_peer = 0;	// m
	uint64_t senders = 1;		// k: processes sending into the bottleneck at once
	uint64_t fanout = 1;		// f: connections one sender drives into it at once
	// Each message waits for its receiver's clear-to-send, and the connections carry data both
	// ways (a symmetric collective). Paced, the clear-to-send queues behind the receiver's own
	// paced data to the sender, so the two directions of a connection take turns.
	bool rendezvous_both_ways = false;
};

struct BottleneckShape {
	double capacity_bps = 0;	// C
	uint64_t queue_packets = 0;	// q, in frames of `mtu_bytes`
	uint64_t mtu_bytes = 1500;
	double sender_link_bps = 0;	// unpaced sending rate of one connection; 0: much faster than C
	// C while the RTO floor is in place, where it is less (0: the same as C). A floor with
	// quickack (the stock backend's route with `[rto] quickack`) makes receivers acknowledge
	// every segment instead of every other one; where the reverse direction carries data, twice
	// its ACKs share the link with this direction's data. Planning such a floored phase at C
	// overflows the queue by the difference for as long as it lasts (3+5 hosts, 100 Mbit/s, 20
	// packets, 64 KB: 0.64-0.81 of C with 0-19 timeouts per run against 0.91 and none;
	// Documentation/models.md, "ACKs of a floored phase").
	double floored_capacity_bps = 0;
	double queue_bytes() const { return static_cast<double>(queue_packets) * static_cast<double>(mtu_bytes); }
};

struct RtoChoices {
	double stock_rto_us = 200000;	// the kernel's RTO minimum (TCP_RTO_MIN)
	double candidate_floor_us = 0;	// e.g. rto_floor_us(); clamped to the bounds below
	// The chance that a paced phase the rate bound says fits still waits on a 200 ms timer
	// (the planner passes the measured share of such phases that stalled, and never less than
	// 1 %: its kPacedStallChanceFloor).
	double paced_stall_chance = 0;
	// What the floor costs a paced phase while in place, as a share of it (kFloorRunningCost
	// below, unless the config says otherwise).
	double floor_running_cost = -1; // < 0: kFloorRunningCost
};

// What a floor costs while it is in place, as a share of the phase: it lowers the delayed-ACK
// ceiling with the RTO, so receivers acknowledge every segment (twice the ACKs through the
// bottleneck and the hosts), and a lower RTO retransmits sooner when queues delay ACKs.
// Measured on the 4+4 test cluster, gp-alltoall at 1 MB, paced with and without the floor,
// alternated: 0.75 / 0.78 against 0.84 / 0.86 of C (session 7, when floored phases were still
// paced for one ACK per two segments, so part of that was the overflow floored_capacity_bps
// now avoids; not re-measured). It makes a paced phase take the floor only
// where its measured stalls cost more than that. It is not charged to the floor alone: there
// the unpaced burst's losses, which PlogP-BR counts once per phase, are what the floor shortens,
// and long unpaced phases pay many (Open MPI at 4 MB: about 150 timeouts per run, stock).
inline constexpr double kFloorRunningCost = 0.08;

struct DecisionBounds {
	bool pacing_allowed = true;
	bool rto_allowed = true;
	double min_rate_bps = 0;
	double rto_min_us = 0;
	double rto_max_us = 200000;
	// What applying a remedy costs the phase (control-plane latency not hidden by linger);
	// 0 when settings are already in place.
	double pace_setup_us = 0;
	double rto_setup_us = 0;
};

struct PlanPrediction {
	PlanKind plan = PlanKind::Nothing;
	bool allowed = true;
	double time_us = 0;
	double rate_bps = 0;	// per connection; 0: not paced
	double rto_us = 0;	// the RTO a loss would cost under this plan
	bool loss_expected = false;
};

struct Decision {
	std::array<PlanPrediction, 4> plans;	// indexed by PlanKind
	PlanKind best = PlanKind::Nothing;
	std::string explanation;		// one line
	const PlanPrediction &prediction(PlanKind plan) const { return plans[static_cast<size_t>(plan)]; }
	const PlanPrediction &chosen() const { return prediction(best); }
};

Decision decide(const PhaseShape &phase, const BottleneckShape &bottleneck, const PlogpTable &table,
		const RtoChoices &rto, const DecisionBounds &bounds);

} // namespace gp::models
