// planner_bench: what deciding one phase costs the daemon (Google Benchmark).
//
//   BM_Decide        models::decide() alone: the four plans' predicted times for one bottleneck
//   BM_ModelPlanner  ModelPlanner::plan() for an alltoall hint naming P-1 peers of a two-sided
//                    cluster (crossing detection, k and f, the decision, calibration lookup)
//   BM_DefaultPlanner the simple rule on the same phase, for comparison
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "decision.hpp"
#include "planner.hpp"

namespace {

using namespace gp;
using namespace gp::daemon;

Config two_sided()
{
	Config c;
	c.bottlenecks = {Bottleneck{"left", 200000000, 40, {*parse_prefix("10.1.0.0/16")}},
			 Bottleneck{"right", 200000000, 40, {*parse_prefix("10.2.0.0/16")}}};
	return c;
}

// Rank 0 on the left of a P-process cluster split in halves.
std::vector<PlannedPeer> peers_of(int processes)
{
	std::vector<PlannedPeer> peers;
	for (int r = 1; r < processes; ++r) {
		PlannedPeer p;
		const bool left = r < processes / 2;
		const int index = left ? r : r - processes / 2;
		p.remote = *parse_host_address((left ? "10.1." : "10.2.") + std::to_string(index / 250) + "." +
					       std::to_string(index % 250 + 1));
		p.local = *parse_host_address("10.1.0.1");
		p.rank = r;
		peers.push_back(p);
	}
	return peers;
}

hint::Header alltoall(int processes)
{
	hint::Header h;
	h.kind = GAPPACE_HINT_KIND_ALLTOALL;
	h.algorithm = GAPPACE_HINT_ALGORITHM_LINEAR;
	h.bytes_per_peer = 65536;
	h.comm_size = static_cast<uint32_t>(processes);
	return h;
}

void BM_Decide(benchmark::State &state)
{
	std::vector<models::PlogpPoint> points(2);
	points[1].bytes = 1 << 20;
	points[1].g_us = 41943;
	auto table = models::PlogpTable::make(50, points);
	models::PhaseShape phase{GAPPACE_HINT_KIND_ALLTOALL, 16, 65536, 8, 8};
	models::BottleneckShape link{200e6, 20, 1500, 0};
	models::RtoChoices rto{200000, 5000};
	models::DecisionBounds bounds;
	for (auto _ : state)
		benchmark::DoNotOptimize(models::decide(phase, link, *table, rto, bounds));
}
BENCHMARK(BM_Decide);

template <class Make> void plan_phase(benchmark::State &state, Make make)
{
	const int processes = static_cast<int>(state.range(0));
	const Config config = two_sided();
	const auto peers = peers_of(processes);
	const hint::Header phase = alltoall(processes);
	auto planner = make(config);
	for (auto _ : state)
		benchmark::DoNotOptimize(planner->plan(phase, peers, config));
	state.counters["peers"] = static_cast<double>(peers.size());
}

void BM_ModelPlanner(benchmark::State &state)
{
	plan_phase(state, [](const Config &c) {
		auto planner = ModelPlanner::create(c);
		return std::unique_ptr<ModelPlanner>(std::move(*planner));
	});
}
BENCHMARK(BM_ModelPlanner)->ArgName("P")->Arg(8)->Arg(64)->Arg(1024);

void BM_DefaultPlanner(benchmark::State &state)
{
	plan_phase(state, [](const Config &) { return std::make_unique<DefaultPlanner>(); });
}
BENCHMARK(BM_DefaultPlanner)->ArgName("P")->Arg(8)->Arg(64)->Arg(1024);

} // namespace

BENCHMARK_MAIN();
