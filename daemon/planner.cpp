#include "planner.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>

#include "decision.hpp"
#include "host_counters.hpp"
#include "plan_learner.hpp"
#include "rate_bound.hpp"
#include "segments.hpp"
#include "latency_fluctuation.hpp"
#include "units.hpp"

namespace gp::daemon {

bool one_at_a_time(uint32_t algorithm)
{
	return algorithm == GAPPACE_HINT_ALGORITHM_PAIRWISE || algorithm == GAPPACE_HINT_ALGORITHM_RING;
}

namespace {

bool behind(const Bottleneck &b, const Endpoint &address)
{
	return std::any_of(b.prefixes.begin(), b.prefixes.end(),
			   [&](const Prefix &p) { return prefix_contains(p, address); });
}

// Exchanges in which every process sends and receives across the link: each direction of the
// bottleneck also carries the ACKs of the data going the other way.
bool symmetric_kind(uint32_t kind)
{
	switch (kind) {
	case GAPPACE_HINT_KIND_ALLTOALL:
	case GAPPACE_HINT_KIND_ALLGATHER:
	case GAPPACE_HINT_KIND_REDUCE_SCATTER:
	case GAPPACE_HINT_KIND_ALLREDUCE:
		return true;
	default:
		return false;
	}
}

// The hosts of a phase, this one included: one for each address its peers are at, less those of
// ranks on this host (a loopback address, or the one our end of the connection has). Ranks on
// one host share its address and its TCP counters.
uint64_t hosts_of(std::span<const PlannedPeer> peers)
{
	auto on_this_host = [](const PlannedPeer &p) {
		const Endpoint &r = p.remote;
		if (r.family == AF_INET && r.address[0] == 127)
			return true;
		static constexpr std::array<uint8_t, 16> kIpv6Loopback{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
		if (r.family == AF_INET6 && r.address == kIpv6Loopback)
			return true;
		return p.local && p.local->family == r.family && p.local->address == r.address;
	};
	std::set<std::pair<int, std::array<uint8_t, 16>>> others;
	for (const PlannedPeer &p : peers)
		if (!on_this_host(p))
			others.emplace(p.remote.family, p.remote.address);
	return others.size() + 1;
}

// The share of a link direction that ACKs of the reverse direction's data take, relative to
// that data: one ACK (a frame of the segment's wire bytes less its payload: headers and
// framing) per `segments_per_ack` full segments: two with Linux's delayed ACK, one while a
// floor with `[rto] quickack` is in place (the stock backend's route then asks for quickack).
// A floor alone changes only when an odd segment's ACK leaves (the module lowers the
// delayed-ACK ceiling), not how many: the receiver still acknowledges every second full
// segment at once. By the family of the crossing's connections: an IPv6 ACK is 20 bytes longer
// (3.6 % against 2.9 % at 1500 bytes, every other segment).
double reverse_ack_share(const Config &config, int family, double segments_per_ack)
{
	const SegmentBytes full = full_segment(config, family);
	return (full.on_wire - full.payload) / (segments_per_ack * full.on_wire);
}

constexpr double kSegmentsPerAck = 2;	   // Linux's delayed ACK
constexpr double kSegmentsPerAckQuickack = 1; // a floor with quickack

double segments_per_ack_floored(const Config &config)
{
	return config.rto_quickack ? kSegmentsPerAckQuickack : kSegmentsPerAck;
}

bool paced_kind(uint32_t kind)
{
	switch (kind) {
	case GAPPACE_HINT_KIND_ALLTOALL:
	case GAPPACE_HINT_KIND_ALLGATHER:
	case GAPPACE_HINT_KIND_REDUCE_SCATTER:
	case GAPPACE_HINT_KIND_ALLREDUCE:
	case GAPPACE_HINT_KIND_P2P_BURST:
		return true;
	default:
		return false;
	}
}

// The phase's connections through one bottleneck: the peers behind it, seen from a host that
// is not, and how many processes (k) and connections per process (f) send into it at once.
struct Crossing {
	const Bottleneck *bottleneck = nullptr;
	std::vector<size_t> peers;
	uint64_t senders = 1;
	uint64_t fanout = 1;
};

std::vector<Crossing> crossings(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config)
{
	std::vector<Crossing> out;
	for (const Bottleneck &b : config.bottlenecks) {
		Crossing c;
		c.bottleneck = &b;
		std::set<int32_t> ranks_behind;
		size_t unranked_behind = 0;
		for (size_t i = 0; i < peers.size(); ++i) {
			if (!behind(b, peers[i].remote) || (peers[i].local && behind(b, *peers[i].local)))
				continue;
			c.peers.push_back(i);
			if (peers[i].rank >= 0)
				ranks_behind.insert(peers[i].rank);
			else
				++unranked_behind;
		}
		if (c.peers.empty())
			continue;
		const uint64_t n_behind = ranks_behind.size() + unranked_behind;
		uint64_t senders = phase.comm_size > n_behind ? phase.comm_size - n_behind : 0;
		if (!phase.comm_size) // unknown: us and the peers we know outside b
			senders = peers.size() - c.peers.size() + 1;
		c.senders = std::max<uint64_t>(senders, 1);
		c.fanout = one_at_a_time(phase.algorithm) ? 1 : n_behind;
		out.push_back(std::move(c));
	}
	return out;
}

// The connections of a paced phase that cross no bottleneck (Documentation/models.md,
// "Connections that cross no bottleneck"). In a phase whose connections all run at once and
// each carry m bytes, the paced crossing ones set its end, so the others end first at any rate.
// Unpaced, they take the sender's link (on the namespace cluster, its CPUs) in a burst at the
// phase's start, just when the crossing flows' first slots come due, and a cap at the fair share
// cannot make up a slot it missed: the bottleneck idles later. Paced at the slowest crossing
// rate they still end no later than the phase. Returns how many connections it paced.
size_t pace_local_peers(Plan &plan, const hint::Header &phase, const std::vector<bool> &crossing, const Config &config)
{
	if (!config.pace_local_peers || !symmetric_kind(phase.kind) || one_at_a_time(phase.algorithm))
		return 0;
	uint64_t slowest = 0;
	for (uint64_t r : plan.rate_bps)
		if (r && (!slowest || r < slowest))
			slowest = r;
	if (!slowest)
		return 0;
	size_t paced = 0;
	for (size_t i = 0; i < plan.rate_bps.size(); ++i) {
		if (!crossing[i] && !plan.rate_bps[i]) {
			plan.rate_bps[i] = slowest;
			++paced;
		}
	}
	return paced;
}

std::vector<bool> crossing_peers(const std::vector<Crossing> &crossed, size_t peers)
{
	std::vector<bool> out(peers, false);
	for (const Crossing &c : crossed)
		for (size_t i : c.peers)
			out[i] = true;
	return out;
}

std::string local_pacing_text(size_t paced)
{
	return paced ? std::to_string(paced) + " connection" + (paced == 1 ? "" : "s") +
			       " crossing no bottleneck paced alike; "
		     : std::string();
}

uint64_t queue_packets_of(const Bottleneck &b, const Config &config)
{
	return b.queue_packets ? b.queue_packets : config.queue_packets;
}

// Per-socket pacing sends an idle socket's next packet at once, so every phase starts with a
// packet per flow at the bottleneck (Documentation/control-plane.md, "The host pacer"). Where
// those are more than the queue share the models plan with, a host-wide bucket must even them.
// It does so for messages of every length. Until session 25 it took only messages that fit in
// that share, on a measurement of session 15 (256 KB and 1 MB ran at 0.81-0.90 of C with the
// caps alone, 0.54-0.79 with the bucket), when the bucket never burst and each socket in it was
// capped at its share. With a burst of the queue share (session 20) and caps at the bucket's
// rate (session 24), a flow that is behind catches up in its host's bucket, where one paced by
// its own cap at its share never does and every rank waits for it: 8+8 hosts, 40 packets, 64 KB,
// 0.89-0.91 of C and no timeout with the bucket against 0.71-0.81 and 9-53 timeouts without;
// 256 KB to 4 MB level or better. 3+5 hosts at 100 Mbit/s with 20 packets gained at 16 KB
// (0.93 against 0.78-0.87) and lost at 64 KB (0.71-0.77 against 0.82-0.91): floored hosts
// acknowledge every segment, and buckets at a share planned for half those ACKs overflowed
// the queue; with the floored capacity (session 26) those runs move 0.90-0.93.
bool wants_host_bucket(const Crossing &c, const Bottleneck &b, const Config &config)
{
	const double q = std::floor(static_cast<double>(queue_packets_of(b, config)) * config.queue_share);
	return static_cast<double>(c.senders * c.fanout) > q;
}

// The host buckets of the k senders may each burst at once: together at most the queue share
// the models plan with (Plan::bucket_burst_frames).
uint32_t bucket_burst_frames(const Crossing &c, const Bottleneck &b, const Config &config)
{
	const uint64_t q = static_cast<uint64_t>(std::floor(static_cast<double>(queue_packets_of(b, config)) * config.queue_share));
	return static_cast<uint32_t>(std::max<uint64_t>(1, q / std::max<uint64_t>(1, c.senders)));
}

// A lossless verdict before its first judgment is audited more often (models/loss_check.hpp, 3.).
std::string settling_text(const models::LossCheckState &s)
{
	return s.settling ? "; settling: quiet for " + std::to_string(static_cast<int>(models::LossCheck::kSettlingQuietUs / 1000)) +
				    " ms"
			  : std::string();
}

// The smallest burst any of the phase's bottlenecks allows.
void limit_bucket_burst(Plan &plan, uint32_t frames)
{
	plan.bucket_burst_frames = plan.bucket_burst_frames ? std::min(plan.bucket_burst_frames, frames) : frames;
}

uint64_t queue_bytes_of(const Bottleneck &b, const Config &config)
{
	return queue_packets_of(b, config) * config.mtu;
}

} // namespace

bool prefix_contains(const Prefix &prefix, const Endpoint &address)
{
	if (prefix.family != address.family)
		return false;
	const unsigned full = prefix.length / 8, rest = prefix.length % 8;
	if (std::memcmp(prefix.address.data(), address.address.data(), full) != 0)
		return false;
	if (!rest)
		return true;
	const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
	return (prefix.address[full] & mask) == (address.address[full] & mask);
}

models::PlanKind plan_kind(const Plan &plan)
{
	const bool paced = std::any_of(plan.rate_bps.begin(), plan.rate_bps.end(), [](uint64_t r) { return r > 0; });
	const bool floored = plan.rto_min_us > 0;
	return paced ? (floored ? models::PlanKind::Both : models::PlanKind::Pace)
		     : (floored ? models::PlanKind::Rto : models::PlanKind::Nothing);
}

Plan DefaultPlanner::plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const
{
	Plan plan;
	plan.rate_bps.assign(peers.size(), 0);
	plan.bucket_bps.assign(peers.size(), 0);
	std::string reason;

	// Only the paced kinds' bursts are sized here; a rooted kind is never called inert.
	bool all_bursts_fit = paced_kind(phase.kind);
	if (paced_kind(phase.kind) && phase.bytes_per_peer) {
		const std::vector<Crossing> crossed = crossings(phase, peers, config);
		for (const Crossing &c : crossed) {
			const Bottleneck &b = *c.bottleneck;
			const uint64_t queue_bytes = queue_bytes_of(b, config);
			const uint64_t burst = c.senders * c.fanout * phase.bytes_per_peer;
			all_bursts_fit = all_bursts_fit && burst <= queue_bytes;
			if (burst <= queue_bytes) {
				reason += b.name + ": burst " + std::to_string(burst) + " B fits the queue (" +
					  std::to_string(queue_bytes) + " B), not paced; ";
				continue;
			}
			if (!config.pacing)
				continue;
			const uint64_t rate = std::max(config.min_rate_bps, b.capacity_bps / (c.senders * c.fanout));
			const bool bucket = wants_host_bucket(c, b, config);
			for (size_t i : c.peers) {
				plan.rate_bps[i] = plan.rate_bps[i] ? std::min(plan.rate_bps[i], rate) : rate;
				if (bucket)
					plan.bucket_bps[i] = plan.rate_bps[i];
			}
			if (bucket)
				limit_bucket_burst(plan, bucket_burst_frames(c, b, config));
			reason += b.name + ": " + std::to_string(c.peers.size()) + " peers, k=" + std::to_string(c.senders) +
				  " f=" + std::to_string(c.fanout) + " -> " + format_rate(rate) + " per connection; ";
		}
		reason += local_pacing_text(pace_local_peers(plan, phase, crossing_peers(crossed, peers.size()), config));
	}

	if (config.rto) {
		plan.rto_min_us = std::clamp(config.rto_floor_us, config.rto_min_us, config.rto_max_us);
		reason += "RTO floor " + std::to_string(plan.rto_min_us) + " us";
	}
	if (reason.empty())
		reason = "nothing to do";
	plan.inert = plan.empty() && all_bursts_fit;
	plan.holdable = !plan.empty();	// the same for every alike phase
	plan.reason = std::move(reason);
	return plan;
}

} // namespace gp::daemon

namespace gp::daemon {
namespace {

// Linux's TCP_RTO_MIN: what a tail loss costs when nobody lowers the floor.
constexpr double kStockRtoUs = 200000;
// Without a parameter file: the one-way latency of a switched LAN, and an RTO margin of one
// 1 ms timer tick above the representative RTT.
constexpr double kDefaultLatencyUs = 50;
constexpr double kRtoMarginUs = 1000;
// Paced phases predicted at least this long have the host's counters read around them: a stalled
// one may take less than twice its time (stalled()), and only a timeout counted says it waited.
// Shorter phases are judged by their time alone, without the reads (two per phase).
constexpr double kCountedStallPhaseUs = kStockRtoUs / 4;

models::CalibrationKey key_of(const hint::Header &phase)
{
	return models::CalibrationKey{phase.kind, models::size_class(static_cast<double>(phase.bytes_per_peer)),
				      phase.comm_size};
}

} // namespace

Expected<std::unique_ptr<ModelPlanner>> ModelPlanner::create(const Config &config)
{
	if (config.parameters_file.empty()) {
		auto planner = std::unique_ptr<ModelPlanner>(new ModelPlanner(std::nullopt, std::nullopt));
		planner->learn_ = config.learn_plans;
		planner->loss_check_ = models::LossCheck(config.loss_check_phases, kStockRtoUs);
		return planner;
	}
	auto params = models::load_params(config.parameters_file);
	if (!params)
		return params.error();
	auto table = models::plogp_table(*params);
	if (!table)
		return make_error(table.error().err, config.parameters_file + ": " + table.error().message);
	auto planner = std::unique_ptr<ModelPlanner>(new ModelPlanner(std::move(*params), std::move(*table)));
	planner->learn_ = config.learn_plans;
	planner->loss_check_ = models::LossCheck(config.loss_check_phases, kStockRtoUs);
	return planner;
}

std::optional<models::HostTcpCounters> ModelPlanner::read_counters() const
{
	return read_counters_ ? read_counters_() : read_host_tcp_counters();
}

models::PlogpTable ModelPlanner::table_for(const Bottleneck &b) const
{
	if (table_)
		return *table_;
	// No measurements: a sender whose gap is the bottleneck's serialisation time (the path
	// is no faster than the link the config describes).
	const double per_byte_us = 8e6 / static_cast<double>(std::max<uint64_t>(b.capacity_bps, 1));
	std::vector<models::PlogpPoint> points(2);
	points[0].bytes = 0;
	points[1].bytes = 1 << 20;
	points[1].g_us = per_byte_us * (1 << 20);
	auto table = models::PlogpTable::make(kDefaultLatencyUs, std::move(points));
	return std::move(*table); // valid by construction
}

// A segment lost without a timeout is recovered by a fast retransmit, or for the tail of a
// message by a tail loss probe after 2 SRTT; either way about two round trips of a path whose
// bottleneck queue is full (it was full: it dropped).
double ModelPlanner::loss_recovery_us(const Bottleneck &b, const Config &config) const
{
	const double base_rtt_us = params_ && params_->rtt ? params_->rtt->mean_us : 2 * table_for(b).latency_us();
	const double full_queue_us = b.capacity_bps ? static_cast<double>(queue_packets_of(b, config)) *
							      static_cast<double>(config.mtu) * 8e6 /
							      static_cast<double>(b.capacity_bps)
						    : 0;
	return 2 * (base_rtt_us + full_queue_us);
}

Plan ModelPlanner::plan(const hint::Header &phase, std::span<const PlannedPeer> peers, const Config &config) const
{
	Plan plan;
	plan.rate_bps.assign(peers.size(), 0);
	plan.bucket_bps.assign(peers.size(), 0);
	const uint64_t processes = std::max<uint64_t>(phase.comm_size, peers.size() + 1);
	double candidate_floor_us = config.rto_floor_us;
	if (params_ && params_->rtt)
		candidate_floor_us = models::rto_floor_us(params_->rtt->mean_us, params_->rtt->sigma_us, processes,
							  kRtoMarginUs, config.delack_max_us.value_or(0));
	std::string reason;
	double predicted_us = 0;
	bool all_fit_unpaced = true;
	struct Decided {
		Crossing crossing;
		models::Decision decision;
		double share_bps = 0; // each connection's share of what the bottleneck carries for data
		double floored_share_bps = 0; // the same while the RTO floor is in place
		// The unpaced burst (k·m) over the whole queue: at most 1, it fits (the models plan
		// with a share of the queue).
		double burst_over_queue = 0;
	};
	std::vector<Decided> decided;
	std::vector<Crossing> crossed = crossings(phase, peers, config);
	const std::vector<bool> crossing = crossing_peers(crossed, peers.size());
	for (Crossing &c : crossed) {
		const Bottleneck &b = *c.bottleneck;
		// Rooted collectives have one sender per step into any link (the root, or a tree's
		// parent): k = 1 with its fanout.
		if (!paced_kind(phase.kind))
			c.senders = 1;
		models::PhaseShape shape;
		shape.kind = phase.kind;
		shape.processes = processes;
		shape.bytes_per_peer = static_cast<double>(phase.bytes_per_peer);
		shape.senders = c.senders;
		shape.fanout = c.fanout;
		shape.rendezvous_both_ways = (phase.flags & GAPPACE_HINT_F_RENDEZVOUS) && symmetric_kind(phase.kind);
		const int family = peers[c.peers.front()].remote.family;
		models::BottleneckShape link;
		// What the data of this direction may use: with data both ways, the reverse data's
		// ACKs share it (2.9 % on a 1500-byte Ethernet, 3.6 % with IPv6). Planning all of C leaves
		// those ACKs to overflow the queue, steadily, for as long as the phase lasts.
		// While a floor with quickack is in place, receivers acknowledge every segment: the
		// floored plans leave room for twice the ACKs (BottleneckShape::floored_capacity_bps).
		// Each host plans for its own ACKs: in a symmetric kind a host receives what it sends.
		const bool acks_share = symmetric_kind(phase.kind);
		link.capacity_bps = static_cast<double>(b.capacity_bps) /
				    (acks_share ? 1.0 + reverse_ack_share(config, family, kSegmentsPerAck) : 1.0);
		link.floored_capacity_bps =
			static_cast<double>(b.capacity_bps) /
			(acks_share ? 1.0 + reverse_ack_share(config, family, segments_per_ack_floored(config)) : 1.0);
		link.mtu_bytes = config.mtu;
		const uint64_t q = queue_packets_of(b, config);
		link.queue_packets = std::max<uint64_t>(1, static_cast<uint64_t>(std::floor(q * config.queue_share)));
		models::RtoChoices rto;
		rto.stock_rto_us = kStockRtoUs;
		rto.candidate_floor_us = candidate_floor_us;
		rto.paced_stall_chance = paced_stall_chance(key_of(phase));
		rto.floor_running_cost = config.floor_cost;
		models::DecisionBounds bounds;
		bounds.pacing_allowed = config.pacing;
		bounds.rto_allowed = config.rto;
		bounds.min_rate_bps = static_cast<double>(config.min_rate_bps);
		bounds.rto_min_us = config.rto_min_us;
		bounds.rto_max_us = config.rto_max_us;
		const models::Decision d = models::decide(shape, link, table_for(b), rto, bounds);
		all_fit_unpaced = all_fit_unpaced && !d.prediction(models::PlanKind::Nothing).loss_expected &&
				  d.best == models::PlanKind::Nothing;
		const double flows = static_cast<double>(std::max<uint64_t>(1, c.senders * c.fanout));
		const double share = link.capacity_bps / flows, floored_share = link.floored_capacity_bps / flows;
		const double burst_over_queue = shape.bytes_per_peer * static_cast<double>(c.senders * c.fanout) /
						static_cast<double>(std::max<uint64_t>(1, q * config.mtu));
		decided.push_back(Decided{std::move(c), d, share, floored_share, burst_over_queue});
	}

	// The models' choice for the whole phase: what any bottleneck's choice changes. Each plan's
	// phase time is the slowest bottleneck's under it.
	bool model_paces = false, model_floors = false;
	std::array<models::PlanCandidate, 4> candidates{};
	for (models::PlanKind kind : models::kAllPlans)
		candidates[static_cast<size_t>(kind)].allowed = true;
	for (const Decided &x : decided) {
		model_paces = model_paces || x.decision.chosen().rate_bps > 0;
		model_floors = model_floors || x.decision.best == models::PlanKind::Rto ||
			       x.decision.best == models::PlanKind::Both;
		for (size_t i = 0; i < candidates.size(); ++i) {
			const models::PlanPrediction &p = x.decision.plans[i];
			candidates[i].allowed = candidates[i].allowed && p.allowed;
			candidates[i].predicted_us = std::max(candidates[i].predicted_us, p.time_us);
		}
	}
	const models::PlanKind model_kind = model_paces ? (model_floors ? models::PlanKind::Both : models::PlanKind::Pace)
							: (model_floors ? models::PlanKind::Rto : models::PlanKind::Nothing);
	const models::CalibrationKey key = key_of(phase);

	// The loss check (models/loss_check.hpp): where the plan remedies a predicted loss of the
	// unpaced burst, the host's counters say whether that loss happens.
	bool loss_predicted = false, burst_fits_queue = !decided.empty();
	double burst_over_queue = 0;
	for (const Decided &x : decided) {
		loss_predicted = loss_predicted || x.decision.prediction(models::PlanKind::Nothing).loss_expected;
		burst_fits_queue = burst_fits_queue && x.burst_over_queue <= 1;
		burst_over_queue = std::max(burst_over_queue, x.burst_over_queue);
	}
	const bool remedied = loss_predicted && model_kind != models::PlanKind::Nothing &&
			      candidates[static_cast<size_t>(models::PlanKind::Rto)].allowed;
	const double model_phase_us =
		calibration_.corrected_us(key, candidates[static_cast<size_t>(model_kind)].predicted_us);
	// What the check weighs a lossless key's losses against (models/loss_check.hpp, 3.): their
	// recovery, against the time the models' paced plan would add to the unpaced phase.
	models::LossBudget budget;
	budget.floor_us = std::clamp(candidate_floor_us, static_cast<double>(config.rto_min_us),
				     static_cast<double>(config.rto_max_us));
	if (model_paces) {
		double unpaced_us = 0;
		for (const Decided &x : decided) {
			const models::PlanPrediction &n = x.decision.prediction(models::PlanKind::Nothing);
			unpaced_us = std::max(unpaced_us, n.loss_expected ? n.time_us - n.rto_us : n.time_us);
			budget.recovery_us = std::max(budget.recovery_us, loss_recovery_us(*x.crossing.bottleneck, config));
		}
		// The models' plan as it would run: with the floor where it is floored (a short paced
		// phase since kPacedStallChanceFloor), its running cost included.
		const double paced_us = candidates[static_cast<size_t>(model_kind)].predicted_us;
		if (unpaced_us > 0 && std::isfinite(paced_us))
			budget.paced_slack = std::max(0.0, paced_us / unpaced_us - 1);
		// Each host's losses hold up every phase of a symmetric collective; a rooted one's
		// flows all leave the root (or a tree's parent), whose counters see all its losses.
		if (symmetric_kind(phase.kind))
			budget.hosts = static_cast<double>(hosts_of(peers));
	}
	const models::LossDirective directive = loss_check_.begin(
		key, remedied, model_phase_us, [this] { return read_counters(); }, budget, burst_fits_queue,
		burst_over_queue);
	std::optional<models::PlanKind> checked;
	if (directive == models::LossDirective::Trial || directive == models::LossDirective::Floored)
		checked = models::PlanKind::Rto;
	else if (directive == models::LossDirective::Lossless)
		checked = models::PlanKind::Nothing;

	models::PlanChoice choice{model_kind, models::ChoiceReason::Model};
	if (learn_ && !decided.empty() && !checked)
		choice = learner_.choose(key, model_kind, candidates);

	// The models' own choice per bottleneck, unless the loss check or the learner overrides
	// the phase's.
	auto kind_of = [&](const Decided &x) {
		return checked ? *checked : choice.why == models::ChoiceReason::Model ? x.decision.best : choice.plan;
	};
	// The floor is the host's, for all its connections: where any bottleneck's plan floors,
	// every paced one is paced at its floored rate (with quickack, receivers acknowledge every segment).
	const bool floors = std::any_of(decided.begin(), decided.end(), [&](const Decided &x) {
		const models::PlanKind kind = kind_of(x);
		return kind == models::PlanKind::Rto || kind == models::PlanKind::Both;
	});
	for (const Decided &x : decided) {
		const Bottleneck &b = *x.crossing.bottleneck;
		const models::Decision &d = x.decision;
		const models::PlanKind kind = kind_of(x);
		const models::PlanPrediction &chosen = d.prediction(kind);
		const models::PlanPrediction &paced_as =
			floors && kind == models::PlanKind::Pace ? d.prediction(models::PlanKind::Both) : chosen;
		if ((kind == models::PlanKind::Pace || kind == models::PlanKind::Both) && paced_as.rate_bps > 0) {
			const auto rate = static_cast<uint64_t>(paced_as.rate_bps);
			const auto share = static_cast<uint64_t>(
				std::min(floors ? x.floored_share_bps : x.share_bps, paced_as.rate_bps));
			const bool bucket = wants_host_bucket(x.crossing, b, config);
			for (size_t i : x.crossing.peers) {
				plan.rate_bps[i] = plan.rate_bps[i] ? std::min(plan.rate_bps[i], rate) : rate;
				if (bucket)
					plan.bucket_bps[i] = plan.bucket_bps[i] ? std::min(plan.bucket_bps[i], share) : share;
			}
			if (bucket)
				limit_bucket_burst(plan, bucket_burst_frames(x.crossing, b, config));
		}
		if (kind == models::PlanKind::Rto || kind == models::PlanKind::Both)
			plan.rto_min_us = std::max(plan.rto_min_us, static_cast<uint32_t>(std::lround(chosen.rto_us)));
		// Under the loss check the phase runs unpaced on the premise that it loses nothing.
		const double time_us = checked && chosen.loss_expected ? chosen.time_us - chosen.rto_us : chosen.time_us;
		predicted_us = std::max(predicted_us, time_us);
		reason += b.name + ": k=" + std::to_string(x.crossing.senders) + " f=" + std::to_string(x.crossing.fanout) +
			  ", " + d.explanation + "; ";
	}
	reason += local_pacing_text(pace_local_peers(plan, phase, crossing, config));
	if (checked) {
		const models::LossCheckState s = *loss_check_.state(key);
		if (directive == models::LossDirective::Trial)
			reason += "loss check: trial " + std::to_string(s.trials) + ", " + std::to_string(s.trial_phases) + " of " +
				  std::to_string(loss_check_.trial_phases()) + " phases done (" +
				  std::to_string(s.trial_lost) + " of " + std::to_string(s.trial_sent) + " segments lost, " +
				  std::to_string(s.trial_timeouts) + " timeouts): rto instead of " +
				  models::plan_name(model_kind) + "; ";
		else if (directive == models::LossDirective::Floored)
			reason += "loss check: floored (no segment lost of " + std::to_string(s.trial_sent) + " in " +
				  std::to_string(s.trial_phases) + " trial phases, then " + s.last_failure + " unpaced; " +
				  std::to_string(s.floored_lost) + " of " + std::to_string(s.floored_sent) + " segments lost, " +
				  std::to_string(s.floored_timeouts) + " timeouts since): rto instead of " +
				  models::plan_name(model_kind) + "; ";
		else if (s.presumed && s.trials == 0)
			reason += "loss check: lossless, presumed (the unpaced burst fits the whole queue; " +
				  std::to_string(s.audit_lost) + " of " + std::to_string(s.audit_sent) +
				  " segments lost since" + settling_text(s) + "): nothing instead of " +
				  models::plan_name(model_kind) + "; ";
		else
			reason += "loss check: lossless (no segment lost of " + std::to_string(s.trial_sent) + " in " +
				  std::to_string(s.trial_phases) + " trial phases, " + std::to_string(s.audit_lost) + " of " +
				  std::to_string(s.audit_sent) + " since" + settling_text(s) + "): nothing instead of " +
				  models::plan_name(model_kind) + "; ";
	} else if (choice.why != models::ChoiceReason::Model) {
		const auto outcomes = learner_.outcomes(key);
		auto mean = [&](models::PlanKind k) {
			const models::PlanOutcome &o = (*outcomes)[static_cast<size_t>(k)];
			return o.samples ? models::format_time(o.mean_us) : std::string("unmeasured");
		};
		reason += std::string(models::choice_reason_name(choice.why)) + ": " + models::plan_name(choice.plan) +
			  " (measured " + mean(choice.plan) + ") instead of " + models::plan_name(model_kind) +
			  " (measured " + mean(model_kind) + "); ";
	}
	if (reason.empty())
		reason = "no bottleneck crossed: nothing";
	plan.inert = plan.empty() && (all_fit_unpaced || directive == models::LossDirective::Lossless);
	if (directive == models::LossDirective::Lossless && loss_check_.state(key)->settling)
		plan.quiet_ms = static_cast<uint32_t>(models::LossCheck::kSettlingQuietUs / 1000);
	plan.predicted_us = predicted_us;
	plan.calibrated_us = predicted_us > 0 ? calibration_.corrected_us(key, predicted_us) : 0;
	// Alike phases would get this plan again, unseen: not where the loss check follows the key
	// (a trial's or a floored phase is judged phase by phase, and a lossy key's next trial
	// waits for a phase count that the hosts of a collective reach together; skipped phases
	// come back in lumps, and a host that tried alone would find room the others leave it),
	// not under the learner (it explores), not a paced phase whose stalls are counted
	// (kCountedStallPhaseUs).
	const auto checked_state = loss_check_.state(key);
	plan.holdable = !plan.empty() && directive == models::LossDirective::Model && !learn_ &&
			(!checked_state || checked_state->stage == models::LossStage::Unchecked) &&
			plan.calibrated_us > 0 && plan.calibrated_us < kCountedStallPhaseUs;
	plan.reason = std::move(reason);
	if (const auto it = stalls_.find(key); it != stalls_.end())
		it->second.at_begin = plan_kind(plan) == models::PlanKind::Pace && plan.calibrated_us >= kCountedStallPhaseUs
					      ? read_counters()
					      : std::nullopt;
	return plan;
}

namespace {

// A phase stalled if it waited on a 200 ms timer (a tail's RTO at the stock minimum, or the
// delayed-ACK ceiling): at least half of that past its calibrated prediction, and at least half
// as long again, so that a long phase's ordinary spread is not taken for one; or, by the first
// rule alone, if the host paid a timeout during it (`timed_out`). Until session 20 the second
// rule asked for twice as long, and missed the stalls of phases near the timer's length: on 8+8
// hosts at 64 KB paced phases took about 190 ms, and every few phases 335-460 ms, on all hosts
// at once. One host's flow waited on its RTO and every other host waited for that flow's data,
// so only the first counted a timeout: 1-3 of about 10 such stalls per host in 30 phases.
bool stalled(double expected_us, double measured_us, bool timed_out)
{
	return measured_us >= expected_us + kStockRtoUs / 2 && (timed_out || measured_us >= 1.5 * expected_us);
}

// Paced phases counted as if they had not stalled before any was measured: one stall of a key
// weighs 1 / (phases + this), not 1. 16: one stall among the first 16 paced phases buys the floor
// for phases up to about 75 ms (kFloorRunningCost), not for longer ones.
constexpr double kStallPriorPhases = 16;
constexpr size_t kMaxStallKeys = 1024;
// The least stall chance of a paced phase, measured or not. The rate bound lets the queue fill
// exactly, and a tail the queue drops anyway may wait a probe of 200 ms: Linux adds the RTO
// minimum (TCP_RTO_MIN; the route's or socket's since tcp_rto_min_us) to the loss probe's timeout
// when that tail is the only segment in flight, as the last segment of a message sent after an
// idle gap is (RFC 8985's WCDelAckT), and the floor shortens it. Open MPI's eager 16 KB phases on
// 4+4 hosts, paced: 2-4 % of the calls waited about 200 ms, on loss probes (no timeout was
// counted), and the hosts that waited were the receivers, not the senders whose floor would have
// helped (a barrier between the calls holds the senders, outside the paced phase). With 1 %, a
// phase takes the floor from the start wherever the floor's running cost is smaller than 1 % of
// a stall: paced phases up to about 24 ms at the default floor_cost (0.08).
constexpr double kPacedStallChanceFloor = 0.01;

} // namespace

double ModelPlanner::paced_stall_chance(const models::CalibrationKey &key) const
{
	const auto it = stalls_.find(key);
	if (it == stalls_.end())
		return kPacedStallChanceFloor;
	return std::max(kPacedStallChanceFloor, static_cast<double>(it->second.stalled) /
							(static_cast<double>(it->second.phases) + kStallPriorPhases));
}

void ModelPlanner::observe(const hint::Header &phase, double predicted_us, uint64_t duration_ns, const Plan &applied)
{
	if (predicted_us <= 0 || duration_ns == 0)
		return;
	const double measured_us = static_cast<double>(duration_ns) / 1000.0;
	const models::CalibrationKey key = key_of(phase);
	if (plan_kind(applied) == models::PlanKind::Pace && (stalls_.size() < kMaxStallKeys || stalls_.contains(key))) {
		// A key's first paced phase is not judged: it carries the connections' and the
		// settings' first use.
		// Created here, so the BEGIN of the key's next paced phase reads the counters.
		PacedStalls &s = stalls_[key];
		const std::optional<models::HostTcpCounters> from = std::exchange(s.at_begin, std::nullopt);
		const double expected_us = calibration_.corrected_us(key, predicted_us);
		if (s.phases++ > 0) {
			bool timed_out = false;
			if (from && measured_us >= expected_us + kStockRtoUs / 2 && measured_us < 2 * expected_us)
				if (const auto now = read_counters())
					timed_out = models::timeouts_that_lost(*from, *now) > 0;
			if (stalled(expected_us, measured_us, timed_out)) {
				++s.stalled;
				s.timed_out += timed_out;
			}
		}
	}
	if (calibration_.record(key, predicted_us, measured_us))
		++observed_;
	loss_check_.end(key, plan_kind(applied), [this] { return read_counters(); });
	if (learn_)
		learner_.record(key, plan_kind(applied), measured_us);
}

void ModelPlanner::observe_quiet(const hint::Header &phase, double predicted_us, uint32_t phases, uint64_t total_ns,
				 models::PlanKind ran_as)
{
	if (predicted_us <= 0 || phases == 0 || total_ns == 0)
		return;
	const double total_us = static_cast<double>(total_ns) / 1000.0;
	const double mean_us = total_us / phases;
	const models::CalibrationKey key = key_of(phase);
	// Paced phases skipped under held advice stall like hinted ones, and most of a short
	// paced key's phases are skipped: their stalls are counted from the summary, or the key
	// never takes the floor on them (Open MPI's eager 16 KB phases on 4+4 hosts: one call in
	// 25-50 waited about 200 ms, and every daemon counted 0 stalls in its 34-37 hinted
	// phases, about one in seven; since kPacedStallChanceFloor such short phases take the floor
	// from the start, and this counts the held ones of about 24-50 ms). The summary has only
	// their sum, so it is judged as one phase (stalled()): its phases together took 100 ms and
	// half again past their calibrated prediction. That sees one 200 ms stall in a summary of
	// up to about 400 ms of phases, a `quiet_remedied` window of that length (100 ms by
	// default); a longer window needs more stalls in it to be seen. Counted once per 200 ms of
	// the excess, rounded so that one stall of up to 350 ms counts once.
	if (ran_as == models::PlanKind::Pace && (stalls_.size() < kMaxStallKeys || stalls_.contains(key))) {
		PacedStalls &s = stalls_[key];
		const double expected_us = calibration_.corrected_us(key, predicted_us);
		const double excess_us = total_us - expected_us * phases;
		if (stalled(expected_us * phases, total_us, false)) {
			const double counted = std::max(1.0, std::floor(excess_us / kStockRtoUs + 0.25));
			s.stalled += std::min<uint64_t>(static_cast<uint64_t>(std::min(counted, 1e9)), phases);
		}
		s.phases += phases;
	}
	if (calibration_.record(key, predicted_us, mean_us, phases))
		observed_ += phases;
	loss_check_.skipped(key, phases);
}

void ModelPlanner::describe(JsonWriter &j) const
{
	j.field("parameters", params_ ? (params_->peer.empty() ? std::string("loaded") : "probed " + params_->peer)
				      : std::string("from the config"));
	j.field("phases_calibrated", observed_);
	j.key("calibration").begin_array();
	calibration_.for_each([&](const models::CalibrationKey &key, const models::CalibrationStats &s) {
		j.begin_object();
		j.field("kind", hint::kind_name(key.kind) ? hint::kind_name(key.kind) : "?");
		j.field("size_class", static_cast<int64_t>(key.size_class));
		j.field("processes", key.processes);
		j.field("samples", s.samples);
		j.field("ratio", s.ratio_median).field("correction", s.correction);
		j.field("mean_abs_error_us", s.mean_abs_error_us);
		j.field("mean_abs_error_corrected_us", s.mean_abs_error_corrected_us);
		j.end_object();
	});
	j.end_array();
	j.key("paced_stalls").begin_array();
	for (const auto &[key, s] : stalls_) {
		j.begin_object();
		j.field("kind", hint::kind_name(key.kind) ? hint::kind_name(key.kind) : "?");
		j.field("size_class", static_cast<int64_t>(key.size_class));
		j.field("processes", key.processes);
		j.field("phases", s.phases).field("stalled", s.stalled).field("by_timeouts", s.timed_out);
		j.field("chance", paced_stall_chance(key));
		j.end_object();
	}
	j.end_array();
	j.key("loss_check").begin_object();
	j.field("trial_phases", loss_check_.trial_phases());
	j.key("keys").begin_array();
	loss_check_.for_each([&](const models::CalibrationKey &key, const models::LossCheckState &s) {
		j.begin_object();
		j.field("kind", hint::kind_name(key.kind) ? hint::kind_name(key.kind) : "?");
		j.field("size_class", static_cast<int64_t>(key.size_class));
		j.field("processes", key.processes);
		j.field("stage", models::loss_stage_name(s.stage)).field("settling", s.settling);
		j.field("phases", s.phases).field("trials", s.trials).field("failures", s.failures);
		j.field("last_failure", s.last_failure).field("retry_at", s.retry_at);
		j.field("trial_phases", s.trial_phases).field("trial_sent", s.trial_sent);
		j.field("trial_lost", s.trial_lost).field("trial_timeouts", s.trial_timeouts);
		j.field("audit_sent", s.audit_sent).field("audit_lost", s.audit_lost);
		j.field("audit_timeouts", s.audit_timeouts);
		j.field("presumed", s.presumed).field("floored", s.floored).field("floored_sent", s.floored_sent);
		j.field("floored_lost", s.floored_lost).field("floored_timeouts", s.floored_timeouts);
		j.field("recovery_us", s.budget.recovery_us).field("paced_slack", s.budget.paced_slack);
		j.field("budget_hosts", s.budget.hosts);
		j.end_object();
	});
	j.end_array();
	j.end_object();
	j.field("learn", learn_);
	j.key("measured_plans").begin_array();
	learner_.for_each([&](const models::CalibrationKey &key, const std::array<models::PlanOutcome, 4> &outcomes) {
		j.begin_object();
		j.field("kind", hint::kind_name(key.kind) ? hint::kind_name(key.kind) : "?");
		j.field("size_class", static_cast<int64_t>(key.size_class));
		j.field("processes", key.processes);
		for (models::PlanKind kind : models::kAllPlans) {
			const models::PlanOutcome &o = outcomes[static_cast<size_t>(kind)];
			j.key(models::plan_name(kind)).begin_object();
			j.field("samples", o.samples).field("mean_us", o.mean_us);
			j.end_object();
		}
		j.end_object();
	});
	j.end_array();
}

Expected<std::unique_ptr<Planner>> make_planner(const Config &config)
{
	if (config.planner == "default")
		return std::unique_ptr<Planner>(new DefaultPlanner());
	auto planner = ModelPlanner::create(config);
	if (!planner)
		return planner.error();
	return std::unique_ptr<Planner>(std::move(*planner));
}

} // namespace gp::daemon
