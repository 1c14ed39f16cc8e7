#include "plan_learner.hpp"

#include <algorithm>
#include <cmath>

namespace gp::models {
namespace {

size_t index(PlanKind plan) { return static_cast<size_t>(plan); }

constexpr PlanKind kPlans[] = {PlanKind::Nothing, PlanKind::Rto, PlanKind::Pace, PlanKind::Both};

} // namespace

const char *choice_reason_name(ChoiceReason why)
{
	switch (why) {
	case ChoiceReason::Model:
		return "model";
	case ChoiceReason::Measured:
		return "measured";
	case ChoiceReason::Exploring:
		return "exploring";
	}
	return "?";
}

PlanLearner::PlanLearner(size_t max_keys, double alpha)
	: max_keys_(std::max<size_t>(max_keys, 1)), alpha_(std::isfinite(alpha) ? std::clamp(alpha, 1e-6, 1.0) : 0.2)
{
}

PlanLearner::Entry &PlanLearner::entry(const CalibrationKey &key)
{
	auto it = entries_.find(key);
	if (it == entries_.end()) {
		if (entries_.size() >= max_keys_) {
			auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto &a, const auto &b) {
				return a.second.last_use < b.second.last_use;
			});
			entries_.erase(oldest);
		}
		it = entries_.emplace(key, Entry{}).first;
	}
	it->second.last_use = ++clock_;
	return it->second;
}

PlanChoice PlanLearner::choose(const CalibrationKey &key, PlanKind model_choice,
			       const std::array<PlanCandidate, 4> &candidates)
{
	Entry &e = entry(key);
	const uint64_t phase = ++e.phases;
	const PlanOutcome &model = e.outcomes[index(model_choice)];
	if (model.samples < kMinSamples)
		return {model_choice, ChoiceReason::Model};

	PlanChoice current{model_choice, ChoiceReason::Model};
	double best_mean = model.mean_us * (1.0 - kSwitchMargin);
	for (PlanKind plan : kPlans) {
		const PlanOutcome &o = e.outcomes[index(plan)];
		if (plan == model_choice || !candidates[index(plan)].allowed || o.samples < kMinSamples)
			continue;
		if (o.mean_us < best_mean) {
			best_mean = o.mean_us;
			current = {plan, ChoiceReason::Measured};
		}
	}

	if (phase % kExploreEvery == 0) {
		const double bound = kExploreFactor * candidates[index(current.plan)].predicted_us;
		std::optional<PlanKind> explore;
		for (PlanKind plan : kPlans) {
			const PlanCandidate &c = candidates[index(plan)];
			if (plan == current.plan || !c.allowed || e.outcomes[index(plan)].samples >= kMinSamples ||
			    !(c.predicted_us <= bound))
				continue;
			if (!explore || c.predicted_us < candidates[index(*explore)].predicted_us)
				explore = plan;
		}
		if (explore)
			return {*explore, ChoiceReason::Exploring};
	}
	return current;
}

bool PlanLearner::record(const CalibrationKey &key, PlanKind plan, double measured_us)
{
	if (!std::isfinite(measured_us) || measured_us <= 0)
		return false;
	PlanOutcome &o = entry(key).outcomes[index(plan)];
	o.mean_us = o.samples == 0 ? measured_us : o.mean_us + alpha_ * (measured_us - o.mean_us);
	++o.samples;
	return true;
}

std::optional<std::array<PlanOutcome, 4>> PlanLearner::outcomes(const CalibrationKey &key) const
{
	auto it = entries_.find(key);
	if (it == entries_.end())
		return std::nullopt;
	return it->second.outcomes;
}

} // namespace gp::models
