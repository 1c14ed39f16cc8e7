// gappaced's configuration: /etc/gappace/gappaced.toml. Everything has a default, so an
// absent file is a valid configuration (RTO floor on, pacing only where a bottleneck is
// described). Parsing validates every value and names the file, line and key at fault; a
// config that fails validation is never half-applied (SIGHUP keeps the running one).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "expected.hpp"
#include "decision.hpp"
#include "loss_check.hpp"
#include "prefix.hpp"

namespace gp::daemon {

enum class BackendChoice { Auto, Module, Stock };
// How the stock backend floors a phase's RTO ([rto] stock_floor): each connection's own
// TCP_RTO_MIN_US (Linux 6.15+), or a host route per peer with a locked rto_min; Auto takes the
// socket option where the kernel has it and quickack is off (only a route can ask for that),
// and the route for a socket the daemon may not borrow (pidfd_getfd denied).
enum class StockFloor { Auto, Socket, Route };

// A link that limits the traffic towards a group of hosts: the switch port (or uplink) of
// capacity `capacity_bps` with an output queue of `queue_packets` frames, which every path to
// one of `prefixes` crosses.
struct Bottleneck {
	std::string name;
	uint64_t capacity_bps = 0;
	uint32_t queue_packets = 0;	// 0: the global [pacing] queue_packets
	std::vector<Prefix> prefixes;
};

struct LinkOverride {
	std::string device;
	uint64_t rate_bps = 0;
};

struct Config {
	std::string source = "(defaults)";	// where it came from, for messages

	BackendChoice backend = BackendChoice::Auto;
	std::string hints_socket = "/run/gappace/hints.sock";
	std::string control_socket = "/run/gappace/control.sock";
	std::string state_file = "/run/gappace/stock-state.json";
	uint32_t phase_timeout_ms = 10000;	// a phase without END is reverted after this
	uint32_t max_phases = 4096;		// concurrent phases; more are dropped and counted
	uint32_t history = 256;			// ended phases kept for `gapctl daemon show`
	// Settings outlive their phase's END by this long (plus up to one 100 ms tick), so that
	// back-to-back collectives of one process reuse them instead of reverting and reapplying.
	uint32_t linger_ms = 50;
	// After `linger`, settings stay up to this much longer while the phase's connections carry
	// nothing new (what the application has written on them stays put, daemon/stock/stock.hpp
	// written_bytes), checked every tick: a collective after computation then finds them in
	// place instead of starting unpaced. A write on any of them releases them at the next
	// tick. 0: off. Only where the phase's sockets are known (hints naming connections).
	uint32_t linger_idle_ms = 2000;
	// A sender whose phase needs nothing (Plan::inert) is told, on the hints socket, to skip
	// alike phases for this long (0: never advise). At most one such phase per period still
	// reaches the daemon, and with it the measured duration calibration learns from.
	uint32_t quiet_ms = 1000;
	// A sender whose phase the daemon remedies, with a plan it would give alike phases again
	// (Plan::holdable), is told to skip them for this long, and the settings stay in place for
	// that time (plus `linger`) even while the connections carry data (0: every remedied phase
	// is hinted). At 1-4 KB a paced phase lasts 1-3 ms, and its two hints cost each rank a
	// datagram and the daemon a plan, on CPUs the ranks share.
	uint32_t quiet_remedied_ms = 100;
	// The daemon's SCHED_FIFO priority (1..99; 0: the normal scheduler). A hint must become
	// settings before the phase's first packets leave, and MPI ranks spin on every CPU while
	// they wait: under the normal scheduler the daemon waited behind them for 30-400 ms now and
	// then, the phase started unpaced and paid an RTO (Documentation/control-plane.md,
	// "Scheduling"). Its work per hint is tens of microseconds, so it takes little from them.
	uint32_t realtime_priority = 10;

	bool pacing = true;
	bool rto = true;

	uint32_t rto_floor_us = 5000;		// the RTO floor during a phase
	uint32_t rto_min_us = 1000;		// bounds the planner may never leave
	uint32_t rto_max_us = 200000;
	std::optional<uint32_t> delack_max_us;	// module backend; default: the kernel's (floor - 1 jiffy)
	// Stock backend: the floor's route also asks for quickack 1, so its receivers acknowledge
	// every segment at once. Off by default: it takes a packet of the bottleneck's queue per
	// segment for the ACKs and bought nothing measured (4+4 hosts, 16 KB: 2-3 times the
	// timeouts of the route without it, Documentation/control-plane.md, "Backends").
	bool rto_quickack = false;
	StockFloor rto_stock_floor = StockFloor::Auto;

	uint32_t queue_packets = 40;		// switch output queue, frames (q)
	uint32_t mtu = 1500;
	// Never pace a connection below this. A guard, not a tuning: the models' rate is never below
	// the fair share C/n, and a minimum above it overloads the bottleneck it paces for (1024
	// connections into 1 Gbit/s share 0.98 Mbit/s each). 64 kbit/s: a segment every 0.18 s.
	uint64_t min_rate_bps = 64000;
	// Bytes a bottleneck link carries per TCP segment beyond its payload: TCP/IP headers with
	// timestamps (52), Ethernet header and FCS (18), preamble and inter-frame gap (20). Planned
	// rates are wire rates; the stock backend caps payload (SO_MAX_PACING_RATE counts it), so
	// it scales them by mss / (mss + frame_overhead).
	uint32_t frame_overhead = 90;
	// Pace, in a paced phase whose connections all run at once, the connections that cross no
	// bottleneck too, at the crossing ones' rate (Documentation/models.md, "Connections that
	// cross no bottleneck").
	bool pace_local_peers = true;
	// [pacing] pacer: how the stock backend paces the connections that share a bottleneck.
	// "socket" (false): each by itself (SO_MAX_PACING_RATE). "host" (true): all of a device's
	// through one token bucket, a qdisc the daemon installs on that device while it paces and
	// removes afterwards; it only replaces the kernel's default qdisc (daemon/stock/shaper.cpp).
	bool host_shaper = false;

	// [planner]
	std::string planner = "models";		// "models" (Documentation/models.md) or "default"
	std::string parameters_file;		// `gapctl probe` output; empty: built from the config
	// Share of the switch queue the models may plan to fill: the rest absorbs what they do not
	// see (ACKs, other traffic, pacing jitter, senders starting at different times).
	double queue_share = 0.5;
	// What an RTO floor costs a paced phase while in place, as a share of its time (twice the
	// ACKs, earlier retransmissions). The default is measured on the 2-CPU test cluster
	// (models/decision.hpp); hosts with CPU to spare pay less.
	double floor_cost = models::kFloorRunningCost;
	// Let measured phase times override the models' choice of plan (models/plan_learner.hpp).
	// Off by default: on the 4+4 benchmark it helped one cell and cost another (models.md).
	bool learn_plans = false;
	// Check the models' loss verdict on the host's TCP counters (models/loss_check.hpp): a key
	// whose plan remedies a predicted loss first runs this many phases unpaced with the RTO
	// floor; if the host lost (almost) nothing meanwhile, its phases run as sent. 0: never.
	uint64_t loss_check_phases = models::LossCheck::kDefaultTrialPhases;

	std::vector<LinkOverride> links;
	std::vector<Bottleneck> bottlenecks;
};

// Parses TOML text. Errors: EINVAL with "FILE:LINE: KEY: what is wrong".
Expected<Config> parse_config(const std::string &text, const std::string &source_name);
// Reads and parses a file; a missing file is an error here (the caller decides about defaults).
Expected<Config> load_config(const std::string &path);

const char *backend_name(BackendChoice backend);

} // namespace gp::daemon
