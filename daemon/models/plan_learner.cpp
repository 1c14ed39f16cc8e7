#include "plan_learner.hpp"

#include <algorithm>
#include <cmath>

namespace gp::models {
namespace {

size_t index(PlanKind plan) { return static_cast<size_t>(plan); }

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

PlanLearner::PlanLearner(size_t max_keys) : max_keys_(std::max<size_t>(max_keys, 1)) {}

double PlanLearner::Window::mean() const
{
	const size_t n = std::min<uint64_t>(samples, kWindow);
	if (!n)
		return 0;
	double sum = 0;
	for (size_t i = 0; i < n; ++i)
		sum += us[i];
	return sum / static_cast<double>(n);
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
	// A current plan the config no longer allows (a reload) gives way to the models' choice.
	if (!e.current || !candidates[index(*e.current)].allowed)
		e.current = model_choice;
	const PlanKind current = *e.current;
	const Window &now = e.windows[index(current)];
	if (!now.full())
		return {current, current == model_choice ? ChoiceReason::Model : ChoiceReason::Measured};

	// Switch to a plan whose full, fresh window beats the current one by the margin.
	PlanKind best = current;
	double best_mean = now.mean() * (1.0 - kSwitchMargin);
	for (PlanKind plan : kAllPlans) {
		const Window &w = e.windows[index(plan)];
		if (plan == current || !candidates[index(plan)].allowed || !w.full() || phase - w.updated > kStaleAfter)
			continue;
		if (w.mean() < best_mean) {
			best_mean = w.mean();
			best = plan;
		}
	}
	e.current = best;

	if (phase % kExploreEvery == 0) {
		const double bound = kExploreFactor * candidates[index(best)].predicted_us;
		std::optional<PlanKind> explore;
		for (PlanKind plan : kAllPlans) {
			const PlanCandidate &c = candidates[index(plan)];
			const Window &w = e.windows[index(plan)];
			const bool known = w.full() && phase - w.updated <= kStaleAfter;
			if (plan == best || !c.allowed || known || !(c.predicted_us <= bound))
				continue;
			if (!explore || c.predicted_us < candidates[index(*explore)].predicted_us)
				explore = plan;
		}
		if (explore) {
			Window &w = e.windows[index(*explore)];
			if (w.full()) // stale: measure it afresh
				w = Window{};
			return {*explore, ChoiceReason::Exploring};
		}
	}
	return {best, best == model_choice ? ChoiceReason::Model : ChoiceReason::Measured};
}

bool PlanLearner::record(const CalibrationKey &key, PlanKind plan, double measured_us)
{
	if (!std::isfinite(measured_us) || measured_us <= 0)
		return false;
	Entry &e = entry(key);
	Window &w = e.windows[index(plan)];
	w.us[w.samples % kWindow] = measured_us;
	++w.samples;
	w.updated = e.phases;
	return true;
}

std::array<PlanOutcome, 4> PlanLearner::outcomes_of(const Entry &e)
{
	std::array<PlanOutcome, 4> out{};
	for (size_t i = 0; i < out.size(); ++i)
		out[i] = PlanOutcome{e.windows[i].samples, e.windows[i].mean()};
	return out;
}

std::optional<std::array<PlanOutcome, 4>> PlanLearner::outcomes(const CalibrationKey &key) const
{
	auto it = entries_.find(key);
	if (it == entries_.end())
		return std::nullopt;
	return outcomes_of(it->second);
}

} // namespace gp::models
