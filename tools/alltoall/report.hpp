// Rank 0's JSON report out of every rank's result. Pure (unit-tested); definitions in README.md.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "counters.hpp"
#include "result.hpp"
#include "wire.hpp"

namespace gp::alltoall {

struct ReportInput {
	Options options;		 // rank 0's
	std::optional<Table> table;	 // nullopt: the run never got past the rendezvous
	std::vector<std::optional<RankResult>> results; // by rank
	bool stopped = false;		 // rank 0's deadline passed and it told everyone to stop
	std::vector<int> missing_ranks;
};

// TCP counter deltas over the run, each network namespace counted once however many ranks
// share it: per namespace, the latest "after" minus the earliest "before" of its ranks (the
// counters only grow, so this covers every rank's run), summed over namespaces. A counter that
// some rank could not read stays nullopt.
struct CounterTotals {
	size_t namespaces = 0;
	std::array<std::optional<uint64_t>, kTcpCounters.size()> deltas{};
};
CounterTotals sum_counters_by_namespace(const std::vector<const RankResult *> &results);

std::string build_report(const ReportInput &input);

} // namespace gp::alltoall
