#include "report.hpp"

#include <algorithm>
#include <map>

#include "json.hpp"
#include "stats.hpp"

namespace gp::alltoall {

CounterTotals sum_counters_by_namespace(const std::vector<const RankResult *> &results)
{
	struct Range {
		std::array<std::optional<uint64_t>, kTcpCounters.size()> before{}, after{};
		std::array<bool, kTcpCounters.size()> broken{};
	};
	std::map<uint64_t, Range> namespaces;
	for (const RankResult *r : results) {
		Range &range = namespaces[r->netns_inode];
		for (size_t i = 0; i < kTcpCounters.size(); ++i) {
			const auto &before = r->counters_before.values[i];
			const auto &after = r->counters_after.values[i];
			if (!r->counters_valid || !before || !after) {
				range.broken[i] = true;
				continue;
			}
			range.before[i] = range.before[i] ? std::min(*range.before[i], *before) : *before;
			range.after[i] = range.after[i] ? std::max(*range.after[i], *after) : *after;
		}
	}
	CounterTotals totals;
	totals.namespaces = namespaces.size();
	std::array<bool, kTcpCounters.size()> broken{};
	for (const auto &[inode, range] : namespaces) {
		for (size_t i = 0; i < kTcpCounters.size(); ++i) {
			if (range.broken[i] || !range.before[i]) {
				broken[i] = true;
				continue;
			}
			const uint64_t delta = *range.after[i] >= *range.before[i] ? *range.after[i] - *range.before[i] : 0;
			totals.deltas[i] = totals.deltas[i].value_or(0) + delta;
		}
	}
	for (size_t i = 0; i < kTcpCounters.size(); ++i)
		if (broken[i])
			totals.deltas[i].reset();
	return totals;
}

namespace {

template <class T> void optional_field(JsonWriter &json, const char *name, const std::optional<T> &value)
{
	json.key(name);
	if (value)
		json.value(*value);
	else
		json.null();
}

double microseconds(uint64_t ns) { return static_cast<double>(ns) / 1000.0; }

void optional_microseconds(JsonWriter &json, const char *name, std::optional<uint64_t> ns)
{
	json.key(name);
	if (ns)
		json.value(microseconds(*ns));
	else
		json.null();
}

// Which iterations retransmitted and what they cost: the summary, then one entry per
// iteration index (slowest rank's time, all ranks' retransmissions).
void write_iteration_trace(JsonWriter &json, const std::vector<TracedIteration> &trace,
			   const std::vector<const RankResult *> &present)
{
	const TraceSummary summary = summarize_trace(trace);
	json.key("iteration_trace").begin_object();
	json.field("iterations", static_cast<uint64_t>(summary.iterations));
	json.field("with_retrans", static_cast<uint64_t>(summary.with_retrans));
	json.field("retrans", summary.retrans);
	optional_microseconds(json, "p50_us_with_retrans", summary.p50_with_ns);
	optional_microseconds(json, "p50_us_without", summary.p50_without_ns);
	json.field("excess_share", summary.excess_share);
	json.key("slowest_us").begin_array();
	for (const auto &it : trace)
		json.value(microseconds(it.slowest_ns));
	json.end_array();
	json.key("slowest_rank").begin_array();
	for (const auto &it : trace)
		json.value(present[it.slowest_rank]->rank); // the trace indexes the ranks present
	json.end_array();
	json.key("retrans_per_iteration").begin_array();
	for (const auto &it : trace)
		json.value(it.retrans);
	json.end_array();
	json.end_object();
}

} // namespace

std::string build_report(const ReportInput &in)
{
	const Options &o = in.options;
	const int ranks = o.ranks;
	std::vector<Side> sides(static_cast<size_t>(ranks), Side::None);
	if (in.table)
		for (size_t r = 0; r < in.table->ranks.size() && r < sides.size(); ++r)
			sides[r] = in.table->ranks[r].side;

	std::vector<const RankResult *> present;
	std::vector<std::vector<uint64_t>> durations;
	std::vector<std::vector<uint32_t>> retransmissions; // --trace-iterations
	bool traced = false;
	uint64_t wall_max = 0, bytes_total = 0, cross_l2r = 0, cross_r2l = 0;
	std::optional<uint64_t> iterations_completed;
	bool any_rank_timed_out = false, verified = true;
	TcpInfoSummary tcp_info;
	HintStats hints;
	size_t hint_handles = 0;
	for (int r = 0; r < ranks && r < static_cast<int>(in.results.size()); ++r) {
		if (!in.results[r])
			continue;
		const RankResult &res = *in.results[r];
		present.push_back(&res);
		durations.push_back(res.iteration_ns);
		retransmissions.push_back(res.iteration_retrans);
		traced |= !res.iteration_retrans.empty();
		wall_max = std::max(wall_max, res.wall_ns);
		bytes_total += res.bytes_sent;
		// Delivered bytes: a right rank received them from the left, and the other way round.
		if (sides[r] == Side::Right)
			cross_l2r += res.bytes_cross_received;
		else if (sides[r] == Side::Left)
			cross_r2l += res.bytes_cross_received;
		iterations_completed = std::min(iterations_completed.value_or(UINT64_MAX), res.iterations_done);
		any_rank_timed_out |= res.timed_out;
		verified &= res.verified;
		tcp_info.total_retrans += res.tcp_info.total_retrans;
		tcp_info.rto_max_us = std::max(tcp_info.rto_max_us, res.tcp_info.rto_max_us);
		if (res.hints.open) {
			++hint_handles;
			hints.queued += res.hints.queued;
			hints.sent += res.hints.sent;
			hints.dropped += res.hints.dropped;
			hints.rejected += res.hints.rejected;
		}
	}
	const bool timed_out = in.stopped || any_rank_timed_out;
	const bool complete = !timed_out && in.missing_ranks.empty() && present.size() == static_cast<size_t>(ranks);
	// --think-ms: the idle time between iterations is no part of the exchange's time (the
	// nominal total, so a late timer counts against the exchange).
	const uint64_t thinks = iterations_completed.value_or(0) > 1 ? *iterations_completed - 1 : 0;
	const uint64_t think_ns = std::min(wall_max, thinks * o.think_ms * 1000000);
	const double seconds = static_cast<double>(wall_max - think_ns) / 1e9;
	const uint64_t bytes_cross = cross_l2r + cross_r2l;
	const int directions = (cross_l2r > 0) + (cross_r2l > 0);

	JsonWriter json;
	json.begin_object();
	json.field("tool", "gp-alltoall");
	json.field("ranks", ranks);
	json.field("msg", o.msg);
	if (in.table)
		json.field("iterations", in.table->iterations);
	else
		optional_field(json, "iterations", o.iterations);
	json.field("iterations_capped", in.table && in.table->iterations_capped);
	optional_field(json, "volume", o.volume);
	json.field("pattern", pattern_name(o.pattern));
	json.key("cc");
	if (!present.empty() && !present.front()->cc.empty())
		json.value(present.front()->cc);
	else
		json.null();
	optional_field(json, "cc_requested", o.cc);
	optional_field(json, "capacity_bps", o.capacity_bps);
	json.field("stall_ms", o.stall_ms);
	optional_field(json, "sndbuf", o.sndbuf);
	optional_field(json, "pacing_rate_bps", o.pacing_rate_bps);
	json.field("warmup", o.warmup);
	json.field("think_ms", o.think_ms);
	json.field("think_seconds", static_cast<double>(think_ns) / 1e9);
	optional_field(json, "rcvbuf", o.rcvbuf);
	json.field("verified", verified && !present.empty() && o.verify);
	json.field("timed_out", timed_out);
	json.field("complete", complete);

	json.field("seconds", seconds); // the exchange's: the wall time less think_seconds
	json.field("wall_seconds", static_cast<double>(wall_max) / 1e9);
	json.field("bytes_total", bytes_total);
	json.field("bytes_cross", bytes_cross);
	json.field("bytes_cross_l2r", cross_l2r);
	json.field("bytes_cross_r2l", cross_r2l);
	json.field("cross_directions", directions);
	json.key("bandwidth_bps");
	if (seconds > 0)
		json.value(static_cast<double>(bytes_total) * 8 / seconds);
	else
		json.null();
	json.key("cross_bandwidth_bps");
	if (seconds > 0)
		json.value(static_cast<double>(bytes_cross) * 8 / seconds);
	else
		json.null();
	json.key("fraction_of_capacity");
	if (o.capacity_bps && seconds > 0 && directions > 0)
		json.value(static_cast<double>(bytes_cross) * 8 /
			   (seconds * static_cast<double>(*o.capacity_bps) * directions));
	else
		json.null();

	// The shortest an iteration can be: the busier direction's cross bytes of one iteration at
	// C (payload only, so a lower bound: headers and the shaper's framing come on top).
	json.key("ideal_iteration_us");
	if (o.capacity_bps && in.table) {
		uint64_t left = 0, right = 0;
		for (Side side : sides) {
			left += side == Side::Left;
			right += side == Side::Right;
		}
		const uint64_t per_direction = left * right * o.msg;
		if (per_direction > 0)
			json.value(static_cast<double>(per_direction) * 8 / static_cast<double>(*o.capacity_bps) * 1e6);
		else
			json.null();
	} else {
		json.null();
	}
	json.field("iterations_completed", iterations_completed.value_or(0));
	json.key("iteration_us");
	if (const auto summary = summarize_durations(durations)) {
		json.begin_object();
		json.field("samples", static_cast<uint64_t>(summary->samples));
		json.field("p50", microseconds(summary->p50_ns));
		json.field("p90", microseconds(summary->p90_ns));
		json.field("p99", microseconds(summary->p99_ns));
		json.field("max", microseconds(summary->max_ns));
		json.end_object();
	} else {
		json.null();
	}
	const uint64_t stall_ns = o.stall_ms * 1000000;
	json.field("stalled_iterations", static_cast<uint64_t>(count_stalled_iterations(durations, stall_ns)));
	json.field("stalled_samples", static_cast<uint64_t>(count_stalled_samples(durations, stall_ns)));

	if (traced)
		write_iteration_trace(json, trace_iterations(durations, retransmissions), present);

	const auto totals = sum_counters_by_namespace(present);
	json.key("tcp").begin_object();
	json.field("namespaces", static_cast<uint64_t>(totals.namespaces));
	for (size_t i = 0; i < kTcpCounters.size(); ++i)
		optional_field(json, std::string(kTcpCounters[i].name).c_str(), totals.deltas[i]);
	json.end_object();
	json.key("tcp_info").begin_object();
	json.field("total_retrans", tcp_info.total_retrans);
	json.field("rto_max_us", tcp_info.rto_max_us);
	json.end_object();
	json.key("hints").begin_object();
	json.field("mode", hint_mode_name(o.hints));
	json.field("ranks_with_handle", static_cast<uint64_t>(hint_handles));
	json.field("queued", hints.queued);
	json.field("sent", hints.sent);
	json.field("dropped", hints.dropped);
	json.field("rejected", hints.rejected);
	json.end_object();

	json.key("missing_ranks").begin_array();
	for (int r : in.missing_ranks)
		json.value(r);
	json.end_array();
	json.key("per_rank").begin_array();
	for (const RankResult *res : present) {
		json.begin_object();
		json.field("rank", res->rank);
		json.field("side", side_name(res->rank < sides.size() ? sides[res->rank] : Side::None));
		json.field("netns", res->netns_inode);
		json.field("seconds", static_cast<double>(res->wall_ns) / 1e9);
		json.field("bytes_sent", res->bytes_sent);
		json.field("bytes_received", res->bytes_received);
		json.field("bytes_cross_sent", res->bytes_cross_sent);
		json.field("iterations_done", res->iterations_done);
		json.field("timed_out", res->timed_out);
		json.field("total_retrans", res->tcp_info.total_retrans);
		json.field("rto_max_us", res->tcp_info.rto_max_us);
		json.end_object();
	}
	json.end_array();
	json.end_object();
	return json.str();
}

} // namespace gp::alltoall
