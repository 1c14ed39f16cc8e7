// Statistics over iteration durations: percentiles and stalls. Pure functions (unit-tested).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gp::alltoall {

// Nearest-rank percentile of ascending samples: the smallest sample such that at least
// `percent` % of all samples are <= it (p100 = the maximum). `sorted` must not be empty.
uint64_t nearest_rank(std::span<const uint64_t> sorted, unsigned percent);

struct DurationSummary {
	size_t samples = 0;
	uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;
};

// Over every (rank, iteration) sample. nullopt without samples.
std::optional<DurationSummary> summarize_durations(const std::vector<std::vector<uint64_t>> &per_rank_ns);

// An iteration index counts once when ANY rank's duration for it exceeds the threshold: an
// all-to-all iteration is as slow as its slowest rank, and one stalled rank stalls its peers
// (they wait for its data) without necessarily exceeding the threshold themselves.
size_t count_stalled_iterations(const std::vector<std::vector<uint64_t>> &per_rank_ns, uint64_t threshold_ns);
// (rank, iteration) samples above the threshold, each counted.
size_t count_stalled_samples(const std::vector<std::vector<uint64_t>> &per_rank_ns, uint64_t threshold_ns);

} // namespace gp::alltoall
