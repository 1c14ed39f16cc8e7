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

// One iteration index across the ranks (--trace-iterations).
struct TracedIteration {
	uint64_t slowest_ns = 0; // the longest rank's duration: the iteration's time as a collective
	size_t slowest_rank = 0; // which rank that was (its index in the outer vectors)
	uint64_t retrans = 0;	 // segments all ranks' data sockets retransmitted during it
};

// Per iteration index, over the ranks with a trace (per_rank_retrans[r] empty: rank r adds
// nothing, not even its duration). The two outer vectors are indexed alike.
std::vector<TracedIteration> trace_iterations(const std::vector<std::vector<uint64_t>> &per_rank_ns,
					      const std::vector<std::vector<uint32_t>> &per_rank_retrans);

struct TraceSummary {
	size_t iterations = 0;
	size_t with_retrans = 0; // iterations during which any rank retransmitted
	uint64_t retrans = 0;
	// Median slowest-rank time of the iterations with and without retransmissions.
	std::optional<uint64_t> p50_with_ns, p50_without_ns;
	// What the iterations with retransmissions took beyond the clean ones' median, as a share
	// of all iterations' time (0 without clean iterations to compare with).
	double excess_share = 0;
};

TraceSummary summarize_trace(const std::vector<TracedIteration> &trace);

} // namespace gp::alltoall
