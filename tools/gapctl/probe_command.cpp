#include "probe_command.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "endpoint.hpp"
#include "probe_measure.hpp"
#include "probe_output.hpp"
#include "probe_protocol.hpp"
#include "probe_serve.hpp"
#include "units.hpp"

namespace gp {
namespace {

constexpr uint32_t kMinReps = 3;
constexpr uint32_t kMaxReps = 100000;
constexpr std::chrono::milliseconds kMaxTimeout{7LL * 24 * 3600 * 1000};

Error usage(std::string message)
{
	return make_error(EINVAL, std::move(message));
}

std::string quoted(std::string_view word)
{
	return "\"" + std::string(word) + "\"";
}

// S: seconds ("90", "2.5"), or a time with a unit ("500ms", "2min" is not one: s, ms, us).
std::optional<std::chrono::milliseconds> parse_timeout(std::string_view text)
{
	if (text.empty())
		return std::nullopt;
	const bool plain = text.find_first_not_of("0123456789.") == std::string_view::npos;
	double ms = 0;
	if (plain) {
		char *end = nullptr;
		const std::string copy(text);
		const double seconds = std::strtod(copy.c_str(), &end);
		if (end != copy.c_str() + copy.size() || !std::isfinite(seconds))
			return std::nullopt;
		ms = seconds * 1000;
	} else {
		const auto us = parse_time_us(text);
		if (!us)
			return std::nullopt;
		ms = static_cast<double>(*us) / 1000;
	}
	if (ms < 1 || ms > static_cast<double>(kMaxTimeout.count()))
		return std::nullopt;
	return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

enum class Mode { Both, Serve, Client };

struct Option {
	std::string_view name;
	bool takes_value;
	Mode mode;
};

constexpr Option kOptions[] = {
	{"--serve", false, Mode::Both},		 {"--bind", true, Mode::Serve},
	{"--once", false, Mode::Serve},		 {"--port", true, Mode::Both},
	{"--timeout", true, Mode::Both},	 {"--out", true, Mode::Client},
	{"--max-size", true, Mode::Client},	 {"--reps", true, Mode::Client},
	{"--quick", false, Mode::Client},	 {"--bottleneck-rate", true, Mode::Client},
	{"--json", false, Mode::Client},	 {"-j", false, Mode::Client},
};

Expected<void> apply(ProbeArgs &parsed, std::string_view name, std::string_view value)
{
	if (name == "--serve") {
		parsed.serve = true;
	} else if (name == "--once") {
		parsed.once = true;
	} else if (name == "--quick") {
		parsed.quick = true;
	} else if (name == "--json" || name == "-j") {
		parsed.json = true;
	} else if (name == "--bind") {
		if (!parse_host_address(value))
			return usage("invalid --bind " + quoted(value) + " (an IPv4 or IPv6 address of this host)");
		parsed.bind = value;
	} else if (name == "--out") {
		if (value.empty() || value.back() == '/')
			return usage("invalid --out " + quoted(value) + " (a file name)");
		parsed.out = value;
	} else if (name == "--port") {
		const auto port = parse_u64(value);
		if (!port || *port > 65535)
			return usage("invalid --port " + quoted(value) + " (0..65535; 0 with --serve: any free port)");
		parsed.port = static_cast<uint16_t>(*port);
	} else if (name == "--timeout") {
		const auto timeout = parse_timeout(value);
		if (!timeout)
			return usage("invalid --timeout " + quoted(value) +
				     " (seconds, e.g. 90 or 2.5, or with a unit: 500ms; at most 7 days)");
		parsed.timeout = *timeout;
	} else if (name == "--max-size") {
		const auto size = parse_size(value);
		if (!size || *size > probe::kMaxMessageSize)
			return usage("invalid --max-size " + quoted(value) + " (bytes, k/m/g suffixes, at most 1g)");
		parsed.max_size = *size;
	} else if (name == "--reps") {
		const auto reps = parse_u64(value);
		if (!reps || *reps < kMinReps || *reps > kMaxReps)
			return usage("invalid --reps " + quoted(value) + " (" + std::to_string(kMinReps) + ".." +
				     std::to_string(kMaxReps) + ")");
		parsed.reps = static_cast<uint32_t>(*reps);
	} else if (name == "--bottleneck-rate") {
		const auto rate = parse_rate(value);
		if (!rate || *rate == 0)
			return usage("invalid --bottleneck-rate " + quoted(value) + " (bit/s, e.g. 200000000 or 200mbit)");
		parsed.bottleneck_bps = *rate;
	}
	return {};
}

int report_usage(const Invocation &inv, const Error &error)
{
	std::fprintf(inv.err, "gapctl: %s\n", error.message.c_str());
	if (inv.command)
		std::fprintf(inv.err, "Usage: gapctl %.*s\n", static_cast<int>(inv.command->usage.size()),
			     inv.command->usage.data());
	return kExitUsage;
}

int report_failure(const Invocation &inv, const std::string &what, const std::string &message)
{
	std::fprintf(inv.err, "gapctl: %s: %s\n", what.c_str(), message.c_str());
	return kExitFailure;
}

int run_serve(const Invocation &inv, const ProbeArgs &args)
{
	auto listener = probe::listen_tcp(args.bind, args.port.value_or(probe::kDefaultProbePort));
	if (!listener) {
		const std::string where = (args.bind.empty() ? std::string("*") : args.bind) + " port " +
					  std::to_string(args.port.value_or(probe::kDefaultProbePort));
		return report_failure(inv, "probe --serve", "cannot listen on " + where + ": " + listener.error().message);
	}
	probe::ServeOptions options;
	options.once = args.once;
	if (args.timeout)
		options.timeout = *args.timeout;
	options.stall = std::min(options.stall, options.timeout);
	options.log = inv.err;
	// Scripts wait for this line before they start the client.
	std::fprintf(inv.out, "gapctl probe: listening on %s (timeout %s%s)\n", format_endpoint(listener->local).c_str(),
		     probe::seconds_text(options.timeout).c_str(), args.once ? ", one session" : "");
	std::fflush(inv.out);
	const probe::ServeSummary summary = probe::serve(*listener, options);
	if (args.once) {
		if (summary.completed == 1)
			return kExitSuccess;
		if (summary.sessions == 0)
			return report_failure(inv, "probe --serve",
					      "no probe session within " + probe::seconds_text(options.timeout));
		return kExitFailure; // the session's failure is logged already
	}
	if (options.log)
		std::fprintf(inv.err, "gapctl probe: timeout after %s: %u sessions (%u completed), %u connections refused\n",
			     probe::seconds_text(options.timeout).c_str(), summary.sessions, summary.completed,
			     summary.refused);
	return kExitSuccess;
}

int run_client(const Invocation &inv, const ProbeArgs &args)
{
	probe::ProbeOptions options;
	options.peer = args.peer;
	options.port = args.port.value_or(probe::kDefaultProbePort);
	options.quick = args.quick;
	options.max_size = args.max_size.value_or(args.quick ? 1ull << 20 : 16ull << 20);
	options.bottleneck_bps = args.bottleneck_bps;
	if (args.timeout)
		options.timeout = *args.timeout;
	options.budget = probe::make_budget(args.quick, args.reps);
	if (::isatty(::fileno(inv.err)))
		options.progress = [&inv](std::string_view line) {
			std::fprintf(inv.err, "probe: %.*s\n", static_cast<int>(line.size()), line.data());
		};
	const std::string what = "probe " + args.peer;
	auto result = probe::run_probe(options);
	if (!result)
		return report_failure(inv, what, result.error().message);

	if (auto written = probe::write_file_atomically(args.out, probe::params_json(*result, OutputFormat::PrettyJson));
	    !written)
		return report_failure(inv, what, "cannot write the parameter file " + written.error().message);
	std::string text;
	if (args.json || inv.format != OutputFormat::Text)
		text = probe::params_json(*result, inv.format == OutputFormat::PrettyJson ? OutputFormat::PrettyJson
											 : OutputFormat::Json);
	else
		text = probe::params_table(*result, args.out);
	if (std::fputs(text.c_str(), inv.out) < 0 || std::fflush(inv.out) != 0)
		return report_failure(inv, what, std::string("cannot write output: ") + std::strerror(errno));
	return kExitSuccess;
}

} // namespace

Expected<ProbeArgs> parse_probe_args(Args args)
{
	ProbeArgs parsed;
	std::vector<std::string_view> given; // option names, for the mode check
	for (size_t i = 0; i < args.size(); ++i) {
		std::string_view word = args[i];
		if (word.empty() || word.front() != '-' || word == "-") {
			if (!parsed.peer.empty())
				return usage("unexpected " + quoted(word) + " (one PEER only)");
			parsed.peer = word;
			continue;
		}
		std::string_view value;
		bool has_inline_value = false;
		if (const size_t eq = word.find('='); eq != std::string_view::npos && word.starts_with("--")) {
			value = word.substr(eq + 1);
			word = word.substr(0, eq);
			has_inline_value = true;
		}
		const Option *option = nullptr;
		for (const auto &candidate : kOptions)
			if (candidate.name == word)
				option = &candidate;
		if (!option)
			return usage("unknown option " + quoted(word));
		for (auto seen : given)
			if (seen == word)
				return usage("duplicate option " + quoted(word));
		given.push_back(word);
		if (option->takes_value && !has_inline_value) {
			if (i + 1 >= args.size())
				return usage("missing value after " + quoted(word));
			value = args[++i];
		} else if (!option->takes_value && has_inline_value) {
			return usage(quoted(word) + " takes no value");
		}
		if (auto applied = apply(parsed, word, value); !applied)
			return applied.error();
	}
	for (auto name : given) {
		for (const auto &option : kOptions) {
			if (option.name != name)
				continue;
			if (parsed.serve && option.mode == Mode::Client)
				return usage(quoted(name) + " is an option of the prober, not of --serve");
			if (!parsed.serve && option.mode == Mode::Serve)
				return usage(quoted(name) + " only goes with --serve");
		}
	}
	if (parsed.serve && !parsed.peer.empty())
		return usage("--serve takes no PEER (got " + quoted(parsed.peer) + ")");
	if (!parsed.serve && parsed.peer.empty())
		return usage("missing PEER (the address of a host running `gapctl probe --serve`)");
	if (!parsed.serve && parsed.port && *parsed.port == 0)
		return usage("invalid --port \"0\" (the responder's port: 1..65535)");
	return parsed;
}

int probe_command(const Invocation &invocation, Args args)
{
	auto parsed = parse_probe_args(args);
	if (!parsed)
		return report_usage(invocation, parsed.error());
	return parsed->serve ? run_serve(invocation, *parsed) : run_client(invocation, *parsed);
}

} // namespace gp
