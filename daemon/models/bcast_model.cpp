#include "bcast_model.hpp"

#include <algorithm>
#include <bit>
#include <cassert>

namespace gp::models {
namespace {

// One-way transfer of c bytes: S1 + c M1(c).
double oneway_us(const BcastParams &params, double chunk_bytes)
{
	return params.s1_us + chunk_bytes * params.table.oneway_us_per_byte(chunk_bytes);
}

// Two-way exchange step of c bytes each way: S2 + c M2(c).
double twoway_us(const BcastParams &params, double chunk_bytes)
{
	return params.s2_us + chunk_bytes * params.table.twoway_us_per_byte(chunk_bytes);
}

} // namespace

const char *bcast_algorithm_name(BcastAlgorithm algorithm)
{
	switch (algorithm) {
	case BcastAlgorithm::Binomial:
		return "binomial";
	case BcastAlgorithm::Hybrid:
		return "hybrid";
	case BcastAlgorithm::ScatterRing:
		return "scatter+ring";
	}
	return "?";
}

unsigned ceil_log2(uint64_t x)
{
	if (x <= 1)
		return 0;
	return static_cast<unsigned>(std::bit_width(x - 1));
}

double binomial_bcast_us(const BcastParams &params, uint64_t nodes, double bytes)
{
	return ceil_log2(nodes) * oneway_us(params, bytes);
}

double binomial_scatter_us(const BcastParams &params, uint64_t nodes, double bytes)
{
	double total = 0, chunk = bytes;
	for (unsigned k = 1; k <= ceil_log2(nodes); ++k) {
		chunk /= 2; // step k: every holder passes on half of what it has, n / 2^k
		total += oneway_us(params, chunk);
	}
	return total;
}

double ring_allgather_us(const BcastParams &params, uint64_t nodes, double chunk_bytes)
{
	if (nodes < 2)
		return 0;
	return static_cast<double>(nodes - 1) * twoway_us(params, chunk_bytes);
}

double scatter_ring_bcast_us(const BcastParams &params, uint64_t nodes, double bytes)
{
	if (nodes < 2)
		return 0;
	return binomial_scatter_us(params, nodes, bytes) +
	       ring_allgather_us(params, nodes, bytes / static_cast<double>(nodes));
}

double hybrid_bcast_us(const BcastParams &params, uint64_t nodes, double bytes, uint64_t d)
{
	if (nodes < 2)
		return 0;
	d = std::clamp<uint64_t>(d, 1, nodes);
	const double chunk = bytes / static_cast<double>(d);
	const uint64_t group = (nodes + d - 1) / d;
	return binomial_scatter_us(params, d, bytes) + ceil_log2(group) * oneway_us(params, chunk) +
	       ring_allgather_us(params, d, chunk);
}

std::vector<BcastEstimate> bcast_estimates(const BcastParams &params, uint64_t nodes, double bytes)
{
	std::vector<BcastEstimate> out;
	if (nodes < 2)
		return out;
	out.push_back({BcastAlgorithm::Binomial, 1, binomial_bcast_us(params, nodes, bytes)});
	for (uint64_t d = 2; d < nodes; d *= 2)
		out.push_back({BcastAlgorithm::Hybrid, d, hybrid_bcast_us(params, nodes, bytes, d)});
	out.push_back({BcastAlgorithm::ScatterRing, nodes, scatter_ring_bcast_us(params, nodes, bytes)});
	return out;
}

BcastEstimate best_bcast(std::span<const BcastEstimate> estimates)
{
	assert(!estimates.empty());
	double fastest = estimates.front().time_us;
	for (const auto &e : estimates)
		fastest = std::min(fastest, e.time_us);
	const BcastEstimate *best = nullptr;
	for (const auto &e : estimates)
		if (e.time_us <= fastest * (1 + kBcastTieTolerance) && (!best || e.d < best->d))
			best = &e;
	return *best;
}

BcastParams default_bcast_params()
{
	constexpr double kKnee = 16384;			// bytes: where bandwidth reaches 2/3 of its peak
	constexpr double kOnewayBytesPerUs = 1250;	// 10 Gbit/s
	constexpr double kTwowayBytesPerUs = 1100;	// 8.8 Gbit/s per direction
	auto per_byte = [](double peak, double c) { return (c + 2 * kKnee) / (c + kKnee) / peak; };
	std::vector<PlogpPoint> points;
	points.push_back(PlogpPoint{}); // 0 bytes: no per-byte time
	for (int k = 0; k <= 26; ++k) {
		const double c = static_cast<double>(uint64_t{1} << k);
		PlogpPoint p;
		p.bytes = c;
		p.m1_us_per_byte = per_byte(kOnewayBytesPerUs, c);
		p.m2_us_per_byte = per_byte(kTwowayBytesPerUs, c);
		// PlogP's gap at the one-way rate, so that the table is a consistent whole.
		p.g_us = c * p.m1_us_per_byte;
		points.push_back(p);
	}
	constexpr double kS1 = 1.5, kS2 = 2.0;
	auto table = PlogpTable::make(kS1, std::move(points));
	assert(table);
	return BcastParams{kS1, kS2, std::move(*table)};
}

} // namespace gp::models
