#include "rate_bound.hpp"

#include <algorithm>
#include <cmath>

namespace gp::models {

double ooi_max_rate_bps(double drain_bps, double buffer_bytes, double message_bytes)
{
	return shared_max_rate_bps(drain_bps, buffer_bytes, message_bytes, 1);
}

double shared_max_rate_bps(double capacity_bps, double queue_bytes, double message_bytes, uint64_t senders)
{
	const double burst = static_cast<double>(senders) * message_bytes;
	if (!(burst > queue_bytes))
		return kUnboundedRate;
	return capacity_bps * message_bytes / (burst - queue_bytes);
}

bool overflows(double capacity_bps, double queue_bytes, double message_bytes, uint64_t senders, double rate_bps)
{
	// (k S - C) M / S > q  <=>  S > C M / (k M - q) when k M > q; never when k M <= q (the
	// backlog k M - C M / S stays below k M). Comparing with the bound itself keeps a sender
	// paced exactly at the bound loss-free despite rounding.
	return rate_bps > shared_max_rate_bps(capacity_bps, queue_bytes, message_bytes, senders);
}

double paced_phase_us(double message_bytes, double rate_bps, uint64_t senders, double capacity_bps,
		      double queue_bytes, double latency_us, double rto_us)
{
	const double send_us = std::isinf(rate_bps) ? 0.0 : 8e6 * message_bytes / rate_bps;
	const double drain_us = 8e6 * static_cast<double>(senders) * message_bytes / capacity_bps;
	const bool loss = overflows(capacity_bps, queue_bytes, message_bytes, senders, rate_bps);
	return latency_us + std::max(send_us, drain_us) + (loss ? rto_us : 0.0);
}

} // namespace gp::models
