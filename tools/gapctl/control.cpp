#include "control.hpp"

#include <arpa/inet.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "endpoint.hpp"
#include "gapctl.h"
#include "units.hpp"
#include "unique_fd.hpp"
#include "unix_address.hpp"

namespace gp {
namespace {

// `hint` accepts iproute2-style keywords and, as documented in the issue tracker and the
// MPI guide, their --long spellings.
std::vector<std::string_view> strip_dashes(Args args)
{
	std::vector<std::string_view> out;
	for (std::string_view a : args) {
		if (a.starts_with("--"))
			a.remove_prefix(2);
		out.push_back(a);
	}
	return out;
}

int report_failure(const Invocation &inv, std::string_view what, const Error &error)
{
	std::fprintf(inv.err, "gapctl: %.*s: %s\n", static_cast<int>(what.size()), what.data(), error.message.c_str());
	return kExitFailure;
}

int usage_error(const Invocation &inv, const std::string &message)
{
	std::fprintf(inv.err, "gapctl: %s\nUsage: gapctl %.*s\n", message.c_str(),
		     static_cast<int>(inv.command->usage.size()), inv.command->usage.data());
	return kExitUsage;
}

} // namespace

std::string default_control_socket()
{
	const char *env = std::getenv("GAPPACE_CONTROL_SOCK");
	return env && *env ? env : "/run/gappace/control.sock";
}

int hint_send(const Invocation &inv, Args raw)
{
	auto words = strip_dashes(raw);
	if (words.empty())
		return usage_error(inv, "missing the collective kind");
	const uint32_t kind = gapctl_kind_from_name(std::string(words.front()).c_str());
	if (!kind)
		return usage_error(inv, "unknown kind \"" + std::string(words.front()) +
						"\" (alltoall, allgather, bcast, reduce_scatter, allreduce, gather, scatter, "
						"barrier, p2p_burst, reduce)");
	static constexpr Keyword grammar[] = {
		{"peers", KeywordKind::Value, true}, {"size", KeywordKind::Value, true},
		{"algorithm"},			      {"comm-size"},
		{"rank"},			      {"repetitions"},
		{"hold"},			      {"no-kernel", KeywordKind::Flag},
	};
	auto kw = parse_keywords(std::span(words).subspan(1), grammar);
	if (!kw)
		return usage_error(inv, kw.error().message);
	auto &k = *kw;

	std::vector<gapctl_peer> peers;
	std::string_view list = k["peers"];
	while (!list.empty()) {
		const size_t comma = list.find(',');
		std::string_view item = list.substr(0, comma);
		list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
		gapctl_peer peer{};
		peer.fd = -1;
		peer.rank = -1;
		// ADDR, or LOCAL:PORT-REMOTE:PORT for one connection ("10.0.0.1:40000-10.0.0.2:5001").
		const size_t dash = item.find('-');
		if (dash != std::string_view::npos && item.find(':') != std::string_view::npos &&
		    item.find(':') < dash) {
			auto local = parse_endpoint(item.substr(0, dash));
			auto remote = parse_endpoint(item.substr(dash + 1));
			if (!local)
				return usage_error(inv, local.error().message);
			if (!remote)
				return usage_error(inv, remote.error().message);
			if (local->family != remote->family)
				return usage_error(inv, "a connection's ends must be of one address family");
			peer.family = remote->family;
			std::memcpy(peer.addr, remote->address.data(), 16);
			std::memcpy(peer.local_addr, local->address.data(), 16);
			peer.port = remote->port;
			peer.local_port = local->port;
		} else {
			auto address = parse_host_address(item);
			if (!address)
				return usage_error(inv, address.error().message);
			peer.family = address->family;
			std::memcpy(peer.addr, address->address.data(), 16);
		}
		peer.rank = static_cast<int32_t>(peers.size() + 1);
		peers.push_back(peer);
	}
	if (peers.empty())
		return usage_error(inv, "peers: give at least one address");
	auto size = parse_size(k["size"]);
	if (!size)
		return usage_error(inv, "invalid size \"" + std::string(k["size"]) + "\"");

	gapctl_phase phase{};
	phase.struct_size = sizeof(phase);
	phase.kind = kind;
	phase.bytes_per_peer = *size;
	phase.comm_size = static_cast<uint32_t>(peers.size() + 1);
	phase.rank = 0;
	phase.n_peers = static_cast<uint32_t>(peers.size());
	phase.peers = peers.data();
	auto number = [&](const char *key, auto &field, uint64_t max) -> bool {
		if (!k.count(key))
			return true;
		auto v = parse_u64(k[key]);
		if (!v || *v > max)
			return false;
		field = static_cast<std::remove_reference_t<decltype(field)>>(*v);
		return true;
	};
	if (!number("comm-size", phase.comm_size, UINT32_MAX))
		return usage_error(inv, "invalid comm-size");
	if (!number("rank", phase.rank, INT32_MAX))
		return usage_error(inv, "invalid rank");
	if (!number("repetitions", phase.repetitions, UINT32_MAX))
		return usage_error(inv, "invalid repetitions");
	if (k.count("algorithm")) {
		static constexpr std::pair<std::string_view, uint32_t> algorithms[] = {
			{"unknown", GAPCTL_ALGORITHM_UNKNOWN},	   {"linear", GAPCTL_ALGORITHM_LINEAR},
			{"pairwise", GAPCTL_ALGORITHM_PAIRWISE},   {"ring", GAPCTL_ALGORITHM_RING},
			{"binomial", GAPCTL_ALGORITHM_BINOMIAL},   {"scatter_allgather", GAPCTL_ALGORITHM_SCATTER_ALLGATHER},
			{"recursive_doubling", GAPCTL_ALGORITHM_RECURSIVE_DOUBLING},
		};
		bool found = false;
		for (auto [name, value] : algorithms)
			if (name == k["algorithm"]) {
				phase.algorithm = value;
				found = true;
			}
		if (!found)
			return usage_error(inv, "unknown algorithm \"" + std::string(k["algorithm"]) + "\"");
	}
	uint64_t hold_us = 0;
	if (k.count("hold")) {
		auto v = parse_time_us(k["hold"]);
		if (!v || *v > 3600ULL * 1000000)
			return usage_error(inv, "invalid hold time (at most 1h)");
		hold_us = *v;
	}

	gapctl_t *handle = nullptr;
	int rc = gapctl_open(&handle, k.count("no-kernel") ? GAPCTL_OPEN_NO_KERNEL : 0);
	if (rc < 0)
		return report_failure(inv, "cannot open libgapctl", make_error(-rc, gapctl_strerror(rc)));
	const auto start = std::chrono::steady_clock::now();
	uint64_t id = 0;
	rc = gapctl_phase_begin(handle, &phase, &id);
	if (rc == 0) {
		gapctl_flush(handle, 1000);
		if (hold_us) {
			timespec ts{static_cast<time_t>(hold_us / 1000000), static_cast<long>(hold_us % 1000000) * 1000};
			while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
			}
		}
		const auto took = std::chrono::steady_clock::now() - start;
		rc = gapctl_phase_end(handle, id, static_cast<uint64_t>(std::chrono::nanoseconds(took).count()));
		gapctl_flush(handle, 1000);
	}
	gapctl_stats stats{};
	stats.struct_size = sizeof(stats);
	gapctl_get_stats(handle, &stats);
	gapctl_close(handle);
	if (rc < 0)
		return report_failure(inv, "hint refused", make_error(-rc, gapctl_strerror(rc)));
	static const char *carriers[] = {"none", "kernel", "socket"};
	const char *carrier = stats.carrier < 3 ? carriers[stats.carrier] : "?";
	if (inv.format == OutputFormat::Text) {
		std::fprintf(inv.out, "phase %llu: %llu hints sent via %s, %llu dropped, %llu carrier errors\n",
			     static_cast<unsigned long long>(id), static_cast<unsigned long long>(stats.hints_sent), carrier,
			     static_cast<unsigned long long>(stats.hints_dropped),
			     static_cast<unsigned long long>(stats.carrier_errors));
	} else {
		std::fprintf(inv.out,
			     "{\"phase_id\":%llu,\"carrier\":\"%s\",\"sent\":%llu,\"dropped\":%llu,\"carrier_errors\":%llu}\n",
			     static_cast<unsigned long long>(id), carrier, static_cast<unsigned long long>(stats.hints_sent),
			     static_cast<unsigned long long>(stats.hints_dropped),
			     static_cast<unsigned long long>(stats.carrier_errors));
	}
	// Not delivered is a failure for a manual hint: the user wants to know.
	if (stats.hints_sent < 2 || stats.carrier_errors) {
		std::fprintf(inv.err, "gapctl: the hint did not reach gappaced (is it running?)\n");
		return kExitFailure;
	}
	return kExitSuccess;
}

Expected<std::string> query_daemon(const std::string &path)
{
	UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (!fd)
		return make_error(errno, std::strerror(errno));
	auto addr = make_unix_address(path);
	if (!addr)
		return make_error(ENAMETOOLONG, path + ": not a valid Unix socket path");
	if (::connect(fd.get(), addr->get(), addr->len) < 0)
		return make_error(errno, path + ": " + std::strerror(errno) + " (is gappaced running?)");
	if (::send(fd.get(), "show\n", 5, MSG_NOSIGNAL) != 5)
		return make_error(errno, std::string("send: ") + std::strerror(errno));
	std::string reply;
	const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
	for (;;) {
		const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
		if (left.count() <= 0)
			return make_error(ETIMEDOUT, "gappaced did not answer within 2 s");
		pollfd p{fd.get(), POLLIN, 0};
		if (::poll(&p, 1, static_cast<int>(left.count())) <= 0)
			continue;
		char buf[65536];
		ssize_t n = ::recv(fd.get(), buf, sizeof(buf), 0);
		if (n < 0)
			return make_error(errno, std::string("recv: ") + std::strerror(errno));
		if (n == 0)
			break;
		reply.append(buf, static_cast<size_t>(n));
	}
	return reply;
}

int daemon_show(const Invocation &inv, Args raw)
{
	auto words = strip_dashes(raw);
	static constexpr Keyword grammar[] = {{"socket"}};
	auto kw = parse_keywords(words, grammar);
	if (!kw)
		return usage_error(inv, kw.error().message);
	const std::string path = kw->count("socket") ? std::string((*kw)["socket"]) : default_control_socket();
	auto reply = query_daemon(path);
	if (!reply)
		return report_failure(inv, "cannot query gappaced", reply.error());
	auto json = nlohmann::json::parse(*reply, nullptr, false);
	if (json.is_discarded() || !json.is_object())
		return report_failure(inv, "cannot query gappaced", make_error(EBADMSG, "the reply is not JSON"));
	if (json.contains("error"))
		return report_failure(inv, "gappaced", make_error(EINVAL, json["error"].get<std::string>()));
	if (inv.format != OutputFormat::Text) {
		std::fprintf(inv.out, "%s\n", json.dump(inv.format == OutputFormat::PrettyJson ? 2 : -1).c_str());
		return kExitSuccess;
	}
	const auto &d = json["daemon"];
	std::fprintf(inv.out, "gappaced pid %lld backend %s planner %s config %s kernel-hints %s up %.1f s\n",
		     d.value("pid", 0LL), d.value("backend", "?").c_str(), d.value("planner", "?").c_str(),
		     d.value("config", "?").c_str(), d.value("kernel_hints", false) ? "yes" : "no",
		     d.value("uptime_ms", 0ULL) / 1000.0);
	if (d.contains("scheduling")) // a daemon before session 23 does not say
		std::fprintf(inv.out, "scheduling: %s\n", d.value("scheduling", "?").c_str());
	std::fprintf(inv.out, "counters:");
	for (auto &[key, value] : json["counters"].items())
		std::fprintf(inv.out, " %s %s", key.c_str(), value.dump().c_str());
	std::fprintf(inv.out, "\n");
	auto print_phase = [&](const nlohmann::json &p) {
		std::fprintf(inv.out, "  pid %lld phase %llu %s %llu B x %zu peers (P=%lld) via %s: %s; %llu sockets, %llu paced, %llu rto",
			     p.value("pid", 0LL), p.value("phase_id", 0ULL), p.value("kind", "?").c_str(),
			     p.value("bytes_per_peer", 0ULL), p["peers"].size(), p.value("comm_size", 0LL),
			     p.value("carrier", "?").c_str(), p.value("plan", "").c_str(), p.value("sockets", 0ULL),
			     p.value("paced", 0ULL), p.value("rto", 0ULL));
		if (p.contains("quiet_advised_ms"))
			std::fprintf(inv.out, "; alike phases skipped for %llu ms",
				     p.value("quiet_advised_ms", 0ULL));
		if (p.contains("ended"))
			std::fprintf(inv.out, "; %s after %.3f ms", p["ended"].get<std::string>().c_str(),
				     p.value("duration_ns", 0ULL) / 1e6);
		std::fprintf(inv.out, "\n");
		for (const auto &e : p["errors"])
			std::fprintf(inv.out, "    error: %s\n", e.get<std::string>().c_str());
	};
	std::fprintf(inv.out, "active phases: %zu\n", json["phases"].size());
	for (const auto &p : json["phases"])
		print_phase(p);
	std::fprintf(inv.out, "settings:\n");
	for (auto &[key, value] : json["settings"].items())
		std::fprintf(inv.out, "  %s: %s\n", key.c_str(), value.get<std::string>().c_str());
	std::fprintf(inv.out, "recent phases: %zu\n", json["history"].size());
	for (const auto &p : json["history"])
		print_phase(p);
	for (const auto &e : json["recent_errors"])
		std::fprintf(inv.out, "error: %s\n", e.get<std::string>().c_str());
	return kExitSuccess;
}

} // namespace gp
