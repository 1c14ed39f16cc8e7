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

// The median of the first n values (n >= 1); the mean of the middle two for an even n.
template <size_t N> double median(std::array<double, N> values, size_t n)
{
	const auto mid = values.begin() + static_cast<std::ptrdiff_t>(n / 2);
	std::nth_element(values.begin(), mid, values.begin() + static_cast<std::ptrdiff_t>(n));
	if (n % 2)
		return *mid;
	const double below = *std::max_element(values.begin(), mid);
	return (below + *mid) / 2;
}

} // namespace

bool Calibration::record(const CalibrationKey &key, double predicted_us, double measured_us)
{
	if (!std::isfinite(predicted_us) || !std::isfinite(measured_us) || predicted_us <= 0 || measured_us <= 0)
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

	e.abs_error_sum_us += std::abs(measured_us - predicted_us);
	e.abs_error_corrected_sum_us += std::abs(measured_us - predicted_us * s.correction);
	e.ratios[s.samples % kWindow] = ratio;
	++s.samples;
	s.ratio_median = median(e.ratios, std::min<uint64_t>(s.samples, kWindow));
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
