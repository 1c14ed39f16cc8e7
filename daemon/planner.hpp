// The planner decides, per phase, how fast each connection may send and how low its RTO may
// go. This is the seam the communication models plug into (PlogP-BR, the rate bound, latency
// fluctuation: their own issue). DefaultPlanner is the simple documented rule:
//
//   * A peer is behind bottleneck B if its address is in one of B's prefixes and ours is not.
//   * k = processes sending into B at once = comm_size - (ranks behind B), at least 1.
//   * fanout f = connections one process drives into B at once: 1 for pairwise and ring
//     exchanges, every peer behind B for linear (all posted at once) or unknown algorithms.
//   * Pace each such connection to C_B / (k * f) — but only when the burst cannot fit the
//     switch queue: k * f * bytes_per_peer > q * mtu. Below that, pacing only costs time.
//   * Many-to-many kinds are paced (alltoall, allgather, reduce_scatter, allreduce, p2p
//     bursts); rooted ones (bcast, scatter, gather, reduce, barrier) are not: their
//     bottleneck is a single host link the map does not describe.
//   * RTO floor: [rto] floor for every connection of the phase, within [rto.min, rto.max].
// Remedies switched off in the config are never planned.
#pragma once

#include <map>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "calibration.hpp"
#include "decision.hpp"
#include "plan_learner.hpp"
#include "loss_check.hpp"
#include "config.hpp"
#include "endpoint.hpp"
#include "hint_codec.hpp"
#include "json.hpp"
#include "params_file.hpp"
#include "plogp.hpp"

namespace gp::daemon {

struct PlannedPeer {
	Endpoint remote;		// address, port 0
	std::optional<Endpoint> local;	// our address towards it, if known
	int32_t rank = -1;
};

struct Plan {
	std::vector<uint64_t> rate_bps;	// per peer of the phase; 0: not paced
	// Per paced peer: its part of a host-wide token bucket, or 0 where its own cap is enough.
	// Set where the phase-start burst of the peer's bottleneck (a packet per flow: per-socket
	// pacing sends an idle socket's next packet at once) exceeds the queue share the models
	// plan with, for messages no longer than that share (longer ones recover a start loss
	// inside their phase and lose more to the bucket than they gain). The part is the connection's sustained share (C/n of what the link carries
	// for data, without the queue allowance rate_bps may include): a bucket bursts no more
	// than bucket_burst_frames, so an allowance would only pile up over back-to-back phases.
	std::vector<uint64_t> bucket_bps;
	// Frames the host bucket may send at once: the queue share the models plan with, split
	// among the k hosts that send into the bottleneck (each may burst at once), at least one.
	// A bucket of one frame loses what a late timer delays and never makes it up; a few
	// frames catch up. 0 where no bucket is asked for.
	uint32_t bucket_burst_frames = 0;
	uint32_t rto_min_us = 0;	// 0: RTO left alone
	std::string reason;		// one line for the log and `gapctl daemon show`
	double predicted_us = 0;	// the models' phase time for the chosen plan (0: no prediction)
	double calibrated_us = 0;	// the same times the calibration's correction factor
	// No remedy could change this phase: every bottleneck it crosses takes its whole burst
	// unpaced, and nothing is planned. The daemon may advise the sender to skip such hints.
	bool inert = false;
	// How long the sender of an inert phase may skip alike hints (0: the configured `quiet`;
	// never more than it): shorter while a lossless verdict settles (models/loss_check.hpp).
	uint32_t quiet_ms = 0;
	// The plan changes something, and alike phases that follow it soon may run with the same
	// settings unseen: the daemon may advise the sender to skip their hints for
	// `quiet_remedied` and keep the settings that long. Not where the planner must see every
	// phase (a loss check's trial or floored audits, the learner's exploration, a paced phase
	// long enough for its stalls to be counted).
	bool holdable = false;

	bool empty() const
	{
		for (uint64_t r : rate_bps)
			if (r)
				return false;
		return rto_min_us == 0;
	}
};

class Planner {
public:
	virtual ~Planner() = default;
	virtual const char *name() const = 0;
	virtual Plan plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const = 0;
	// A phase for which `plan` predicted `predicted_us` ended after `duration_ns` (the
	// sender's measurement), with `applied` the plan it ran with.
	virtual void observe(const hint::Header &phase, double predicted_us, uint64_t duration_ns, const Plan &applied)
	{
		(void)phase, (void)predicted_us, (void)duration_ns, (void)applied;
	}
	// `phases` phases like `phase`, for which `plan` had predicted `predicted_us` and which ran
	// as it planned them, with its settings held (`ran_as`; inert: as the application sent
	// them), took `total_ns` together; the sender skipped their hints under quiet advice and
	// summed them up (Header::quiet_*).
	virtual void observe_quiet(const hint::Header &phase, double predicted_us, uint32_t phases, uint64_t total_ns,
				   models::PlanKind ran_as)
	{
		(void)phase, (void)predicted_us, (void)phases, (void)total_ns, (void)ran_as;
	}
	// The planner's own state for `gapctl daemon show` (an object's fields).
	virtual void describe(JsonWriter &json) const { (void)json; }
};

class DefaultPlanner final : public Planner {
public:
	const char *name() const override { return "default"; }
	Plan plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const override;
};

// The communication models' planner (Documentation/models.md, "Decision"). Per bottleneck the
// phase crosses it predicts the phase time of {nothing, pace, rto, both} with PlogP(-BR), the
// shared rate bound and the latency-fluctuation RTO floor, and takes the fastest; k and f as
// DefaultPlanner finds them (rooted kinds have one sender: k = 1). The PlogP table and the RTT
// come from a `gapctl probe` parameter file, or, without one, from the config: g(m) = 8 m /
// the bottleneck's capacity and L = 50 us, the [rto] floor as the candidate floor. Phase ends
// calibrate the predictions per (kind, size class, P); `gapctl daemon show` reports the error.
class ModelPlanner final : public Planner {
public:
	static Expected<std::unique_ptr<ModelPlanner>> create(const Config &config);
	const char *name() const override { return "models"; }
	Plan plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const override;
	void observe(const hint::Header &phase, double predicted_us, uint64_t duration_ns, const Plan &applied) override;
	// One calibration sample, their mean, weighing as many phases as it stands for: not the
	// loss check's (their counters were not read around them) nor the learner's (it compares
	// plans, and these had no choice). Paced phases (`ran_as`) also count among the key's paced
	// phases, and their summed time may say that some stalled.
	void observe_quiet(const hint::Header &phase, double predicted_us, uint32_t phases, uint64_t total_ns,
			   models::PlanKind ran_as) override;
	void describe(JsonWriter &json) const override;
	// Where the loss check reads the host's TCP counters (default: this namespace's /proc/net).
	void set_counter_source(std::function<std::optional<models::HostTcpCounters>()> source)
	{
		read_counters_ = std::move(source);
	}

private:
	ModelPlanner(std::optional<models::Params> params, std::optional<models::PlogpTable> table)
		: params_(std::move(params)), table_(std::move(table))
	{
	}
	models::PlogpTable table_for(const Bottleneck &b) const;
	// What one segment lost and recovered without a timeout costs a phase through `b`.
	double loss_recovery_us(const Bottleneck &b, const Config &config) const;

	std::optional<models::Params> params_;
	std::optional<models::PlogpTable> table_;
	models::Calibration calibration_;
	uint64_t observed_ = 0;
	bool learn_ = true;				// [planner] learn
	// Measured phase times per plan (plan_learner.hpp). Mutable: choosing counts the phase for
	// exploration; the daemon plans from its one thread.
	mutable models::PlanLearner learner_;
	// Paced phases run without a floor, per key, and how many of them stalled (waited on a
	// 200 ms timer: see stalled()); their share is the paced stall chance the models weigh
	// against the floor's running cost (models/decision.hpp). Of the stalls, those that only
	// the host's timeout counter showed (phases too long for the time alone to tell), and the
	// counters read at the BEGIN of the key's last such phase. Mutable: a BEGIN reads them.
	struct PacedStalls {
		uint64_t phases = 0;
		uint64_t stalled = 0;
		uint64_t timed_out = 0;
		std::optional<models::HostTcpCounters> at_begin;
	};
	mutable std::map<models::CalibrationKey, PacedStalls> stalls_;
	double paced_stall_chance(const models::CalibrationKey &key) const;
	// The models' loss verdict checked on the host's counters (models/loss_check.hpp). Mutable
	// like the learner: a BEGIN moves a key's trial on.
	mutable models::LossCheck loss_check_;
	std::function<std::optional<models::HostTcpCounters>()> read_counters_;
	std::optional<models::HostTcpCounters> read_counters() const;
};

// What a plan changes, in the models' terms: nothing, rto, pace or both.
models::PlanKind plan_kind(const Plan &plan);

// The planner the config names, with its parameter file loaded (errors name the file).
Expected<std::unique_ptr<Planner>> make_planner(const Config &config);

// Whether `address` is inside `prefix` (same family, first `length` bits equal).
bool prefix_contains(const Prefix &prefix, const Endpoint &address);
// The hint's algorithm sends to one peer at a time (pairwise exchange, ring).
bool one_at_a_time(uint32_t algorithm);

} // namespace gp::daemon
