// The loss-free sending rate through a buffered bottleneck (Documentation/models.md, "Rate bound").
//
// Ooi et al. (pacing over an ATM cluster): a buffer of B bytes drained at R absorbs a message of
// M bytes sent at S without loss iff the backlog it builds while the message is being sent,
// (S - R) * M / S, fits in B:
//     S <= R / (1 - B / M)            (M > B; any S when M <= B)
// Generalised to k senders sharing a bottleneck of capacity C with a queue of q bytes, each
// sending M bytes at S at the same time: the queue grows at k S - C for M / S seconds, so
//     (k S - C) M / S <= q   <=>   S <= C M / (k M - q)      (k M > q; any S when k M <= q)
// With k = 1 that is Ooi's bound.
//
// Rates are bit/s, sizes bytes, times microseconds. "Unbounded" is +infinity.
#pragma once

#include <cstdint>
#include <limits>

namespace gp::models {

inline constexpr double kUnboundedRate = std::numeric_limits<double>::infinity();

// Ooi's bound: the highest rate at which an M-byte message passes a buffer of B bytes drained
// at R without loss: R / (1 - B/M) for M > B, kUnboundedRate for M <= B.
double ooi_max_rate_bps(double drain_bps, double buffer_bytes, double message_bytes);

// The highest per-connection rate at which k connections, each sending M bytes at once, pass a
// bottleneck of capacity C with a queue of q bytes without loss: C M / (k M - q) for k M > q,
// kUnboundedRate otherwise (also for k = 0 or M = 0).
double shared_max_rate_bps(double capacity_bps, double queue_bytes, double message_bytes, uint64_t senders);

// Whether k connections each sending M bytes at `rate_bps` (kUnboundedRate: as fast as the
// host can, i.e. the whole message at once) overflow the queue:
//   finite S: (k S - C) M / S > q;   unbounded S: k M > q.
bool overflows(double capacity_bps, double queue_bytes, double message_bytes, uint64_t senders, double rate_bps);

// The inverse view: the expected time of a phase in which k connections each send M bytes paced
// at S through the bottleneck. The last byte leaves its sender after 8 M / S and the bottleneck
// needs 8 k M / C for all of it, whichever is longer, plus the latency L; if the rate overflows
// the queue, a tail loss costs one RTO on top:
//   T(S) = L + max(8 M / S, 8 k M / C) + [overflows(S)] T_RTO          (seconds scaled to us)
double paced_phase_us(double message_bytes, double rate_bps, uint64_t senders, double capacity_bps,
		      double queue_bytes, double latency_us, double rto_us);

} // namespace gp::models
