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

std::vector<TracedIteration> trace_iterations(const std::vector<std::vector<uint64_t>> &per_rank_ns,
					      const std::vector<std::vector<uint32_t>> &per_rank_retrans)
{
	std::vector<TracedIteration> trace;
	for (size_t r = 0; r < per_rank_ns.size() && r < per_rank_retrans.size(); ++r) {
		const auto &durations = per_rank_ns[r];
		const auto &retrans = per_rank_retrans[r];
		const size_t n = std::min(durations.size(), retrans.size());
		if (trace.size() < n)
			trace.resize(n);
		for (size_t k = 0; k < n; ++k) {
			if (durations[k] > trace[k].slowest_ns) {
				trace[k].slowest_ns = durations[k];
				trace[k].slowest_rank = r;
			}
			trace[k].retrans += retrans[k];
		}
	}
	return trace;
}

namespace {

std::optional<uint64_t> median(std::vector<uint64_t> samples)
{
	if (samples.empty())
		return std::nullopt;
	std::sort(samples.begin(), samples.end());
	return nearest_rank(samples, 50);
}

} // namespace

TraceSummary summarize_trace(const std::vector<TracedIteration> &trace)
{
	TraceSummary summary;
	summary.iterations = trace.size();
	std::vector<uint64_t> with, without;
	uint64_t total_ns = 0;
	for (const auto &it : trace) {
		summary.retrans += it.retrans;
		total_ns += it.slowest_ns;
		(it.retrans > 0 ? with : without).push_back(it.slowest_ns);
	}
	summary.with_retrans = with.size();
	summary.p50_with_ns = median(with);
	summary.p50_without_ns = median(without);
	if (summary.p50_without_ns && total_ns > 0) {
		uint64_t excess = 0;
		for (uint64_t ns : with)
			excess += ns > *summary.p50_without_ns ? ns - *summary.p50_without_ns : 0;
		summary.excess_share = static_cast<double>(excess) / static_cast<double>(total_ns);
	}
	return summary;
}

} // namespace gp::alltoall
