#include "calibration.hpp"

#include <algorithm>
#include <cmath>

namespace gp::models {

int size_class(double bytes)
{
	if (!(bytes >= 1))
		return -1;
	return static_cast<int>(std::floor(std::log2(bytes)));
}

Calibration::Calibration(size_t max_keys) : max_keys_(std::max<size_t>(max_keys, 1)) {}

namespace {

// The weighted median of the first n values (n >= 1): the value at which half of the total
// weight lies below; the mean of the two values around it where exactly half does. With every
// weight 1: the middle value, or the mean of the middle two for an even n.
template <size_t N>
double weighted_median(const std::array<double, N> &values, const std::array<uint32_t, N> &weights, size_t n)
{
	std::array<std::pair<double, uint64_t>, N> sorted{};
	uint64_t total = 0;
	for (size_t i = 0; i < n; ++i) {
		sorted[i] = {values[i], weights[i]};
		total += weights[i];
	}
	std::sort(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(n));
	uint64_t below = 0;
	for (size_t i = 0; i < n; ++i) {
		below += sorted[i].second;
		if (2 * below > total)
			return sorted[i].first;
		if (2 * below == total)
			return (sorted[i].first + sorted[i + 1].first) / 2;
	}
	return sorted[n - 1].first;
}

} // namespace

bool Calibration::record(const CalibrationKey &key, double predicted_us, double measured_us, uint32_t phases)
{
	if (!std::isfinite(predicted_us) || !std::isfinite(measured_us) || predicted_us <= 0 || measured_us <= 0 ||
	    phases == 0)
		return false;
	auto it = entries_.find(key);
	if (it == entries_.end()) {
		if (entries_.size() >= max_keys_) {
			auto oldest = std::min_element(entries_.begin(), entries_.end(), [](const auto &a, const auto &b) {
				return a.second.last_update < b.second.last_update;
			});
			entries_.erase(oldest);
		}
		it = entries_.emplace(key, Entry{}).first;
	}
	Entry &e = it->second;
	CalibrationStats &s = e.stats;
	const double ratio = measured_us / predicted_us;

	e.abs_error_sum_us += phases * std::abs(measured_us - predicted_us);
	e.abs_error_corrected_sum_us += phases * std::abs(measured_us - predicted_us * s.correction);
	e.ratios[e.recorded % kWindow] = ratio;
	e.weights[e.recorded % kWindow] = phases;
	++e.recorded;
	s.samples += phases;
	s.ratio_median = weighted_median(e.ratios, e.weights, std::min<uint64_t>(e.recorded, kWindow));
	s.correction = std::clamp(s.ratio_median, kMinCorrection, kMaxCorrection);
	s.mean_abs_error_us = e.abs_error_sum_us / static_cast<double>(s.samples);
	s.mean_abs_error_corrected_us = e.abs_error_corrected_sum_us / static_cast<double>(s.samples);
	e.last_update = ++clock_;
	return true;
}

double Calibration::correction(const CalibrationKey &key) const
{
	auto it = entries_.find(key);
	return it == entries_.end() ? 1.0 : it->second.stats.correction;
}

std::optional<CalibrationStats> Calibration::stats(const CalibrationKey &key) const
{
	auto it = entries_.find(key);
	if (it == entries_.end())
		return std::nullopt;
	return it->second.stats;
}

} // namespace gp::models
