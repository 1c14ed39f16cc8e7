// gappaced's core: one epoll loop over the hint carriers (the kernel's "hints" multicast group
// and the Unix seqpacket socket), the control socket, a signalfd and a timerfd.
//
//   hint BEGIN -> authenticate the sender -> find its sockets -> plan -> backend applies
//   hint END / phase timeout / sender exit / SIGTERM -> backend reverts
//   SIGHUP -> reload the config (a bad file keeps the running config)
//
// Security: a hint only ever reaches sockets that the sending process holds (its fd table)
// and that belong to its uid; the sender is whoever the kernel stamped, or SO_PEERCRED of
// the socket connection, never what the message claims. Per-destination settings (a flow
// rule, a host route) are shared by all traffic to that host: see Documentation/control-plane.md.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "backend.hpp"
#include "config.hpp"
#include "hint_codec.hpp"
#include "netlink.hpp"
#include "planner.hpp"
#include "unique_fd.hpp"

namespace gp::daemon {

struct Counters {
	uint64_t hints_received = 0;	// messages on either carrier
	uint64_t hints_kernel = 0;	// of those, from the kernel's group
	uint64_t hints_socket = 0;	// of those, from the Unix socket
	uint64_t hints_malformed = 0;	// failed validation
	uint64_t hints_refused = 0;	// sender not allowed (other netns, no such process)
	uint64_t hints_dropped = 0;	// too many phases, or lost by the kernel (ENOBUFS)
	uint64_t phases_begun = 0;
	uint64_t phases_ended = 0;
	uint64_t phases_timed_out = 0;
	uint64_t phases_sender_gone = 0;
	uint64_t unknown_ends = 0;	// END for a phase we do not know
	// lingering phases released past `linger` because a newer phase of their sender holds
	// every setting they hold (no linger_idle check)
	uint64_t lingering_superseded = 0;
	uint64_t apply_errors = 0;
	uint64_t config_reloads = 0;
	uint64_t config_errors = 0;
	uint64_t resolutions_cached = 0;	// phases that reused their sender's socket lookup
	uint64_t advice_sent = 0;	// quiet advice written to socket senders (inert phases)
	uint64_t quiet_phases_reported = 0;	// phases senders skipped under advice and summed up later
};

struct PhaseRecord {
	hint::Sender sender;
	hint::Header header;		// of the BEGIN; duration_ns from the END
	std::vector<hint::Peer> peers;
	std::string plan;		// the planner's reason
	std::vector<uint64_t> rate_bps;	// per peer
	uint32_t rto_min_us = 0;
	size_t sockets = 0;		// sender sockets matched to the peers (not looked up, 0, when
					// the plan changes nothing and the hint names tuples)
	size_t paced = 0, rto = 0;	// settings applied
	std::vector<std::string> errors;
	std::string carrier;		// "kernel" or "socket"
	std::string ended;		// "", "end", "timeout", "sender-exit", "shutdown"
	int64_t began_unix_ms = 0;
	uint64_t apply_latency_ns = 0;	// hint received -> settings applied
	uint64_t resolve_ns = 0;	// of that: finding the sender's sockets (0: not needed)
	uint64_t backend_ns = 0;	// of that: the backend applying the plan
	double predicted_us = 0;	// the planner's phase time (0: none), raw and calibrated
	double calibrated_us = 0;
	// The BEGIN's quiet summary (header.quiet_phases, quiet_ns): what the models had predicted
	// for those phases when the daemon advised skipping them (0: no summary, or none known).
	double quiet_predicted_us = 0;
	double quiet_calibrated_us = 0;
	uint32_t quiet_advised_ms = 0;	// the sender was told to skip alike phases this long (0: not)
};

struct Options {
	std::string config_path = "/etc/gappace/gappaced.toml";
	bool config_required = false;	// --config given explicitly: a missing file is an error
};

class Daemon {
public:
	static Expected<std::unique_ptr<Daemon>> create(const Options &options);
	~Daemon();

	// Runs until SIGTERM/SIGINT. Returns the exit status.
	int run();

private:
	Daemon() = default;
	Expected<void> setup();
	void on_kernel_hints();
	void on_socket_client(int fd);
	void on_accept_hints();
	void on_accept_control();
	void on_control_client(int fd);
	void on_signal();
	void on_tick();
	void flush_backend(const char *when);
	// reply_fd: the socket sender's connection, where advice goes (-1: the kernel carrier).
	void handle_hint(const nlmsghdr *nlh, bool from_kernel, std::optional<hint::Sender> peer_cred, int reply_fd = -1);
	void begin_phase(hint::Hint hint, bool from_kernel, std::chrono::steady_clock::time_point received, int reply_fd);
	// The sender's sockets towards the hint's peers (cached per sender for a second).
	std::vector<TargetSocket> resolve_targets(PhaseRecord &record, std::chrono::steady_clock::time_point received);
	// Whether the advice went out (a full socket loses it: the sender just keeps hinting).
	bool advise_quiet(int reply_fd, uint64_t signature, bool from_kernel, uint32_t quiet_ms);
	// A BEGIN's summary of the phases its sender skipped: calibrates their prediction.
	void take_quiet_summary(PhaseRecord &record);
	void log_phase_begin(const PhaseRecord &record) const;
	void end_phase(uint64_t key_pid, uint64_t phase_id, uint64_t duration_ns, const char *why);
	void revert_everything(const char *why);
	std::string show_json() const;
	void apply_scheduling();
	void reload_config();
	void log(int priority, const std::string &message) const;
	void watch(int fd);
	void unwatch(int fd);

	struct Phase {
		PhaseRecord record;
		Applied applied;
		std::chrono::steady_clock::time_point deadline;
		std::vector<stock::TcpSocket> watched;	// the sockets it applied to (for linger_idle)
		// Its sender skips alike phases until then (quiet advice on a holdable plan): its
		// settings stay at least that long.
		std::chrono::steady_clock::time_point hold_until{};
	};

	Options options_;
	Config config_;
	std::unique_ptr<Planner> planner_;
	std::unique_ptr<Backend> backend_;
	UniqueFd instance_lock_;	// flock on STATE_FILE.lock (lock_instance)
	UniqueFd epoll_, signal_fd_, timer_fd_, hints_listener_, control_listener_;
	std::optional<NetlinkSocket> kernel_hints_;
	bool kernel_takes_quiet_summary_ = false;	// the module's policy knows HINT_QUIET_* (version >= 2)
	// What the models predicted for the phases of (pid, signature) when they were advised
	// quiet: their summary comes with a later BEGIN. Bounded by kMaxQuietPredictions.
	struct QuietPrediction {
		double predicted_us, calibrated_us;
		models::PlanKind kind; // what the skipped phases ran with: held settings, or nothing
	};
	std::map<std::pair<uint64_t, uint64_t>, QuietPrediction> quiet_predictions_;
	std::map<int, std::pair<UniqueFd, hint::Sender>> hint_clients_;	// fd -> (socket, SO_PEERCRED)
	std::map<int, UniqueFd> control_clients_;
	std::map<std::pair<uint64_t, uint64_t>, Phase> phases_;		// (pid, phase id)
	struct Lingering {
		uint64_t pid;
		Applied applied;
		std::chrono::steady_clock::time_point until;
		// linger_idle: kept past `until`, up to `idle_until`, while what the application has
		// written on `watched` stays as it was at the first check after `until`.
		std::chrono::steady_clock::time_point idle_until;
		std::vector<stock::TcpSocket> watched;
		std::map<uint64_t, uint64_t> written;	// empty until that first check
	};
	std::vector<Lingering> lingering_;
	struct Resolution {
		uint32_t uid;
		std::vector<hint::Peer> peers;
		std::vector<TargetSocket> targets;
		std::chrono::steady_clock::time_point until;
	};
	std::map<uint64_t, Resolution> resolved_;	// by sender pid
	// The sock_diag socket of the resolutions and the linger_idle checks, opened on first use
	// and again after an error.
	std::optional<stock::SocketTable> socket_table_;
	// Runs `lookup` on socket_table_ (opened here if need be); a failed lookup closes it.
	template <class Lookup>
	std::invoke_result_t<Lookup, stock::SocketTable &> with_socket_table(Lookup &&lookup);
	Expected<std::vector<stock::TcpSocket>> find_established(std::span<const stock::TcpSocket> tuples);
	Expected<std::map<uint64_t, uint64_t>> written_bytes(std::span<const stock::TcpSocket> sockets);
	// ended phases whose settings are kept a little longer
	void release_lingering(std::optional<uint64_t> pid, bool expired_only);
	// Per lingering phase that would have its idle check `now`: whether a running phase of its
	// sender, or a later lingering one, holds every setting it holds.
	std::vector<bool> superseded_lingering(std::chrono::steady_clock::time_point now) const;
	// A collective loop begins thousands of alike phases a second: a sender's phase is logged
	// when its plan differs from the last one logged for it, or a summary every kLogRepeatEvery.
	struct LoggedPlan {
		std::string plan;
		std::chrono::steady_clock::time_point at;
		uint64_t repeats = 0;	// alike phases since, not logged
	};
	std::map<uint64_t, LoggedPlan> logged_plans_;	// by sender pid
	std::deque<PhaseRecord> history_;
	Counters counters_;
	std::deque<std::string> recent_errors_;
	uint64_t own_netns_ = 0;
	std::string scheduling_;	// what apply_scheduling() got, for `gapctl daemon show`
	bool journal_ = false;
	bool stopping_ = false;
	std::chrono::steady_clock::time_point started_;
};

} // namespace gp::daemon
