// gappaced.toml: defaults, a full file, and every kind of mistake with its message.
#include <gtest/gtest.h>

#include "config.hpp"

namespace gp::daemon {
namespace {

TEST(Config, EmptyFileMeansDefaults)
{
	auto c = parse_config("", "t.toml");
	ASSERT_TRUE(c) << c.error().message;
	EXPECT_EQ(c->backend, BackendChoice::Auto);
	EXPECT_TRUE(c->pacing);
	EXPECT_TRUE(c->rto);
	EXPECT_EQ(c->rto_floor_us, 5000u);
	EXPECT_FALSE(c->rto_quickack);
	EXPECT_EQ(c->rto_stock_floor, StockFloor::Auto);
	EXPECT_EQ(c->queue_packets, 40u);
	EXPECT_TRUE(c->bottlenecks.empty());
}

TEST(Config, FullFile)
{
	auto c = parse_config(R"(
[daemon]
backend = "stock"
hints_socket = "/run/x/hints.sock"
control_socket = "/run/x/control.sock"
state_file = "/run/x/state.json"
phase_timeout = "2s"
max_phases = 10
history = 5
[remedies]
pacing = false
rto = true
[rto]
floor = "8ms"
min = "2ms"
max = "100ms"
delack_max = "4ms"
quickack = true
stock_floor = "route"
[pacing]
queue_packets = 100
mtu = 9000
min_rate = "10mbit"
[[link]]
device = "eth0"
rate = "10gbit"
[[bottleneck]]
name = "right"
capacity = "200mbit"
queue_packets = 40
prefixes = ["10.1.1.0/24", "fd00:1::/64"]
[[bottleneck]]
name = "left"
capacity = "200mbit"
prefixes = ["10.1.0.0/24"]
)",
			      "t.toml");
	ASSERT_TRUE(c) << c.error().message;
	EXPECT_EQ(c->backend, BackendChoice::Stock);
	EXPECT_EQ(c->hints_socket, "/run/x/hints.sock");
	EXPECT_EQ(c->phase_timeout_ms, 2000u);
	EXPECT_EQ(c->max_phases, 10u);
	EXPECT_FALSE(c->pacing);
	EXPECT_EQ(c->rto_floor_us, 8000u);
	EXPECT_EQ(*c->delack_max_us, 4000u);
	EXPECT_TRUE(c->rto_quickack);
	EXPECT_EQ(c->rto_stock_floor, StockFloor::Route);
	EXPECT_EQ(c->mtu, 9000u);
	EXPECT_EQ(c->min_rate_bps, 10000000u);
	ASSERT_EQ(c->links.size(), 1u);
	EXPECT_EQ(c->links[0].rate_bps, 10000000000u);
	ASSERT_EQ(c->bottlenecks.size(), 2u);
	EXPECT_EQ(c->bottlenecks[0].capacity_bps, 200000000u);
	EXPECT_EQ(c->bottlenecks[0].prefixes.size(), 2u);
	EXPECT_EQ(c->bottlenecks[1].queue_packets, 0u);
}

struct Bad {
	const char *name;
	const char *text;
	const char *message;
};

class ConfigRejects : public ::testing::TestWithParam<Bad> {};

TEST_P(ConfigRejects, NamesTheLineAndKey)
{
	auto c = parse_config(GetParam().text, "bad.toml");
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().err, EINVAL);
	EXPECT_NE(c.error().message.find(GetParam().message), std::string::npos) << c.error().message;
	EXPECT_EQ(c.error().message.rfind("bad.toml:", 0), 0u) << c.error().message;
}

INSTANTIATE_TEST_SUITE_P(
	Cases, ConfigRejects,
	::testing::Values(
		Bad{"Syntax", "[daemon\nbackend = 1", "bad.toml:1"},
		Bad{"UnknownSection", "[pacnig]\nmtu = 1", "pacnig: unknown key"},
		Bad{"UnknownKey", "[rto]\nflor = \"5ms\"", "rto.flor: unknown key"},
		Bad{"BadBackend", "[daemon]\nbackend = \"fast\"", "daemon.backend: must be"},
		Bad{"RelativePath", "[daemon]\nhints_socket = \"hints.sock\"", "absolute path"},
		Bad{"BadTime", "[rto]\nfloor = \"5 parsecs\"", "rto.floor: not a valid value"},
		Bad{"FloorTooHigh", "[rto]\nfloor = \"1s\"", "rto.floor: out of range"},
		Bad{"MinAboveMax", "[rto]\nmin = \"50ms\"\nmax = \"10ms\"\nfloor=\"20ms\"", "min is above max"},
		Bad{"FloorOutsideBounds", "[rto]\nmin = \"10ms\"\nfloor = \"5ms\"", "outside [rto.min, rto.max]"},
		Bad{"BadBool", "[remedies]\npacing = \"yes\"", "remedies.pacing: must be true or false"},
		Bad{"BadQuickack", "[rto]\nquickack = 1", "rto.quickack: must be true or false"},
		Bad{"UnknownStockFloor", "[rto]\nstock_floor = \"sysctl\"",
		    "bad.toml:2: rto.stock_floor: must be \"auto\", \"socket\" or \"route\""},
		Bad{"StockFloorNotAString", "[rto]\nstock_floor = true", "rto.stock_floor: must be a string"},
		Bad{"QuickackOnTheSocketsFloor", "[rto]\nstock_floor = \"socket\"\nquickack = true",
		    "rto.quickack: needs the floor's route"},
		Bad{"BadRate", "[[bottleneck]]\nname=\"a\"\ncapacity=\"fast\"\nprefixes=[\"10.0.0.0/8\"]",
		    "bottleneck.capacity: not a valid value"},
		Bad{"NoPrefixes", "[[bottleneck]]\nname=\"a\"\ncapacity=\"1gbit\"", "bottleneck.prefixes: required"},
		Bad{"BadPrefix", "[[bottleneck]]\nname=\"a\"\ncapacity=\"1gbit\"\nprefixes=[\"10.0.0.1/8\"]",
		    "bottleneck.prefixes"},
		Bad{"DuplicateName",
		    "[[bottleneck]]\nname=\"a\"\ncapacity=\"1gbit\"\nprefixes=[\"10.0.0.0/8\"]\n"
		    "[[bottleneck]]\nname=\"a\"\ncapacity=\"1gbit\"\nprefixes=[\"11.0.0.0/8\"]",
		    "used twice"},
		Bad{"BottleneckNotArray", "[bottleneck]\nname=\"a\"", "must be an array of tables"},
		Bad{"LinkWithoutRate", "[[link]]\ndevice = \"eth0\"", "link.rate: required"},
		Bad{"ZeroQueue", "[pacing]\nqueue_packets = 0", "pacing.queue_packets: out of range"},
		Bad{"UnknownPlanner", "[planner]\nmodel = \"magic\"", "bad.toml:2: planner.model: must be"},
		Bad{"RelativeParameters", "[planner]\nparameters = \"p.json\"", "planner.parameters: must be an absolute path"},
		Bad{"QueueShareTooSmall", "[planner]\nqueue_share = 0.01", "planner.queue_share: must be a number in 0.05 .. 1"},
		Bad{"QueueShareNotANumber", "[planner]\nqueue_share = \"half\"", "planner.queue_share: must be a number"},
		Bad{"FrameOverheadTooLarge", "[pacing]\nframe_overhead = 5000", "pacing.frame_overhead: out of range"},
		Bad{"UnknownPacer", "[pacing]\npacer = \"fq\"", "bad.toml:2: pacing.pacer: must be \"socket\" or \"host\""},
		Bad{"PacerNotAString", "[pacing]\npacer = 1", "pacing.pacer: must be a string"},
		Bad{"PaceLocalPeersNotABool", "[pacing]\npace_local_peers = \"no\"", "pacing.pace_local_peers: must be true or false"},
		Bad{"FloorCostNegative", "[planner]\nfloor_cost = -0.1", "planner.floor_cost: must be a number in 0 .. 1"},
		Bad{"FloorCostNotANumber", "[planner]\nfloor_cost = \"cheap\"", "planner.floor_cost: must be a number"},
		Bad{"LearnNotABool", "[planner]\nlearn = 1", "planner.learn: must be true or false"},
		Bad{"LossCheckTooLong", "[planner]\nloss_check_phases = 5000", "planner.loss_check_phases: out of range 0 .. 4096"},
		Bad{"LossCheckNegative", "[planner]\nloss_check_phases = -1", "planner.loss_check_phases: not a valid value"},
		Bad{"QuietTooLong", "[daemon]\nquiet = \"61s\"", "daemon.quiet: out of range"},
		Bad{"QuietRemediedTooLong", "[daemon]\nquiet_remedied = \"11s\"", "daemon.quiet_remedied: out of range"},
		Bad{"QuietRemediedNotATime", "[daemon]\nquiet_remedied = \"briefly\"", "daemon.quiet_remedied: not a valid value"},
		Bad{"LingerIdleTooLong", "[daemon]\nlinger_idle = \"61s\"", "daemon.linger_idle: out of range"},
		Bad{"LingerIdleNotATime", "[daemon]\nlinger_idle = \"soon\"", "daemon.linger_idle: not a valid value"},
		Bad{"RealtimePriorityAboveFifosRange", "[daemon]\nrealtime_priority = 100", "daemon.realtime_priority: out of range 0 .. 99"},
		Bad{"RealtimePriorityNegative", "[daemon]\nrealtime_priority = -1", "daemon.realtime_priority: not a valid value"},
		Bad{"RealtimePriorityNotANumber", "[daemon]\nrealtime_priority = \"high\"", "daemon.realtime_priority: not a valid value"}),
	[](const auto &info) { return std::string(info.param.name); });

TEST(Config, PlannerSection)
{
	auto c = parse_config("[planner]\nmodel = \"default\"\nparameters = \"/var/lib/gappace/p.json\"\n"
			      "queue_share = 0.75\nfloor_cost = 0.02\nlearn = true\nloss_check_phases = 0\n[pacing]\nframe_overhead = 66\npace_local_peers = false\npacer = \"host\"\n[daemon]\nquiet = \"250ms\"\nquiet_remedied = \"0s\"\nlinger_idle = \"2s\"\nrealtime_priority = 0",
			      "t.toml");
	ASSERT_TRUE(c) << c.error().message;
	EXPECT_EQ(c->planner, "default");
	EXPECT_EQ(c->parameters_file, "/var/lib/gappace/p.json");
	EXPECT_DOUBLE_EQ(c->queue_share, 0.75);
	EXPECT_DOUBLE_EQ(c->floor_cost, 0.02);
	EXPECT_EQ(c->frame_overhead, 66u);
	EXPECT_FALSE(c->pace_local_peers);
	EXPECT_TRUE(c->host_shaper);
	EXPECT_TRUE(c->learn_plans);
	EXPECT_EQ(c->loss_check_phases, 0u);
	EXPECT_EQ(c->quiet_ms, 250u);
	EXPECT_EQ(c->quiet_remedied_ms, 0u);
	EXPECT_EQ(c->linger_idle_ms, 2000u);
	EXPECT_EQ(c->realtime_priority, 0u);
	auto d = parse_config("", "t.toml");
	ASSERT_TRUE(d);
	EXPECT_EQ(d->planner, "models") << "the models decide unless told otherwise";
	EXPECT_FALSE(d->learn_plans) << "learning is opt-in";
	EXPECT_DOUBLE_EQ(d->floor_cost, gp::models::kFloorRunningCost);
	EXPECT_EQ(d->loss_check_phases, 32u) << "the loss check is on";
	EXPECT_TRUE(d->pace_local_peers) << "a paced phase's same-side connections are paced alike";
	EXPECT_EQ(d->quiet_ms, 1000u);
	EXPECT_EQ(d->quiet_remedied_ms, 100u);
	EXPECT_EQ(d->linger_idle_ms, 2000u) << "settings stay while the connections are idle: a collective after computation starts paced";
	EXPECT_FALSE(d->host_shaper) << "the daemon installs no qdisc unless told to";
	EXPECT_EQ(d->realtime_priority, 10u) << "the daemon runs SCHED_FIFO: spinning ranks must not delay a hint";
}

TEST(Config, AbstractSocketsAreAccepted)
{
	auto c = parse_config("[daemon]\nhints_socket = \"@gappace-h1\"\ncontrol_socket = \"@ctl\"", "t.toml");
	ASSERT_TRUE(c) << c.error().message;
	EXPECT_EQ(c->hints_socket, "@gappace-h1");
	EXPECT_FALSE(parse_config("[daemon]\nstate_file = \"@x\"", "t.toml"));
	EXPECT_FALSE(parse_config("[daemon]\nhints_socket = \"@\"", "t.toml"));
}

TEST(Config, MissingFileIsENOENT)
{
	auto c = load_config("/nonexistent/gappaced.toml");
	ASSERT_FALSE(c);
	EXPECT_EQ(c.error().err, ENOENT);
}

} // namespace
} // namespace gp::daemon

namespace gp::daemon {
namespace {

TEST(Config, StockFloorChoices)
{
	for (const auto &[text, want] : {std::pair{"auto", StockFloor::Auto}, std::pair{"socket", StockFloor::Socket},
					 std::pair{"route", StockFloor::Route}}) {
		auto c = parse_config(std::string("[rto]\nstock_floor = \"") + text + "\"", "t.toml");
		ASSERT_TRUE(c) << c.error().message;
		EXPECT_EQ(c->rto_stock_floor, want) << text;
	}
	// quickack is a route metric: with "auto" it takes the route, and is accepted.
	auto c = parse_config("[rto]\nstock_floor = \"auto\"\nquickack = true", "t.toml");
	ASSERT_TRUE(c) << c.error().message;
}

} // namespace
} // namespace gp::daemon
