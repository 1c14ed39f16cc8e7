// The module backend: flow rules and RTO overrides through the gappace genl family.
#include <linux/genetlink.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <map>

#include "backend.hpp"
#include "messages.hpp"
#include "netlink.hpp"
#include "units.hpp"

namespace gp::daemon {
namespace {

// One phase's share of a destination rule.
struct RuleHold {
	pid_t pid = 0;
	uint64_t rate_bps = 0;
};

struct SharedRule {
	uint32_t ifindex = 0;
	Prefix dst;
	uint64_t rate_bps = 0;			// installed in the kernel
	std::map<uint64_t, RuleHold> holds;	// by hold id, in the order they were taken

	// Processes add up; one process's phases do not. A process runs its phases one after
	// another, so its lingering phase and its next one never send at once: it counts with
	// the share of its newest phase. (Adding them up grew the rule with every lingering
	// phase of an MPI loop until the kernel refused a rate above the link's.)
	uint64_t wanted_rate() const
	{
		std::map<pid_t, uint64_t> newest;
		for (const auto &[id, hold] : holds)
			newest[hold.pid] = hold.rate_bps;
		uint64_t total = 0;
		for (const auto &[pid, rate] : newest)
			total += rate;
		return total;
	}
};

struct SharedRto {
	RtoTarget target;
	int holders = 0;
	uint32_t rto_min_us = 0;
};

class ModuleBackend final : public Backend {
public:
	ModuleBackend(NetlinkSocket socket, uint16_t family) : socket_(std::move(socket)), family_(family) {}
	const char *name() const override { return "module"; }

	void apply(const ApplyRequest &r, Applied &applied, std::vector<std::string> &errors) override
	{
		// Pacing: one rule per destination host, its rate the per-connection rate times the
		// sender's connections to that host (a rule paces all of them together).
		std::map<size_t, size_t> connections; // peer -> sockets
		for (const TargetSocket &t : r.sockets)
			++connections[t.peer];
		for (size_t i = 0; i < r.peers.size(); ++i) {
			const uint64_t rate = r.plan->rate_bps[i];
			// A rule paces every packet to that host: only install it for a host the sender
			// really talks to (its own sockets), so a hint cannot slow down others' traffic
			// to a host its sender has no connection with.
			if (!rate || !connections[i])
				continue;
			const size_t n = connections[i];
			auto oif = devices_towards_.device_towards(r.peers[i].remote);
			if (!oif) {
				errors.push_back("pace " + format_endpoint(r.peers[i].remote) + ": " + oif.error().message);
				continue;
			}
			Prefix dst = make_prefix(r.peers[i].remote.family, r.peers[i].remote.address.data(),
						 r.peers[i].remote.family == AF_INET6 ? 128 : 32);
			const std::string key = "rule " + std::to_string(*oif) + " " + format_prefix(dst);
			SharedRule &rule = rules_[key];
			const bool installed = !rule.holds.empty();
			rule.ifindex = *oif;
			rule.dst = dst;
			const uint64_t hold = ++last_hold_;
			rule.holds[hold] = RuleHold{r.pid, rate * n};
			if (const uint64_t wanted = rate_for(rule); !installed || wanted != rule.rate_bps) {
				RequestBuffer req;
				encode_rule_new(req, family_, rule.ifindex, dst, wanted, /*replace=*/true);
				if (auto done = socket_.transact(req); !done) {
					errors.push_back("pace " + format_prefix(dst) + ": " + done.error().message);
					if (done.error().err == ERANGE) // the qdisc was changed: read its rate again
						linkrates_.erase(rule.ifindex);
					rule.holds.erase(hold);
					if (rule.holds.empty())
						rules_.erase(key);
					continue;
				}
				rule.rate_bps = wanted;
			}
			applied.keys.push_back(key + kHoldSeparator + std::to_string(hold));
			++applied.paced;
		}
		// RTO floor: per socket of the sender, by its tuple.
		if (r.plan->rto_min_us) {
			for (const TargetSocket &t : r.sockets) {
				RtoTarget target{t.socket.local, t.socket.remote};
				const std::string key = "rto " + format_endpoint(t.socket.local) + " " + format_endpoint(t.socket.remote);
				SharedRto &rto = rtos_[key];
				if (rto.holders && rto.rto_min_us == r.plan->rto_min_us) { // held already
					++rto.holders;
					applied.keys.push_back(key);
					++applied.rto;
					continue;
				}
				RtoSettings settings;
				settings.rto_min_us = r.plan->rto_min_us;
				settings.delack_max_us = r.config->delack_max_us;
				// Even a hung daemon cannot leave an override behind for long.
				settings.ttl_ms = r.config->phase_timeout_ms + 1000;
				RequestBuffer req;
				encode_rto_set(req, family_, target, settings);
				if (auto done = socket_.transact(req); !done) {
					errors.push_back("rto " + key.substr(4) + ": " + done.error().message);
					if (!rto.holders)
						rtos_.erase(key);
					continue;
				}
				rto.target = target;
				rto.rto_min_us = settings.rto_min_us;
				++rto.holders;
				applied.keys.push_back(key);
				++applied.rto;
			}
		}
	}

	void revert(Applied &applied, std::vector<std::string> &errors) override
	{
		for (const std::string &key : applied.keys) {
			if (key.starts_with("rule "))
				release_rule(key, errors);
			else
				release_rto(key, errors);
		}
		applied = {};
	}

	void revert_all(std::vector<std::string> &errors) override
	{
		for (auto it = rules_.begin(); it != rules_.end();) {
			RequestBuffer req;
			encode_rule_del(req, family_, it->second.ifindex, it->second.dst);
			if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
				errors.push_back(it->first + ": " + done.error().message);
			it = rules_.erase(it);
		}
		for (auto it = rtos_.begin(); it != rtos_.end();) {
			RequestBuffer req;
			encode_rto_clear(req, family_, it->second.target);
			if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
				errors.push_back(it->first + ": " + done.error().message);
			it = rtos_.erase(it);
		}
	}

	std::map<std::string, std::string> live() const override
	{
		std::map<std::string, std::string> out;
		for (const auto &[key, rule] : rules_)
			out[key] = format_rate(rule.rate_bps) + ", " + std::to_string(rule.holds.size()) + " phase(s)" +
				   (rule.rate_bps < rule.wanted_rate() ? ", clamped to the link rate from " + format_rate(rule.wanted_rate())
								       : std::string());
		for (const auto &[key, rto] : rtos_)
			out[key] = "rto_min " + std::to_string(rto.rto_min_us) + " us, " + std::to_string(rto.holders) + " phase(s)";
		return out;
	}

private:
	// The rate to install for a rule: what its holders want, at most the link rate of the
	// device's qdisc, which refuses more (ERANGE). Sums reach it when several processes of
	// this host pace to one destination, each granted its share of a bottleneck the planner
	// sized for one sender per host, or when phases overlap that the planner did not foresee.
	uint64_t rate_for(const SharedRule &rule)
	{
		const uint64_t wanted = rule.wanted_rate();
		const uint64_t link = linkrate(rule.ifindex);
		return link ? std::min(wanted, link) : wanted;
	}

	// The effective link rate of the gappace qdisc on `ifindex`, read once (0: unknown; the
	// kernel then judges the rate itself).
	uint64_t linkrate(uint32_t ifindex)
	{
		if (auto it = linkrates_.find(ifindex); it != linkrates_.end())
			return it->second;
		uint64_t rate = 0;
		RequestBuffer req;
		encode_stats_get(req, family_, ifindex);
		auto done = socket_.transact(req, [&](const nlmsghdr *nlh) -> Expected<void> {
			if (auto info = decode_device_stats(nlh); info && info->linkrate)
				rate = *info->linkrate;
			return {};
		});
		if (done && rate)
			linkrates_[ifindex] = rate;
		return rate;
	}

	// `held` is what apply() recorded: the rule's key, kHoldSeparator, the hold's id.
	void release_rule(const std::string &held, std::vector<std::string> &errors)
	{
		const size_t separator = held.rfind(kHoldSeparator);
		if (separator == std::string::npos)
			return;
		const std::string key = held.substr(0, separator);
		auto it = rules_.find(key);
		if (it == rules_.end())
			return;
		SharedRule &rule = it->second;
		rule.holds.erase(std::strtoull(held.c_str() + separator + 1, nullptr, 10));
		RequestBuffer req;
		if (rule.holds.empty()) {
			encode_rule_del(req, family_, rule.ifindex, rule.dst);
			rules_.erase(it);
		} else if (const uint64_t wanted = rate_for(rule); wanted != rule.rate_bps) {
			encode_rule_new(req, family_, rule.ifindex, rule.dst, wanted, true);
			rule.rate_bps = wanted;
		} else {
			return; // the remaining holders want what is installed
		}
		if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
			errors.push_back(key + ": " + done.error().message);
	}

	void release_rto(const std::string &key, std::vector<std::string> &errors)
	{
		auto it = rtos_.find(key);
		if (it == rtos_.end() || --it->second.holders > 0)
			return;
		RequestBuffer req;
		encode_rto_clear(req, family_, it->second.target);
		// ENOENT: the socket closed, or the TTL ended it; either way it is restored.
		if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
			errors.push_back(key + ": " + done.error().message);
		rtos_.erase(it);
	}

	NetlinkSocket socket_;
	uint16_t family_;
	static constexpr char kHoldSeparator = '#';
	std::map<std::string, SharedRule> rules_;
	RouteDeviceCache devices_towards_;
	uint64_t last_hold_ = 0;
	std::map<std::string, SharedRto> rtos_;
	std::map<uint32_t, uint64_t> linkrates_;	// ifindex -> the qdisc's link rate
};

} // namespace

Expected<std::unique_ptr<Backend>> make_module_backend()
{
	auto socket = NetlinkSocket::open(NETLINK_GENERIC);
	if (!socket)
		return socket.error();
	auto family = socket->genl_family_id(GAPPACE_GENL_NAME);
	if (!family)
		return family.error();
	return std::unique_ptr<Backend>(new ModuleBackend(std::move(*socket), *family));
}

} // namespace gp::daemon
