// Cost of the pacing core per planned frame (goal: <= 20 ns on the CI machine).
// A "planned frame" is one dequeue decision plus its accounting: a data frame
// or a gap frame, exactly the work the qdisc's dequeue does besides skb handling.
#include "pace_core.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

namespace {

constexpr uint64_t kLink = 10ULL * 1000 * 1000 * 1000;

struct Flow {
	uint64_t rate;
	gp_flow_clock clock{0, 0};
};

// One backlogged paced flow at state.range(0) percent of a 10 Gbit/s link.
void BM_PlanFramesOneFlow(benchmark::State &state)
{
	gp_wire w{};
	Flow flow{kLink * static_cast<uint64_t>(state.range(0)) / 100};
	uint64_t frames = 0;
	for (auto _ : state) {
		const gp_choice c = gp_choose(&w, false, true, flow.clock.next);
		if (c.verdict == GP_SEND_GAP) {
			gp_wire_sent_gap(&w, c.gap_wire);
		} else {
			gp_flow_charge(&flow.clock, w.now, 1538, kLink, flow.rate);
			gp_wire_sent_data(&w, 1538, true, c.contended);
		}
		++frames;
		benchmark::DoNotOptimize(w);
	}
	state.SetItemsProcessed(static_cast<int64_t>(frames));
}
BENCHMARK(BM_PlanFramesOneFlow)->Arg(1)->Arg(10)->Arg(50)->Arg(90);

// Several paced flows and unpaced traffic; the earliest flow is found by a
// linear scan here (the module uses an rbtree), which this benchmark includes.
void BM_PlanFramesMixed(benchmark::State &state)
{
	gp_wire w{};
	w.ifg_extra = 100 - GP_IPG_BYTES;
	std::vector<Flow> flows{{kLink / 4}, {kLink / 10}, {kLink / 20}};
	uint64_t frames = 0;
	for (auto _ : state) {
		Flow *lead = &flows[0];
		for (auto &f : flows)
			if (gp_before(f.clock.next, lead->clock.next))
				lead = &f;
		const gp_choice c = gp_choose(&w, (frames & 3) == 0, true, lead->clock.next);
		switch (c.verdict) {
		case GP_SEND_GAP:
			gp_wire_sent_gap(&w, c.gap_wire);
			break;
		case GP_SEND_PACED:
			gp_flow_charge(&lead->clock, w.now, 1538, kLink, lead->rate);
			gp_wire_sent_data(&w, 1538, true, c.contended);
			break;
		default:
			gp_wire_sent_data(&w, 1538, false, c.contended);
		}
		++frames;
		benchmark::DoNotOptimize(w);
	}
	state.SetItemsProcessed(static_cast<int64_t>(frames));
}
BENCHMARK(BM_PlanFramesMixed);

void BM_GapPlan(benchmark::State &state)
{
	uint64_t deficit = 84;
	for (auto _ : state) {
		benchmark::DoNotOptimize(gp_gap_piece(deficit));
		deficit = deficit * 7 % 100000 + 84;
	}
	state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_GapPlan);

} // namespace

BENCHMARK_MAIN();
