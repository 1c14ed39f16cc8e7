#include "args.hpp"

#include <getopt.h>

#include <cerrno>
#include <charconv>
#include <map>
#include <vector>

#include "units.hpp"

namespace gp::alltoall {
namespace {

Error usage_error(std::string message) { return make_error(EINVAL, std::move(message)); }

struct OptionSpec {
	const char *name;
	bool takes_value;
};

constexpr OptionSpec kOptions[] = {
	{"rank", true},	   {"ranks", true},	   {"rendezvous", true}, {"bind", true},	 {"msg", true},
	{"volume", true},  {"iterations", true},   {"pattern", true},	 {"side", true},	 {"capacity", true},
	{"timeout", true}, {"setup-timeout", true}, {"stall-ms", true}, {"warmup", true},	 {"hints", true},	 {"sndbuf", true}, {"pacing-rate", true},
	{"rcvbuf", true},  {"cc", true},	   {"out", true},	 {"no-verify", false},
	{"trace-iterations", false}, {"think-ms", true},
};

// Typed access to the collected option values; keeps the first problem so that the parser reads
// as a plain list of fields.
class Reader {
public:
	explicit Reader(std::map<std::string, std::string> values) : values_(std::move(values)) {}

	const std::optional<Error> &error() const { return error_; }
	bool has(const char *name) const { return values_.count(name) > 0; }
	std::optional<std::string> find(const char *name) const
	{
		const auto it = values_.find(name);
		return it == values_.end() ? std::nullopt : std::optional(it->second);
	}

	std::optional<uint64_t> number(const char *name, bool required, uint64_t min, uint64_t max, bool size_units)
	{
		const auto text = find(name);
		if (!text) {
			if (required)
				fail("--" + std::string(name) + " is required");
			return std::nullopt;
		}
		const auto parsed = size_units ? parse_size(*text) : parse_u64(*text);
		if (!parsed || *parsed < min || *parsed > max) {
			fail("--" + std::string(name) + " wants " + (size_units ? "a size " : "a number ") +
			     std::to_string(min) + ".." + std::to_string(max) + (size_units ? " (k/m/g suffixes)" : "") +
			     ", not '" + *text + "'");
			return std::nullopt;
		}
		return parsed;
	}

	double seconds(const char *name, double fallback, double max)
	{
		const auto text = find(name);
		if (!text)
			return fallback;
		double value = 0;
		const auto [end, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
		if (ec != std::errc() || end != text->data() + text->size() || !(value > 0) || value > max) {
			fail("--" + std::string(name) + " wants seconds (0 < S <= " + std::to_string(static_cast<int>(max)) +
			     "), not '" + *text + "'");
			return fallback;
		}
		return value;
	}

	void fail(std::string message)
	{
		if (!error_)
			error_ = usage_error(std::move(message));
	}

private:
	std::map<std::string, std::string> values_;
	std::optional<Error> error_;
};

Expected<std::map<std::string, std::string>> collect(int argc, char *const argv[], bool &help)
{
	std::vector<option> long_options;
	for (size_t i = 0; i < std::size(kOptions); ++i)
		long_options.push_back({kOptions[i].name, kOptions[i].takes_value ? required_argument : no_argument,
					nullptr, static_cast<int>(256 + i)});
	long_options.push_back({"help", no_argument, nullptr, 'h'});
	long_options.push_back({nullptr, 0, nullptr, 0});

	std::map<std::string, std::string> values;
	optind = 0; // full re-initialisation: tests parse more than once
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "+:h", long_options.data(), nullptr)) != -1) {
		if (opt == 'h') {
			help = true;
			return values;
		}
		if (opt == ':')
			return usage_error(std::string(argv[optind - 1]) + " needs a value");
		if (opt < 256 || opt >= 256 + static_cast<int>(std::size(kOptions)))
			return usage_error("unknown option " + std::string(argv[optind - 1]));
		values[kOptions[opt - 256].name] = optarg ? optarg : "";
	}
	if (optind < argc)
		return usage_error("unexpected argument '" + std::string(argv[optind]) + "'");
	return values;
}

} // namespace

std::string usage_text()
{
	return "usage: gp-alltoall --rank R --ranks P --rendezvous ADDR:PORT --bind ADDR --msg BYTES\n"
	       "                   (--volume BYTES | --iterations N) [--pattern pairwise|ring|half]\n"
	       "                   [--side left|right] [--capacity BITS_PER_S] [--timeout SECONDS]\n"
	       "                   [--setup-timeout SECONDS] [--stall-ms MS] [--warmup N] [--hints none|iteration|once]\n"
	       "                   [--sndbuf BYTES] [--rcvbuf BYTES] [--pacing-rate RATE] [--cc NAME] [--out FILE] [--no-verify]\n"
	       "                   [--trace-iterations] [--think-ms MS]\n"
	       "One process per rank. Rank 0 listens on --rendezvous and prints one JSON object (stdout and\n"
	       "--out); the other ranks print nothing on success. Sizes take k/m/g suffixes (powers of 1024),\n"
	       "--capacity tc units (200mbit) or bit/s. --volume is the total of all ranks' sends.\n"
	       "Exit 0 done, 1 runtime failure or timeout, 2 usage error. See tools/alltoall/README.md.\n";
}

Expected<Options> parse_arguments(int argc, char *const argv[])
{
	bool help = false;
	auto collected = collect(argc, argv, help);
	if (!collected)
		return collected.error();
	Options o;
	if (help) {
		o.help = true;
		return o;
	}
	Reader r(std::move(*collected));

	const auto ranks = r.number("ranks", true, 2, kMaxRanks, false);
	o.ranks = static_cast<int>(ranks.value_or(0));
	const auto rank = r.number("rank", true, 0, kMaxRanks - 1, false);
	o.rank = static_cast<int>(rank.value_or(0));
	if (rank && ranks && *rank >= *ranks)
		r.fail("--rank " + std::to_string(*rank) + " must be below --ranks " + std::to_string(*ranks));

	if (const auto text = r.find("rendezvous")) {
		auto endpoint = parse_endpoint(*text);
		if (endpoint)
			o.rendezvous = *endpoint;
		else
			r.fail("--rendezvous: " + endpoint.error().message);
	} else {
		r.fail("--rendezvous ADDR:PORT is required");
	}
	if (const auto text = r.find("bind")) {
		auto address = parse_host_address(*text);
		if (address)
			o.bind = *address;
		else
			r.fail("--bind: " + address.error().message);
	} else {
		r.fail("--bind ADDR is required (this rank's address on the test network)");
	}
	if (!r.error() && o.bind.family != o.rendezvous.family)
		r.fail("--bind and --rendezvous must be of the same address family");

	o.msg = r.number("msg", true, 1, kMaxMessageBytes, true).value_or(0);
	o.volume = r.number("volume", false, 1, UINT64_MAX, true);
	o.iterations = r.number("iterations", false, 1, kMaxIterations, false);
	if (r.has("volume") == r.has("iterations"))
		r.fail("exactly one of --volume BYTES and --iterations N is required");

	if (const auto text = r.find("pattern")) {
		const auto pattern = pattern_from_name(*text);
		if (pattern)
			o.pattern = *pattern;
		else
			r.fail("--pattern wants pairwise, ring or half, not '" + *text + "'");
	}
	if (const auto text = r.find("side")) {
		const auto side = side_from_name(*text);
		if (side)
			o.side = *side;
		else
			r.fail("--side wants left or right, not '" + *text + "'");
	}
	if (o.pattern == Pattern::Half && !r.has("side"))
		r.fail("--pattern half needs --side left|right (half exchanges only across the bottleneck)");

	if (const auto text = r.find("capacity")) {
		const auto rate = parse_rate(*text);
		if (rate && *rate > 0)
			o.capacity_bps = *rate;
		else
			r.fail("--capacity wants a rate (200mbit, 1gbit, or bit/s), not '" + *text + "'");
	}
	o.timeout_seconds = r.seconds("timeout", kDefaultTimeoutSeconds, 86400);
	o.setup_timeout_seconds = r.seconds("setup-timeout", kDefaultSetupTimeoutSeconds, 3600);
	o.stall_ms = r.number("stall-ms", false, 1, 3600 * 1000, false).value_or(kDefaultStallMs);
	o.warmup = r.number("warmup", false, 0, 1000, false).value_or(1);
	if (const auto text = r.find("hints")) {
		const auto mode = hint_mode_from_name(*text);
		if (mode)
			o.hints = *mode;
		else
			r.fail("--hints wants none, iteration or once, not '" + *text + "'");
	}
	o.sndbuf = r.number("sndbuf", false, 1, kMaxBufferBytes, true);
	o.rcvbuf = r.number("rcvbuf", false, 1, kMaxBufferBytes, true);
	if (const auto text = r.find("pacing-rate")) {
		const auto rate = parse_rate(*text);
		if (rate && *rate >= 8)
			o.pacing_rate_bps = *rate;
		else
			r.fail("--pacing-rate wants a rate of at least 8 bit/s (50mbit, or bit/s), not '" + *text + "'");
	}
	if (const auto text = r.find("cc")) {
		if (text->empty() || text->size() > kMaxCongestionControlName)
			r.fail("--cc wants a congestion control name of 1.." + std::to_string(kMaxCongestionControlName) +
			       " characters");
		o.cc = *text;
	}
	if (const auto text = r.find("out")) {
		if (text->empty())
			r.fail("--out must not be empty");
		o.out = *text;
	}
	o.verify = !r.has("no-verify");
	o.trace_iterations = r.has("trace-iterations");
	o.think_ms = r.number("think-ms", false, 0, 600 * 1000, false).value_or(0);
	if (r.error())
		return *r.error();
	return o;
}

} // namespace gp::alltoall
