#include "commands.hpp"
#include "advise.hpp"
#include "control.hpp"
#include "probe_command.hpp"

#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <net/if.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <string>
#include <thread>

#include "hold.hpp"
#include "units.hpp"

namespace gp {
namespace {

// ------------------------------------------------------------------ reporting

int report_failure(const Invocation &invocation, std::string_view what, const Error &error)
{
	std::fprintf(invocation.err, "gapctl: %.*s: %s\n", static_cast<int>(what.size()), what.data(),
		     error.message.c_str());
	return kExitFailure;
}

int report_usage_error(const Invocation &invocation, const Error &error)
{
	std::fprintf(invocation.err, "gapctl: %s\n", error.message.c_str());
	std::fprintf(invocation.err, "Usage: gapctl %.*s\n", static_cast<int>(invocation.command->usage.size()),
		     invocation.command->usage.data());
	return kExitUsage;
}

// Writes the result of a show command; a full disk or closed pipe is a failure too,
// or a script reading our JSON would take a truncated answer for the whole one.
int print_output(const Invocation &invocation, const std::string &text)
{
	if (std::fputs(text.c_str(), invocation.out) < 0 || std::fflush(invocation.out) != 0)
		return report_failure(invocation, "cannot write output", make_error(errno, std::strerror(errno)));
	return kExitSuccess;
}

Report make_report(const Invocation &invocation)
{
	return Report(invocation.format, system_ifname);
}

// ------------------------------------------------------------------ shared steps

Expected<uint32_t> resolve_device(const std::string &name)
{
	const unsigned int ifindex = if_nametoindex(name.c_str());
	if (ifindex == 0)
		return make_error(ENODEV, "Cannot find device \"" + name + "\"");
	return ifindex;
}

int report_device_error(const Invocation &invocation, const Error &error)
{
	std::fprintf(invocation.err, "gapctl: %s\n", error.message.c_str());
	return kExitFailure;
}

// A generic netlink socket plus the id of the gappace family on it.
struct GappaceGenl {
	NetlinkSocket socket;
	uint16_t family_id;
};

Expected<GappaceGenl> open_gappace_genl()
{
	auto socket = NetlinkSocket::open(NETLINK_GENERIC);
	if (!socket)
		return socket.error();
	auto family = socket->genl_family_id(GAPPACE_GENL_NAME);
	if (!family) {
		if (family.error().err == ENOENT)
			return make_error(ENOENT, "gappace module not loaded (generic netlink family '" GAPPACE_GENL_NAME
						  "' not found)");
		return family.error();
	}
	return GappaceGenl{std::move(*socket), *family};
}

// ------------------------------------------------------------------ qdisc

int run_qdisc_set(const Invocation &invocation, const QdiscSetArgs &args, bool create)
{
	const std::string what = (create ? "cannot attach gappace to " : "cannot change gappace on ") + args.dev;
	auto ifindex = resolve_device(args.dev);
	if (!ifindex)
		return report_device_error(invocation, ifindex.error());
	auto socket = NetlinkSocket::open(NETLINK_ROUTE);
	if (!socket)
		return report_failure(invocation, what, socket.error());
	RequestBuffer request;
	if (create)
		encode_qdisc_attach(request, *ifindex, args.options);
	else
		encode_qdisc_change(request, *ifindex, args.options);
	if (auto done = socket->transact(request); !done)
		return report_failure(invocation, what, done.error());
	return kExitSuccess;
}

int qdisc_attach(const Invocation &invocation, Args args)
{
	auto parsed = parse_qdisc_attach_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	return run_qdisc_set(invocation, *parsed, true);
}

int qdisc_change(const Invocation &invocation, Args args)
{
	auto parsed = parse_qdisc_change_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	return run_qdisc_set(invocation, *parsed, false);
}

// The root qdisc of a device. From a dump, because the RTM_GETQDISC doit only answers
// with NLM_F_ECHO, which would also multicast the qdisc to every tc monitor.
Expected<QdiscInfo> get_root_qdisc(NetlinkSocket &socket, uint32_t ifindex)
{
	RequestBuffer request;
	encode_qdisc_dump(request);
	std::optional<QdiscInfo> root;
	auto done = socket.transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto qdisc = decode_qdisc(nlh);
		if (!qdisc)
			return qdisc.error();
		if (qdisc->ifindex == ifindex && qdisc->is_root())
			root = std::move(*qdisc);
		return {};
	});
	if (!done)
		return done.error();
	if (!root)
		return make_error(ENOENT, "the device has no root qdisc");
	return std::move(*root);
}

int qdisc_detach(const Invocation &invocation, Args args)
{
	auto parsed = parse_device_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot detach gappace from " + parsed->dev;
	auto ifindex = resolve_device(parsed->dev);
	if (!ifindex)
		return report_device_error(invocation, ifindex.error());
	auto socket = NetlinkSocket::open(NETLINK_ROUTE);
	if (!socket)
		return report_failure(invocation, what, socket.error());

	// Never delete someone else's qdisc: look first, and delete by handle so that the
	// kernel refuses if the root qdisc was replaced in between.
	auto root = get_root_qdisc(*socket, *ifindex);
	if (!root)
		return report_failure(invocation, what, root.error());
	if (!root->is_gappace())
		return report_failure(invocation, what,
				      make_error(EINVAL, "root qdisc is \"" + root->kind + "\", not gappace"));

	RequestBuffer request;
	encode_root_qdisc_delete(request, *ifindex, root->handle);
	if (auto done = socket->transact(request); !done)
		return report_failure(invocation, what, done.error());
	return kExitSuccess;
}

int qdisc_show(const Invocation &invocation, Args args)
{
	auto parsed = parse_device_filter_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot list qdiscs";
	std::optional<uint32_t> only_ifindex;
	if (parsed->dev) {
		auto ifindex = resolve_device(*parsed->dev);
		if (!ifindex)
			return report_device_error(invocation, ifindex.error());
		only_ifindex = *ifindex;
	}
	auto socket = NetlinkSocket::open(NETLINK_ROUTE);
	if (!socket)
		return report_failure(invocation, what, socket.error());

	// The kernel dumps every qdisc of the netns; we keep the gappace ones.
	RequestBuffer request;
	encode_qdisc_dump(request);
	Report report = make_report(invocation);
	auto done = socket->transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto qdisc = decode_qdisc(nlh);
		if (!qdisc)
			return qdisc.error();
		if (qdisc->is_gappace() && (!only_ifindex || qdisc->ifindex == *only_ifindex))
			report.add(*qdisc);
		return {};
	});
	if (!done)
		return report_failure(invocation, what, done.error());
	return print_output(invocation, report.finish());
}

// ------------------------------------------------------------------ pace

int run_pace_change(const Invocation &invocation, const PaceRuleArgs &args, uint8_t cmd)
{
	const std::string prefix = format_prefix(args.dst);
	std::string what;
	if (cmd == GAPPACE_CMD_RULE_DEL)
		what = "cannot delete the rule for " + prefix + " on " + args.dev;
	else
		what = std::string(args.replace ? "cannot replace" : "cannot add") + " the rule for " + prefix +
		       " on " + args.dev;

	auto ifindex = resolve_device(args.dev);
	if (!ifindex)
		return report_device_error(invocation, ifindex.error());
	// A rule is a lease of the netlink socket that set it (like an RTO override): adding
	// or replacing one holds the socket open until a signal. Declared before the socket,
	// destroyed after it; blocked before the request so that a Ctrl-C ends the hold.
	std::optional<HoldSignals> signals;
	if (cmd != GAPPACE_CMD_RULE_DEL) {
		auto blocked = HoldSignals::block();
		if (!blocked)
			return report_failure(invocation, what, blocked.error());
		signals.emplace(std::move(*blocked));
	}
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	if (cmd == GAPPACE_CMD_RULE_DEL)
		encode_rule_del(request, genl->family_id, *ifindex, args.dst);
	else
		encode_rule_new(request, genl->family_id, *ifindex, args.dst, *args.rate, args.replace, args.group);
	if (auto done = genl->socket.transact(request); !done)
		return report_failure(invocation, what, done.error());
	if (!signals)
		return kExitSuccess;
	if (invocation.format == OutputFormat::Text) {
		const std::string text = "pace " + args.dev + " " + prefix + " " + gp::format_rate(*args.rate) +
					 (args.group ? " group " + std::to_string(*args.group) : std::string()) +
					 ": held until gapctl exits (Ctrl-C)\n";
		if (int status = print_output(invocation, text); status != kExitSuccess)
			return status;
	}
	// The lease: the rule lasts while genl->socket is open.
	if (auto ended = signals->wait(std::nullopt); !ended)
		return report_failure(invocation, "lost the rule for " + prefix, ended.error());
	return kExitSuccess;
}

int pace_add(const Invocation &invocation, Args args)
{
	auto parsed = parse_pace_add_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	return run_pace_change(invocation, *parsed, GAPPACE_CMD_RULE_NEW);
}

int pace_replace(const Invocation &invocation, Args args)
{
	auto parsed = parse_pace_replace_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	return run_pace_change(invocation, *parsed, GAPPACE_CMD_RULE_NEW);
}

int pace_del(const Invocation &invocation, Args args)
{
	auto parsed = parse_pace_del_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	return run_pace_change(invocation, *parsed, GAPPACE_CMD_RULE_DEL);
}

// Runs a gappace dump or doit whose replies decode with `decode` into the report.
template <class Decoder>
int run_gappace_query(const Invocation &invocation, std::string_view what, RequestBuffer &request,
		      NetlinkSocket &socket, Decoder decode)
{
	// A dump that rules or qdiscs changed under (NLM_F_DUMP_INTR, EINTR here) may have
	// skipped or repeated entries: it is taken again from the start, a few times, the
	// pauses growing (a daemon changing rules every phase leaves gaps between phases).
	constexpr int kAttempts = 8;
	for (int attempt = 1;; attempt++) {
		if (attempt > 1)
			std::this_thread::sleep_for(std::chrono::milliseconds(1 << attempt));
		Report report = make_report(invocation);
		auto done = socket.transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
			auto decoded = decode(nlh);
			if (!decoded)
				return decoded.error();
			report.add(*decoded);
			return {};
		});
		if (!done && done.error().err == EINTR && attempt < kAttempts)
			continue;
		if (!done)
			return report_failure(invocation, what, done.error());
		return print_output(invocation, report.finish());
	}
}

int pace_show(const Invocation &invocation, Args args)
{
	auto parsed = parse_device_filter_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot list flow rules";
	std::optional<uint32_t> ifindex;
	if (parsed->dev) {
		auto resolved = resolve_device(*parsed->dev);
		if (!resolved)
			return report_device_error(invocation, resolved.error());
		ifindex = *resolved;
	}
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	encode_rule_dump(request, genl->family_id, ifindex);
	return run_gappace_query(invocation, what, request, genl->socket, decode_rule);
}

// ------------------------------------------------------------------ stats

int stats_show(const Invocation &invocation, Args args)
{
	auto parsed = parse_device_filter_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = parsed->dev ? "cannot get statistics of " + *parsed->dev : "cannot get statistics";
	std::optional<uint32_t> ifindex;
	if (parsed->dev) {
		auto resolved = resolve_device(*parsed->dev);
		if (!resolved)
			return report_device_error(invocation, resolved.error());
		ifindex = *resolved;
	}
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	if (ifindex)
		encode_stats_get(request, genl->family_id, *ifindex);
	else
		encode_stats_dump(request, genl->family_id);
	return run_gappace_query(invocation, what, request, genl->socket, decode_device_stats);
}

// ------------------------------------------------------------------ rto

// "10.0.0.1:40000 -> 10.0.0.2:5001", "connections to 10.0.0.2": for error messages.
std::string rto_target_what(const RtoTarget &target)
{
	if (!target.is_peer_only())
		return format_rto_target(target);
	Endpoint peer = target.peer;
	peer.port = 0;
	return "connections to " + format_endpoint(peer);
}

// Runs a RTO_SET / RTO_CLEAR doit and returns its one reply.
Expected<RtoInfo> rto_transact(NetlinkSocket &socket, RequestBuffer &request, std::string_view command)
{
	std::optional<RtoInfo> reply;
	auto done = socket.transact(request, [&](const nlmsghdr *nlh) -> Expected<void> {
		auto decoded = decode_rto(nlh);
		if (!decoded)
			return decoded.error();
		reply = std::move(*decoded);
		return {};
	});
	if (!done)
		return done.error();
	if (!reply)
		return make_error(EBADMSG, "the kernel sent no " + std::string(command) + " reply");
	return std::move(*reply);
}

int rto_set(const Invocation &invocation, Args args)
{
	auto parsed = parse_rto_set_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot set the RTO of " + rto_target_what(parsed->target);

	// Declared first, destroyed last: the socket below closes (and the kernel restores the
	// connection) before the signal mask is. Blocked before the request, so that a Ctrl-C
	// from now on ends the hold instead of killing us half-way.
	auto signals = HoldSignals::block();
	if (!signals)
		return report_failure(invocation, what, signals.error());
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	encode_rto_set(request, genl->family_id, parsed->target, parsed->settings);
	auto reply = rto_transact(genl->socket, request, "RTO_SET");
	if (!reply)
		return report_failure(invocation, what, reply.error());
	const auto deadline = hold_deadline(HoldClock::now(), parsed->settings.ttl_ms);

	std::string text;
	if (invocation.format == OutputFormat::Text) {
		text = format_rto_set_text(parsed->target, parsed->settings, *reply);
	} else {
		JsonWriter json;
		write_rto_set_json(json, *reply);
		text = finish_json(invocation.format, json);
	}
	if (int status = print_output(invocation, text); status != kExitSuccess)
		return status;

	// The lease: the override lasts while genl->socket is open.
	if (auto ended = signals->wait(deadline); !ended)
		return report_failure(invocation, "lost the RTO override of " + rto_target_what(parsed->target),
				      ended.error());
	return kExitSuccess;
}

int rto_clear(const Invocation &invocation, Args args)
{
	auto parsed = parse_rto_clear_args(args);
	if (!parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot clear the RTO override of " + rto_target_what(parsed->target);
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	encode_rto_clear(request, genl->family_id, parsed->target);
	auto reply = rto_transact(genl->socket, request, "RTO_CLEAR");
	if (!reply)
		return report_failure(invocation, what, reply.error());
	if (invocation.format == OutputFormat::Text)
		return print_output(invocation, format_rto_clear_text(parsed->target, *reply));
	JsonWriter json;
	write_rto_clear_json(json, *reply);
	return print_output(invocation, finish_json(invocation.format, json));
}

int rto_show(const Invocation &invocation, Args args)
{
	if (auto parsed = parse_no_args(args); !parsed)
		return report_usage_error(invocation, parsed.error());
	const std::string what = "cannot list RTO overrides";
	auto genl = open_gappace_genl();
	if (!genl)
		return report_failure(invocation, what, genl.error());
	RequestBuffer request;
	encode_rto_dump(request, genl->family_id);
	return run_gappace_query(invocation, what, request, genl->socket, decode_rto);
}

// ------------------------------------------------------------------ dispatch helpers

const Command *find_command(std::string_view object, std::string_view verb)
{
	for (const auto &command : kCommands)
		if (command.object == object && command.verb == verb)
			return &command;
	return nullptr;
}

bool object_exists(std::string_view object)
{
	for (const auto &command : kCommands)
		if (command.object == object)
			return true;
	return false;
}

// Printed with the usage of the rto object: `rto set` does not return at once.
constexpr std::string_view kRtoLeaseNote =
	"rto set keeps running: the override is a lease of its netlink socket, and the kernel\n"
	"restores the connection when gapctl exits (Ctrl-C, SIGTERM, SIGHUP) or ttl passes.\n";

void print_notes(FILE *to, std::string_view object)
{
	if (object.empty() || object == "rto")
		std::fwrite(kRtoLeaseNote.data(), 1, kRtoLeaseNote.size(), to);
}

int run(const Command &command, const GlobalOptions &options, Args args, FILE *out, FILE *err)
{
	if (!args.empty() && args.front() == "help") {
		std::fprintf(out, "Usage: gapctl %.*s\n", static_cast<int>(command.usage.size()), command.usage.data());
		if (command.handler == rto_set)
			print_notes(out, command.object);
		return kExitSuccess;
	}
	const Invocation invocation{options.format, &command, out, err};
	return command.handler(invocation, args);
}

} // namespace

const std::array<Command, 16> kCommands{{
	{"qdisc", "attach", qdisc_attach, "qdisc attach dev DEV [linkrate RATE|auto] [ifg BYTES] [limit PACKETS] [lookahead TIME]"},
	{"qdisc", "change", qdisc_change, "qdisc change dev DEV [linkrate RATE|auto] [ifg BYTES] [limit PACKETS] [lookahead TIME]"},
	{"qdisc", "detach", qdisc_detach, "qdisc detach dev DEV"},
	{"qdisc", "show", qdisc_show, "qdisc show [dev DEV]"},
	{"pace", "add", pace_add, "pace add dev DEV dst PREFIX rate RATE [group N] [replace]"},
	{"pace", "replace", pace_replace, "pace replace dev DEV dst PREFIX rate RATE [group N]"},
	{"pace", "del", pace_del, "pace del dev DEV dst PREFIX"},
	{"pace", "show", pace_show, "pace show [dev DEV]"},
	{"rto", "set", rto_set,
	 "rto set { SADDR:SPORT DADDR:DPORT | peer ADDR } TIME [delack TIME] [ttl TIME]"},
	{"rto", "clear", rto_clear, "rto clear { SADDR:SPORT DADDR:DPORT | peer ADDR }"},
	{"rto", "show", rto_show, "rto show"},
	{"stats", "", stats_show, "stats [dev DEV]"},
	{"hint", "", hint_send,
	 "hint KIND peers ADDR[,ADDR|,LOCAL:PORT-REMOTE:PORT...] size BYTES [algorithm ALG] [comm-size N] [rank N]"
	 " [repetitions N] [hold TIME] [no-kernel]"},
	{"daemon", "show", daemon_show, "daemon show [socket PATH]"},
	{"probe", "", probe_command,
	 "probe { PEER [--port P] [--out FILE] [--max-size BYTES] [--reps N] [--quick] [--bottleneck-rate RATE]"
	 " [--timeout S] [-j] | --serve [--bind ADDR] [--port P] [--once] [--timeout S] }"},
	{"advise", "bcast", advise_bcast, "advise bcast --nodes P --size N [--params FILE] [-j]"},
}};

void print_usage(FILE *to, std::string_view object)
{
	const char *lead = "Usage:";
	if (object.empty()) {
		std::fputs("Usage: gapctl [-j[son]] [-p[retty]] OBJECT COMMAND [ARGS]\n", to);
		lead = "      ";
	}
	for (const auto &command : kCommands) {
		if (!object.empty() && command.object != object)
			continue;
		std::fprintf(to, "%s gapctl %.*s\n", lead, static_cast<int>(command.usage.size()), command.usage.data());
		lead = "      ";
	}
	if (object.empty())
		std::fputs("       gapctl help | gapctl OBJECT help | gapctl OBJECT COMMAND help\n"
			   "where  OBJECT := { qdisc | pace | rto | stats | hint | daemon | probe | advise }\n"
			   "       RATE   := bit/s with tc units: 100mbit, 1gbit, 2.5gbit, 10mbps, ...\n"
			   "       PREFIX := IPv4 or IPv6 address with optional /LEN (default: the full length)\n"
			   "       SADDR:SPORT DADDR:DPORT := a TCP connection as ss -tn shows it, local end\n"
			   "                 first; IPv6 in brackets: [fd00::1]:5001. peer ADDR: all to ADDR\n"
			   "       TIME   := microseconds, or with a unit: 200us, 5ms, 0.01s\n",
			   to);
	print_notes(to, object);
}

int dispatch(const GlobalOptions &options, std::span<const std::string_view> words, FILE *out, FILE *err)
{
	if (options.help || (!words.empty() && words.front() == "help")) {
		print_usage(out);
		return kExitSuccess;
	}
	if (words.empty()) {
		print_usage(err);
		return kExitUsage;
	}
	const std::string_view object = words.front();
	Args rest = words.subspan(1);
	if (!object_exists(object)) {
		std::fprintf(err, "gapctl: unknown object \"%.*s\"\n", static_cast<int>(object.size()), object.data());
		print_usage(err);
		return kExitUsage;
	}
	if (!rest.empty() && rest.front() == "help") {
		print_usage(out, object);
		return kExitSuccess;
	}
	if (const Command *direct = find_command(object, ""))
		return run(*direct, options, rest, out, err);
	if (rest.empty()) // like ip: an object alone means "show"
		return run(*find_command(object, "show"), options, rest, out, err);
	if (const Command *command = find_command(object, rest.front()))
		return run(*command, options, rest.subspan(1), out, err);
	std::fprintf(err, "gapctl: unknown command \"%.*s\" for %.*s\n", static_cast<int>(rest.front().size()),
		     rest.front().data(), static_cast<int>(object.size()), object.data());
	print_usage(err, object);
	return kExitUsage;
}

} // namespace gp
