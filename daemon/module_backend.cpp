// The module backend: flow rules and RTO overrides through the gappace genl family.
#include <linux/genetlink.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

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
	bool in_group = false; // its part of the device's host group (Plan::bucket_bps)
};

struct SharedRule {
	uint32_t ifindex = 0;
	Prefix dst;
	std::map<uint64_t, RuleHold> holds;	// by hold id, in the order they were taken
	// What the kernel has: a rule of its own at rate_bps, or a member of the device's group.
	bool installed = false;
	bool installed_in_group = false;
	uint64_t rate_bps = 0;

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
	// A destination any phase paces in the host group is in it for all of them: the kernel
	// has one rule per prefix.
	bool wants_group() const
	{
		return std::any_of(holds.begin(), holds.end(), [](const auto &h) { return h.second.in_group; });
	}
};

struct SharedRto {
	RtoTarget target;
	int holders = 0;
	uint32_t rto_min_us = 0;
	// When the kernel ends the override by itself (its TTL): a phase that finds it held
	// renews it once less than half the TTL is left, or an MPI loop whose phases overlap
	// (linger, held advice) would lose its floor after the first TTL.
	std::chrono::steady_clock::time_point expires{};
};

class ModuleBackend final : public Backend {
public:
	ModuleBackend(NetlinkSocket socket, uint16_t family, bool groups)
		: socket_(std::move(socket)), family_(family), kernel_has_groups_(groups)
	{
	}
	const char *name() const override { return "module"; }

	void apply(const ApplyRequest &r, Applied &applied, std::vector<std::string> &errors) override
	{
		// Pacing: one rule per destination host, its rate the per-connection rate times the
		// sender's connections to that host (a rule paces all of them together). With
		// [pacing] pacer = "host", the destinations the plan gives a part of a host bucket
		// (Plan::bucket_bps) share one schedule per device instead, at the sum of their
		// parts: the kernel's rule group, the module's counterpart of the stock backend's
		// token bucket. A destination with nothing left to send then leaves its share to
		// the others, where a rule of its own would send gap frames for it.
		const bool groups = kernel_has_groups_ && r.config->host_shaper;
		std::map<size_t, size_t> connections; // peer -> sockets
		for (const TargetSocket &t : r.sockets)
			++connections[t.peer];
		// One hold per rule in this phase, for all its peers on that host: the shim names
		// peers one per connection (tuples), so several ranks on one host are several peers
		// of one rule. The rule paces the connections to that host that send at once: all
		// of them, or one peer's at a time (pairwise, ring), at the per-connection rate.
		struct Wanted {
			uint32_t ifindex = 0;
			Prefix dst;
			uint64_t per_connection_bps = 0;
			bool in_group = false;
			std::set<uint64_t> sockets;		  // inodes
			std::map<size_t, size_t> sockets_of_peer; // peer -> its connections
			size_t at_once(bool one_peer_at_a_time) const
			{
				size_t n = sockets.size();
				if (one_peer_at_a_time) {
					n = 0;
					for (const auto &[peer, count] : sockets_of_peer)
						n = std::max(n, count);
				}
				return std::max<size_t>(1, n);
			}
		};
		std::map<std::string, Wanted> wanted;
		std::map<size_t, std::string> key_of; // peer -> its rule
		for (size_t i = 0; i < r.peers.size(); ++i) {
			const uint64_t rate = r.plan->rate_bps[i];
			// A rule paces every packet to that host: only install it for a host the sender
			// really talks to (its own sockets), so a hint cannot slow down others' traffic
			// to a host its sender has no connection with.
			if (!rate || !connections[i])
				continue;
			auto oif = devices_towards_.device_towards(r.peers[i].remote);
			if (!oif) {
				errors.push_back("pace " + format_endpoint(r.peers[i].remote) + ": " + oif.error().message);
				continue;
			}
			Prefix dst = make_prefix(r.peers[i].remote.family, r.peers[i].remote.address.data(),
						 r.peers[i].remote.family == AF_INET6 ? 128 : 32);
			const std::string key = "rule " + std::to_string(*oif) + " " + format_prefix(dst);
			const uint64_t part = i < r.plan->bucket_bps.size() ? r.plan->bucket_bps[i] : 0;
			Wanted &w = wanted[key];
			w.ifindex = *oif;
			w.dst = dst;
			w.per_connection_bps = std::max(w.per_connection_bps, groups && part ? part : rate);
			w.in_group = w.in_group || (groups && part);
			key_of[i] = key;
		}
		for (const TargetSocket &t : r.sockets)
			if (auto it = key_of.find(t.peer); it != key_of.end()) {
				Wanted &w = wanted[it->second];
				w.sockets.insert(t.socket.inode);
				++w.sockets_of_peer[t.peer];
			}
		std::vector<std::pair<std::string, uint64_t>> taken; // rule key, hold id
		std::set<uint32_t> devices;
		for (const auto &[key, w] : wanted) {
			SharedRule &rule = rules_[key];
			rule.ifindex = w.ifindex;
			rule.dst = w.dst;
			const uint64_t hold = ++last_hold_;
			rule.holds[hold] = RuleHold{r.pid, w.per_connection_bps * w.at_once(r.one_peer_at_a_time), w.in_group};
			taken.emplace_back(key, hold);
			devices.insert(w.ifindex);
		}
		// A rule the kernel refused loses the holds just taken (and goes if they were all it
		// had); the device is then set once more without them.
		for (uint32_t ifindex : devices) {
			std::set<std::string> refused = sync_device(ifindex, errors);
			if (refused.empty())
				continue;
			for (const auto &[key, hold] : taken) {
				if (!refused.count(key))
					continue;
				release_hold(key, hold, errors);
			}
			sync_device(ifindex, errors);
		}
		for (const auto &[key, hold] : taken) {
			auto it = rules_.find(key);
			if (it == rules_.end() || !it->second.holds.count(hold))
				continue;
			applied.keys.push_back(key + kHoldSeparator + std::to_string(hold));
			++applied.paced;
		}
		// RTO floor: per socket of the sender, by its tuple.
		if (r.plan->rto_min_us) {
			for (const TargetSocket &t : r.sockets) {
				RtoTarget target{t.socket.local, t.socket.remote};
				const std::string key = "rto " + format_endpoint(t.socket.local) + " " + format_endpoint(t.socket.remote);
				SharedRto &rto = rtos_[key];
				// Even a hung daemon cannot leave an override behind for long.
				const auto ttl = std::chrono::milliseconds(r.config->phase_timeout_ms + 1000);
				const auto now = std::chrono::steady_clock::now();
				if (rto.holders && rto.rto_min_us == r.plan->rto_min_us && rto.expires - now > ttl / 2) {
					++rto.holders; // held already, for long enough
					applied.keys.push_back(key);
					++applied.rto;
					continue;
				}
				RtoSettings settings;
				settings.rto_min_us = r.plan->rto_min_us;
				settings.delack_max_us = r.config->delack_max_us;
				settings.ttl_ms = static_cast<uint32_t>(ttl.count());
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
				rto.expires = now + ttl;
				++rto.holders;
				applied.keys.push_back(key);
				++applied.rto;
			}
		}
	}

	void revert(Applied &applied, std::vector<std::string> &errors) override
	{
		std::set<uint32_t> devices;
		for (const std::string &key : applied.keys) {
			if (key.starts_with("rule ")) {
				const size_t separator = key.rfind(kHoldSeparator);
				if (separator == std::string::npos)
					continue;
				const std::string rule_key = key.substr(0, separator);
				if (auto it = rules_.find(rule_key); it != rules_.end())
					devices.insert(it->second.ifindex);
				release_hold(rule_key, std::strtoull(key.c_str() + separator + 1, nullptr, 10), errors);
			} else {
				release_rto(key, errors);
			}
		}
		for (uint32_t ifindex : devices)
			sync_device(ifindex, errors);
		applied = {};
	}

	void revert_all(std::vector<std::string> &errors) override
	{
		for (auto it = rules_.begin(); it != rules_.end();) {
			if (it->second.installed) {
				RequestBuffer req;
				encode_rule_del(req, family_, it->second.ifindex, it->second.dst);
				if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
					errors.push_back(it->first + ": " + done.error().message);
			}
			it = rules_.erase(it);
		}
		group_rates_.clear();
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
		for (const auto &[key, rule] : rules_) {
			if (rule.installed_in_group) {
				out[key] = format_rate(rule.wanted_rate()) + " of the host group of device " +
					   std::to_string(rule.ifindex) + ", " + std::to_string(rule.holds.size()) + " phase(s)";
				continue;
			}
			out[key] = format_rate(rule.rate_bps) + ", " + std::to_string(rule.holds.size()) + " phase(s)" +
				   (rule.rate_bps < rule.wanted_rate() ? ", clamped to the link rate from " + format_rate(rule.wanted_rate())
								       : std::string());
		}
		for (const auto &[ifindex, rate] : group_rates_)
			out["group " + std::to_string(ifindex)] = "host group " + std::to_string(kHostGroup) + " at " + format_rate(rate);
		for (const auto &[key, rto] : rtos_)
			out[key] = "rto_min " + std::to_string(rto.rto_min_us) + " us, " + std::to_string(rto.holders) + " phase(s)";
		return out;
	}

private:
	// The group the daemon's rules share on each device (GAPPACE_A_RULE_GROUP): an arbitrary
	// number, far from the small ones an administrator would pick for rules of their own.
	static constexpr uint32_t kHostGroup = 0x67706400;

	// At most the link rate of the device's qdisc, which refuses more (ERANGE). Sums reach
	// it when several processes of this host pace to one destination, each granted its
	// share of a bottleneck the planner sized for one sender per host, or when phases
	// overlap that the planner did not foresee.
	uint64_t clamp_to_link(uint32_t ifindex, uint64_t wanted)
	{
		const uint64_t link = linkrate(ifindex);
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

	// One RULE_SET; false (and the error noted) if the kernel refused it.
	bool set_rule(const SharedRule &rule, uint64_t rate, bool in_group, std::vector<std::string> &errors)
	{
		RequestBuffer req;
		encode_rule_new(req, family_, rule.ifindex, rule.dst, rate, /*replace=*/true,
				in_group ? std::optional<uint32_t>(kHostGroup) : std::nullopt);
		if (auto done = socket_.transact(req); !done) {
			errors.push_back("pace " + format_prefix(rule.dst) + ": " + done.error().message);
			if (done.error().err == ERANGE) // the qdisc was changed: read its rate again
				linkrates_.erase(rule.ifindex);
			return false;
		}
		return true;
	}

	// Brings the kernel's rules on `ifindex` to what their holds want: rules of their own at
	// their rates, and the group's members at the sum of theirs (one RULE_SET of any member
	// sets the whole group's rate). Returns the keys of the rules the kernel refused.
	std::set<std::string> sync_device(uint32_t ifindex, std::vector<std::string> &errors)
	{
		std::set<std::string> refused;
		uint64_t group_wanted = 0;
		for (const auto &[key, rule] : rules_)
			if (rule.ifindex == ifindex && rule.wants_group())
				group_wanted += rule.wanted_rate();
		const uint64_t group_rate = group_wanted ? clamp_to_link(ifindex, group_wanted) : 0;
		uint64_t &installed_group_rate = group_rates_[ifindex];
		SharedRule *member = nullptr;
		for (auto &[key, rule] : rules_) {
			if (rule.ifindex != ifindex)
				continue;
			if (rule.wants_group()) {
				if (rule.installed && rule.installed_in_group) {
					member = &rule;
					continue;
				}
				if (!set_rule(rule, group_rate, true, errors)) {
					refused.insert(key);
					continue;
				}
				rule.installed = rule.installed_in_group = true;
				installed_group_rate = group_rate;
				member = &rule;
				continue;
			}
			const uint64_t own = clamp_to_link(ifindex, rule.wanted_rate());
			if (rule.installed && !rule.installed_in_group && rule.rate_bps == own)
				continue;
			if (!set_rule(rule, own, false, errors)) {
				refused.insert(key);
				continue;
			}
			rule.installed = true;
			rule.installed_in_group = false;
			rule.rate_bps = own;
		}
		if (!member) {
			group_rates_.erase(ifindex);
		} else if (installed_group_rate != group_rate && set_rule(*member, group_rate, true, errors)) {
			installed_group_rate = group_rate;
		}
		return refused;
	}

	// Ends one hold of a rule; the rule goes with its last one. The caller then syncs the
	// device (the rates the remaining holds want).
	void release_hold(const std::string &key, uint64_t hold, std::vector<std::string> &errors)
	{
		auto it = rules_.find(key);
		if (it == rules_.end())
			return;
		SharedRule &rule = it->second;
		rule.holds.erase(hold);
		if (rule.holds.empty()) {
			if (rule.installed) {
				RequestBuffer req;
				encode_rule_del(req, family_, rule.ifindex, rule.dst);
				if (auto done = socket_.transact(req); !done && done.error().err != ENOENT)
					errors.push_back(key + ": " + done.error().message);
			}
			rules_.erase(it);
		}
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
	bool kernel_has_groups_;	// the family is version 3 or later (GAPPACE_A_RULE_GROUP)
	static constexpr char kHoldSeparator = kBackendHoldSeparator;
	std::map<std::string, SharedRule> rules_;
	std::map<uint32_t, uint64_t> group_rates_; // ifindex -> the host group's installed rate
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
	// Rule groups came with version 3; an older module paces every destination alone.
	auto version = socket->genl_family_version(GAPPACE_GENL_NAME);
	const bool groups = version && *version >= 3;
	return std::unique_ptr<Backend>(new ModuleBackend(std::move(*socket), *family, groups));
}

} // namespace gp::daemon
