// The stock backend: SO_MAX_PACING_RATE on the sender's sockets and per-peer host routes with
// a locked rto_min and quickack, through gp::stock (daemon/stock), which records every change
// in the state file before making it.
#include <cerrno>
#include <chrono>

#include "backend.hpp"
#include "units.hpp"

namespace gp::daemon {
namespace {

constexpr auto kRemovedRecordsKept = std::chrono::seconds(1);

struct SharedPacing {
	pid_t pid = 0;
	uint64_t inode = 0;
	int holders = 0;
	uint64_t rate_bps = 0;
};

struct SharedRoute {
	Endpoint peer;
	int holders = 0;
	uint32_t rto_min_ms = 0;
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
		for (const TargetSocket &t : r.sockets) {
			const uint64_t wire_rate = r.plan->rate_bps[t.peer];
			if (!wire_rate)
				continue;
			// Planned rates are what the bottleneck carries; SO_MAX_PACING_RATE counts
			// payload. A full segment of mss payload bytes takes mss + frame_overhead.
			const uint64_t mss = r.config->mtu > 52 ? r.config->mtu - 52 : 536;
			const uint64_t rate = std::max<uint64_t>(
				8, static_cast<uint64_t>(static_cast<double>(wire_rate) * static_cast<double>(mss) /
							 static_cast<double>(mss + r.config->frame_overhead)));
			const std::string key = "pacing " + std::to_string(r.pid) + " " + std::to_string(t.socket.inode);
			SharedPacing &p = pacing_held_[key];
			// Overlapping phases on one socket: the slowest cap wins while both run.
			const uint64_t next = p.holders ? std::min(p.rate_bps, rate) : rate;
			if (p.holders && next == p.rate_bps) { // held already at this rate: no syscalls
				++p.holders;
				applied.keys.push_back(key);
				++applied.paced;
				continue;
			}
			if (auto done = pacing_.apply(r.pid, t.socket.inode, next, t.fd_in_process); !done) {
				errors.push_back("pace " + format_endpoint(t.socket.local) + "->" + format_endpoint(t.socket.remote) +
						 ": " + done.error().message);
				if (!p.holders)
					pacing_held_.erase(key);
				continue;
			}
			p.pid = r.pid;
			p.inode = t.socket.inode;
			p.rate_bps = next;
			++p.holders;
			applied.keys.push_back(key);
			++applied.paced;
		}
		if (!r.plan->rto_min_us)
			return;
		// One route per peer host that the sender really has a connection to.
		std::map<std::string, Endpoint> hosts;
		for (const TargetSocket &t : r.sockets) {
			Endpoint host = t.socket.remote;
			host.port = 0;
			hosts.emplace(format_endpoint(host), host);
		}
		const uint32_t rto_ms = (r.plan->rto_min_us + 999) / 1000;
		for (const auto &[name, host] : hosts) {
			const std::string key = "route " + name;
			SharedRoute &route = routes_held_[key];
			if (!route.holders) {
				if (auto done = routes_.apply(host, stock::RouteSettings{rto_ms, true}); !done) {
					errors.push_back("route " + name + ": " + done.error().message);
					routes_held_.erase(key);
					continue;
				}
				route.peer = host;
				route.rto_min_ms = rto_ms;
			}
			++route.holders;
			applied.keys.push_back(key);
			++applied.rto;
		}
	}

	void revert(Applied &applied, std::vector<std::string> &errors) override
	{
		for (const std::string &key : applied.keys) {
			if (key.starts_with("pacing ")) {
				auto it = pacing_held_.find(key);
				if (it == pacing_held_.end() || --it->second.holders > 0)
					continue;
				if (auto done = pacing_.revert(it->second.pid, it->second.inode); !done && done.error().err != ENOENT)
					errors.push_back(key + ": " + done.error().message);
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
		applied = {};
	}

	void revert_all(std::vector<std::string> &errors) override
	{
		if (auto done = pacing_.revert_all(); !done)
			errors.push_back("pacing: " + done.error().message);
		if (auto done = routes_.revert_all(); !done)
			errors.push_back("routes: " + done.error().message);
		pacing_held_.clear();
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
	}

	std::map<std::string, std::string> live() const override
	{
		std::map<std::string, std::string> out;
		for (const auto &[key, p] : pacing_held_)
			out[key] = format_rate(p.rate_bps) + ", " + std::to_string(p.holders) + " phase(s)";
		for (const auto &[key, r] : routes_held_)
			out[key] = "rto_min " + std::to_string(r.rto_min_ms) + " ms lock, quickack 1, " +
				   std::to_string(r.holders) + " phase(s)";
		return out;
	}

private:
	stock::StateStore store_;
	stock::PacingActuator pacing_;
	stock::RouteActuator routes_;
	std::map<std::string, SharedPacing> pacing_held_;
	std::map<std::string, SharedRoute> routes_held_;
};

} // namespace

Expected<std::unique_ptr<Backend>> make_stock_backend(const std::string &state_file, std::vector<std::string> &log)
{
	auto report = stock::restore_from_state(state_file);
	if (!report)
		return report.error();
	if (report->routes_deleted || report->pacing_restored || report->already_gone)
		log.push_back("restored what a previous daemon left: " + std::to_string(report->routes_deleted) +
			      " routes deleted, " + std::to_string(report->pacing_restored) + " sockets' pacing restored, " +
			      std::to_string(report->already_gone) + " already gone");
	for (const Error &e : report->failures)
		log.push_back("could not restore: " + e.message);
	// Routes of ours that no state file knows (a state file lost with its daemon).
	if (auto purged = stock::purge_routes(); purged && *purged)
		log.push_back("deleted " + std::to_string(*purged) + " stray gappace routes");
	auto store = stock::StateStore::create(state_file);
	if (!store)
		return store.error();
	return std::unique_ptr<Backend>(new StockBackend(std::move(*store)));
}

} // namespace gp::daemon
