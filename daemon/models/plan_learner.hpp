// Choosing a phase's plan from measured phase times (Documentation/models.md, "Learning the
// plan").
//
// Calibration (calibration.hpp) corrects the size of a prediction; it cannot correct the models'
// verdict on loss. Where the models predict a tail loss that does not happen (an MPI library
// whose flows do not all start at once, say), every plan but pacing carries a predicted RTO, and
// pacing is chosen although running unpaced would be faster. The learner keeps, per key (kind,
// size class, P) and per plan, the last kWindow measured phase times, and decides:
//   1. The key's current plan starts as the models' choice and runs until it has a full window.
//   2. Exploration: every kExploreEvery-th phase of the key, an allowed plan without a full
//      window (or whose window is older than kStaleAfter phases of the key) runs instead, if its
//      predicted time is within kExploreFactor of the current plan's. That bound keeps plans
//      predicted to pay a stock 200 ms RTO out, and lets in the RTO floor, whose predicted loss
//      costs a few milliseconds: the safe way to find out that the loss does not happen.
//   3. The current plan changes to another with a full window only if that window's mean is
//      below (1 - kSwitchMargin) times the current plan's.
// Window means, not medians: a plan is judged by everything it costs, RTOs included. Windows
// rather than running averages: a plan no longer run keeps no stale verdict beyond kStaleAfter.
// At most max_keys keys are kept (least recently used evicted). Pure: no I/O, no clock.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>

#include "calibration.hpp"
#include "decision.hpp"

namespace gp::models {

struct PlanOutcome {
	uint64_t samples = 0;	// phases measured with this plan, ever
	double mean_us = 0;	// mean of the last kWindow of them (or of all, while fewer)
};

// One plan as the learner sees it: whether the config allows it, and the models' predicted
// phase time (the largest over the bottlenecks the phase crosses).
struct PlanCandidate {
	bool allowed = false;
	double predicted_us = 0;
};

enum class ChoiceReason { Model, Measured, Exploring };
const char *choice_reason_name(ChoiceReason why); // "model", "measured", "exploring"

struct PlanChoice {
	PlanKind plan = PlanKind::Nothing;
	ChoiceReason why = ChoiceReason::Model;
};

class PlanLearner {
public:
	static constexpr size_t kWindow = 16;
	static constexpr uint64_t kExploreEvery = 8;
	static constexpr uint64_t kStaleAfter = 1024;
	static constexpr double kExploreFactor = 4.0;
	static constexpr double kSwitchMargin = 0.15;

	explicit PlanLearner(size_t max_keys = 1024);

	// The plan to run for one phase of `key`, given the models' choice and every plan's
	// candidate entry (indexed by PlanKind). Counts the phase (for exploration).
	PlanChoice choose(const CalibrationKey &key, PlanKind model_choice, const std::array<PlanCandidate, 4> &candidates);
	// A phase of `key` ran with `plan` and took measured_us. False (nothing changed) unless
	// the time is finite and > 0.
	bool record(const CalibrationKey &key, PlanKind plan, double measured_us);

	std::optional<std::array<PlanOutcome, 4>> outcomes(const CalibrationKey &key) const;
	template <class Fn> void for_each(Fn &&fn) const
	{
		for (const auto &[key, entry] : entries_)
			fn(key, outcomes_of(entry));
	}

private:
	struct Window {
		std::array<double, kWindow> us{};
		uint64_t samples = 0;	// ever; the window holds the last min(samples, kWindow)
		uint64_t updated = 0;	// the key's phase count at the last sample
		bool full() const { return samples >= kWindow; }
		double mean() const;
	};
	struct Entry {
		std::array<Window, 4> windows{};
		std::optional<PlanKind> current;
		uint64_t phases = 0;
		uint64_t last_use = 0;
	};
	Entry &entry(const CalibrationKey &key);
	static std::array<PlanOutcome, 4> outcomes_of(const Entry &e);

	size_t max_keys_;
	uint64_t clock_ = 0;
	std::map<CalibrationKey, Entry> entries_;
};

} // namespace gp::models
