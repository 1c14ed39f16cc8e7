// Parameter tables shared by the model tests.
#pragma once

#include <cstdint>
#include <vector>

#include "plogp.hpp"

namespace gp::models::test {

// A path like the parameter file's example (params-schema): L = 45 us, and a gap that grows
// with the 200 Mbit/s bottleneck rate (25 bytes/us) from 5 us at 0 bytes:
//   g(m) = 5 + m / 25 us, sampled at 0 and powers of two up to 16 MiB.
inline constexpr double kPathLatencyUs = 45;
inline double path_gap_us(double bytes)
{
	return 5 + bytes / 25;
}
inline PlogpTable path_table()
{
	std::vector<PlogpPoint> points;
	for (int k = -1; k <= 24; ++k) {
		const double m = k < 0 ? 0 : static_cast<double>(uint64_t{1} << k);
		PlogpPoint p;
		p.bytes = m;
		p.g_us = path_gap_us(m);
		p.rtt_us = 2 * (kPathLatencyUs + p.g_us);
		points.push_back(p);
	}
	return std::move(*PlogpTable::make(kPathLatencyUs, std::move(points)));
}

} // namespace gp::models::test
