#include "latency_fluctuation.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace gp::models {
namespace {

constexpr uint64_t kMaxContributors = uint64_t{1} << 24;

double std_normal_density(double x)
{
	return std::exp(-0.5 * x * x) / std::sqrt(2 * std::numbers::pi);
}

double std_normal_cdf(double x)
{
	return 0.5 * std::erfc(-x / std::numbers::sqrt2);
}

} // namespace

double expected_max_std_normal(uint64_t n)
{
	if (n == 0)
		return 0;
	if (n == 1)
		return 0; // symmetric: E[Z] = 0 exactly, no need to integrate
	n = std::min(n, kMaxContributors);
	// The integrand is smooth and negligible outside [-12, 12] (phi(12) ~ 1e-32; for
	// n <= 2^24 the maximum concentrates below 6). h = 0.004 puts Simpson's error far
	// below 1e-9.
	constexpr double lo = -12, hi = 12;
	constexpr int intervals = 6000; // even
	const double h = (hi - lo) / intervals;
	const double nn = static_cast<double>(n);
	auto f = [&](double x) { return x * nn * std_normal_density(x) * std::pow(std_normal_cdf(x), nn - 1); };
	double sum = f(lo) + f(hi);
	for (int i = 1; i < intervals; ++i)
		sum += f(lo + i * h) * (i % 2 ? 4 : 2);
	return sum * h / 3;
}

double expected_excess_sigma()
{
	return 1 / std::sqrt(2 * std::numbers::pi);
}

double representative_excess_sigma(uint64_t processes)
{
	if (processes <= 2)
		return 0;
	return std::numbers::sqrt2 * expected_max_std_normal(processes - 1);
}

double representative_latency_us(double mean_us, double sigma_us, uint64_t processes)
{
	return mean_us + representative_excess_sigma(processes) * sigma_us;
}

double rto_floor_us(double rtt_mean_us, double rtt_sigma_us, uint64_t processes, double margin_us,
		    double delack_limit_us)
{
	return std::max(representative_latency_us(rtt_mean_us, rtt_sigma_us, processes) + margin_us, delack_limit_us);
}

} // namespace gp::models
