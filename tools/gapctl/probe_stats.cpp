#include "probe_stats.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

namespace gp::probe {
namespace {

double mean_of(std::span<const double> values)
{
	double sum = 0;
	for (double v : values)
		sum += v;
	return values.empty() ? 0 : sum / static_cast<double>(values.size());
}

double sigma_of(std::span<const double> values, double mean)
{
	if (values.size() < 2)
		return 0;
	double squares = 0;
	for (double v : values)
		squares += (v - mean) * (v - mean);
	return std::sqrt(squares / static_cast<double>(values.size() - 1));
}

uint32_t clamp_u32(uint64_t v, uint32_t lo, uint32_t hi)
{
	return static_cast<uint32_t>(std::clamp<uint64_t>(v, lo, std::max(lo, hi)));
}

uint64_t div_ceil(uint64_t a, uint64_t b)
{
	return a / b + (a % b ? 1 : 0);
}

} // namespace

Summary summarize(std::span<const double> samples, double trim)
{
	Summary s;
	s.samples = samples.size();
	if (samples.empty())
		return s;
	std::vector<double> sorted(samples.begin(), samples.end());
	std::sort(sorted.begin(), sorted.end());
	const size_t cut = static_cast<size_t>(std::floor(static_cast<double>(sorted.size()) * std::clamp(trim, 0.0, 0.49)));
	const std::span<const double> kept(sorted.data() + cut, sorted.size() - 2 * cut);
	s.used = kept.size();
	s.mean = mean_of(kept);
	s.sigma = sigma_of(kept, s.mean);
	s.raw_mean = mean_of(sorted);
	s.raw_sigma = sigma_of(sorted, s.raw_mean);
	s.min = sorted.front();
	s.max = sorted.back();
	return s;
}

double median(std::span<const double> samples)
{
	if (samples.empty())
		return 0;
	std::vector<double> sorted(samples.begin(), samples.end());
	std::sort(sorted.begin(), sorted.end());
	const size_t n = sorted.size();
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double robust_mean(std::span<const double> samples, double trim)
{
	const Summary s = summarize(samples, trim);
	return s.used < s.samples ? s.mean : median(samples);
}

double quantile(std::span<const double> samples, double q)
{
	if (samples.empty())
		return 0;
	std::vector<double> sorted(samples.begin(), samples.end());
	std::sort(sorted.begin(), sorted.end());
	const double position = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
	const size_t below = static_cast<size_t>(std::floor(position));
	const size_t above = std::min(below + 1, sorted.size() - 1);
	const double fraction = position - static_cast<double>(below);
	return sorted[below] + (sorted[above] - sorted[below]) * fraction;
}

std::vector<uint64_t> size_ladder(uint64_t max_size)
{
	std::vector<uint64_t> sizes{0};
	for (uint64_t m = 1; m != 0 && m <= max_size; m <<= 1)
		sizes.push_back(m);
	if (max_size > 0 && !std::has_single_bit(max_size))
		sizes.push_back(max_size);
	return sizes;
}

Budget make_budget(bool quick, std::optional<uint32_t> reps)
{
	Budget b;
	if (quick) {
		b.max_reps = 30;
		b.pingpong_bytes = 1ull << 20;
		b.train_bytes = 512ull << 10;
		b.gap_bytes = 2ull << 20;
		b.max_trains = 5;
		b.rtt_samples = 300;
		b.size_seconds = 1.5;
		b.queue_warmup_min_s = 0.5;
		b.queue_warmup_max_s = 3;
		b.queue_samples = 150;
		b.queue_sample_s = 1.5;
	}
	if (reps) {
		b.max_reps = std::max(*reps, b.min_reps);
		b.rtt_samples = static_cast<uint32_t>(std::min<uint64_t>(uint64_t{b.max_reps} * 10, 100000));
	}
	return b;
}

Schedule schedule_for(uint64_t size, const Budget &budget)
{
	const uint64_t wire = size == 0 ? 1 : size;
	Schedule s;
	s.pingpong = clamp_u32(div_ceil(budget.pingpong_bytes, wire), budget.min_reps, budget.max_reps);
	// Even, and at least two pairs.
	const uint32_t exchange = std::max<uint32_t>(s.pingpong, 4);
	s.exchange = exchange + exchange % 2;
	s.train_length = clamp_u32(div_ceil(budget.train_bytes, wire), 2, budget.max_train_length);
	s.trains = clamp_u32(div_ceil(budget.gap_bytes, wire * s.train_length), budget.min_reps, budget.max_trains);
	return s;
}

std::vector<double> pair_averages(std::span<const double> samples)
{
	std::vector<double> pairs;
	for (size_t i = 0; i + 1 < samples.size(); i += 2)
		pairs.push_back((samples[i] + samples[i + 1]) / 2);
	return pairs;
}

double plogp_latency_us(double rtt0_us, double g0_us)
{
	return std::max(0.0, rtt0_us / 2 - g0_us);
}

double per_byte_us(double time_us, double startup_us, uint64_t size)
{
	if (size == 0)
		return 0;
	return std::max(0.0, (time_us - startup_us) / static_cast<double>(size));
}

double wire_rate_bps(double goodput, uint32_t mss, uint32_t mtu)
{
	if (mss == 0)
		return goodput;
	return goodput * (static_cast<double>(mtu) + 14) / static_cast<double>(mss);
}

double goodput_bps(uint64_t bytes, double gap_us)
{
	if (gap_us <= 0)
		return 0;
	return static_cast<double>(bytes) * 8 / (gap_us * 1e-6);
}

QueueEstimate estimate_queue(double delay_empty_us, double delay_full_us, double rate_bps, uint32_t mtu)
{
	QueueEstimate q;
	const double extra_s = std::max(0.0, delay_full_us - delay_empty_us) * 1e-6;
	q.bytes = extra_s * std::max(0.0, rate_bps) / 8;
	q.packets = q.bytes / (static_cast<double>(mtu) + 14);
	return q;
}

bool delay_stable(std::span<const double> medians, size_t window, double tolerance)
{
	if (window == 0 || medians.size() < window)
		return false;
	const auto last = medians.last(window);
	const auto [lo, hi] = std::minmax_element(last.begin(), last.end());
	return *hi > 0 && (*hi - *lo) <= tolerance * *hi;
}

} // namespace gp::probe
