// PlogP and PlogP-BR: the point-to-point cost model of the planner (Documentation/models.md).
//
// PlogP (Kielmann, Bal, Verstoep, "Fast Measurement of LogP Parameters for Message Passing
// Platforms", IPDPS 2000 workshops) describes a network by a latency L and, per message size m,
// a gap g(m) (minimum interval between consecutive m-byte messages, o_s and o_r included) and
// the send/receive CPU overheads o_s(m), o_r(m). One message costs L + g(m); a round trip
// 2(L + g(m)).
//
// PlogP-BR (Nomura & Ishikawa) adds the tail-loss penalty of TCP over a switch without flow
// control: when the messages converging on one receiver port do not fit its queue, the last
// segment of a message is lost and only the retransmission timeout recovers it.
//
// Every time is in microseconds, every size in bytes; names say so.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "expected.hpp"

namespace gp::models {

// One measured message size of the parameter file (params_file.hpp).
struct PlogpPoint {
	double bytes = 0;		// m
	double g_us = 0;		// gap g(m)
	double os_us = 0;		// send overhead o_s(m)
	double or_us = 0;		// receive overhead o_r(m)
	double rtt_us = 0;		// ping-pong round trip of an m-byte message
	double m1_us_per_byte = 0;	// one-way per-byte time (Yamada's M1), 0 when not measured
	double m2_us_per_byte = 0;	// two-way per-byte time (Yamada's M2), 0 when not measured
};

// The PlogP parameters as functions of the message size, from measured points.
//
// Times (g, o_s, o_r, rtt) are linear in m between neighbouring measured sizes; beyond the
// largest they continue with the per-byte slope of the last two points (a slope below 0, i.e.
// noise, is taken as 0: a bigger message never costs less); below the smallest, and with a
// single point, they hold the nearest value.
// Per-byte times (m1, m2) are interpolated the same way between the points of size > 0 (the
// 0-byte point has no per-byte time) but held constant beyond the largest: per-byte time tends
// to 1/bandwidth, it does not grow with m.
class PlogpTable {
public:
	// Points must be non-empty with strictly increasing, finite, non-negative sizes and
	// finite non-negative values; latency_us finite and >= 0. EINVAL otherwise.
	static Expected<PlogpTable> make(double latency_us, std::vector<PlogpPoint> points);

	double latency_us() const { return latency_us_; }
	double gap_us(double bytes) const { return time_at(bytes, &PlogpPoint::g_us); }
	double send_overhead_us(double bytes) const { return time_at(bytes, &PlogpPoint::os_us); }
	double recv_overhead_us(double bytes) const { return time_at(bytes, &PlogpPoint::or_us); }
	double rtt_us(double bytes) const { return time_at(bytes, &PlogpPoint::rtt_us); }
	double oneway_us_per_byte(double bytes) const { return per_byte_at(bytes, &PlogpPoint::m1_us_per_byte); }
	double twoway_us_per_byte(double bytes) const { return per_byte_at(bytes, &PlogpPoint::m2_us_per_byte); }
	std::span<const PlogpPoint> points() const { return points_; }

private:
	PlogpTable(double latency_us, std::vector<PlogpPoint> points)
		: latency_us_(latency_us), points_(std::move(points))
	{
	}
	double time_at(double bytes, double PlogpPoint::*field) const;
	double per_byte_at(double bytes, double PlogpPoint::*field) const;

	double latency_us_ = 0;
	std::vector<PlogpPoint> points_;
};

// ------------------------------------------------------------------ PlogP (Kielmann 2000)

// One m-byte message from send to receive: L + g(m).
double message_us(const PlogpTable &table, double bytes);
// Ping-pong round trip of m bytes each way: RTT(m) = 2 (L + g(m)).
double round_trip_us(const PlogpTable &table, double bytes);
// `count` messages of m bytes posted at once by one sender (e.g. to P-1 peers): the sender
// issues one per gap and the last arrives L later: count * g(m) + L. 0 for count 0.
double posted_at_once_us(const PlogpTable &table, double bytes, uint64_t count);
// `phases` messages sent one after the other, each waiting for the previous to arrive
// (phase by phase with a rendezvous): phases * (g(m) + L).
double phase_by_phase_us(const PlogpTable &table, double bytes, uint64_t phases);

// ------------------------------------------------------------------ PlogP-BR (Nomura & Ishikawa)

// E_q(m, n): whether a tail loss (and so an RTO) is expected when the messages of n processes
// can converge on one receiver port whose switch queue holds q bytes:
//   E_q = 0 with switch flow control (IEEE 802.3x PAUSE: the switch never drops),
//   E_q = 1 if q < (n - 1) m, else 0.
// (n - 1) m is what the other n - 1 processes have in flight to that receiver at once.
bool tail_loss_expected(double queue_bytes, double bytes, uint64_t processes, bool switch_flow_control);

// The gap of a communication pattern C from the gap measured under the reference pattern C_e
// (the probe's bidirectional exchange) and the two patterns' measured times T_C and T_Ce:
//   g(m, C) = (T_C / T_Ce) (g(m, C_e) + L) - L.
// T_Ce must be > 0.
double pattern_gap_us(double reference_gap_us, double latency_us, double pattern_time_us,
		      double reference_pattern_time_us);

// The time of a phase made of steps k with pattern gaps g(m, C_k):
//   T_BR = sum_k g(m, C_k) + L + E_q(m, n) T_RTO.
double phase_br_us(std::span<const double> step_gaps_us, double latency_us, bool loss_expected, double rto_us);

// All-to-all of m bytes per peer among P processes, every send posted at once ("A"): under PlogP
// (P-1) g(m) + L; PlogP-BR adds E_q(m, P) T_RTO since all P-1 peers converge on each receiver.
double alltoall_posted_at_once_us(const PlogpTable &table, double bytes, uint64_t processes, double queue_bytes,
				  bool switch_flow_control, double rto_us);
// The same all-to-all phase by phase with a rendezvous ("B"): (P-1) (g(m) + L). The rendezvous
// keeps adjacent phases from overlapping at a receiver, so E_q = 0 and no RTO term.
double alltoall_phase_by_phase_us(const PlogpTable &table, double bytes, uint64_t processes);

// The switch queue q from the probe: what the port drains while a full queue delays a packet
// beyond an empty one: q = (delay_full - delay_empty) * link rate / 8. 0 if full <= empty.
double switch_queue_bytes(double delay_full_us, double delay_empty_us, double link_bps);

} // namespace gp::models
