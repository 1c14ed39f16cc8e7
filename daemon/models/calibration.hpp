// Bounded online calibration of the models against measured phase times
// (Documentation/models.md, "Calibration").
//
// Per key (collective kind, size class floor(log2 m), P) it keeps the ratios measured / predicted
// of the last kWindow phases and exposes the correction factor clamp(median of them, 0.5, 3): a
// prediction times the factor is the calibrated prediction. A median, not a moving average:
// single phase times are heavy-tailed (the first phase of a run sets up its connections, one
// RTO in a 3 ms phase is a 200 ms sample), and an average lets one such phase move the factor
// for many phases after it, where a median of nine ignores up to four. The stalls themselves
// are not lost: the planner counts them apart (the paced stall chance). The clamp keeps
// calibration to what it is for, the models' missing constant factors (copies, protocol
// overheads, contention PlogP ignores): a ratio beyond 3 means a mechanism the models do not
// describe, one below 0.5 a parameter file that does not fit the path.
// A sample may stand for many phases (a sender's quiet summary: the mean of the phases it
// skipped on quiet advice). It then weighs as many: the median is over phases, each summed-up
// phase taken at the mean. The window still holds the last kWindow samples.
// It also keeps the mean absolute error of the raw predictions and of the calibrated ones (each
// sample judged with the factor from before it), so the benefit of calibration is visible.
// At most `max_keys` keys are kept; a new key beyond that evicts the least recently updated one.
#pragma once

#include <array>
#include <compare>
#include <cstdint>
#include <map>
#include <optional>

namespace gp::models {

struct CalibrationKey {
	uint32_t kind = 0;
	int size_class = 0;	// size_class(bytes)
	uint64_t processes = 0;
	auto operator<=>(const CalibrationKey &) const = default;
};

// floor(log2(bytes)) for bytes >= 1; -1 for smaller messages (0 bytes).
int size_class(double bytes);

inline constexpr double kMinCorrection = 0.5;
inline constexpr double kMaxCorrection = 3.0;

struct CalibrationStats {
	uint64_t samples = 0;			// phases folded in (a sample of weight w counts w)
	double ratio_median = 1;		// of the last kWindow samples' measured / predicted, by weight, unclamped
	double correction = 1;			// clamp(ratio_median, 0.5, 3)
	double mean_abs_error_us = 0;		// mean |measured - predicted|
	double mean_abs_error_corrected_us = 0;	// mean |measured - predicted * correction before the sample|
};

class Calibration {
public:
	// Ratios kept per key. Nine: about the memory of the moving average it replaced (alpha 0.2,
	// 2 / alpha - 1 = 9 samples), odd so that the median is one of them.
	static constexpr size_t kWindow = 9;

	// max_keys >= 1 (clamped to that).
	explicit Calibration(size_t max_keys = 1024);

	// Folds one sample in: `phases` phases (>= 1) whose mean time was measured_us. Returns
	// false (and changes nothing) unless both times are finite and > 0 and phases >= 1.
	bool record(const CalibrationKey &key, double predicted_us, double measured_us, uint32_t phases = 1);

	// The correction factor for the key: clamp(median ratio, 0.5, 3); 1 for a key never seen.
	double correction(const CalibrationKey &key) const;
	double corrected_us(const CalibrationKey &key, double predicted_us) const
	{
		return predicted_us * correction(key);
	}
	std::optional<CalibrationStats> stats(const CalibrationKey &key) const;
	size_t size() const { return entries_.size(); }
	// Calls fn(key, stats) for every key kept, in key order.
	template <class Fn> void for_each(Fn &&fn) const
	{
		for (const auto &[key, entry] : entries_)
			fn(key, entry.stats);
	}

private:
	struct Entry {
		CalibrationStats stats;
		std::array<double, kWindow> ratios{};	// a ring: the last min(recorded, kWindow)
		std::array<uint32_t, kWindow> weights{};	// the phases each of them stands for
		uint64_t recorded = 0;			// samples (not phases) so far
		double abs_error_sum_us = 0;
		double abs_error_corrected_sum_us = 0;
		uint64_t last_update = 0;
	};
	size_t max_keys_;
	uint64_t clock_ = 0;
	std::map<CalibrationKey, Entry> entries_;
};

} // namespace gp::models
