// Unit tests of gp-alltoall's pure parts (arguments, schedules, statistics, /proc parsing, the
// rendezvous protocol, the report), then short runs of the real program on loopback: several
// rank processes, a shape mismatch, a timeout and a killed rank.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "args.hpp"
#include "counters.hpp"
#include "report.hpp"
#include "schedule.hpp"
#include "stats.hpp"
#include "wire.hpp"

extern char **environ;

namespace gp::alltoall {
namespace {

// ---------------------------------------------------------------------------------------------
// Arguments

Expected<Options> parse(std::vector<std::string> args)
{
	args.insert(args.begin(), "gp-alltoall");
	std::vector<char *> argv;
	for (auto &arg : args)
		argv.push_back(arg.data());
	argv.push_back(nullptr);
	return parse_arguments(static_cast<int>(args.size()), argv.data());
}

std::vector<std::string> minimal(std::vector<std::string> extra = {})
{
	std::vector<std::string> args{"--rank", "1", "--ranks", "4", "--rendezvous", "10.1.2.1:7000",
				      "--bind", "10.1.2.2", "--msg", "64k", "--iterations", "10"};
	args.insert(args.end(), extra.begin(), extra.end());
	return args;
}

TEST(Arguments, DefaultsAndSuffixes)
{
	const auto o = parse(minimal());
	ASSERT_TRUE(o) << o.error().message;
	EXPECT_EQ(o->rank, 1);
	EXPECT_EQ(o->ranks, 4);
	EXPECT_EQ(format_endpoint(o->rendezvous), "10.1.2.1:7000");
	EXPECT_EQ(format_endpoint(o->bind), "10.1.2.2");
	EXPECT_EQ(o->msg, 65536u);
	EXPECT_EQ(o->iterations, 10u);
	EXPECT_FALSE(o->volume);
	EXPECT_EQ(o->pattern, Pattern::Pairwise);
	EXPECT_EQ(o->side, Side::None);
	EXPECT_EQ(o->timeout_seconds, 120.0);
	EXPECT_EQ(o->stall_ms, 100u);
	EXPECT_EQ(o->hints, HintMode::None);
	EXPECT_TRUE(o->verify);
	EXPECT_FALSE(o->trace_iterations);
	EXPECT_EQ(o->think_ms, 0u);
	EXPECT_FALSE(o->capacity_bps);
	EXPECT_FALSE(o->cc);
}

TEST(Arguments, EveryOption)
{
	auto args = minimal({"--pattern", "half", "--side", "right", "--capacity", "200mbit", "--timeout", "0.5",
			     "--setup-timeout", "3", "--stall-ms", "250", "--hints", "iteration", "--sndbuf", "4m",
			     "--rcvbuf", "2m", "--cc", "cubic", "--out", "/tmp/x.json", "--no-verify",
			     "--trace-iterations", "--think-ms", "100"});
	// --volume instead of --iterations
	args.erase(args.begin() + 10, args.begin() + 12);
	args.insert(args.end(), {"--volume", "1g"});
	const auto o = parse(args);
	ASSERT_TRUE(o) << o.error().message;
	EXPECT_EQ(o->pattern, Pattern::Half);
	EXPECT_EQ(o->side, Side::Right);
	EXPECT_EQ(o->capacity_bps, 200000000u);
	EXPECT_EQ(o->timeout_seconds, 0.5);
	EXPECT_EQ(o->setup_timeout_seconds, 3.0);
	EXPECT_EQ(o->stall_ms, 250u);
	EXPECT_EQ(o->hints, HintMode::Iteration);
	EXPECT_EQ(o->sndbuf, 4u << 20);
	EXPECT_EQ(o->rcvbuf, 2u << 20);
	EXPECT_EQ(o->cc, "cubic");
	EXPECT_EQ(o->out, "/tmp/x.json");
	EXPECT_FALSE(o->verify);
	EXPECT_TRUE(o->trace_iterations);
	EXPECT_EQ(o->think_ms, 100u);
	EXPECT_EQ(o->volume, 1ULL << 30);
	EXPECT_FALSE(o->iterations);
}

TEST(Arguments, HelpWins)
{
	const auto o = parse({"--help"});
	ASSERT_TRUE(o);
	EXPECT_TRUE(o->help);
}

void expect_usage_error(std::vector<std::string> args, const std::string &needle)
{
	const auto o = parse(args);
	ASSERT_FALSE(o) << "accepted: " << needle;
	EXPECT_NE(o.error().message.find(needle), std::string::npos) << o.error().message;
}

TEST(Arguments, BadInputIsRejectedWithAReason)
{
	expect_usage_error(minimal({"--bogus"}), "unknown option --bogus");
	expect_usage_error(minimal({"--pattern"}), "needs a value");
	expect_usage_error(minimal({"stray"}), "unexpected argument");
	auto one_rank = minimal();
	one_rank[3] = "1";
	expect_usage_error(one_rank, "--ranks wants a number 2..512");
	auto high_rank = minimal();
	high_rank[1] = "4";
	expect_usage_error(high_rank, "must be below --ranks 4");
	auto zero_msg = minimal();
	zero_msg[9] = "0";
	expect_usage_error(zero_msg, "--msg wants a size 1..");
	expect_usage_error(minimal({"--volume", "1m"}), "exactly one of --volume");
	auto neither = minimal();
	neither.resize(10);
	expect_usage_error(neither, "exactly one of --volume");
	expect_usage_error(minimal({"--pattern", "half"}), "--pattern half needs --side");
	expect_usage_error(minimal({"--pattern", "star"}), "--pattern wants pairwise, ring or half");
	expect_usage_error(minimal({"--side", "up"}), "--side wants left or right");
	auto bad_address = minimal();
	bad_address[5] = "10.1.2:7000";
	expect_usage_error(bad_address, "--rendezvous");
	auto no_port = minimal();
	no_port[5] = "10.1.2.1";
	expect_usage_error(no_port, "missing :PORT");
	auto bad_bind = minimal();
	bad_bind[7] = "h2";
	expect_usage_error(bad_bind, "--bind");
	auto mixed = minimal();
	mixed[7] = "fd00::2";
	expect_usage_error(mixed, "same address family");
	expect_usage_error(minimal({"--timeout", "0"}), "--timeout wants seconds");
	expect_usage_error(minimal({"--timeout", "1x"}), "--timeout wants seconds");
	expect_usage_error(minimal({"--capacity", "fast"}), "--capacity wants a rate");
	expect_usage_error(minimal({"--hints", "always"}), "--hints wants none, iteration or once");
	expect_usage_error(minimal({"--cc", "a_name_longer_than_15"}), "--cc wants");
	expect_usage_error(minimal({"--stall-ms", "0"}), "--stall-ms");
	expect_usage_error(minimal({"--think-ms", "600001"}), "--think-ms");
	expect_usage_error(minimal({"--think-ms", "-1"}), "--think-ms");
	auto many = minimal();
	many[11] = "100001";
	expect_usage_error(many, "--iterations wants a number 1..100000");
}

// ---------------------------------------------------------------------------------------------
// Schedules

std::vector<Side> no_sides(int ranks) { return std::vector<Side>(static_cast<size_t>(ranks), Side::None); }

TEST(Schedule, PairwiseUsesXorForPowersOfTwo)
{
	for (int phase = 1; phase < 8; ++phase) {
		const auto p = pairwise_partners(5, 8, phase);
		EXPECT_EQ(p.send_to, 5 ^ phase);
		EXPECT_EQ(p.recv_from, 5 ^ phase);
	}
	const auto schedule = make_schedule(Pattern::Pairwise, 2, no_sides(4));
	ASSERT_TRUE(schedule);
	EXPECT_EQ(schedule->send_order, (std::vector<int>{3, 0, 1}));
	EXPECT_EQ(schedule->peers, (std::vector<int>{0, 1, 3}));
}

TEST(Schedule, PairwiseShiftsWhenNotAPowerOfTwo)
{
	const auto p = pairwise_partners(1, 6, 2);
	EXPECT_EQ(p.send_to, 3);
	EXPECT_EQ(p.recv_from, 5);
	const auto schedule = make_schedule(Pattern::Pairwise, 4, no_sides(5));
	ASSERT_TRUE(schedule);
	EXPECT_EQ(schedule->send_order, (std::vector<int>{0, 1, 2, 3}));
}

TEST(Schedule, RingShiftsForEveryRankCount)
{
	const auto p = ring_partners(0, 4, 1);
	EXPECT_EQ(p.send_to, 1);
	EXPECT_EQ(p.recv_from, 3);
	const auto schedule = make_schedule(Pattern::Ring, 1, no_sides(4));
	ASSERT_TRUE(schedule);
	EXPECT_EQ(schedule->send_order, (std::vector<int>{2, 3, 0}));
}

// Every phase is a permutation without fixed points whose inverse is the receive partner, and
// each rank sends to every other exactly once per iteration.
TEST(Schedule, EveryPhaseIsAPermutationAndEveryPairIsCovered)
{
	for (Pattern pattern : {Pattern::Pairwise, Pattern::Ring}) {
		for (int ranks = 2; ranks <= 17; ++ranks) {
			std::vector<std::vector<int>> order;
			for (int rank = 0; rank < ranks; ++rank) {
				const auto schedule = make_schedule(pattern, rank, no_sides(ranks));
				ASSERT_TRUE(schedule);
				ASSERT_EQ(schedule->send_order.size(), static_cast<size_t>(ranks - 1));
				std::set<int> targets(schedule->send_order.begin(), schedule->send_order.end());
				EXPECT_EQ(targets.size(), static_cast<size_t>(ranks - 1)) << ranks;
				EXPECT_EQ(targets.count(rank), 0u);
				order.push_back(schedule->send_order);
			}
			for (int phase = 0; phase < ranks - 1; ++phase) {
				std::set<int> receivers;
				for (int rank = 0; rank < ranks; ++rank) {
					const int to = order[rank][phase];
					receivers.insert(to);
					const auto partners = pattern == Pattern::Ring
								      ? ring_partners(to, ranks, phase + 1)
								      : pairwise_partners(to, ranks, phase + 1);
					EXPECT_EQ(partners.recv_from, rank) << "P=" << ranks << " phase " << phase + 1;
				}
				EXPECT_EQ(receivers.size(), static_cast<size_t>(ranks));
			}
		}
	}
}

TEST(Schedule, HalfCrossesOnlyAndMatchesEqualSides)
{
	const std::vector<Side> sides{Side::Left, Side::Left, Side::Left, Side::Right, Side::Right, Side::Right};
	std::vector<std::vector<int>> order;
	for (int rank = 0; rank < 6; ++rank) {
		const auto schedule = make_schedule(Pattern::Half, rank, sides);
		ASSERT_TRUE(schedule) << schedule.error().message;
		for (int peer : schedule->send_order)
			EXPECT_NE(sides[peer], sides[rank]);
		EXPECT_EQ(schedule->send_order.size(), 3u);
		order.push_back(schedule->send_order);
	}
	EXPECT_EQ(order[1], (std::vector<int>{4, 5, 3})); // rotated by its index on the left
	EXPECT_EQ(order[3], (std::vector<int>{0, 1, 2}));
	for (size_t phase = 0; phase < 3; ++phase) {
		std::set<int> receivers;
		for (int rank = 0; rank < 6; ++rank)
			receivers.insert(order[rank][phase]);
		EXPECT_EQ(receivers.size(), 6u) << "phase " << phase << " is a matching";
	}
	// Unequal sides: the lone right rank sends to all three on the left.
	const std::vector<Side> lopsided{Side::Left, Side::Left, Side::Left, Side::Right};
	const auto lone = make_schedule(Pattern::Half, 3, lopsided);
	ASSERT_TRUE(lone);
	EXPECT_EQ(lone->send_order, (std::vector<int>{0, 1, 2}));
	const auto left = make_schedule(Pattern::Half, 2, lopsided);
	ASSERT_TRUE(left);
	EXPECT_EQ(left->send_order, (std::vector<int>{3}));
}

TEST(Schedule, HalfNeedsBothSides)
{
	EXPECT_FALSE(make_schedule(Pattern::Half, 0, std::vector<Side>{Side::Left, Side::Left}));
	EXPECT_FALSE(make_schedule(Pattern::Half, 0, std::vector<Side>{Side::Left, Side::None}));
	EXPECT_FALSE(make_schedule(Pattern::Pairwise, 2, no_sides(2)));
}

TEST(Schedule, PairsAndIterationPlans)
{
	const std::vector<Side> sides{Side::Left, Side::Left, Side::Right, Side::Right};
	EXPECT_EQ(data_pairs(Pattern::Pairwise, sides), 12u);
	EXPECT_EQ(data_pairs(Pattern::Half, sides), 8u);
	EXPECT_EQ(cross_pairs(sides), 8u);
	EXPECT_EQ(cross_pairs(no_sides(4)), 0u);
	// 4 MiB over 12 pairs of 64 KiB = 768 KiB per iteration: 5.33 -> 6
	EXPECT_EQ(plan_iterations(4 << 20, 65536, 12).iterations, 6u);
	EXPECT_EQ(plan_iterations(768 << 10, 65536, 12).iterations, 1u);
	EXPECT_EQ(plan_iterations(1, 65536, 12).iterations, 1u);
	const auto capped = plan_iterations(UINT64_MAX, 1, 2);
	EXPECT_EQ(capped.iterations, kMaxIterations);
	EXPECT_TRUE(capped.capped);
	EXPECT_FALSE(plan_iterations(100, 1, 1).capped);
}

// ---------------------------------------------------------------------------------------------
// Statistics

TEST(Stats, NearestRankPercentiles)
{
	std::vector<uint64_t> hundred;
	for (uint64_t i = 1; i <= 100; ++i)
		hundred.push_back(i);
	EXPECT_EQ(nearest_rank(hundred, 50), 50u);
	EXPECT_EQ(nearest_rank(hundred, 90), 90u);
	EXPECT_EQ(nearest_rank(hundred, 99), 99u); // not 100: no floating-point rounding up
	EXPECT_EQ(nearest_rank(hundred, 100), 100u);
	const std::vector<uint64_t> five{10, 20, 30, 40, 50};
	EXPECT_EQ(nearest_rank(five, 50), 30u);
	EXPECT_EQ(nearest_rank(five, 90), 50u);
	EXPECT_EQ(nearest_rank(five, 0), 10u);
	EXPECT_EQ(nearest_rank(std::vector<uint64_t>{7}, 99), 7u);
}

TEST(Stats, SummaryOverAllRanksAndIterations)
{
	EXPECT_FALSE(summarize_durations({}));
	EXPECT_FALSE(summarize_durations({{}, {}}));
	const auto summary = summarize_durations({{5, 1, 3}, {2, 4}, {200}});
	ASSERT_TRUE(summary);
	EXPECT_EQ(summary->samples, 6u);
	EXPECT_EQ(summary->p50_ns, 3u);
	EXPECT_EQ(summary->p90_ns, 200u);
	EXPECT_EQ(summary->max_ns, 200u);
}

TEST(Stats, AnIterationStallsOnceWhateverTheNumberOfRanks)
{
	// iteration 1 stalled on two ranks, iteration 3 on one; rank 2 ran fewer iterations
	const std::vector<std::vector<uint64_t>> d{{10, 500, 10, 10}, {10, 600, 10, 700}, {10, 10}};
	EXPECT_EQ(count_stalled_iterations(d, 100), 2u);
	EXPECT_EQ(count_stalled_samples(d, 100), 3u);
	EXPECT_EQ(count_stalled_iterations(d, 1000), 0u);
	EXPECT_EQ(count_stalled_iterations(d, 500), 2u); // strictly longer: 500 is not a stall
	EXPECT_EQ(count_stalled_samples(d, 500), 2u);
}

TEST(Stats, TraceJoinsTheRanksOfEachIteration)
{
	// rank 2 traced nothing (it adds no time either); rank 1 ran one iteration fewer
	const std::vector<std::vector<uint64_t>> d{{100, 400, 110, 90}, {120, 300, 500}, {9999, 9999}};
	const std::vector<std::vector<uint32_t>> retrans{{0, 3, 0, 0}, {0, 2, 1}, {}};
	const auto trace = trace_iterations(d, retrans);
	ASSERT_EQ(trace.size(), 4u);
	EXPECT_EQ(trace[0].slowest_ns, 120u);
	EXPECT_EQ(trace[0].slowest_rank, 1u);
	EXPECT_EQ(trace[0].retrans, 0u);
	EXPECT_EQ(trace[1].slowest_ns, 400u);
	EXPECT_EQ(trace[1].slowest_rank, 0u);
	EXPECT_EQ(trace[1].retrans, 5u);
	EXPECT_EQ(trace[2].slowest_ns, 500u);
	EXPECT_EQ(trace[2].retrans, 1u);
	EXPECT_EQ(trace[3].slowest_ns, 90u);

	const auto summary = summarize_trace(trace);
	EXPECT_EQ(summary.iterations, 4u);
	EXPECT_EQ(summary.with_retrans, 2u);
	EXPECT_EQ(summary.retrans, 6u);
	EXPECT_EQ(summary.p50_with_ns, 400u);	  // nearest rank of {400, 500}
	EXPECT_EQ(summary.p50_without_ns, 90u);	  // of {90, 120}
	// (400 - 90) + (500 - 90) of 120 + 400 + 500 + 90
	EXPECT_DOUBLE_EQ(summary.excess_share, 720.0 / 1110.0);

	// nothing clean to compare with: no excess claimed
	const auto all_lossy = summarize_trace({{.slowest_ns = 100, .retrans = 1}, {.slowest_ns = 200, .retrans = 2}});
	EXPECT_FALSE(all_lossy.p50_without_ns);
	EXPECT_EQ(all_lossy.excess_share, 0.0);
	EXPECT_EQ(summarize_trace({}).iterations, 0u);
}

// ---------------------------------------------------------------------------------------------
// /proc counters

constexpr const char *kNetstat =
	"TcpExt: SyncookiesSent TCPTimeouts TCPLossProbes TCPLossProbeRecovery TCPSpuriousRTOs TCPFastRetrans "
	"TCPSlowStartRetrans\n"
	"TcpExt: 0 17 5 2 1 40 3\n"
	"IpExt: InNoRoutes InTruncatedPkts\n"
	"IpExt: 0 0\n";
constexpr const char *kSnmp =
	"Ip: Forwarding DefaultTTL\n"
	"Ip: 1 64\n"
	"Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens OutSegs RetransSegs\n"
	"Tcp: 1 200 120000 -1 13572 402563 473\n"
	"Udp: InDatagrams\n"
	"Udp: 5\n";

TEST(Counters, ParsesATableOfProcNet)
{
	const auto tcp = parse_proc_net_table(kSnmp, "Tcp");
	ASSERT_TRUE(tcp) << tcp.error().message;
	EXPECT_EQ(tcp->at("MaxConn"), -1);
	EXPECT_EQ(tcp->at("OutSegs"), 402563);
	EXPECT_EQ(tcp->count("InDatagrams"), 0u); // Udp's, not Tcp's
	const auto ext = parse_proc_net_table(kNetstat, "TcpExt");
	ASSERT_TRUE(ext);
	EXPECT_EQ(ext->at("TCPTimeouts"), 17);
	EXPECT_FALSE(parse_proc_net_table(kNetstat, "Tcp")); // "TcpExt:" is another table
	EXPECT_FALSE(parse_proc_net_table("Tcp: A B\nTcp: 1\n", "Tcp"));
	EXPECT_FALSE(parse_proc_net_table("Tcp: A B\nTcp: 1 x\n", "Tcp"));
}

TEST(Counters, ParsesOnlyTheValuesAsked)
{
	constexpr std::string_view kWanted[] = {"RetransSegs", "NoSuchCounter", "MaxConn", "OutSegs"};
	const auto tcp = gp::parse_proc_net_values(kSnmp, "Tcp", kWanted);
	ASSERT_TRUE(tcp) << tcp.error().message;
	ASSERT_EQ(tcp->size(), 4u);
	EXPECT_EQ((*tcp)[0], 473);
	EXPECT_FALSE((*tcp)[1]);
	EXPECT_EQ((*tcp)[2], -1);
	EXPECT_EQ((*tcp)[3], 402563);
	constexpr std::string_view kTimeouts[] = {"TCPTimeouts"};
	const auto ext = gp::parse_proc_net_values(kNetstat, "TcpExt", kTimeouts);
	ASSERT_TRUE(ext);
	EXPECT_EQ(ext->front(), 17);
	EXPECT_FALSE(gp::parse_proc_net_values(kNetstat, "Tcp", kTimeouts)); // "TcpExt:" is another table
	// The lines must pair up, whichever is longer; a value not asked for need not be a number.
	constexpr std::string_view kA[] = {"A"};
	const auto short_values = gp::parse_proc_net_values("Tcp: A B\nTcp: 1\n", "Tcp", kA);
	ASSERT_FALSE(short_values);
	EXPECT_NE(short_values.error().message.find("2 names but 1 values"), std::string::npos)
		<< short_values.error().message;
	EXPECT_FALSE(gp::parse_proc_net_values("Tcp: A\nTcp: 1 2 3\n", "Tcp", kA));
	EXPECT_EQ(gp::parse_proc_net_values("Tcp: A B\nTcp: 1 x\n", "Tcp", kA)->front(), 1);
	constexpr std::string_view kB[] = {"B"};
	EXPECT_FALSE(gp::parse_proc_net_values("Tcp: A B\nTcp: 1 x\n", "Tcp", kB));
	EXPECT_FALSE(gp::parse_proc_net_values("", "Tcp", kA));
}

TEST(Counters, SnapshotPicksTheTrackedCounters)
{
	const auto s = snapshot_from_texts(kNetstat, kSnmp);
	EXPECT_EQ(s.values[0], 17u); // TCPTimeouts
	EXPECT_EQ(s.values[1], 5u);
	EXPECT_EQ(s.values[2], 2u);
	EXPECT_EQ(s.values[3], 1u);
	EXPECT_EQ(s.values[4], 40u);
	EXPECT_EQ(s.values[5], 3u);
	EXPECT_EQ(s.values[6], 473u);	 // RetransSegs
	EXPECT_EQ(s.values[7], 402563u); // OutSegs
	const auto partial = snapshot_from_texts("TcpExt: TCPTimeouts\nTcpExt: 9\n", "");
	EXPECT_EQ(partial.values[0], 9u);
	EXPECT_FALSE(partial.values[1]);
	EXPECT_FALSE(partial.values[7]);
}

TEST(Counters, ReadsThisNamespace)
{
	const auto s = read_tcp_counters();
	ASSERT_TRUE(s) << s.error().message;
	EXPECT_TRUE(s->values[7]); // OutSegs exists on every kernel
	const auto inode = current_netns_inode();
	ASSERT_TRUE(inode);
	EXPECT_GT(*inode, 0u);
}

// ---------------------------------------------------------------------------------------------
// Rendezvous protocol

TEST(Wire, FramesSurviveAnySplit)
{
	std::vector<uint8_t> stream;
	for (int i = 0; i < 3; ++i) {
		Frame f{MessageType::Abort, std::vector<uint8_t>(static_cast<size_t>(i * 1000), static_cast<uint8_t>(i))};
		const auto bytes = encode_frame(f);
		stream.insert(stream.end(), bytes.begin(), bytes.end());
	}
	const auto ready = encode_frame(empty_frame(MessageType::Ready));
	stream.insert(stream.end(), ready.begin(), ready.end());
	for (size_t step : {size_t(1), size_t(3), size_t(7), stream.size()}) {
		FrameParser parser;
		std::vector<Frame> frames;
		for (size_t i = 0; i < stream.size(); i += step) {
			parser.feed(std::span<const uint8_t>(stream).subspan(i, std::min(step, stream.size() - i)));
			for (;;) {
				auto f = parser.next();
				ASSERT_TRUE(f);
				if (!*f)
					break;
				frames.push_back(std::move(**f));
			}
		}
		ASSERT_EQ(frames.size(), 4u);
		EXPECT_EQ(frames[2].body.size(), 2000u);
		EXPECT_EQ(frames[2].body[5], 2);
		EXPECT_EQ(frames[3].type, MessageType::Ready);
		EXPECT_EQ(parser.buffered(), 0u);
	}
}

TEST(Wire, BadFramesAreProtocolErrors)
{
	FrameParser zero;
	zero.feed(std::vector<uint8_t>{0, 0, 0, 0, 1});
	EXPECT_FALSE(zero.next());
	FrameParser huge;
	huge.feed(std::vector<uint8_t>{0x7f, 0, 0, 0, 1});
	EXPECT_FALSE(huge.next());
	FrameParser type;
	type.feed(std::vector<uint8_t>{0, 0, 0, 1, 99});
	EXPECT_FALSE(type.next());
}

TEST(Wire, MessagesRoundTrip)
{
	Announce a;
	a.rank = 3;
	a.ranks = 8;
	a.data = *parse_endpoint("10.9.8.7:4242");
	a.side = Side::Right;
	a.netns_inode = 4026531840ULL;
	a.msg = 65536;
	a.volume = 50 << 20;
	a.pattern = Pattern::Half;
	const auto back = decode_announce(encode_announce(a));
	ASSERT_TRUE(back) << back.error().message;
	EXPECT_EQ(back->rank, 3u);
	EXPECT_EQ(back->data, a.data);
	EXPECT_EQ(back->side, Side::Right);
	EXPECT_EQ(back->netns_inode, a.netns_inode);
	EXPECT_EQ(back->volume, a.volume);
	EXPECT_EQ(back->pattern, Pattern::Half);

	Table t;
	t.session = 0xfeedfacecafebeefULL;
	t.iterations = 77;
	t.iterations_capped = true;
	t.ranks.push_back({*parse_endpoint("[fd00::1]:1"), Side::Left, 1});
	t.ranks.push_back({*parse_endpoint("10.0.0.2:65535"), Side::None, 2});
	const auto table = decode_table(encode_table(t));
	ASSERT_TRUE(table) << table.error().message;
	EXPECT_EQ(table->session, t.session);
	EXPECT_TRUE(table->iterations_capped);
	ASSERT_EQ(table->ranks.size(), 2u);
	EXPECT_EQ(table->ranks[0].data, t.ranks[0].data);
	EXPECT_EQ(table->ranks[1].netns_inode, 2u);

	RankResult r;
	r.rank = 5;
	r.timed_out = true;
	r.verified = true;
	r.counters_valid = true;
	r.wall_ns = 123456789;
	r.bytes_sent = 1 << 20;
	r.bytes_cross_sent = 1 << 19;
	r.bytes_cross_received = 1 << 18;
	r.iterations_done = 3;
	r.iteration_ns = {1, 2, 3};
	r.counters_before.values[0] = 4;
	r.counters_after.values[7] = 9;
	r.tcp_info = {12, 204000};
	r.hints = {true, 6, 0, 6, 0};
	r.cc = "cubic";
	const auto result = decode_result(encode_result(r));
	ASSERT_TRUE(result) << result.error().message;
	EXPECT_EQ(result->rank, 5u);
	EXPECT_TRUE(result->timed_out);
	EXPECT_TRUE(result->verified);
	EXPECT_TRUE(result->counters_valid);
	EXPECT_EQ(result->iteration_ns, r.iteration_ns);
	EXPECT_EQ(result->bytes_cross_sent, r.bytes_cross_sent);
	EXPECT_EQ(result->bytes_cross_received, r.bytes_cross_received);
	EXPECT_EQ(result->counters_before.values[0], 4u);
	EXPECT_FALSE(result->counters_before.values[1]);
	EXPECT_EQ(result->counters_after.values[7], 9u);
	EXPECT_EQ(result->tcp_info.rto_max_us, 204000u);
	EXPECT_TRUE(result->hints.open);
	EXPECT_EQ(result->hints.dropped, 6u);
	EXPECT_EQ(result->cc, "cubic");

	auto truncated = encode_result(r);
	truncated.body.pop_back();
	EXPECT_FALSE(decode_result(truncated));

	// --trace-iterations: one retransmission count per duration, or none at all
	r.iteration_retrans = {0, 7, 1};
	const auto traced = decode_result(encode_result(r));
	ASSERT_TRUE(traced) << traced.error().message;
	EXPECT_EQ(traced->iteration_retrans, r.iteration_retrans);
	EXPECT_EQ(traced->iteration_ns, r.iteration_ns);
	EXPECT_TRUE(result->iteration_retrans.empty());
	r.iteration_retrans = {0, 7};
	const auto uneven = decode_result(encode_result(r));
	ASSERT_FALSE(uneven);
	EXPECT_NE(uneven.error().message.find("2 traced iterations for 3 durations"), std::string::npos)
		<< uneven.error().message;
	EXPECT_FALSE(decode_table(encode_announce(a)));
	auto old_version = encode_announce(a);
	old_version.body[3] = 9;
	const auto mixed = decode_announce(old_version);
	ASSERT_FALSE(mixed);
	EXPECT_NE(mixed.error().message.find("version"), std::string::npos);

	const auto abort = decode_abort(encode_abort("rank 2: gone\x01"));
	ASSERT_TRUE(abort);
	EXPECT_EQ(*abort, "rank 2: gone?");
	const auto hello = encode_hello(0x0102030405060708ULL, 9);
	const auto h = decode_hello(hello);
	ASSERT_TRUE(h);
	EXPECT_EQ(h->session, 0x0102030405060708ULL);
	EXPECT_EQ(h->rank, 9u);
	auto bad = hello;
	bad[0] = 'X';
	EXPECT_FALSE(decode_hello(bad));
}

// ---------------------------------------------------------------------------------------------
// Report

RankResult synthetic(uint32_t rank, uint64_t inode, uint64_t timeouts_before, uint64_t timeouts_after)
{
	RankResult r;
	r.rank = rank;
	r.verified = true;
	r.netns_inode = inode;
	r.counters_valid = true;
	for (auto &v : r.counters_before.values)
		v = 100;
	for (auto &v : r.counters_after.values)
		v = 110;
	r.counters_before.values[0] = timeouts_before;
	r.counters_after.values[0] = timeouts_after;
	return r;
}

TEST(Report, CountersCountEachNamespaceOnce)
{
	// ranks 0 and 1 share a namespace; rank 2 has its own
	const auto a = synthetic(0, 7, 10, 15), b = synthetic(1, 7, 11, 18), c = synthetic(2, 8, 0, 4);
	const auto totals = sum_counters_by_namespace({&a, &b, &c});
	EXPECT_EQ(totals.namespaces, 2u);
	EXPECT_EQ(totals.deltas[0], (18u - 10u) + 4u);
	EXPECT_EQ(totals.deltas[7], 20u);
	auto d = synthetic(3, 9, 0, 1);
	d.counters_after.values[5].reset();
	const auto partial = sum_counters_by_namespace({&a, &d});
	EXPECT_FALSE(partial.deltas[5]);
	EXPECT_EQ(partial.deltas[0], 6u);
}

ReportInput four_ranks()
{
	ReportInput in;
	in.options = *parse(minimal({"--capacity", "100mbit", "--stall-ms", "100"}));
	in.options.ranks = 4;
	Table t;
	t.iterations = 2;
	for (Side s : {Side::Left, Side::Left, Side::Right, Side::Right})
		t.ranks.push_back({Endpoint{}, s, 0});
	in.table = t;
	for (uint32_t r = 0; r < 4; ++r) {
		RankResult res = synthetic(r, 100 + r, 0, r);
		res.bytes_sent = 3 * 1000;	   // 3 peers
		res.bytes_cross_sent = 2 * 1000; // 2 of them across
		res.bytes_cross_received = 2 * 1000;
		res.iterations_done = 2;
		res.wall_ns = (r + 1) * 100000000ULL; // the slowest: 0.4 s
		res.iteration_ns = {50000000, r == 2 ? 250000000ULL : 50000000ULL};
		res.cc = "cubic";
		in.results.push_back(res);
	}
	return in;
}

TEST(Report, TotalsRatesAndStalls)
{
	const auto json = nlohmann::json::parse(build_report(four_ranks()));
	EXPECT_EQ(json["ranks"], 4);
	EXPECT_EQ(json["iterations"], 2);
	EXPECT_EQ(json["pattern"], "pairwise");
	EXPECT_EQ(json["cc"], "cubic");
	EXPECT_EQ(json["capacity_bps"], 100000000);
	EXPECT_DOUBLE_EQ(json["seconds"].get<double>(), 0.4);
	EXPECT_EQ(json["bytes_total"], 12000);
	EXPECT_EQ(json["bytes_cross"], 8000);
	EXPECT_EQ(json["bytes_cross_l2r"], 4000);
	EXPECT_EQ(json["bytes_cross_r2l"], 4000);
	EXPECT_EQ(json["cross_directions"], 2);
	EXPECT_DOUBLE_EQ(json["bandwidth_bps"].get<double>(), 12000 * 8 / 0.4);
	// both directions carried cross traffic: divided by 2·C
	EXPECT_DOUBLE_EQ(json["fraction_of_capacity"].get<double>(), 8000 * 8 / (0.4 * 1e8 * 2));
	// 2 left x 2 right x 65536 B per direction at 100 Mbit/s
	EXPECT_DOUBLE_EQ(json["ideal_iteration_us"].get<double>(), 4 * 65536 * 8 / 1e8 * 1e6);
	EXPECT_EQ(json["iteration_us"]["samples"], 8);
	EXPECT_DOUBLE_EQ(json["iteration_us"]["max"].get<double>(), 250000.0);
	EXPECT_DOUBLE_EQ(json["iteration_us"]["p50"].get<double>(), 50000.0);
	EXPECT_EQ(json["stalled_iterations"], 1);
	EXPECT_EQ(json["stalled_samples"], 1);
	EXPECT_EQ(json["tcp"]["namespaces"], 4);
	EXPECT_EQ(json["tcp"]["TCPTimeouts"], 0 + 1 + 2 + 3);
	EXPECT_EQ(json["tcp"]["OutSegs"], 40);
	EXPECT_EQ(json["timed_out"], false);
	EXPECT_EQ(json["complete"], true);
	EXPECT_EQ(json["verified"], true);
	EXPECT_EQ(json["per_rank"].size(), 4u);
	EXPECT_EQ(json["per_rank"][2]["side"], "right");
	EXPECT_EQ(json["hints"]["mode"], "none");
}

TEST(Report, OneDirectionAndPartialRuns)
{
	auto in = four_ranks();
	// Only left -> right carried cross bytes, and rank 3 timed out before any arrived: what
	// counts is what the right side received (rank 2's 2000), not what the left side wrote.
	for (int r : {2, 3})
		in.results[r]->bytes_cross_sent = 0;
	in.results[0]->bytes_cross_received = 0;
	in.results[3]->bytes_cross_received = 0;
	in.results[3]->timed_out = true;
	in.results[1].reset();
	in.missing_ranks = {1};
	in.stopped = true;
	const auto json = nlohmann::json::parse(build_report(in));
	EXPECT_EQ(json["cross_directions"], 1);
	EXPECT_EQ(json["bytes_cross"], 2000);
	EXPECT_DOUBLE_EQ(json["fraction_of_capacity"].get<double>(), 2000 * 8 / (0.4 * 1e8));
	EXPECT_EQ(json["timed_out"], true);
	EXPECT_EQ(json["complete"], false);
	EXPECT_EQ(json["missing_ranks"], nlohmann::json::array({1}));
	EXPECT_EQ(json["per_rank"].size(), 3u);

	ReportInput none;
	none.options = four_ranks().options;
	none.results.resize(4);
	none.stopped = true;
	const auto empty = nlohmann::json::parse(build_report(none));
	EXPECT_TRUE(empty["seconds"] == 0);
	EXPECT_TRUE(empty["fraction_of_capacity"].is_null());
	EXPECT_TRUE(empty["iteration_us"].is_null());
	EXPECT_TRUE(empty["ideal_iteration_us"].is_null());
	EXPECT_EQ(empty["timed_out"], true);
}

// ---------------------------------------------------------------------------------------------
// The real program on loopback: every rank a process, as on the cluster.

struct Rank {
	pid_t pid = -1;
	std::string err_file;
};

uint16_t free_loopback_port()
{
	const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	::bind(fd, reinterpret_cast<sockaddr *>(&in), sizeof(in));
	socklen_t length = sizeof(in);
	::getsockname(fd, reinterpret_cast<sockaddr *>(&in), &length);
	::close(fd);
	return ntohs(in.sin_port);
}

class LoopbackRun : public ::testing::Test {
protected:
	void SetUp() override
	{
		char pattern[] = "/tmp/gp-alltoall-test.XXXXXX";
		ASSERT_NE(::mkdtemp(pattern), nullptr);
		dir_ = pattern;
		rendezvous_ = "127.0.0.1:" + std::to_string(free_loopback_port());
	}
	void TearDown() override
	{
		for (auto &rank : ranks_)
			if (rank.pid > 0) {
				::kill(rank.pid, SIGKILL);
				::waitpid(rank.pid, nullptr, 0);
			}
		std::system(("rm -rf " + dir_).c_str());
	}

	void start(int rank, int ranks, std::vector<std::string> extra)
	{
		std::vector<std::string> args{GP_ALLTOALL_BINARY, "--rank", std::to_string(rank), "--ranks",
					      std::to_string(ranks), "--rendezvous", rendezvous_, "--bind", "127.0.0.1",
					      "--out", dir_ + "/report.json", "--setup-timeout", "10"};
		args.insert(args.end(), extra.begin(), extra.end());
		std::vector<char *> argv;
		for (auto &arg : args)
			argv.push_back(arg.data());
		argv.push_back(nullptr);
		Rank r;
		r.err_file = dir_ + "/stderr." + std::to_string(rank);
		posix_spawn_file_actions_t actions;
		posix_spawn_file_actions_init(&actions);
		posix_spawn_file_actions_addopen(&actions, 1, (dir_ + "/stdout." + std::to_string(rank)).c_str(),
						 O_WRONLY | O_CREAT | O_TRUNC, 0644);
		posix_spawn_file_actions_addopen(&actions, 2, r.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
		// Hints must reach nobody: an abstract socket name no daemon listens on (a gappaced of
		// another test on this machine would otherwise get phases for loopback connections).
		std::vector<std::string> env_storage;
		for (char **e = environ; *e; ++e)
			if (std::string_view(*e).substr(0, 19) != "GAPPACE_HINTS_SOCK=")
				env_storage.emplace_back(*e);
		env_storage.push_back("GAPPACE_HINTS_SOCK=@gp-alltoall-test-" + std::to_string(::getpid()));
		std::vector<char *> envp;
		for (auto &e : env_storage)
			envp.push_back(e.data());
		envp.push_back(nullptr);
		ASSERT_EQ(posix_spawn(&r.pid, argv[0], &actions, nullptr, argv.data(), envp.data()), 0);
		posix_spawn_file_actions_destroy(&actions);
		if (ranks_.size() <= static_cast<size_t>(rank))
			ranks_.resize(static_cast<size_t>(rank) + 1);
		ranks_[rank] = r;
	}

	// Exit status of a rank (bounded wait; -1 if it did not end in time).
	int wait_rank(int rank, double seconds = 30)
	{
		const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
		while (std::chrono::steady_clock::now() < end) {
			int status = 0;
			const pid_t done = ::waitpid(ranks_[rank].pid, &status, WNOHANG);
			if (done == ranks_[rank].pid) {
				ranks_[rank].pid = -1;
				return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
			}
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		}
		return -1;
	}

	std::string slurp(const std::string &path)
	{
		std::ifstream in(path);
		std::stringstream text;
		text << in.rdbuf();
		return text.str();
	}

	std::string dir_, rendezvous_;
	std::vector<Rank> ranks_;
};

TEST_F(LoopbackRun, ThreeRanksMoveEveryByte)
{
	const int ranks = 3; // not a power of two: the shift order
	for (int r = 0; r < ranks; ++r)
		start(r, ranks, {"--msg", "10000", "--iterations", "7", "--side", r == 0 ? "left" : "right",
				 "--hints", "iteration", "--capacity", "1gbit"});
	for (int r = ranks - 1; r >= 0; --r)
		EXPECT_EQ(wait_rank(r), 0) << slurp(ranks_[r].err_file);
	const auto json = nlohmann::json::parse(slurp(dir_ + "/report.json"));
	EXPECT_EQ(json["bytes_total"], 3 * 2 * 10000 * 7);
	EXPECT_EQ(json["bytes_cross"], 2 * 1 * 2 * 10000 * 7); // 1 left x 2 right, both ways
	EXPECT_EQ(json["cross_directions"], 2);
	EXPECT_EQ(json["iterations"], 7);
	EXPECT_EQ(json["iterations_completed"], 7);
	EXPECT_EQ(json["iteration_us"]["samples"], 21);
	EXPECT_EQ(json["verified"], true);
	EXPECT_EQ(json["complete"], true);
	EXPECT_EQ(json["tcp"]["namespaces"], 1); // all ranks in this test's namespace
	EXPECT_TRUE(json["tcp"]["OutSegs"].get<uint64_t>() > 0);
	// per iteration (7 measured + 1 warm-up) a BEGIN and an END per rank, dropped or sent,
	// never rejected
	EXPECT_EQ(json["warmup"], 1);
	EXPECT_EQ(json["hints"]["queued"], 2 * (7 + 1) * 3);
	EXPECT_EQ(json["hints"]["rejected"], 0);
	EXPECT_EQ(json["hints"]["ranks_with_handle"], 3);
	for (const auto &rank : json["per_rank"]) {
		EXPECT_EQ(rank["bytes_sent"], 2 * 10000 * 7);
		EXPECT_EQ(rank["bytes_received"], 2 * 10000 * 7);
	}
	// rank 0 printed the same object on stdout; the others printed nothing
	EXPECT_EQ(nlohmann::json::parse(slurp(dir_ + "/stdout.0")), json);
	EXPECT_EQ(slurp(dir_ + "/stdout.1"), "");
}

TEST_F(LoopbackRun, TracedIterationsAddUpToTheSocketsRetransmissions)
{
	for (int r = 0; r < 2; ++r)
		start(r, 2, {"--msg", "64k", "--iterations", "5", "--trace-iterations"});
	EXPECT_EQ(wait_rank(1), 0) << slurp(ranks_[1].err_file);
	EXPECT_EQ(wait_rank(0), 0) << slurp(ranks_[0].err_file);
	const auto json = nlohmann::json::parse(slurp(dir_ + "/report.json"));
	const auto &trace = json["iteration_trace"];
	ASSERT_TRUE(trace.is_object()) << json.dump();
	EXPECT_EQ(trace["iterations"], 5);
	ASSERT_EQ(trace["slowest_us"].size(), 5u);
	ASSERT_EQ(trace["retrans_per_iteration"].size(), 5u);
	ASSERT_EQ(trace["slowest_rank"].size(), 5u);
	for (const auto &rank : trace["slowest_rank"])
		EXPECT_LT(rank.get<int>(), 2);
	uint64_t sum = 0;
	for (const auto &n : trace["retrans_per_iteration"])
		sum += n.get<uint64_t>();
	EXPECT_EQ(trace["retrans"], sum);
	// the sockets' own count covers the warm-up too: never less than the traced iterations
	EXPECT_LE(sum, json["tcp_info"]["total_retrans"].get<uint64_t>());
	double slowest = 0;
	for (const auto &us : trace["slowest_us"])
		slowest = std::max(slowest, us.get<double>());
	EXPECT_DOUBLE_EQ(slowest, json["iteration_us"]["max"].get<double>());
}

TEST_F(LoopbackRun, VolumeSetsTheIterationsAndRingWorks)
{
	for (int r = 0; r < 2; ++r)
		start(r, 2, {"--msg", "64k", "--volume", "1m", "--pattern", "ring"});
	EXPECT_EQ(wait_rank(1), 0) << slurp(ranks_[1].err_file);
	EXPECT_EQ(wait_rank(0), 0) << slurp(ranks_[0].err_file);
	const auto json = nlohmann::json::parse(slurp(dir_ + "/report.json"));
	EXPECT_EQ(json["iterations"], 8); // 1 MiB / (2 pairs x 64 KiB)
	EXPECT_EQ(json["bytes_total"], 1 << 20);
	EXPECT_EQ(json["bytes_cross"], 0); // no sides given
	EXPECT_TRUE(json["fraction_of_capacity"].is_null());
	EXPECT_FALSE(json.contains("iteration_trace")); // not asked for
}

TEST_F(LoopbackRun, AShapeMismatchFailsEveryRankAtOnce)
{
	start(0, 2, {"--msg", "64k", "--iterations", "3"});
	start(1, 2, {"--msg", "32k", "--iterations", "3"});
	EXPECT_EQ(wait_rank(0, 15), 1);
	EXPECT_EQ(wait_rank(1, 15), 1);
	EXPECT_NE(slurp(ranks_[0].err_file).find("--msg"), std::string::npos) << slurp(ranks_[0].err_file);
	EXPECT_NE(slurp(ranks_[1].err_file).find("run aborted"), std::string::npos) << slurp(ranks_[1].err_file);
}

TEST_F(LoopbackRun, TimeoutStopsEveryRankAndReportsWhatWasDone)
{
	const auto begin = std::chrono::steady_clock::now();
	for (int r = 0; r < 2; ++r)
		start(r, 2, {"--msg", "1m", "--volume", "1000g", "--timeout", "0.5"});
	EXPECT_EQ(wait_rank(0, 15), 1) << slurp(ranks_[0].err_file);
	EXPECT_EQ(wait_rank(1, 15), 1) << slurp(ranks_[1].err_file);
	EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(8));
	const auto json = nlohmann::json::parse(slurp(dir_ + "/report.json"));
	EXPECT_EQ(json["timed_out"], true);
	EXPECT_EQ(json["complete"], false);
	EXPECT_EQ(json["iterations_capped"], true);
	EXPECT_EQ(json["per_rank"].size(), 2u);
	EXPECT_GT(json["bytes_total"].get<uint64_t>(), 0u);
	EXPECT_LT(json["seconds"].get<double>(), 2.0);
}

TEST_F(LoopbackRun, AKilledRankEndsTheRunWithAReason)
{
	for (int r = 0; r < 3; ++r)
		start(r, 3, {"--msg", "1m", "--volume", "1000g", "--timeout", "60"});
	std::this_thread::sleep_for(std::chrono::milliseconds(700));
	::kill(ranks_[2].pid, SIGKILL);
	EXPECT_EQ(wait_rank(2, 5), 128 + SIGKILL);
	EXPECT_EQ(wait_rank(0, 15), 1);
	EXPECT_EQ(wait_rank(1, 15), 1);
	const std::string rank0 = slurp(ranks_[0].err_file);
	EXPECT_NE(rank0.find("rank 2"), std::string::npos) << rank0;
}

} // namespace
} // namespace gp::alltoall
