#include "plogp.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <string>

namespace gp::models {
namespace {

bool finite_non_negative(double v)
{
	return std::isfinite(v) && v >= 0;
}

// Linear interpolation of `field` at `bytes` between a and b (a.bytes < b.bytes).
double between(const PlogpPoint &a, const PlogpPoint &b, double bytes, double PlogpPoint::*field)
{
	const double t = (bytes - a.bytes) / (b.bytes - a.bytes);
	return a.*field + t * (b.*field - a.*field);
}

} // namespace

Expected<PlogpTable> PlogpTable::make(double latency_us, std::vector<PlogpPoint> points)
{
	if (!finite_non_negative(latency_us))
		return make_error(EINVAL, "latency_us: must be a finite number >= 0");
	if (points.empty())
		return make_error(EINVAL, "points: at least one message size is needed");
	for (size_t i = 0; i < points.size(); ++i) {
		const PlogpPoint &p = points[i];
		const std::string at = "points[" + std::to_string(i) + "]";
		for (double v : {p.bytes, p.g_us, p.os_us, p.or_us, p.rtt_us, p.m1_us_per_byte, p.m2_us_per_byte})
			if (!finite_non_negative(v))
				return make_error(EINVAL, at + ": values must be finite numbers >= 0");
		if (i > 0 && !(p.bytes > points[i - 1].bytes))
			return make_error(EINVAL, at + ".bytes: sizes must be strictly increasing");
	}
	return PlogpTable(latency_us, std::move(points));
}

double PlogpTable::time_at(double bytes, double PlogpPoint::*field) const
{
	const auto &p = points_;
	if (bytes <= p.front().bytes || p.size() == 1)
		return p.front().*field;
	if (bytes >= p.back().bytes) {
		const PlogpPoint &a = p[p.size() - 2], &b = p.back();
		const double slope = std::max(0.0, (b.*field - a.*field) / (b.bytes - a.bytes));
		return b.*field + (bytes - b.bytes) * slope;
	}
	// First point strictly above `bytes`; its predecessor is at or below.
	const auto above = std::upper_bound(p.begin(), p.end(), bytes,
					    [](double m, const PlogpPoint &q) { return m < q.bytes; });
	return between(*(above - 1), *above, bytes, field);
}

double PlogpTable::per_byte_at(double bytes, double PlogpPoint::*field) const
{
	// The 0-byte point carries no per-byte time (the file writes 0 there).
	auto first = std::find_if(points_.begin(), points_.end(), [](const PlogpPoint &q) { return q.bytes > 0; });
	if (first == points_.end())
		return 0;
	if (bytes <= first->bytes)
		return (*first).*field;
	if (bytes >= points_.back().bytes)
		return points_.back().*field;
	const auto above = std::upper_bound(first, points_.end(), bytes,
					    [](double m, const PlogpPoint &q) { return m < q.bytes; });
	return between(*(above - 1), *above, bytes, field);
}

double message_us(const PlogpTable &table, double bytes)
{
	return table.latency_us() + table.gap_us(bytes);
}

double round_trip_us(const PlogpTable &table, double bytes)
{
	return 2 * message_us(table, bytes);
}

double posted_at_once_us(const PlogpTable &table, double bytes, uint64_t count)
{
	if (count == 0)
		return 0;
	return static_cast<double>(count) * table.gap_us(bytes) + table.latency_us();
}

double phase_by_phase_us(const PlogpTable &table, double bytes, uint64_t phases)
{
	return static_cast<double>(phases) * (table.gap_us(bytes) + table.latency_us());
}

bool tail_loss_expected(double queue_bytes, double bytes, uint64_t processes, bool switch_flow_control)
{
	if (switch_flow_control || processes < 2)
		return false;
	return queue_bytes < static_cast<double>(processes - 1) * bytes;
}

double pattern_gap_us(double reference_gap_us, double latency_us, double pattern_time_us,
		      double reference_pattern_time_us)
{
	return pattern_time_us / reference_pattern_time_us * (reference_gap_us + latency_us) - latency_us;
}

double phase_br_us(std::span<const double> step_gaps_us, double latency_us, bool loss_expected, double rto_us)
{
	double sum = 0;
	for (double g : step_gaps_us)
		sum += g;
	return sum + latency_us + (loss_expected ? rto_us : 0.0);
}

double alltoall_posted_at_once_us(const PlogpTable &table, double bytes, uint64_t processes, double queue_bytes,
				  bool switch_flow_control, double rto_us)
{
	if (processes < 2)
		return 0;
	const bool loss = tail_loss_expected(queue_bytes, bytes, processes, switch_flow_control);
	return posted_at_once_us(table, bytes, processes - 1) + (loss ? rto_us : 0.0);
}

double alltoall_phase_by_phase_us(const PlogpTable &table, double bytes, uint64_t processes)
{
	if (processes < 2)
		return 0;
	return phase_by_phase_us(table, bytes, processes - 1);
}

double switch_queue_bytes(double delay_full_us, double delay_empty_us, double link_bps)
{
	if (!(delay_full_us > delay_empty_us) || !(link_bps > 0))
		return 0;
	return (delay_full_us - delay_empty_us) * 1e-6 * link_bps / 8;
}

} // namespace gp::models
