// The stock backend: SO_MAX_PACING_RATE on the sender's sockets, and the RTO floor as their
// own TCP_RTO_MIN_US (Linux 6.15+) or as per-peer host routes with a locked rto_min (and
// quickack with [rto] quickack; "auto" also for sockets it may not borrow), through gp::stock
// (daemon/stock), which records every change in the state file before making it. With
// [pacing] pacer = "host", the connections that share a bottleneck are steered into one token
// bucket per device instead (daemon/stock/shaper.cpp).
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <set>
#include <span>

#include "backend.hpp"
#include "segments.hpp"
#include "units.hpp"

namespace gp::daemon {

namespace {

constexpr auto kRemovedRecordsKept = std::chrono::seconds(1);
// A host shaper nobody has used for this long is removed: the device gets its default qdisc
// back between collectives, not between the phases of one.
constexpr auto kIdleShaperKept = std::chrono::seconds(2);

// A socket's own cap, held by the phases that set it: hold id -> the rate it asked for. The
// socket has the newest hold's rate: its process runs its phases one after another, and a
// phase that ended lingers on (linger, held advice) while the next one runs, which must get
// its own rate, not the lower of the two (the module backend's rules count the same way).
struct SharedPacing {
	pid_t pid = 0;
	uint64_t inode = 0;
	std::map<uint64_t, uint64_t> holds;
	uint64_t rate_bps = 0; // what the socket has
};

// A socket steered into its device's shaper; `bytes_per_second` is what it adds to the bucket.
struct SharedSteer {
	pid_t pid = 0;
	uint64_t inode = 0;
	int holders = 0;
	uint32_t ifindex = 0;
	uint64_t bytes_per_second = 0;
};

struct DeviceShaper {
	uint64_t bytes_per_second = 0; // the sum over the sockets steered into it now
	int sockets = 0;
	std::chrono::steady_clock::time_point idle_since{};
	uint32_t burst_frames = 1; // the last phase's Plan::bucket_burst_frames
};

// A socket whose own RTO minimum a phase floored (TCP_RTO_MIN_US).
struct SharedFloor {
	pid_t pid = 0;
	uint64_t inode = 0;
	int holders = 0;
};

struct SharedRoute {
	Endpoint peer;
	int holders = 0;
	uint32_t rto_min_ms = 0;
	bool quickack = false;
};

class StockBackend final : public Backend {
public:
	explicit StockBackend(stock::StateStore store)
		: store_(std::move(store)), pacing_(store_), routes_(store_)
	{
	}
	const char *name() const override { return "stock"; }

	void apply(const ApplyRequest &r, Applied &applied, std::vector<std::string> &errors) override
	{
		std::vector<SocketCap> caps;
		if (r.config->host_shaper)
			steer(r, applied, errors, caps);
		else
			for (const TargetSocket &t : r.sockets)
				caps.push_back({&t, own_cap(r, t)});
		for (const SocketCap &c : caps)
			pace(r, *c.socket, c.payload_bps, applied, errors);
		if (!r.plan->rto_min_us)
			return;
		std::vector<const TargetSocket *> by_route;
		if (floors_sockets(*r.config)) {
			for (const TargetSocket &t : r.sockets)
				if (floor(r, t, applied, errors) == Floored::denied)
					by_route.push_back(&t);
		} else {
			for (const TargetSocket &t : r.sockets)
				by_route.push_back(&t);
		}
		floor_routes(r, by_route, applied, errors);
	}

	void revert(Applied &applied, std::vector<std::string> &errors) override
	{
		std::set<uint32_t> lowered;
		for (const std::string &key : applied.keys) {
			if (key == kTsoSizingKey) {
				if (--tso_sizing_holders_ == 0)
					if (auto done = tso_sizing_.release(); !done)
						errors.push_back("shaper: " + done.error().message);
			} else if (key.starts_with("steered ")) {
				auto it = steered_.find(key);
				if (it == steered_.end() || --it->second.holders > 0)
					continue;
				if (auto done = pacing_.unsteer(it->second.pid, it->second.inode); !done && done.error().err != ENOENT)
					errors.push_back(key + ": " + done.error().message);
				DeviceShaper &device = devices_[it->second.ifindex];
				device.bytes_per_second -= std::min(device.bytes_per_second, it->second.bytes_per_second);
				if (--device.sockets <= 0) {
					device = DeviceShaper{0, 0, std::chrono::steady_clock::now()};
				} else {
					lowered.insert(it->second.ifindex);
				}
				steered_.erase(it);
			} else if (key.starts_with("rto ")) {
				auto it = floors_held_.find(key);
				if (it == floors_held_.end() || --it->second.holders > 0)
					continue;
				if (auto done = pacing_.unfloor_rto(it->second.pid, it->second.inode); !done && done.error().err != ENOENT)
					errors.push_back(key + ": " + done.error().message);
				floors_held_.erase(it);
			} else if (key.starts_with("pacing ")) {
				const size_t separator = key.rfind(kBackendHoldSeparator);
				auto it = pacing_held_.find(key.substr(0, separator));
				if (it == pacing_held_.end() || separator == std::string::npos)
					continue;
				SharedPacing &p = it->second;
				p.holds.erase(std::strtoull(key.c_str() + separator + 1, nullptr, 10));
				if (!p.holds.empty()) {
					// the newest remaining phase's rate, if the one that went was newer
					const uint64_t newest = p.holds.rbegin()->second;
					if (newest != p.rate_bps) {
						if (auto done = pacing_.apply(p.pid, p.inode, newest); !done) {
							if (done.error().err != ENOENT && done.error().err != ESRCH)
								errors.push_back(it->first + ": " + done.error().message);
						} else {
							p.rate_bps = newest;
						}
					}
					continue;
				}
				if (auto done = pacing_.revert_rate(p.pid, p.inode); !done && done.error().err != ENOENT)
					errors.push_back(it->first + ": " + done.error().message);
				pacing_held_.erase(it);
			} else {
				auto it = routes_held_.find(key);
				if (it == routes_held_.end() || --it->second.holders > 0)
					continue;
				if (auto done = routes_.revert(it->second.peer); !done && done.error().err != ENOENT)
					errors.push_back(key + ": " + done.error().message);
				routes_held_.erase(it);
			}
		}
		// Sockets still steered into a device whose others left: its bucket shrinks to their
		// sum. A device left empty keeps its rate: nothing goes through it until the next phase,
		// which most often sets the same one.
		for (uint32_t ifindex : lowered) {
			const DeviceShaper &device = devices_[ifindex];
			if (device.sockets <= 0) // the others left in the same revert
				continue;
			if (auto done = shaper_.set(ifindex, bucket(device.bytes_per_second, device.burst_frames)); !done)
				errors.push_back("shaper: " + done.error().message);
		}
		applied = {};
	}

	void revert_all(std::vector<std::string> &errors) override
	{
		if (auto done = pacing_.revert_all(); !done)
			errors.push_back("pacing: " + done.error().message);
		if (auto done = shaper_.remove_all(); !done)
			errors.push_back("shaper: " + done.error().message);
		if (auto done = tso_sizing_.release(); !done)
			errors.push_back("shaper: " + done.error().message);
		tso_sizing_holders_ = 0;
		steered_.clear();
		devices_.clear();
		if (auto done = routes_.revert_all(); !done)
			errors.push_back("routes: " + done.error().message);
		pacing_held_.clear();
		floors_held_.clear();
		routes_held_.clear();
		if (auto done = store_.flush(); !done)
			errors.push_back("state file: " + done.error().message);
	}

	void flush(std::vector<std::string> &errors) override
	{
		// Records of reverted settings stay on disk for a while: the next phase on the same
		// connection (an MPI loop) puts them back without a write on its critical path.
		if (auto done = store_.flush_older_than(kRemovedRecordsKept); !done)
			errors.push_back("state file: " + done.error().message);
		const auto now = std::chrono::steady_clock::now();
		// A release whose write failed stays engaged (so does a predecessor's record the
		// restore could not undo): tried again here, every 10 s, rather than only when some
		// later phase of long messages ends.
		if (tso_sizing_holders_ == 0 && tso_sizing_.original() && now - last_tso_release_try_ >= std::chrono::seconds(10)) {
			last_tso_release_try_ = now;
			if (auto done = tso_sizing_.release(); !done)
				errors.push_back("shaper: " + done.error().message);
		}
		for (auto it = devices_.begin(); it != devices_.end();) {
			if (it->second.sockets > 0 || now - it->second.idle_since < kIdleShaperKept) {
				++it;
				continue;
			}
			if (auto done = shaper_.remove(it->first); !done && done.error().err != ENOENT) {
				// kept: the next flush tries again (revert_all removes every shaper anyway)
				errors.push_back("shaper: " + done.error().message);
				it->second.idle_since = now;
				++it;
				continue;
			}
			it = devices_.erase(it);
		}
	}

	std::map<std::string, std::string> live() const override
	{
		std::map<std::string, std::string> out;
		for (const auto &[key, p] : pacing_held_)
			out[key] = format_rate(p.rate_bps) + ", " + std::to_string(p.holds.size()) + " phase(s)";
		for (const auto &[key, st] : steered_)
			out[key] = "shaper of device " + std::to_string(st.ifindex) + ", " + format_rate(st.bytes_per_second * 8) +
				   " of its bucket, " + std::to_string(st.holders) + " phase(s)";
		for (const auto &[ifindex, settings] : shaper_.installed())
			out["shaper " + std::to_string(ifindex)] =
				"bucket " + format_rate(settings.bytes_per_second * 8) + " (frames without preamble), " +
				std::to_string(devices_.count(ifindex) ? devices_.at(ifindex).sockets : 0) + " socket(s)";
		for (const auto &[key, f] : floors_held_) {
			uint32_t rto_min_us = 0; // as the socket reads it back
			for (const stock::PacingRecord &record : store_.state().pacing)
				if (record.pid == f.pid && record.inode == f.inode)
					rto_min_us = record.applied_rto_min_us;
			out[key] = "rto_min " + std::to_string(rto_min_us) + " us (TCP_RTO_MIN_US), " +
				   std::to_string(f.holders) + " phase(s)";
		}
		for (const auto &[key, r] : routes_held_)
			out[key] = "rto_min " + std::to_string(r.rto_min_ms) + " ms lock, " + (r.quickack ? "quickack 1, " : "") +
				   std::to_string(r.holders) + " phase(s)";
		if (tso_sizing_.original())
			out["sysctl net.ipv4.tcp_tso_rtt_log"] = "0 (was " + std::to_string(*tso_sizing_.original()) + "), " +
								 std::to_string(tso_sizing_holders_) + " phase(s)";
		return out;
	}

private:
	static constexpr const char *kTsoSizingKey = "tso sizing";

	// A socket and the payload rate its own cap is set to (0: not paced).
	struct SocketCap {
		const TargetSocket *socket;
		uint64_t payload_bps;
	};

	// The planned rate of the socket's connection as a cap. Planned rates are what the
	// bottleneck carries; SO_MAX_PACING_RATE counts payload (segments.hpp).
	static uint64_t own_cap(const ApplyRequest &r, const TargetSocket &t)
	{
		const uint64_t wire_rate = r.plan->rate_bps[t.peer];
		return wire_rate ? payload_rate_bps(wire_rate, *r.config, t.socket.remote.family) : 0;
	}

	// A steered socket's cap: the whole bucket of its device, or its own planned rate if that
	// is higher. See the end of steer() for why.
	SocketCap steered_cap(const ApplyRequest &r, const TargetSocket &t, uint32_t ifindex)
	{
		const uint64_t bucket_rate = bucket_payload_rate_bps(devices_[ifindex].bytes_per_second, *r.config,
								       t.socket.remote.family);
		return {&t, std::max(own_cap(r, t), bucket_rate)};
	}

	// [rto] stock_floor: each socket's own TCP_RTO_MIN_US where the kernel has it, which acts
	// on the phase's connections alone, not on every connection towards their peers (other
	// jobs', new ones), and needs no route of ours where somebody else's host routes are.
	// quickack is a route metric: with it, the route.
	static bool floors_sockets(const Config &config)
	{
		switch (config.rto_stock_floor) {
		case StockFloor::Socket:
			return true;
		case StockFloor::Route:
			return false;
		case StockFloor::Auto:
			break;
		}
		return !config.rto_quickack && stock::socket_rto_min().available;
	}

	enum class Floored { yes, failed, denied };

	// One socket's RTO floor, shared by the phases that hold it: the first one's stays (as
	// a route does). `denied`, with nothing reported, where "auto" may not borrow the socket
	// (pidfd_getfd needs ptrace access: Yama's ptrace_scope 3, or an LSM, refuse it): its
	// peer's route floors it instead, as on a kernel without the option.
	Floored floor(const ApplyRequest &r, const TargetSocket &t, Applied &applied, std::vector<std::string> &errors)
	{
		const std::string key = "rto " + std::to_string(r.pid) + " " + std::to_string(t.socket.inode);
		SharedFloor &f = floors_held_[key];
		if (!f.holders) {
			if (auto done = pacing_.floor_rto(r.pid, t.socket.inode, r.plan->rto_min_us, t.fd_in_process); !done) {
				floors_held_.erase(key);
				const int err = done.error().err;
				if ((err == EPERM || err == EACCES) && r.config->rto_stock_floor == StockFloor::Auto)
					return Floored::denied;
				errors.push_back("rto " + format_endpoint(t.socket.local) + "->" +
						 format_endpoint(t.socket.remote) + ": " + done.error().message);
				return Floored::failed;
			}
			f.pid = r.pid;
			f.inode = t.socket.inode;
		}
		++f.holders;
		applied.keys.push_back(key);
		++applied.rto;
		return Floored::yes;
	}

	// The floor as a host route to each peer host of `sockets`, shared by the phases (and
	// processes) whose connections go there.
	void floor_routes(const ApplyRequest &r, std::span<const TargetSocket *const> sockets, Applied &applied,
			  std::vector<std::string> &errors)
	{
		std::map<std::string, Endpoint> hosts;
		for (const TargetSocket *t : sockets) {
			Endpoint host = t->socket.remote;
			host.port = 0;
			hosts.emplace(format_endpoint(host), host);
		}
		const uint32_t rto_ms = (r.plan->rto_min_us + 999) / 1000;
		for (const auto &[name, host] : hosts) {
			const std::string key = "route " + name;
			SharedRoute &route = routes_held_[key];
			if (!route.holders) {
				if (auto done = routes_.apply(host, stock::RouteSettings{rto_ms, r.config->rto_quickack}); !done) {
					errors.push_back("route " + name + ": " + done.error().message);
					routes_held_.erase(key);
					continue;
				}
				route.peer = host;
				route.rto_min_ms = rto_ms;
				route.quickack = r.config->rto_quickack;
			}
			++route.holders;
			applied.keys.push_back(key);
			++applied.rto;
		}
	}

	// One socket's own cap (SO_MAX_PACING_RATE), shared by the phases that hold it: the
	// newest one's rate (SharedPacing).
	void pace(const ApplyRequest &r, const TargetSocket &t, uint64_t rate, Applied &applied,
		  std::vector<std::string> &errors)
	{
		if (!rate)
			return;
		const std::string key = "pacing " + std::to_string(r.pid) + " " + std::to_string(t.socket.inode);
		SharedPacing &p = pacing_held_[key];
		if (p.holds.empty() || p.rate_bps != rate) {
			if (auto done = pacing_.apply(r.pid, t.socket.inode, rate, t.fd_in_process); !done) {
				errors.push_back("pace " + format_endpoint(t.socket.local) + "->" +
						 format_endpoint(t.socket.remote) + ": " + done.error().message);
				if (p.holds.empty())
					pacing_held_.erase(key);
				return;
			}
		} // else held already at this rate: no syscalls
		p.pid = r.pid;
		p.inode = t.socket.inode;
		p.rate_bps = rate;
		const uint64_t hold = ++last_pacing_hold_;
		p.holds[hold] = rate;
		applied.keys.push_back(key + kBackendHoldSeparator + std::to_string(hold));
		++applied.paced;
	}

	// The paced sockets with a part of a bucket (Plan::bucket_bps) go into their device's
	// shaper: its bucket is set to the sum of their parts first (installed if need be), then
	// they are steered.
	// Every paced socket also goes to `caps`, for its own cap: steered or not (no route, a
	// qdisc somebody configured, a failed call).
	void steer(const ApplyRequest &r, Applied &applied, std::vector<std::string> &errors,
		   std::vector<SocketCap> &caps)
	{
		struct Joining {
			const TargetSocket *socket;
			std::string key;
			uint32_t ifindex;
			uint64_t bytes_per_second;
		};
		mtu_ = r.config->mtu;
		std::vector<Joining> joining;
		std::map<uint32_t, uint64_t> added; // per device
		for (const TargetSocket &t : r.sockets) {
			const uint64_t wire_rate = r.plan->rate_bps[t.peer];
			const uint64_t share = t.peer < r.plan->bucket_bps.size() ? r.plan->bucket_bps[t.peer] : 0;
			if (!wire_rate || !share) {
				caps.push_back({&t, own_cap(r, t)});
				continue;
			}
			const std::string key = "steered " + std::to_string(r.pid) + " " + std::to_string(t.socket.inode);
			if (auto held = steered_.find(key); held != steered_.end()) { // an overlapping phase steered it
				++held->second.holders;
				applied.keys.push_back(key);
				caps.push_back(steered_cap(r, t, held->second.ifindex)); // and its cap, as below
				continue;
			}
			auto ifindex = devices_towards_.device_towards(t.socket.remote);
			if (!ifindex) {
				errors.push_back("shaper: " + ifindex.error().message + "; paced by its own cap");
				caps.push_back({&t, own_cap(r, t)});
				continue;
			}
			// The planner's share leaves room for the reverse data's ACKs already; they
			// pass the bucket.
			const uint64_t bytes = bucket_bytes_per_second(share, *r.config, t.socket.remote.family);
			joining.push_back({&t, key, *ifindex, bytes});
			added[*ifindex] += bytes;
		}
		std::set<uint32_t> refused;
		const uint32_t burst_frames = std::max<uint32_t>(1, r.plan->bucket_burst_frames);
		for (const auto &[ifindex, bytes] : added) {
			if (auto done = shaper_.set(ifindex, bucket(devices_[ifindex].bytes_per_second + bytes, burst_frames));
			    !done) {
				errors.push_back("shaper: " + done.error().message + "; its sockets paced by their own caps");
				refused.insert(ifindex);
				continue;
			}
			devices_[ifindex].burst_frames = burst_frames;
		}
		std::vector<const Joining *> joined;
		for (const Joining &j : joining) {
			if (refused.count(j.ifindex)) {
				caps.push_back({j.socket, own_cap(r, *j.socket)});
				continue;
			}
			if (auto done = pacing_.steer(r.pid, j.socket->socket.inode, j.socket->fd_in_process);
			    !done) {
				errors.push_back("steer " + format_endpoint(j.socket->socket.local) + "->" +
						 format_endpoint(j.socket->socket.remote) + ": " + done.error().message);
				// Its share stays in the bucket until the device's next change.
				caps.push_back({j.socket, own_cap(r, *j.socket)});
				continue;
			}
			DeviceShaper &device = devices_[j.ifindex];
			device.bytes_per_second += j.bytes_per_second;
			++device.sockets;
			steered_[j.key] = SharedSteer{r.pid, j.socket->socket.inode, 1, j.ifindex, j.bytes_per_second};
			applied.keys.push_back(j.key);
			joined.push_back(&j);
		}
		// Steered sockets keep caps of their own, at the whole bucket's rate. Without a cap, TCP
		// paces at its automatic rate (Gbit/s here), and TCP Small Queues lets each socket keep
		// that much queued in the bucket: tens of milliseconds of delay for its ACK clock
		// (host-shaper-session14, run9). With one, each queues about a millisecond of its cap.
		// Not at the socket's planned rate: a flow paced at its share cannot make up time it
		// lost (a late start, a timer or a rank scheduled late), and every rank of the
		// collective waits for it; the bucket, not the cap, keeps the host to its share
		// (performance/steered-caps-session24).
		for (const Joining *j : joined)
			caps.push_back(steered_cap(r, *j->socket, j->ifindex));
		hold_tso_sizing(r, applied, errors);
	}

	// What TCP Small Queues lets a steered socket keep in its bucket is two skbs, and on Linux
	// 6.0+ a low-RTT flow's skbs are 64 KB (stock.hpp, TsoSizing). A phase whose messages are
	// longer than those two keeps that standing in the bucket for as long as it lasts:
	// 128 KB per socket, 0.3-0.4 s behind one host's 8 sockets of the 8+8 all-to-all at 4 MB,
	// where retransmission timers fired on segments still queued there, backed off, and the
	// phases collapsed in half of the runs. Shorter messages leave the bucket as their phase
	// ends; with smaller skbs they only cost CPU, which on the 2-CPU emulation cost 64 KB
	// phases a fifth of their rate (performance/bucket-queue-session27).
	static constexpr uint64_t kTsqQueueableBytes = 2 * 65536;
	void hold_tso_sizing(const ApplyRequest &r, Applied &applied, std::vector<std::string> &errors)
	{
		if (r.bytes_per_peer <= kTsqQueueableBytes ||
		    std::none_of(applied.keys.begin(), applied.keys.end(),
				 [](const std::string &key) { return key.starts_with("steered "); }))
			return;
		if (auto sized = tso_sizing_.engage(); !sized) {
			errors.push_back("shaper: " + sized.error().message);
			return;
		}
		++tso_sizing_holders_;
		applied.keys.push_back(kTsoSizingKey);
	}

	stock::ShaperSettings bucket(uint64_t bytes_per_second, uint32_t burst_frames) const
	{
		// At most `burst_frames` at once (Plan::bucket_burst_frames): every host of a
		// bottleneck may send its burst together.
		return stock::ShaperSettings{std::max<uint64_t>(bytes_per_second, 1),
					     (mtu_ + 100) * std::max<uint32_t>(burst_frames, 1)};
	}

	stock::StateStore store_;
	stock::PacingActuator pacing_;
	stock::RouteActuator routes_;
	stock::ShaperActuator shaper_;
	stock::TsoSizing tso_sizing_{store_};
	int tso_sizing_holders_ = 0; // phases of long messages with steered sockets (hold_tso_sizing)
	std::chrono::steady_clock::time_point last_tso_release_try_{};
	uint32_t mtu_ = 1500;
	std::map<std::string, SharedPacing> pacing_held_;
	uint64_t last_pacing_hold_ = 0;
	std::map<std::string, SharedFloor> floors_held_;
	std::map<std::string, SharedRoute> routes_held_;
	std::map<std::string, SharedSteer> steered_;
	std::map<uint32_t, DeviceShaper> devices_;
	RouteDeviceCache devices_towards_;
};

} // namespace

Expected<std::unique_ptr<Backend>> make_stock_backend(const std::string &state_file, std::vector<std::string> &log)
{
	auto report = stock::restore_from_state(state_file);
	if (!report && report.error().err == EINVAL) {
		// Not a state file we can read: what it recorded cannot be undone from it. Kept for
		// the administrator; our routes and shapers are still found by the purges below.
		const std::string aside = state_file + ".unreadable-" + std::to_string(::time(nullptr));
		if (::rename(state_file.c_str(), aside.c_str()) < 0)
			return make_error(errno, report.error().message + "; and cannot move it to " + aside + ": " +
							 std::strerror(errno));
		log.push_back("error: " + report.error().message + ": moved it to " + aside +
			      "; the socket settings it recorded are not restored");
		report = stock::RestoreReport{};
	}
	if (!report)
		return report.error();
	if (report->routes_deleted || report->pacing_restored || report->already_gone || report->tso_rtt_log_restored)
		log.push_back("restored what a previous daemon left: " + std::to_string(report->routes_deleted) +
			      " routes deleted, " + std::to_string(report->pacing_restored) + " sockets' settings restored, " +
			      std::to_string(report->already_gone) + " already gone" +
			      (report->tso_rtt_log_restored ? ", tcp_tso_rtt_log put back" : ""));
	for (const Error &e : report->failures)
		log.push_back("could not restore: " + e.message);
	// Routes of ours that no state file knows (a state file lost with its daemon).
	if (auto purged = stock::purge_routes(); purged && *purged)
		log.push_back("deleted " + std::to_string(*purged) + " stray gappace routes");
	// Shapers need no record: our handle on a device's root says whose it is.
	if (auto purged = stock::purge_shapers(); !purged)
		log.push_back("could not look for a previous daemon's shapers: " + purged.error().message);
	else if (*purged)
		log.push_back("removed " + std::to_string(*purged) + " shaper(s) a previous daemon left");
	auto store = stock::StateStore::adopt(state_file, log);
	if (!store)
		return store.error();
	return std::unique_ptr<Backend>(new StockBackend(std::move(*store)));
}

} // namespace gp::daemon
