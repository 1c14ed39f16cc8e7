#include "decision.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "rate_bound.hpp"
#include "units.hpp"

namespace gp::models {

std::string format_time(double us)
{
	char buf[48];
	if (!std::isfinite(us))
		return "inf";
	if (us >= 1000)
		std::snprintf(buf, sizeof(buf), "%.1f ms", us / 1000);
	else
		std::snprintf(buf, sizeof(buf), "%.1f us", us);
	return buf;
}

namespace {

std::string format_rate_bps(double bps)
{
	if (!std::isfinite(bps) || bps >= 1.8e19)
		return "unbounded";
	return format_rate(static_cast<uint64_t>(std::llround(bps)));
}

} // namespace

const char *plan_name(PlanKind plan)
{
	switch (plan) {
	case PlanKind::Nothing:
		return "nothing";
	case PlanKind::Pace:
		return "pace";
	case PlanKind::Rto:
		return "rto";
	case PlanKind::Both:
		return "both";
	}
	return "?";
}

Decision decide(const PhaseShape &phase, const BottleneckShape &bottleneck, const PlogpTable &table,
		const RtoChoices &rto, const DecisionBounds &bounds)
{
	const double m = std::max(0.0, phase.bytes_per_peer);
	const uint64_t flows = std::max<uint64_t>(phase.senders, 1) * std::max<uint64_t>(phase.fanout, 1);
	const double n = static_cast<double>(flows);
	const double f = static_cast<double>(std::max<uint64_t>(phase.fanout, 1));
	const double C = bottleneck.capacity_bps;
	const double q = bottleneck.queue_bytes();
	const bool has_bottleneck = C > 0;

	const double L = table.latency_us();
	const double sending_us = f * table.gap_us(m);
	const double unpaced_rate = bottleneck.sender_link_bps > 0 ? bottleneck.sender_link_bps : kUnboundedRate;
	const double turns = phase.rendezvous_both_ways ? 2.0 : 1.0;

	// The phase through a bottleneck of capacity `c`: C, or C_f for the floored plans.
	struct Through {
		double base_us = 0, rate = 0, paced_us = 0;
		bool unpaced_loss = false, paces = false, paced_loss = false;
	};
	auto through = [&](double c) {
		Through t;
		const double drain_us = has_bottleneck ? 8e6 * n * m / c : 0.0;
		t.base_us = std::max(sending_us, drain_us) + L;
		t.unpaced_loss = has_bottleneck && overflows(c, q, m, flows, unpaced_rate);
		// The model's rate; the configured minimum wins even where it re-admits the loss. The
		// bound plans half of q: the phases of a collective follow each other, and a paced
		// phase ends with its planned fill still queued while the next one starts to fill the
		// queue again (Documentation/models.md, "Back-to-back phases"). The loss verdicts take
		// all of q.
		const double bound = has_bottleneck ? shared_max_rate_bps(c, q / 2, m, flows) : kUnboundedRate;
		t.paces = std::isfinite(bound);
		t.rate = t.paces ? std::max(bound, bounds.min_rate_bps) : 0.0;
		t.paced_loss = t.paces ? overflows(c, q, m, flows, t.rate) : t.unpaced_loss;
		t.paced_us = t.paces ? std::max(t.base_us, turns * 8e6 * m / t.rate + L) : t.base_us;
		return t;
	};
	const Through open = through(C);
	const Through floored_through =
		bottleneck.floored_capacity_bps > 0 && bottleneck.floored_capacity_bps < C ? through(bottleneck.floored_capacity_bps)
											     : open;
	const double base_us = open.base_us, rate = open.rate, paced_us = open.paced_us;
	const bool unpaced_loss = open.unpaced_loss, paces = open.paces, paced_loss = open.paced_loss;
	const double paced_stall = paced_loss ? 1.0 : (paces ? std::clamp(rto.paced_stall_chance, 0.0, 1.0) : 0.0);
	const double floored_stall = floored_through.paced_loss ? 1.0 : (paces ? std::clamp(rto.paced_stall_chance, 0.0, 1.0) : 0.0);
	const double running_cost = rto.floor_running_cost >= 0 ? rto.floor_running_cost : kFloorRunningCost;
	const double floored = paces ? 1.0 + running_cost : 1.0; // charged to paced phases only (decision.hpp)
	const double pace_setup = paces ? bounds.pace_setup_us : 0.0;

	const double floor_us = std::clamp(rto.candidate_floor_us, bounds.rto_min_us, bounds.rto_max_us);

	Decision d;
	auto set = [&](PlanKind kind, bool allowed, double time_us, double rate_bps, double rto_us, bool loss) {
		d.plans[static_cast<size_t>(kind)] = PlanPrediction{kind, allowed, time_us, rate_bps, rto_us, loss};
	};
	set(PlanKind::Nothing, true, base_us + (unpaced_loss ? rto.stock_rto_us : 0.0), 0.0, rto.stock_rto_us,
	    unpaced_loss);
	set(PlanKind::Rto, bounds.rto_allowed,
	    floored_through.base_us + (floored_through.unpaced_loss ? floor_us : 0.0) + bounds.rto_setup_us, 0.0,
	    floor_us, floored_through.unpaced_loss);
	set(PlanKind::Pace, bounds.pacing_allowed, paced_us + paced_stall * rto.stock_rto_us + pace_setup, rate,
	    rto.stock_rto_us, paced_loss);
	set(PlanKind::Both, bounds.pacing_allowed && bounds.rto_allowed,
	    floored_through.paced_us * floored + floored_stall * floor_us + pace_setup + bounds.rto_setup_us,
	    floored_through.rate, floor_us, floored_through.paced_loss);

	// Whether to pace is decided without the measured stalls: they only say whether a paced phase
	// takes the floor too. (The floor alone's prediction counts one loss per phase, PlogP-BR's
	// E_q; a long unpaced phase pays many, so a few stalls must not trade pacing for it.)
	// Preference on ties: the plan that changes less.
	auto without_stalls = [&](PlanKind kind) {
		const PlanPrediction &p = d.prediction(kind);
		if (p.loss_expected || (kind != PlanKind::Pace && kind != PlanKind::Both))
			return p.time_us;
		return p.time_us - (kind == PlanKind::Both ? floored_stall : paced_stall) * p.rto_us;
	};
	d.best = PlanKind::Nothing;
	for (PlanKind kind : kAllPlans) {
		if (d.prediction(kind).allowed && without_stalls(kind) < without_stalls(d.best))
			d.best = kind;
	}
	if (d.best == PlanKind::Pace || d.best == PlanKind::Both) {
		const PlanPrediction &pace = d.prediction(PlanKind::Pace), &both = d.prediction(PlanKind::Both);
		if (pace.allowed && both.allowed)
			d.best = both.time_us < pace.time_us ? PlanKind::Both : PlanKind::Pace;
	}

	std::string text = std::to_string(flows) + " flows x " + std::to_string(static_cast<uint64_t>(m)) + " B" +
			   (phase.rendezvous_both_ways ? " (rendezvous)" : "");
	if (has_bottleneck)
		text += " into " + format_rate_bps(C) + " q=" + std::to_string(static_cast<uint64_t>(q)) + " B: " +
			(unpaced_loss ? "unpaced overflows" : "fits unpaced");
	else
		text += ", no bottleneck";
	text += "; " + std::string(plan_name(d.best));
	if (d.best == PlanKind::Pace || d.best == PlanKind::Both)
		text += " " + format_rate_bps(d.chosen().rate_bps);
	if (d.best == PlanKind::Rto || d.best == PlanKind::Both)
		text += " floor " + format_time(floor_us);
	text += ": " + format_time(d.chosen().time_us) + " (";
	bool first = true;
	for (PlanKind kind : {PlanKind::Nothing, PlanKind::Pace, PlanKind::Rto, PlanKind::Both}) {
		if (kind == d.best)
			continue;
		const PlanPrediction &p = d.prediction(kind);
		text += (first ? "" : ", ") + std::string(plan_name(kind)) + " " +
			(p.allowed ? format_time(p.time_us) : std::string("off"));
		first = false;
	}
	d.explanation = text + ")";
	return d;
}

} // namespace gp::models
