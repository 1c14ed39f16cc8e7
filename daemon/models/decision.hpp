// Decision support: which remedy a phase should get (Documentation/models.md, "Decision").
//
// For one phase the planner compares four plans by their predicted phase time:
//   nothing  the phase as the application sends it;
//   pace     every connection into the bottleneck paced at the rate bound (rate_bound.hpp);
//   rto      the connections' RTO floored at the candidate floor (latency_fluctuation.hpp);
//   both     pace and rto.
// Model (n = k f connections converge on the bottleneck, each with m bytes):
//   base      = max(f g(m), 8 n m / C) + L                     PlogP, bottleneck-limited
//   paced     = max(f g(m), 8 m / S, 8 n m / C) + L
//   loss      = overflows(C, q, m, n, rate)                    (rate: S, or the senders' link rate
//                                                              when unpaced; rate_bound.hpp)
//   T(plan)   = (paced or base) + [loss] T_RTO(plan) + setup(plan)
// with T_RTO = the stock RTO minimum, or the candidate floor clamped to [rto_min, rto_max]. With
// unpaced senders much faster than C the loss test is PlogP-BR's E_q: q < n m.
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
};

struct BottleneckShape {
	double capacity_bps = 0;	// C
	uint64_t queue_packets = 0;	// q, in frames of `mtu_bytes`
	uint64_t mtu_bytes = 1500;
	double sender_link_bps = 0;	// unpaced sending rate of one connection; 0: much faster than C
	double queue_bytes() const { return static_cast<double>(queue_packets) * static_cast<double>(mtu_bytes); }
};

struct RtoChoices {
	double stock_rto_us = 200000;	// the kernel's RTO minimum (TCP_RTO_MIN)
	double candidate_floor_us = 0;	// e.g. rto_floor_us(); clamped to the bounds below
};

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
