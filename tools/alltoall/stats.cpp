#include "stats.hpp"

#include <algorithm>

namespace gp::alltoall {

uint64_t nearest_rank(std::span<const uint64_t> sorted, unsigned percent)
{
	// Integer arithmetic: 0.99 * 100 in floating point is 99.00000000000001, whose ceiling
	// would pick one sample too high.
	const uint64_t n = sorted.size();
	uint64_t rank = (static_cast<uint64_t>(percent) * n + 99) / 100;
	rank = std::clamp<uint64_t>(rank, 1, n);
	return sorted[rank - 1];
}

std::optional<DurationSummary> summarize_durations(const std::vector<std::vector<uint64_t>> &per_rank_ns)
{
	std::vector<uint64_t> all;
	for (const auto &samples : per_rank_ns)
		all.insert(all.end(), samples.begin(), samples.end());
	if (all.empty())
		return std::nullopt;
	std::sort(all.begin(), all.end());
	DurationSummary summary;
	summary.samples = all.size();
	summary.p50_ns = nearest_rank(all, 50);
	summary.p90_ns = nearest_rank(all, 90);
	summary.p99_ns = nearest_rank(all, 99);
	summary.max_ns = all.back();
	return summary;
}

size_t count_stalled_iterations(const std::vector<std::vector<uint64_t>> &per_rank_ns, uint64_t threshold_ns)
{
	size_t longest = 0;
	for (const auto &samples : per_rank_ns)
		longest = std::max(longest, samples.size());
	size_t stalled = 0;
	for (size_t k = 0; k < longest; ++k) {
		const bool any = std::any_of(per_rank_ns.begin(), per_rank_ns.end(), [&](const auto &samples) {
			return k < samples.size() && samples[k] > threshold_ns;
		});
		stalled += any;
	}
	return stalled;
}

size_t count_stalled_samples(const std::vector<std::vector<uint64_t>> &per_rank_ns, uint64_t threshold_ns)
{
	size_t stalled = 0;
	for (const auto &samples : per_rank_ns)
		stalled += static_cast<size_t>(
			std::count_if(samples.begin(), samples.end(), [&](uint64_t ns) { return ns > threshold_ns; }));
	return stalled;
}

} // namespace gp::alltoall
