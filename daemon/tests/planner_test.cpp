// The default planner's rule: C / (k * f) per connection behind a bottleneck, only when the
// burst overflows the queue; RTO floor within the configured bounds.
#include <gtest/gtest.h>

#include <cmath>

#include "planner.hpp"

namespace gp::daemon {
namespace {

// The two sides' subnets: 10.1.0.0/24 and 10.1.1.0/24, or fd00:1::/64 and fd00:2::/64.
std::string side_address(bool right, int host, bool ipv6)
{
	if (ipv6)
		return (right ? "fd00:2::" : "fd00:1::") + std::to_string(host);
	return (right ? "10.1.1." : "10.1.0.") + std::to_string(host);
}

Config two_sided(uint64_t capacity = 200000000, bool ipv6 = false)
{
	Config c;
	Bottleneck left{"left", capacity, 40, {*parse_prefix(ipv6 ? "fd00:1::/64" : "10.1.0.0/24")}};
	Bottleneck right{"right", capacity, 40, {*parse_prefix(ipv6 ? "fd00:2::/64" : "10.1.1.0/24")}};
	c.bottlenecks = {left, right};
	return c;
}

// An 8+8 cluster seen from host 1 of the left (rank 0): ranks 1..7 on the left, 8..15 on the right.
std::vector<PlannedPeer> cluster_peers(bool ipv6 = false)
{
	std::vector<PlannedPeer> peers;
	for (int r = 1; r < 16; ++r) {
		PlannedPeer p;
		p.remote = *parse_host_address(r < 8 ? side_address(false, r + 1, ipv6) : side_address(true, r - 7, ipv6));
		p.local = *parse_host_address(side_address(false, 1, ipv6));
		p.rank = r;
		peers.push_back(p);
	}
	return peers;
}

hint::Header alltoall(uint64_t bytes, uint32_t algorithm)
{
	hint::Header h;
	h.kind = GAPPACE_HINT_KIND_ALLTOALL;
	h.algorithm = algorithm;
	h.bytes_per_peer = bytes;
	h.comm_size = 16;
	return h;
}

TEST(DefaultPlanner, PairwiseAlltoallPacesCrossingPeersToCapacityOverSenders)
{
	auto peers = cluster_peers();
	Plan plan = DefaultPlanner().plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, two_sided());
	ASSERT_EQ(plan.rate_bps.size(), peers.size());
	for (size_t i = 0; i < peers.size(); ++i) {
		if (peers[i].rank < 8)
			EXPECT_EQ(plan.rate_bps[i], 0u) << "same side, rank " << peers[i].rank;
		else // 8 senders on our side into the right: 200 Mbit/s / 8, one connection at a time
			EXPECT_EQ(plan.rate_bps[i], 25000000u) << "rank " << peers[i].rank;
	}
	EXPECT_EQ(plan.rto_min_us, 5000u);
	EXPECT_NE(plan.reason.find("right"), std::string::npos);
}

TEST(DefaultPlanner, LinearAlltoallDividesByFanoutToo)
{
	auto peers = cluster_peers();
	Plan plan = DefaultPlanner().plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR), peers, two_sided());
	EXPECT_EQ(plan.rate_bps.back(), 200000000u / (8 * 8));
	// All connections at once: the same side's are paced alike (models.md, "Connections that
	// cross no bottleneck").
	EXPECT_EQ(plan.rate_bps.front(), 200000000u / (8 * 8));
}

TEST(DefaultPlanner, BurstThatFitsTheQueueIsNotPaced)
{
	auto peers = cluster_peers();
	// 8 senders x 1 connection x 4 KB = 32 KB < 40 x 1500 B = 60 KB.
	Plan plan = DefaultPlanner().plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, two_sided());
	for (uint64_t r : plan.rate_bps)
		EXPECT_EQ(r, 0u);
	EXPECT_NE(plan.reason.find("fits the queue"), std::string::npos);
	EXPECT_EQ(plan.rto_min_us, 5000u);
	EXPECT_FALSE(plan.inert) << "the RTO floor is a change";
}

// Inert (the daemon may tell the sender to skip alike phases): nothing planned *because* every
// burst fits its queue, not because a remedy is switched off.
TEST(DefaultPlanner, InertOnlyWhereEveryBurstFitsTheQueue)
{
	auto peers = cluster_peers();
	Config no_rto = two_sided();
	no_rto.rto = false;
	EXPECT_TRUE(DefaultPlanner().plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, no_rto).inert);
	EXPECT_FALSE(DefaultPlanner().plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, no_rto).inert);
	Config off = no_rto;
	off.pacing = false; // an overflowing burst with no remedy allowed: empty, but not inert
	Plan unremedied = DefaultPlanner().plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, off);
	EXPECT_TRUE(unremedied.empty());
	EXPECT_FALSE(unremedied.inert);
	EXPECT_FALSE(unremedied.holdable) << "nothing to hold";
	// The simple rule gives alike phases the same plan: a remedy may be held through the
	// phases its sender skips on quiet advice.
	EXPECT_TRUE(DefaultPlanner().plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, no_rto).holdable);
	EXPECT_FALSE(DefaultPlanner().plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, no_rto).holdable);
}

TEST(DefaultPlanner, RootedKindsAndSwitchedOffRemedies)
{
	auto peers = cluster_peers();
	auto bcast = alltoall(1 << 20, 0);
	bcast.kind = GAPPACE_HINT_KIND_BCAST;
	Plan plan = DefaultPlanner().plan(bcast, peers, two_sided());
	for (uint64_t r : plan.rate_bps)
		EXPECT_EQ(r, 0u);
	EXPECT_EQ(plan.rto_min_us, 5000u);

	Config off = two_sided();
	off.pacing = false;
	off.rto = false;
	Plan none = DefaultPlanner().plan(alltoall(1 << 20, 0), peers, off);
	EXPECT_TRUE(none.empty());
}

TEST(DefaultPlanner, MinimumRateAndRtoBoundsWin)
{
	auto peers = cluster_peers();
	Config c = two_sided(1000000); // 1 Mbit/s / 8 would be 125 kbit/s
	c.min_rate_bps = 500000;
	c.rto_floor_us = 3000;
	c.rto_min_us = 4000; // a floor below the bound is lifted to it
	c.rto_max_us = 100000;
	Plan plan = DefaultPlanner().plan(alltoall(1 << 20, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, c);
	EXPECT_EQ(plan.rate_bps.back(), 500000u);
	EXPECT_EQ(plan.rto_min_us, 4000u);
}

TEST(PrefixContains, Bits)
{
	EXPECT_TRUE(prefix_contains(*parse_prefix("10.1.0.0/23"), *parse_host_address("10.1.1.200")));
	EXPECT_FALSE(prefix_contains(*parse_prefix("10.1.0.0/24"), *parse_host_address("10.1.1.1")));
	EXPECT_FALSE(prefix_contains(*parse_prefix("10.1.0.0/24"), *parse_host_address("fd00::1")));
	EXPECT_TRUE(prefix_contains(*parse_prefix("fd00::/8"), *parse_host_address("fd12::1")));
	EXPECT_TRUE(prefix_contains(*parse_prefix("0.0.0.0/0"), *parse_host_address("1.2.3.4")));
}

} // namespace
} // namespace gp::daemon

// ------------------------------------------------------------------ the models' planner

namespace gp::daemon {
namespace {

// The host's counters are unreadable unless a test says otherwise: the loss check then never
// starts a trial, and the models decide alone.
std::unique_ptr<ModelPlanner> model_planner(const Config &config)
{
	auto planner = ModelPlanner::create(config);
	EXPECT_TRUE(planner) << planner.error().message;
	(*planner)->set_counter_source([] { return std::optional<models::HostTcpCounters>(); });
	return std::move(*planner);
}

// Shared rate bound (Ooi et al., generalised to k senders, models.md): n = k f connections of
// m bytes each into C with the planned share of the queue q' = floor(q * queue_share) packets,
// half of it for one phase (the previous one's fill may still be queued, models.md):
// S = C' m / (n m - q' MTU / 2), where C' = C / (1 + a) leaves room for the ACKs of the data going
// the other way (all-to-all sends both ways): a = o / (2 (mss + o)), one ACK of o wire bytes
// per two segments of mss + o (o = frame_overhead).
TEST(ModelPlanner, LinearAlltoallIsPacedAtTheSharedRateBound)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	const uint64_t m = 65536;
	Plan plan = planner->plan(alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	const double n = 8.0 * 8.0; // k = 8 senders on our side, f = 8 peers behind the link
	const double q = std::floor(40 * config.queue_share) * 1500;
	const double o = static_cast<double>(config.frame_overhead);
	const double a = o / (2.0 * (config.mtu - 52.0 + o));
	EXPECT_NEAR(a, 90.0 / 3076.0, 1e-12) << "1500-byte Ethernet, the default overhead of 90";
	const double bound = 200e6 / (1.0 + a) * m / (n * m - q / 2);
	for (size_t i = 0; i < peers.size(); ++i) // the same side too: see the next test
		EXPECT_NEAR(static_cast<double>(plan.rate_bps[i]), bound, 1.0) << "rank " << peers[i].rank;
	EXPECT_GT(plan.predicted_us, 8e6 * n * m / 200e6) << "at least the time the link needs";
	EXPECT_NE(plan.reason.find("pace"), std::string::npos) << plan.reason;
	// 64 flows start each phase with a packet each, more than the 20 packets of the queue the
	// models plan with: a host bucket takes the crossing connections, at their sustained share
	// (C/n without the queue's allowance, which would pile up over back-to-back phases), for a
	// message of any length (since session 25: one shorter than the queue share, one a byte
	// longer, and these 64 KB). The connections on our side of the link are not in it.
	for (const uint64_t bucketed_m : {uint64_t{4096}, uint64_t{30000}, uint64_t{30001}, m, uint64_t{4} << 20}) {
		const Plan bucketed = planner->plan(alltoall(bucketed_m, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
		for (size_t i = 0; i < peers.size(); ++i) {
			const bool crosses = peers[i].rank >= 8;
			EXPECT_NEAR(static_cast<double>(bucketed.bucket_bps[i]), crosses ? 200e6 / (1.0 + a) / n : 0.0, 1.0)
				<< "rank " << peers[i].rank << ", " << bucketed_m << " B: " << bucketed.reason;
		}
		EXPECT_GT(bucketed.bucket_burst_frames, 0u) << bucketed_m << " B";
	}
	// The buckets of the 8 hosts may burst together: 20 packets of the queue share, 2 each.
	EXPECT_EQ(planner->plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config).bucket_burst_frames, 2u);
	Config tight = config;
	tight.queue_share = 0.3; // 12 packets: 1 each, never less than one frame
	EXPECT_EQ(model_planner(tight)->plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_LINEAR), peers, tight).bucket_burst_frames,
		  1u);
	tight.queue_share = 0.1; // 4 packets
	EXPECT_EQ(model_planner(tight)->plan(alltoall(4096, GAPPACE_HINT_ALGORITHM_LINEAR), peers, tight).bucket_burst_frames,
		  1u);
}

// Many connections into a slow bottleneck: 64 into 50 Mbit/s share less than 1 Mbit/s each
// (as do 1024 into 1 Gbit/s). The default minimum rate must not lift them above that share:
// 64 connections at 1 Mbit/s would overload the link by 30 % and the models, seeing the
// overflow, would fall back to the unpaced floor (8+8 at 50 Mbit/s: 1264-1532 timeouts per
// run, performance/min-rate-session22).
TEST(ModelPlanner, AFanInWhoseShareIsBelowAMegabitIsPacedAtItsShare)
{
	Config config = two_sided(50000000);
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	const uint64_t m = 16384;
	const Plan plan = planner->plan(alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	const double n = 8.0 * 8.0;
	const double q = std::floor(40 * config.queue_share) * 1500;
	const double o = static_cast<double>(config.frame_overhead);
	const double a = o / (2.0 * (config.mtu - 52.0 + o));
	const double bound = 50e6 / (1.0 + a) * m / (n * m - q / 2);
	ASSERT_LT(bound, 1e6);
	for (size_t i = 0; i < peers.size(); ++i)
		EXPECT_NEAR(static_cast<double>(plan.rate_bps[i]), bound, 1.0) << "rank " << peers[i].rank << ": " << plan.reason;
	const models::PlanKind kind = plan_kind(plan);
	EXPECT_TRUE(kind == models::PlanKind::Pace || kind == models::PlanKind::Both) << plan.reason;
	// An explicit minimum still wins, and its overload is then left to the floor.
	config.min_rate_bps = 1000000;
	const Plan lifted = model_planner(config)->plan(alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_EQ(plan_kind(lifted), models::PlanKind::Rto) << lifted.reason;
}

// Every operating point of a grid far wider than the test cluster's (1 to 100 hosts a side,
// 1 Mbit/s to 400 Gbit/s, queues of 2 to 5000 frames, 1 byte to 1 GiB per peer, standard and
// jumbo frames, all-at-once and pairwise phases): the plans stay within what a plan may be.
// Paced rates are at least the configured minimum and, above it, within the rate bound (n
// connections fill at most half the queue over their messages); a host bucket's part never
// exceeds its connection's cap and comes with a burst of at least one
// frame; the predicted time is finite and at least the time the link needs for the bytes that
// cross it towards the other side (8 n m / C, n = k f connections); a floor stays in bounds.
TEST(ModelPlanner, PlansStayBoundedOverAWideGridOfOperatingPoints)
{
	size_t planned = 0, paced = 0;
	for (const int left : {1, 2, 8, 100})
		for (const int right : {1, 8, 100})
			for (const double capacity : {1e6, 50e6, 1e9, 4e11})
				for (const uint32_t queue : {2u, 40u, 5000u})
					for (const uint32_t mtu : {1500u, 9000u}) {
						Config config;
						Bottleneck l{"left", static_cast<uint64_t>(capacity), queue, {*parse_prefix("10.1.0.0/24")}};
						Bottleneck r{"right", static_cast<uint64_t>(capacity), queue, {*parse_prefix("10.1.1.0/24")}};
						config.bottlenecks = {l, r};
						config.mtu = mtu;
						auto planner = model_planner(config);
						// Rank 0 on host 1 of the left; ranks 1..left-1 beside it, then the right.
						std::vector<PlannedPeer> peers;
						for (int rank = 1; rank < left + right; ++rank) {
							PlannedPeer p;
							p.remote = *parse_host_address(rank < left ? side_address(false, rank + 1, false)
												     : side_address(true, rank - left + 1, false));
							p.local = *parse_host_address(side_address(false, 1, false));
							p.rank = rank;
							peers.push_back(p);
						}
						for (const uint64_t m : {uint64_t{1}, uint64_t{1024}, uint64_t{65536}, uint64_t{4} << 20, uint64_t{1} << 30})
							for (const uint32_t algorithm : {GAPPACE_HINT_ALGORITHM_LINEAR, GAPPACE_HINT_ALGORITHM_PAIRWISE}) {
								hint::Header h = alltoall(m, algorithm);
								h.comm_size = static_cast<uint32_t>(left + right);
								const Plan plan = planner->plan(h, peers, config);
								const std::string at = std::to_string(left) + "+" + std::to_string(right) + " C=" +
										       std::to_string(capacity) + " q=" + std::to_string(queue) +
										       " mtu=" + std::to_string(mtu) + " m=" + std::to_string(m) +
										       " alg=" + std::to_string(algorithm) + ": " + plan.reason;
								++planned;
								ASSERT_EQ(plan.rate_bps.size(), peers.size()) << at;
								ASSERT_EQ(plan.bucket_bps.size(), peers.size()) << at;
								ASSERT_TRUE(std::isfinite(plan.predicted_us) && plan.predicted_us >= 0) << at;
								// n = k f connections into the right side's link: k = the left's hosts, f
								// = the right's for a phase that sends to all at once, 1 for pairwise.
								const double n = static_cast<double>(left) * (algorithm == GAPPACE_HINT_ALGORITHM_LINEAR ? right : 1);
								const double md = static_cast<double>(m);
								if (plan.predicted_us > 0) {
									EXPECT_GE(plan.predicted_us * 1.0001, 8e6 * n * md / capacity) << at;
								}
								bool any_bucket = false;
								for (size_t i = 0; i < peers.size(); ++i) {
									const double rate = static_cast<double>(plan.rate_bps[i]);
									if (plan.rate_bps[i]) {
										++paced;
										EXPECT_GE(plan.rate_bps[i], config.min_rate_bps) << at;
									}
									// Above the minimum, n connections at this rate leave at most half
									// the queue filled when their messages end (the rate bound, S may
									// exceed C for one connection: n m - C m / S <= q MTU / 2).
									if (plan.rate_bps[i] > config.min_rate_bps) {
										EXPECT_LE(n * md - capacity * md / rate, queue * static_cast<double>(mtu) / 2 * 1.0001 + 1) << at;
									}
									if (plan.bucket_bps[i]) {
										any_bucket = true;
										EXPECT_LE(plan.bucket_bps[i], plan.rate_bps[i]) << at;
									}
								}
								if (any_bucket) {
									EXPECT_GE(plan.bucket_burst_frames, 1u) << at;
								}
								if (plan.rto_min_us) {
									EXPECT_TRUE(plan.rto_min_us >= config.rto_min_us && plan.rto_min_us <= config.rto_max_us) << at;
								}
							}
					}
	EXPECT_EQ(planned, 4u * 3 * 4 * 3 * 2 * 5 * 2);
	EXPECT_GT(paced, 0u) << "the grid holds paced phases";
}

// The same 8+8 cluster on IPv6: an ACK frame is 20 bytes longer than IPv4's (its network
// header), a full segment's wire bytes the same (its payload 20 shorter), so the ACKs take
// a = (o + 20) / (2 (mss6 + o + 20)) of the reverse data, and the bound is lower by (1+a4)/(1+a6).
TEST(ModelPlanner, ReverseAcksOfIpv6ConnectionsTakeTheirLongerHeaders)
{
	const Config config = two_sided(200000000, true);
	const std::vector<PlannedPeer> peers = cluster_peers(true);
	auto planner = model_planner(config);
	const uint64_t m = 65536;
	const Plan plan = planner->plan(alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	const double n = 8.0 * 8.0;
	const double q = std::floor(40 * config.queue_share) * 1500;
	const double o = static_cast<double>(config.frame_overhead);
	const double a6 = (o + 20.0) / (2.0 * ((config.mtu - 72.0) + o + 20.0));
	EXPECT_NEAR(a6, 110.0 / 3076.0, 1e-12);
	const double bound = 200e6 / (1.0 + a6) * m / (n * m - q / 2);
	EXPECT_NEAR(static_cast<double>(plan.rate_bps.back()), bound, 1.0) << plan.reason;
	const Plan ipv4 = model_planner(two_sided())->plan(alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR), cluster_peers(),
							    two_sided());
	EXPECT_LT(plan.rate_bps.back(), ipv4.rate_bps.back());
}

// A 4+4 cluster: 16 flows start each phase, fewer than the 20 packets of the queue the models
// plan with, so the sockets' own caps are enough and no bucket is asked for.
TEST(ModelPlanner, NoBucketWhereThePhaseStartFitsTheQueue)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	std::vector<PlannedPeer> peers;
	for (int r = 1; r < 8; ++r) {
		PlannedPeer p;
		p.remote = *parse_host_address(r < 4 ? "10.1.0." + std::to_string(r + 1) : "10.1.1." + std::to_string(r - 3));
		p.local = *parse_host_address("10.1.0.1");
		p.rank = r;
		peers.push_back(p);
	}
	hint::Header phase = alltoall(8192, GAPPACE_HINT_ALGORITHM_LINEAR);
	phase.comm_size = 8;
	const Plan plan = planner->plan(phase, peers, config);
	ASSERT_GT(plan.rate_bps.back(), 0u) << plan.reason;
	for (size_t i = 0; i < peers.size(); ++i)
		EXPECT_EQ(plan.bucket_bps[i], 0u) << "rank " << peers[i].rank;
	config.queue_share = 0.25; // 10 packets: now the start's 16 do not fit (and 8 KB does)
	auto tighter = model_planner(config);
	const Plan bucketed = tighter->plan(phase, peers, config);
	EXPECT_GT(bucketed.bucket_bps.back(), 0u) << bucketed.reason;
	EXPECT_EQ(bucketed.bucket_burst_frames, 2u) << "10 packets for 4 hosts";
}

// Connections that cross no bottleneck (models.md): in a phase whose connections all run at once,
// the same side's are paced at the crossing connections' rate (they end no later than those), so
// that they do not burst at the start; one at a time (pairwise) they are left alone, as they are
// with [pacing] pace_local_peers = false, and the prediction is the same either way.
TEST(ModelPlanner, SameSideConnectionsOfALinearPhaseArePacedLikeTheCrossingOnes)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	const Plan linear = planner->plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	ASSERT_EQ(peers.back().rank, 15);
	const uint64_t crossing_rate = linear.rate_bps.back();
	ASSERT_GT(crossing_rate, 0u);
	for (size_t i = 0; i < peers.size(); ++i)
		EXPECT_EQ(linear.rate_bps[i], crossing_rate) << "rank " << peers[i].rank;
	EXPECT_NE(linear.reason.find("7 connections crossing no bottleneck paced alike"), std::string::npos)
		<< linear.reason;

	Config free_local = two_sided();
	free_local.pace_local_peers = false;
	auto planner2 = model_planner(free_local);
	const Plan unpaced_local = planner2->plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR), peers, free_local);
	for (size_t i = 0; i < peers.size(); ++i)
		EXPECT_EQ(unpaced_local.rate_bps[i], peers[i].rank < 8 ? 0u : crossing_rate) << "rank " << peers[i].rank;
	EXPECT_EQ(unpaced_local.predicted_us, linear.predicted_us);
	EXPECT_EQ(unpaced_local.reason.find("crossing no bottleneck"), std::string::npos) << unpaced_local.reason;

	const Plan pairwise = planner->plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, config);
	for (size_t i = 0; i < peers.size(); ++i) {
		if (peers[i].rank < 8)
			EXPECT_EQ(pairwise.rate_bps[i], 0u) << "same side, rank " << peers[i].rank;
		else
			EXPECT_GT(pairwise.rate_bps[i], 0u) << "rank " << peers[i].rank;
	}

	hint::Header bcast = alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR);
	bcast.kind = GAPPACE_HINT_KIND_BCAST; // a rooted kind: its peers' shares differ
	const Plan rooted = planner->plan(bcast, peers, config);
	for (size_t i = 0; i < peers.size(); ++i)
		EXPECT_TRUE(peers[i].rank >= 8 || rooted.rate_bps[i] == 0) << "same side, rank " << peers[i].rank;
}

// PlogP-BR's E_q = 0 (q >= n m): no tail loss to expect, so every remedy only costs.
TEST(ModelPlanner, ABurstThatFitsTheQueueGetsNothing)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	Plan plan = planner->plan(alltoall(256, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_TRUE(plan.empty()) << plan.reason;
	EXPECT_NE(plan.reason.find("nothing"), std::string::npos) << plan.reason;
	EXPECT_TRUE(plan.inert) << "no remedy can change a burst the queue holds";
	Plan overflowing = planner->plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_FALSE(overflowing.inert) << overflowing.reason;
}

// With pacing switched off the cheapest remedy left for an overflowing burst is the RTO floor:
// T = base + E_q T_RTO with T_RTO = floor instead of 200 ms.
TEST(ModelPlanner, WithoutPacingAnOverflowGetsTheRtoFloor)
{
	Config config = two_sided();
	config.pacing = false;
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	Plan plan = planner->plan(alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	for (uint64_t r : plan.rate_bps)
		EXPECT_EQ(r, 0u);
	EXPECT_EQ(plan.rto_min_us, config.rto_floor_us) << plan.reason;
}

TEST(ModelPlanner, NoBottleneckCrossedMeansNothing)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	peers.resize(7); // the left side only
	Plan plan = planner->plan(alltoall(1 << 20, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_TRUE(plan.empty());
	EXPECT_EQ(plan.predicted_us, 0);
}

// What the planner says of itself in `gapctl daemon show`.
std::string described(const Planner &planner)
{
	JsonWriter json;
	json.begin_object();
	planner.describe(json);
	json.end_object();
	return json.str();
}

// Calibration: measured / predicted per (kind, size class, P) becomes the correction factor
// (the median of the last nine ratios, clamped) that scales the next prediction.
TEST(ModelPlanner, PhaseEndsCalibrateTheNextPrediction)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR);
	Plan first = planner->plan(phase, peers, config);
	ASSERT_GT(first.predicted_us, 0);
	EXPECT_DOUBLE_EQ(first.calibrated_us, first.predicted_us) << "no sample yet: factor 1";
	for (int i = 0; i < 20; ++i)
		planner->observe(phase, first.predicted_us, static_cast<uint64_t>(first.predicted_us * 1.5 * 1000), first);
	Plan next = planner->plan(phase, peers, config);
	EXPECT_NEAR(next.calibrated_us / next.predicted_us, 1.5, 1e-6);
	EXPECT_NE(described(*planner).find("\"samples\":20"), std::string::npos) << described(*planner);
}

// The phases a sender skipped under quiet advice come back as a count and a summed time: one
// calibration sample, their mean, weighing as many phases. A summary that says nothing (no phase, no time, no
// prediction to compare with) is no sample.
TEST(ModelPlanner, QuietSummariesCalibrateWithTheirMean)
{
	Config config = two_sided();
	auto planner = model_planner(config);
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(1024, GAPPACE_HINT_ALGORITHM_LINEAR);
	Plan first = planner->plan(phase, peers, config);
	ASSERT_GT(first.predicted_us, 0);
	auto samples = [&] { return described(*planner); };
	planner->observe_quiet(phase, first.predicted_us, 0, 1000000, plan_kind(first));
	planner->observe_quiet(phase, first.predicted_us, 10, 0, plan_kind(first));
	planner->observe_quiet(phase, 0, 10, 1000000, plan_kind(first));
	EXPECT_EQ(samples().find("\"samples\""), std::string::npos) << samples();
	// 9 summaries of 40 phases each, every phase 2.5x its prediction on average.
	const auto total_ns = static_cast<uint64_t>(40 * first.predicted_us * 2.5 * 1000);
	for (int i = 0; i < 9; ++i)
		planner->observe_quiet(phase, first.predicted_us, 40, total_ns, plan_kind(first));
	Plan next = planner->plan(phase, peers, config);
	EXPECT_NEAR(next.calibrated_us / next.predicted_us, 2.5, 1e-6);
	EXPECT_NE(samples().find("\"samples\":360"), std::string::npos) << "a summary weighs its phases: " << samples();
}

// Learning the plan (models/plan_learner.hpp): where the models predict a tail loss that never
// happens, the measured phase times of the RTO floor (explored because its predicted loss costs
// milliseconds, not 200 ms) beat pacing's, and the floor runs within 600 phases; with
// [planner] learn = false (the default) the models' choice always runs.
TEST(ModelPlanner, MeasuredPhaseTimesOverrideTheModelsLossVerdict)
{
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(4096, GAPPACE_HINT_ALGORITHM_LINEAR);
	for (bool learn : {true, false}) {
		Config config = two_sided();
		config.learn_plans = learn;
		auto planner = model_planner(config);
		Plan plan;
		int floored_unpaced = 0;
		for (int i = 0; i < 600; ++i) {
			plan = planner->plan(phase, peers, config);
			const models::PlanKind kind = plan_kind(plan);
			if (kind == models::PlanKind::Rto)
				++floored_unpaced;
			// This world: pacing costs time, unpaced phases never lose a tail.
			const double measured_us = kind == models::PlanKind::Pace || kind == models::PlanKind::Both ? 3000 : 2000;
			planner->observe(phase, plan.predicted_us, static_cast<uint64_t>(measured_us * 1000), plan);
		}
		if (learn) {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Rto) << plan.reason;
			EXPECT_NE(plan.reason.find("measured: rto"), std::string::npos) << plan.reason;
			EXPECT_GT(floored_unpaced, 100);
			EXPECT_FALSE(plan.holdable) << "the learner explores: it must see every phase";
		} else {
			// Paced, and with the floor from the start: a 4 KB phase on 8+8 hosts is short
			// (kPacedStallChanceFloor).
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << plan.reason;
			EXPECT_EQ(floored_unpaced, 0);
			EXPECT_TRUE(plan.holdable) << "the models' pacing of a 4 KB phase: " << plan.reason;
		}
	}
}

// Holding a remedy through the phases its sender skips (Plan::holdable): only where the planner
// needs no phase's own END. Paced phases long enough for their stalls to be counted (a quarter
// of the stock RTO) are seen one by one.
TEST(ModelPlanner, ARemedyIsHeldOnlyWherePhasesNeedNotBeSeenOneByOne)
{
	auto peers = cluster_peers();
	Config config = two_sided();
	auto planner = model_planner(config);
	const Plan short_phase = planner->plan(alltoall(16384, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	ASSERT_FALSE(short_phase.empty()) << short_phase.reason;
	EXPECT_LT(short_phase.calibrated_us, 50000) << short_phase.reason;
	EXPECT_TRUE(short_phase.holdable) << short_phase.reason;
	const Plan long_phase = planner->plan(alltoall(1 << 20, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	ASSERT_EQ(plan_kind(long_phase), models::PlanKind::Pace) << long_phase.reason;
	EXPECT_GT(long_phase.calibrated_us, 50000) << long_phase.reason;
	EXPECT_FALSE(long_phase.holdable) << long_phase.reason;
	const Plan fits = planner->plan(alltoall(256, GAPPACE_HINT_ALGORITHM_PAIRWISE), peers, config);
	EXPECT_TRUE(fits.inert) << fits.reason;
	EXPECT_FALSE(fits.holdable) << "inert: nothing to hold";
	// Where the loss check may try the key (its counters readable), only once it is sure the
	// key will never be tried: a burst of 64 x 16 KB is more than twice the queue.
	models::HostTcpCounters host;
	planner->set_counter_source([&] { return std::optional<models::HostTcpCounters>(host); });
	const Plan tried = planner->plan(alltoall(1024, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_NE(tried.reason.find("loss check: trial"), std::string::npos) << tried.reason;
	EXPECT_FALSE(tried.holdable) << tried.reason;
	const Plan never_tried = planner->plan(alltoall(16384, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
	EXPECT_EQ(never_tried.reason.find("loss check"), std::string::npos) << never_tried.reason;
	EXPECT_TRUE(never_tried.holdable) << never_tried.reason;
}

// `phases` phases of `phase` on a host whose counters the test moves: each sends 48 segments
// and takes 3 ms; the last plan is returned.
Plan run_phases(ModelPlanner &planner, models::HostTcpCounters &host, const hint::Header &phase,
		std::span<const PlannedPeer> peers, const Config &config, int phases)
{
	Plan plan;
	for (int i = 0; i < phases; ++i) {
		plan = planner.plan(phase, peers, config);
		host.segments_sent += 48;
		host.at_us += 3000;
		planner.observe(phase, plan.predicted_us, 3000000, plan);
	}
	return plan;
}

// The loss check (models/loss_check.hpp): the models say a 1 KB burst of 64 flows (64 KB,
// just over the 60 KB queue) overflows the planned queue share and pace it. A host whose counters show no loss while the key runs
// unpaced (with the floor) proves that verdict wrong: the key's phases then run as sent, and are
// inert, so the daemon advises the sender to skip their hints. A host that loses keeps pacing.
TEST(ModelPlanner, TheHostsCountersOverrideALossVerdictTheyRefute)
{
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(1024, GAPPACE_HINT_ALGORITHM_LINEAR);
	for (double loss : {0.0, 0.05}) {
		Config config = two_sided();
		ASSERT_EQ(config.loss_check_phases, 32u) << "on by default";
		auto planner = model_planner(config);
		models::HostTcpCounters host;
		planner->set_counter_source([&] { return std::optional<models::HostTcpCounters>(host); });
		int trial = 0, paced = 0, inert = 0, settling = 0, settled = 0, held = 0;
		Plan plan;
		for (int i = 0; i < 100; ++i) {
			plan = planner->plan(phase, peers, config);
			const models::PlanKind kind = plan_kind(plan);
			trial += kind == models::PlanKind::Rto;
			paced += kind == models::PlanKind::Pace || kind == models::PlanKind::Both;
			inert += plan.inert;
			// The loss check follows this key: its phases are seen one by one.
			held += plan.holdable;
			EXPECT_FALSE(plan.holdable && kind == models::PlanKind::Rto) << "a trial phase held, phase " << i;
			// A new verdict's sender is advised quiet for 100 ms until its first judgment
			// (1000 segments here), then for the configured period.
			if (plan.inert && plan.quiet_ms) {
				EXPECT_EQ(plan.quiet_ms, 100u);
				EXPECT_EQ(settled, 0) << "settling comes first, phase " << i;
				++settling;
			}
			settled += plan.inert && !plan.quiet_ms;
			// The phase's traffic: 8 x 3 segments and their ACKs; unpaced ones lose `loss`.
			host.segments_sent += 48;
			if (kind == models::PlanKind::Rto || kind == models::PlanKind::Nothing)
				host.segments_retransmitted += static_cast<uint64_t>(48 * loss);
			host.at_us += 3000;
			planner->observe(phase, plan.predicted_us, 3000000, plan);
		}
		const std::string json = described(*planner);
		if (loss == 0) {
			EXPECT_EQ(trial, 32) << "a trial of loss_check_phases phases, unpaced with the floor";
			EXPECT_EQ(paced, 0) << "the trial starts at the key's first phase";
			EXPECT_EQ(inert, 100 - 32);
			EXPECT_EQ(held, 0) << "trial phases, then inert ones";
			EXPECT_EQ(settling, 1000 / 48 + 1) << "the phases up to the first judgment of 1000 segments";
			EXPECT_EQ(settled, inert - settling);
			EXPECT_NE(json.find("\"settling\":false"), std::string::npos) << json;
			EXPECT_TRUE(plan.empty()) << plan.reason;
			EXPECT_NE(plan.reason.find("loss check: lossless"), std::string::npos) << plan.reason;
			EXPECT_NE(json.find("\"stage\":\"lossless\""), std::string::npos) << json;
			EXPECT_GT(plan.predicted_us, 0);
			EXPECT_LT(plan.predicted_us, 8e6 * 64 * 1024 / 200e6 + 1000) << "the link's time; no RTO predicted";
		} else {
			EXPECT_EQ(trial, 2) << "the first phase's losses, judged at the second END";
			EXPECT_EQ(paced, 98);
			EXPECT_EQ(held, 0) << "a lossy key's next trial waits for a phase count the hosts reach together";
			EXPECT_EQ(inert, 0);
			EXPECT_NE(json.find("\"stage\":\"lossy\""), std::string::npos) << json;
			EXPECT_NE(json.find("\"last_failure\":\"losses\""), std::string::npos) << json;
		}
	}
	// Timeouts after a passed trial (rare tail losses): the floor alone, unpaced, not the models'
	// pacing, and the floor priced at the configured one.
	{
		Config config = two_sided();
		auto planner = model_planner(config);
		models::HostTcpCounters host;
		planner->set_counter_source([&] { return std::optional<models::HostTcpCounters>(host); });
		Plan plan = run_phases(*planner, host, phase, peers, config, 40);
		ASSERT_TRUE(plan.empty()) << plan.reason;
		host.timeouts += 1;
		host.segments_retransmitted += 1; // what the timeout retransmitted was lost
		host.at_us += 1e6;
		int floored = 0;
		for (int i = 0; i < 20; ++i) {
			plan = planner->plan(phase, peers, config);
			if (plan.reason.find("loss check: floored") == std::string::npos)
				continue;
			++floored;
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Rto) << plan.reason;
			EXPECT_FALSE(plan.inert);
			EXPECT_FALSE(plan.holdable) << "floored phases are audited one by one";
			EXPECT_EQ(plan.rto_min_us, config.rto_floor_us);
			host.segments_sent += 48;
			host.at_us += 3000;
			planner->observe(phase, plan.predicted_us, 3000000, plan);
		}
		EXPECT_EQ(floored, 20);
		const std::string json = described(*planner);
		EXPECT_NE(json.find("\"stage\":\"floored\""), std::string::npos) << json;
		EXPECT_NE(json.find("\"floored\":1"), std::string::npos) << json;
	}
	// Losses after a passed trial that cost more than pacing would (models/loss_check.hpp, 3.):
	// each costs two round trips through the full queue, 2 (100 us + 40 x 1500 B at 200 Mbit/s)
	// = 5 ms, and every host of the all-to-all is presumed to lose alike, since each phase waits
	// for all of them. Against the time the models' pacing adds to the unpaced phase plus 5 %,
	// the key goes back to the models' pacing. Under the 1 % backstop, the verdict would have
	// stood. Losses within that budget, but three or more a second, take the floor alone (rare
	// losses); fewer stay lossless.
	{
		const Config config = two_sided();
		// The same 16 ranks on 2 hosts: 1-7 on ours, 8-15 on one across the bottleneck. The
		// models see the same phase (ranks, not hosts, make its flows).
		std::vector<PlannedPeer> two_hosts = cluster_peers();
		for (PlannedPeer &p : two_hosts)
			p.remote = *parse_host_address(side_address(p.rank >= 8, 1, false));
		enum class Outcome { Recovery, RareLosses, Lossless };
		for (const auto &[hosts, peer_set] : {std::pair{16, cluster_peers()}, std::pair{2, two_hosts}}) {
			for (Outcome outcome : {Outcome::Recovery, Outcome::RareLosses, Outcome::Lossless}) {
				auto planner = model_planner(config);
				models::HostTcpCounters host;
				planner->set_counter_source([&] { return std::optional<models::HostTcpCounters>(host); });
				Plan plan = run_phases(*planner, host, phase, peer_set, config, 40);
				ASSERT_TRUE(plan.empty()) << plan.reason;
				const std::string before = described(*planner);
				EXPECT_NE(before.find("\"recovery_us\":5000"), std::string::npos) << before;
				EXPECT_NE(before.find("\"budget_hosts\":" + std::to_string(hosts) + "}"), std::string::npos)
					<< before;
				const auto at = before.find("\"paced_slack\":");
				ASSERT_NE(at, std::string::npos);
				const double slack = std::stod(before.substr(at + 14));
				EXPECT_GE(slack, 0);
				// What the collective's losses of a second may cost, and one host's losses that
				// cost more (10 % more: a window spans a little over its second).
				const double budget_us = (slack + models::LossCheck::kPacingOverhead) * 1e6;
				const auto over = std::max<uint64_t>(models::LossCheck::kBudgetMinLosses,
								     static_cast<uint64_t>(1.1 * budget_us / (5000.0 * hosts)) + 1);
				uint64_t lost = 0;
				if (outcome == Outcome::Recovery) {
					lost = over;
				} else if (outcome == Outcome::RareLosses) {
					lost = models::LossCheck::kBudgetMinLosses;
					if (lost >= over) { // 16 hosts: three losses a second already cost more
						EXPECT_EQ(hosts, 16);
						continue;
					}
				} else {
					lost = models::LossCheck::kBudgetMinLosses - 1;
				}
				ASSERT_LT(lost, 200u) << "under the 1 % backstop";
				for (int second = 0; second < 2; ++second) { // a rate, not a burst: two windows
					host.segments_sent += 20000;
					host.segments_retransmitted += lost;
					host.at_us += 1e6;
					plan = planner->plan(phase, peer_set, config);
				}
				const std::string after = described(*planner);
				if (outcome == Outcome::Recovery) {
					EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << lost << " lost: " << plan.reason;
					EXPECT_NE(after.find("\"last_failure\":\"recovery\""), std::string::npos) << after;
				} else if (outcome == Outcome::RareLosses) {
					EXPECT_EQ(plan_kind(plan), models::PlanKind::Rto) << lost << " lost: " << plan.reason;
					EXPECT_EQ(plan.rate_bps, std::vector<uint64_t>(peer_set.size(), 0)) << "unpaced";
					EXPECT_NE(after.find("\"last_failure\":\"rare losses\""), std::string::npos) << after;
				} else {
					EXPECT_TRUE(plan.empty()) << lost << " lost: " << plan.reason;
				}
			}
		}
	}
	// Switched off, or without the floor to make a trial cheap: the models decide.
	for (bool rto : {true, false}) {
		Config config = two_sided();
		config.rto = rto;
		config.loss_check_phases = rto ? 0 : 32;
		auto planner = model_planner(config);
		models::HostTcpCounters host;
		planner->set_counter_source([&] { return std::optional<models::HostTcpCounters>(host); });
		for (int i = 0; i < 40; ++i) {
			Plan plan = planner->plan(phase, peers, config);
			EXPECT_EQ(plan_kind(plan), rto ? models::PlanKind::Both : models::PlanKind::Pace) << plan.reason;
			host.segments_sent += 48;
			host.at_us += 3000;
			planner->observe(phase, plan.predicted_us, 3000000, plan);
		}
	}
}

// Paced phases that stall (wait on a 200 ms timer) buy the floor for their key: Open MPI's
// eager 16 KB phases did, about one in ten, and the floor took them from 0.33 to 0.52 of C
// (performance.md). Where paced phases never stall, the floor's running cost keeps them paced.
TEST(ModelPlanner, PacedPhasesThatStallTakeTheFloorToo)
{
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(16384, GAPPACE_HINT_ALGORITHM_LINEAR);
	for (bool stalls : {true, false}) {
		Config config = two_sided();
		auto planner = model_planner(config);
		Plan plan = planner->plan(phase, peers, config);
		ASSERT_EQ(plan_kind(plan), models::PlanKind::Pace) << plan.reason;
		for (int i = 0; i < 40; ++i) {
			plan = planner->plan(phase, peers, config);
			double measured_us = plan.predicted_us * 1.1;
			if (stalls && plan_kind(plan) == models::PlanKind::Pace && i % 10 == 9)
				measured_us += 210000; // a 200 ms delayed ACK or RTO
			planner->observe(phase, plan.predicted_us, static_cast<uint64_t>(measured_us * 1000), plan);
		}
		plan = planner->plan(phase, peers, config);
		const std::string json = described(*planner);
		if (stalls) {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << plan.reason;
			EXPECT_NE(json.find("\"stalled\":1"), std::string::npos) << json;
		} else {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Pace) << plan.reason;
			EXPECT_NE(json.find("\"phases\":40,\"stalled\":0"), std::string::npos) << json;
		}
	}
}

// A paced phase's stall chance is never taken below 1 % (kPacedStallChanceFloor): a tail the
// queue drops anyway can wait a loss probe of 200 ms, and the host that waits is often not the
// one whose floor would shorten it. So a short paced phase takes the floor from the start, where
// the floor's running cost (floor_cost of the phase) is below 1 % of a 200 ms stall, and a long
// one waits for its own stalls: on 8+8 hosts at the default floor_cost, 4 KB phases (about 11 ms
// paced) are floored and 64 KB ones (about 170 ms) are not. A floor_cost of 0 floors every paced
// phase; a large one none without a measured stall.
TEST(ModelPlanner, ShortPacedPhasesTakeTheFloorFromTheStart)
{
	auto peers = cluster_peers();
	struct Case {
		uint64_t bytes;
		double floor_cost;
		models::PlanKind expected;
	};
	const Case cases[] = {
		{4096, -1, models::PlanKind::Both},  {65536, -1, models::PlanKind::Pace},
		{65536, 0, models::PlanKind::Both},  {4096, 0.5, models::PlanKind::Pace},
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(std::to_string(c.bytes) + " B, floor_cost " + std::to_string(c.floor_cost));
		Config config = two_sided();
		config.loss_check_phases = 0; // the models' plan, not a trial's
		if (c.floor_cost >= 0)
			config.floor_cost = c.floor_cost;
		auto planner = model_planner(config);
		const Plan plan = planner->plan(alltoall(c.bytes, GAPPACE_HINT_ALGORITHM_LINEAR), peers, config);
		EXPECT_EQ(plan_kind(plan), c.expected) << plan.reason;
	}
}

// Under held advice (`quiet_remedied`) most of a short paced key's phases are skipped and come
// back as a summary: a count and their summed time. A stall among them must count as one among
// hinted phases does, or the key never takes the floor (Open MPI's eager 16 KB phases on 4+4
// hosts: one call in 25-50 waited about 200 ms, every daemon counted none). A summary counts a
// stall where its phases together took at least 100 ms and half again past their calibrated
// prediction, one per 200 ms of excess; its phases all count. Summaries of phases that ran
// unpaced (inert advice) or floored are not the paced phases' stalls.
TEST(ModelPlanner, StallsInsideQuietSummariesOfPacedPhasesCount)
{
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(16384, GAPPACE_HINT_ALGORITHM_LINEAR);
	struct Case {
		models::PlanKind ran_as;
		double stall_us; // added to every fourth summary
		models::PlanKind expected;
		const char *stalls_json;
	};
	const Case cases[] = {
		{models::PlanKind::Pace, 210000, models::PlanKind::Both, nullptr},
		// One stall of 310 ms counts once, not twice.
		{models::PlanKind::Pace, 310000, models::PlanKind::Both, nullptr},
		{models::PlanKind::Pace, 0, models::PlanKind::Pace, "\"phases\":168,\"stalled\":0"},
		// 60 ms past 6 phases of about 46 ms (16 KB on 8+8 hosts, calibrated): slower, but no
		// 200 ms timer.
		{models::PlanKind::Pace, 60000, models::PlanKind::Pace, "\"phases\":168,\"stalled\":0"},
		{models::PlanKind::Nothing, 210000, models::PlanKind::Pace, "\"phases\":24,\"stalled\":0"},
		{models::PlanKind::Both, 210000, models::PlanKind::Pace, "\"phases\":24,\"stalled\":0"},
	};
	for (const Case &c : cases) {
		SCOPED_TRACE(std::string(models::plan_name(c.ran_as)) + " +" + std::to_string(c.stall_us) + " us");
		Config config = two_sided();
		auto planner = model_planner(config);
		Plan plan = planner->plan(phase, peers, config);
		ASSERT_EQ(plan_kind(plan), models::PlanKind::Pace) << plan.reason;
		// Between about 24 ms (shorter ones are floored from the start) and 50 ms (longer ones
		// are seen one by one).
		ASSERT_TRUE(plan.holdable) << "a short paced phase is held under advice: " << plan.reason;
		// 24 hinted phases, each followed by a summary of the 6 phases skipped after it.
		for (int i = 0; i < 24 && plan_kind(plan) == models::PlanKind::Pace; ++i) {
			const double predicted_us = plan.predicted_us;
			planner->observe(phase, predicted_us, static_cast<uint64_t>(predicted_us * 1.1 * 1000), plan);
			const double total_us = 6 * predicted_us * 1.1 + (i % 4 == 3 ? c.stall_us : 0);
			planner->observe_quiet(phase, predicted_us, 6, static_cast<uint64_t>(total_us * 1000), c.ran_as);
			plan = planner->plan(phase, peers, config);
		}
		EXPECT_EQ(plan_kind(plan), c.expected) << plan.reason;
		const std::string json = described(*planner);
		if (c.stalls_json)
			EXPECT_NE(json.find(c.stalls_json), std::string::npos) << json;
		else
			EXPECT_NE(json.find("\"stalled\":1,"), std::string::npos) << "one stall, seen in a summary: " << json;
	}
}

// A floor with `[rto] quickack` makes receivers acknowledge every segment (the stock backend's
// route asks for quickack), so with data both ways the floored plan leaves room for one ACK per
// segment, a = o / (mss + o), where the paced one leaves it for one per two: the connections'
// rates and the host bucket's parts are C / (1 + a) based. Planned at the paced plan's rates,
// such floored phases overflowed the queue by the difference (3+5 hosts, 100 Mbit/s, 20
// packets, 64 KB: 0.64-0.81 of C against 0.91). Without quickack (the default) a floor leaves
// the delayed ACKs' count as it is, and the floored plan keeps the paced plan's rates.
void expect_floored_rates_for_acks(bool quickack)
{
	auto peers = cluster_peers();
	const uint64_t m = 65536;
	const hint::Header phase = alltoall(m, GAPPACE_HINT_ALGORITHM_LINEAR);
	Config config = two_sided();
	config.rto_quickack = quickack;
	auto planner = model_planner(config);
	Plan plan = planner->plan(phase, peers, config);
	ASSERT_EQ(plan_kind(plan), models::PlanKind::Pace) << plan.reason;
	const Plan paced = plan;
	// Stalls of the paced phases (as in the test above) buy the floor.
	for (int i = 0; i < 40 && plan_kind(plan) == models::PlanKind::Pace; ++i) {
		planner->observe(phase, plan.predicted_us,
				 static_cast<uint64_t>((plan.predicted_us * 1.1 + (i % 4 == 3 ? 210000 : 0)) * 1000), plan);
		plan = planner->plan(phase, peers, config);
	}
	ASSERT_EQ(plan_kind(plan), models::PlanKind::Both) << plan.reason;
	const double n = 8.0 * 8.0;
	const double q = std::floor(40 * config.queue_share) * 1500;
	const double o = static_cast<double>(config.frame_overhead);
	const double every_other = o / (2.0 * (config.mtu - 52.0 + o));
	const double floored = quickack ? 2 * every_other : every_other;
	for (size_t i = 0; i < peers.size(); ++i) {
		const bool crosses = peers[i].rank >= 8;
		EXPECT_NEAR(static_cast<double>(paced.rate_bps[i]), 200e6 / (1.0 + every_other) * m / (n * m - q / 2), 1.0);
		EXPECT_NEAR(static_cast<double>(plan.rate_bps[i]), 200e6 / (1.0 + floored) * m / (n * m - q / 2), 1.0)
			<< "rank " << peers[i].rank << ": " << plan.reason;
		EXPECT_NEAR(static_cast<double>(paced.bucket_bps[i]), crosses ? 200e6 / (1.0 + every_other) / n : 0.0, 1.0);
		EXPECT_NEAR(static_cast<double>(plan.bucket_bps[i]), crosses ? 200e6 / (1.0 + floored) / n : 0.0, 1.0)
			<< "rank " << peers[i].rank;
	}
}

TEST(ModelPlanner, AFlooredPhaseLeavesRoomForAnAckPerSegment) // with quickack
{
	expect_floored_rates_for_acks(true);
}

TEST(ModelPlanner, AFloorWithoutQuickackKeepsTheDelayedAcksShare)
{
	expect_floored_rates_for_acks(false);
}

// The loss check's presumption (models/loss_check.hpp, 6.): 64 flows of 800 B (51 KB) overflow
// the half of the 40-packet queue the models plan with, but fit the whole queue: the key starts
// lossless, its phases inert, without a trial; with 1 KB (64 KB, more than the queue) it
// starts with a trial.
// The first plan of a fresh planner for a linear all-to-all of `bytes` on the 8+8 cluster, whose
// host counters (never changing) were read `reads` times for it.
struct FirstPlan {
	Plan plan;
	std::string described;
	int reads = 0;
};

FirstPlan first_plan(uint64_t bytes)
{
	const Config config = two_sided();
	auto planner = model_planner(config);
	models::HostTcpCounters host;
	FirstPlan first;
	planner->set_counter_source([&] {
		++first.reads;
		return std::optional<models::HostTcpCounters>(host);
	});
	first.plan = planner->plan(alltoall(bytes, GAPPACE_HINT_ALGORITHM_LINEAR), cluster_peers(), config);
	first.described = described(*planner);
	return first;
}

TEST(ModelPlanner, ABurstThatFitsTheWholeQueueIsPresumedLossless)
{
	for (uint64_t bytes : {800, 1024}) {
		const auto [plan, json, reads] = first_plan(bytes);
		if (bytes == 800) {
			EXPECT_TRUE(plan.empty()) << plan.reason;
			EXPECT_TRUE(plan.inert) << plan.reason;
			EXPECT_NE(plan.reason.find("loss check: lossless, presumed"), std::string::npos) << plan.reason;
			EXPECT_NE(json.find("\"presumed\":true"), std::string::npos);
		} else {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Rto) << plan.reason;
			EXPECT_NE(plan.reason.find("loss check: trial 1"), std::string::npos) << plan.reason;
		}
	}
}

// No trial where the verdict is not in doubt (models/loss_check.hpp, 1.): 64 flows of 4 KB are
// 4.4 times the whole 60 KB queue, and stock Linux would survive that only if the flows' starts
// spread over three quarters of the phase. The models' plan runs from the first phase, and the
// counters are never read for it. At 1.875 KB (2.0 times the queue) the trial still runs.
TEST(ModelPlanner, ABurstFarBeyondTheQueueIsNotTried)
{
	for (uint64_t bytes : {4096, 1875}) {
		const auto [plan, json, reads] = first_plan(bytes);
		if (bytes == 4096) {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << plan.reason;
			EXPECT_EQ(plan.reason.find("loss check"), std::string::npos) << plan.reason;
			EXPECT_EQ(reads, 0);
		} else {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Rto) << plan.reason;
			EXPECT_NE(plan.reason.find("loss check: trial 1"), std::string::npos) << plan.reason;
		}
	}
}

// A stall of a paced phase near the timer's length (8+8 hosts at 64 KB: about 176 ms predicted)
// adds less than the phase's own time. One in five phases 180 ms late buys the floor, with a
// timeout counted around it (this host's flow waited) or without (another host's did: most of
// the timer late and half as long again is not spread). 80 ms late without a timeout may be
// spread, and a timeout in a phase that was not late cost nothing: neither does.
TEST(ModelPlanner, TimeoutsCountedAroundLongPacedPhasesAreStallsToo)
{
	auto peers = cluster_peers();
	const hint::Header phase = alltoall(65536, GAPPACE_HINT_ALGORITHM_LINEAR);
	struct World {
		double late_us;
		bool timeout;
	};
	for (const World w : {World{180000, true}, World{180000, false}, World{0, true}, World{80000, false}}) {
		Config config = two_sided();
		auto planner = model_planner(config);
		models::HostTcpCounters host;
		int reads = 0;
		planner->set_counter_source([&] {
			++reads;
			return std::optional<models::HostTcpCounters>(host);
		});
		Plan plan = planner->plan(phase, peers, config);
		ASSERT_EQ(plan_kind(plan), models::PlanKind::Pace) << plan.reason;
		ASSERT_GT(plan.predicted_us, 2 * 50000.0) << "a phase the loss check does not try";
		ASSERT_LT(plan.predicted_us, 200000.0);
		for (int i = 0; i < 30; ++i) {
			plan = planner->plan(phase, peers, config);
			double measured_us = plan.predicted_us * 1.05;
			if (plan_kind(plan) == models::PlanKind::Pace && i % 5 == 4) {
				measured_us += w.late_us;
				if (w.timeout) {
					host.timeouts += 1;
					host.segments_retransmitted += 1;
				}
			}
			host.segments_sent += 1000;
			host.at_us += measured_us;
			planner->observe(phase, plan.predicted_us, static_cast<uint64_t>(measured_us * 1000), plan);
		}
		plan = planner->plan(phase, peers, config);
		const std::string json = described(*planner);
		const std::string label = std::to_string(w.late_us / 1000) + " ms late" + (w.timeout ? ", timeout" : "");
		if (w.late_us == 180000 && w.timeout) {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << label << ": " << plan.reason;
			EXPECT_NE(json.find("\"by_timeouts\":"), std::string::npos) << json;
			EXPECT_EQ(json.find("\"by_timeouts\":0"), std::string::npos) << json;
		} else if (w.late_us == 180000) {
			// Another host's timeout held the phase up: nearly the whole timer late, by itself.
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Both) << label << ": " << plan.reason;
			EXPECT_NE(json.find("\"by_timeouts\":0"), std::string::npos) << json;
			EXPECT_EQ(json.find("\"stalled\":0"), std::string::npos) << json;
		} else {
			EXPECT_EQ(plan_kind(plan), models::PlanKind::Pace) << label << ": " << plan.reason;
			EXPECT_NE(json.find("\"stalled\":0,\"by_timeouts\":0"), std::string::npos) << json;
		}
		EXPECT_GT(reads, 0) << label;
	}
}

// A hint marked rendezvous (GAPPACE_HINT_F_RENDEZVOUS, set by the PMPI shim beyond the MPI
// transport's eager limit) on a symmetric collective: pacing would make the two directions of
// every connection take turns, so the floor alone runs; the same phase sent eagerly is paced
// (with the floor). A rooted collective is not affected: its connections carry data one way.
TEST(ModelPlanner, RendezvousPhasesTakeTheFloorInsteadOfPacing)
{
	auto peers = cluster_peers();
	Config config = two_sided();
	auto planner = model_planner(config);
	hint::Header eager = alltoall(1 << 20, GAPPACE_HINT_ALGORITHM_LINEAR);
	const Plan paced = planner->plan(eager, peers, config);
	EXPECT_EQ(plan_kind(paced), models::PlanKind::Pace) << paced.reason;
	hint::Header rendezvous = eager;
	rendezvous.flags = GAPPACE_HINT_F_RENDEZVOUS;
	const Plan floored = planner->plan(rendezvous, peers, config);
	EXPECT_EQ(plan_kind(floored), models::PlanKind::Rto) << floored.reason;
	EXPECT_NE(floored.reason.find("(rendezvous)"), std::string::npos) << floored.reason;
	hint::Header rooted = rendezvous;
	rooted.kind = GAPPACE_HINT_KIND_BCAST;
	EXPECT_EQ(planner->plan(rooted, peers, config).reason.find("(rendezvous)"), std::string::npos);
}

TEST(ModelPlanner, AParameterFileThatDoesNotParseIsAnErrorNamingIt)
{
	Config config = two_sided();
	config.parameters_file = "/nonexistent/params.json";
	auto planner = make_planner(config);
	ASSERT_FALSE(planner);
	EXPECT_NE(planner.error().message.find("/nonexistent/params.json"), std::string::npos) << planner.error().message;
	config.parameters_file.clear();
	config.planner = "default";
	auto simple = make_planner(config);
	ASSERT_TRUE(simple);
	EXPECT_STREQ((*simple)->name(), "default");
}

} // namespace
} // namespace gp::daemon
