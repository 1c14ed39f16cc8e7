// The arithmetic of `gapctl probe`: robust statistics, the size ladder, how many repetitions each
// size gets, and the derived figures (PlogP latency, per-byte times, link rate, switch queue).
// Pure functions: no sockets, no clocks.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace gp::probe {

// The fraction cut from each end of a sorted sample before averaging.
inline constexpr double kTrimFraction = 0.1;

// A sample summarised. mean and sigma are over the trimmed sample: sorted, floor(n * trim)
// values dropped at each end. sigma is the sample standard deviation (n - 1) of what is kept,
// so a few outliers (a retransmission, a descheduled process) move neither figure.
struct Summary {
	double mean = 0;      // trimmed mean
	double sigma = 0;     // standard deviation of the trimmed sample (0 if it has < 2 values)
	size_t samples = 0;   // values given
	size_t used = 0;      // values kept after trimming
	double raw_mean = 0;  // untrimmed, for comparison
	double raw_sigma = 0;
	double min = 0, max = 0;
};

Summary summarize(std::span<const double> samples, double trim = kTrimFraction);
inline double trimmed_mean(std::span<const double> samples, double trim = kTrimFraction)
{
	return summarize(samples, trim).mean;
}
double median(std::span<const double> samples);
// The per-size figures of the probe: the trimmed mean where the trim cuts something (10 values
// or more at 10 %), else the median. Large messages get few repetitions (3 trains of a 16 MiB
// probe), and the trimmed mean of 3 is their plain mean: one train that paid a retransmission
// timeout would move g, and the link rate taken from it, by the whole timeout.
double robust_mean(std::span<const double> samples, double trim = kTrimFraction);
// The q-quantile (0..1) with linear interpolation between order statistics; 0 when empty.
double quantile(std::span<const double> samples, double q);
// Which quantile of the loaded delay counts as "the port full" (see probe_measure.hpp).
inline constexpr double kFullQueueQuantile = 0.9;

// 0, 1, 2, 4, ..., the largest power of two <= max_size, then max_size itself if it is not a
// power of two. Strictly increasing.
std::vector<uint64_t> size_ladder(uint64_t max_size);

// How much each measurement may cost. Repetitions scale down with the message size so that
// every size moves about the same number of bytes, within [min, max] repetitions.
struct Budget {
	uint32_t max_reps = 200;	     // repetitions of small messages (--reps)
	uint32_t min_reps = 3;		     // never fewer, however large the message
	uint64_t pingpong_bytes = 8ull << 20; // per size and direction, ping-pong and exchange
	uint64_t train_bytes = 4ull << 20;    // one train (sets its length)
	uint64_t gap_bytes = 8ull << 20;      // all trains of one size (sets how many)
	uint32_t max_train_length = 1000;
	uint32_t max_trains = 10;
	uint32_t rtt_samples = 2000; // small ping-pongs for RTT mean and sigma
	double size_seconds = 6;     // soft time cap of one measurement of one size (after min_reps)
	double queue_warmup_min_s = 1, queue_warmup_max_s = 5; // bulk stream until the delay is stable
	uint32_t queue_samples = 400;
	double queue_sample_s = 3;
};
// The default (quick: for tests and a first look) budget; reps overrides max_reps, and the
// number of RTT samples follows it (10 per rep).
Budget make_budget(bool quick, std::optional<uint32_t> reps);

struct Schedule {
	uint32_t pingpong = 0; // ping-pong repetitions (rtt, o_s, o_r)
	uint32_t exchange = 0; // simultaneous exchanges (even: they are averaged in pairs)
	uint32_t train_length = 0;
	uint32_t trains = 0;
};
Schedule schedule_for(uint64_t size, const Budget &budget);

// Pairs of consecutive exchange times averaged: in a lock-step exchange one side starts
// ahead of the other, alternately, so single times alternate around the true one.
std::vector<double> pair_averages(std::span<const double> samples);

// PlogP (Kielmann et al. 2000): a message costs L + g(m) end to end, so rtt(0) = 2 (L + g(0))
// and L = rtt(0)/2 - g(0); the send and receive overheads are inside g. Never below 0.
double plogp_latency_us(double rtt0_us, double g0_us);
// (time - startup) / size; 0 for size 0 and never below 0 (noise at small sizes).
double per_byte_us(double time_us, double startup_us, uint64_t size);

// A TCP goodput as the rate of the link below it: each full segment of `mss` payload bytes
// is one Ethernet frame of mtu + 14 bytes (what a shaper counts).
double wire_rate_bps(double goodput_bps, uint32_t mss, uint32_t mtu);
// The goodput of `bytes` payload delivered every `gap_us`.
double goodput_bps(uint64_t bytes, double gap_us);

// The switch queue: the extra delay of a full port times the link rate, in bytes and in
// frames of mtu + 14 bytes. Never below 0.
struct QueueEstimate {
	double bytes = 0;
	double packets = 0;
};
QueueEstimate estimate_queue(double delay_empty_us, double delay_full_us, double rate_bps, uint32_t mtu);

// True when the last `window` values (batch medians of the loaded RTT) lie within
// `tolerance` (a fraction) of their largest: the bulk stream has filled the queue.
bool delay_stable(std::span<const double> medians, size_t window = 3, double tolerance = 0.2);

} // namespace gp::probe
