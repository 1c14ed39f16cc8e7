#include "args.hpp"

#include <getopt.h>
#include <net/if.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <map>
#include <span>
#include <string_view>
#include <vector>

#include "traffic_proto.hpp"
#include "units.hpp"

namespace gp::traffic {
namespace {

struct OptionSpec {
	const char *name;
	bool takes_value;
};

Error usage_error(std::string message) { return make_error(EINVAL, std::move(message)); }

struct CollectedOptions {
	std::map<std::string, std::string> values;
	bool help = false;
};

// Runs getopt_long over the subcommand's arguments with exactly the options it accepts.
Expected<CollectedOptions> collect_options(std::string_view mode, int argc, char *const argv[],
							     std::span<const OptionSpec> specs)
{
	std::vector<option> long_options;
	for (size_t i = 0; i < specs.size(); ++i)
		long_options.push_back({specs[i].name, specs[i].takes_value ? required_argument : no_argument, nullptr,
					static_cast<int>(256 + i)});
	long_options.push_back({"help", no_argument, nullptr, 'h'});
	long_options.push_back({nullptr, 0, nullptr, 0});

	CollectedOptions collected;
	optind = 0; // full re-initialisation: parsing may run more than once (tests)
	opterr = 0;
	int opt;
	while ((opt = getopt_long(argc, argv, "+:h", long_options.data(), nullptr)) != -1) {
		if (opt == 'h') {
			collected.help = true;
			return collected;
		}
		if (opt == ':')
			return usage_error(std::string(mode) + ": " + argv[optind - 1] + " needs a value");
		if (opt < 256 || opt >= 256 + static_cast<int>(specs.size()))
			return usage_error(std::string(mode) + ": unknown option " + argv[optind - 1]);
		collected.values[specs[static_cast<size_t>(opt - 256)].name] = optarg ? optarg : "";
	}
	if (optind < argc)
		return usage_error(std::string(mode) + ": unexpected argument '" + argv[optind] + "'");
	return collected;
}

// Typed access to the collected options; remembers the first problem so that a mode's parser
// reads as a plain list of fields.
class OptionReader {
public:
	OptionReader(std::string_view mode, std::map<std::string, std::string> values)
		: mode_(mode), values_(std::move(values))
	{
	}

	const std::optional<Error> &error() const { return error_; }
	bool flag(const char *name) const { return values_.count(name) > 0; }

	std::string text(const char *name)
	{
		const auto value = find(name);
		if (!value)
			fail("--" + std::string(name) + " is required");
		else if (value->empty())
			fail("--" + std::string(name) + " must not be empty");
		return value.value_or("");
	}

	std::optional<std::string> optional_text(const char *name) { return find(name); }

	std::optional<uint16_t> port(const char *name, bool required = true)
	{
		const auto value = find(name);
		if (!value) {
			if (required)
				fail("--" + std::string(name) + " is required");
			return std::nullopt;
		}
		const auto number = parse_u64(*value);
		if (!number || *number == 0 || *number > 65535) {
			fail("--" + std::string(name) + " wants a port 1..65535, not '" + *value + "'");
			return std::nullopt;
		}
		return static_cast<uint16_t>(*number);
	}

	// Counts and sizes: plain numbers or, for sizes, with k/m/g suffixes (powers of 1024).
	std::optional<uint64_t> number(const char *name, bool required, uint64_t min, uint64_t max, bool size_units = false)
	{
		const auto value = find(name);
		if (!value) {
			if (required)
				fail("--" + std::string(name) + " is required");
			return std::nullopt;
		}
		const auto parsed = size_units ? parse_size(*value) : parse_u64(*value);
		if (!parsed || *parsed < min || *parsed > max) {
			fail("--" + std::string(name) + " wants a number " + std::to_string(min) + ".." +
			     std::to_string(max) + ", not '" + *value + "'");
			return std::nullopt;
		}
		return parsed;
	}

	double timeout()
	{
		const auto value = find("timeout");
		if (!value)
			return kDefaultTimeoutSeconds;
		double seconds = 0;
		auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), seconds);
		if (ec != std::errc() || end != value->data() + value->size() || !(seconds > 0) || seconds > 86400) {
			fail("--timeout wants seconds (0 < S <= 86400), not '" + *value + "'");
			return kDefaultTimeoutSeconds;
		}
		return seconds;
	}

	void fail(std::string message)
	{
		if (!error_)
			error_ = usage_error(mode_ + ": " + message);
	}

private:
	std::optional<std::string> find(const char *name) const
	{
		const auto it = values_.find(name);
		return it == values_.end() ? std::nullopt : std::optional(it->second);
	}

	std::string mode_;
	std::map<std::string, std::string> values_;
	std::optional<Error> error_;
};

constexpr uint64_t kMaxBufferBytes = 1ULL << 30; // socket buffers: the kernel clamps far below anyway
constexpr uint64_t kMaxGsoSegments = 64;	   // UDP_MAX_SEGMENTS of the oldest kernel we run on
constexpr uint64_t kMaxGsoBytes = 65507;	   // one IPv4 UDP datagram's payload

template <class Args> Expected<Command> finish(const OptionReader &reader, Args args)
{
	if (reader.error())
		return *reader.error();
	return Command{std::move(args)};
}

Expected<Command> parse_udp_send(OptionReader &r)
{
	UdpSendArgs a;
	a.dst = r.text("dst");
	a.port = r.port("port").value_or(0);
	a.src_port = r.port("src-port", false);
	a.size = r.number("size", false, kPayloadHeaderSize, kMaxUdpPayload).value_or(kDefaultUdpPayload);
	a.count = r.number("count", true, 1, UINT64_MAX).value_or(0);
	a.flow_id = static_cast<uint32_t>(r.number("flow", false, 0, UINT32_MAX).value_or(0));
	a.timeout_seconds = r.timeout();
	a.sndbuf = r.number("sndbuf", false, 1, kMaxBufferBytes, true);
	a.gso_segments = r.number("gso", false, 1, kMaxGsoSegments).value_or(1);
	if (!r.error() && a.gso_segments > 1 && a.gso_segments * a.size > kMaxGsoBytes)
		return make_error(EINVAL, "--gso " + std::to_string(a.gso_segments) + " x --size " +
						  std::to_string(a.size) + " exceeds a 64 KB UDP GSO send");
	return finish(r, a);
}

Expected<Command> parse_udp_sink(OptionReader &r)
{
	UdpSinkArgs a;
	a.port = r.port("port").value_or(0);
	a.count = r.number("count", true, 1, UINT64_MAX).value_or(0);
	a.timeout_seconds = r.timeout();
	a.rcvbuf = r.number("rcvbuf", false, 1, kMaxBufferBytes, true);
	return finish(r, a);
}

Expected<Command> parse_tcp_send(OptionReader &r)
{
	TcpSendArgs a;
	a.dst = r.text("dst");
	a.port = r.port("port").value_or(0);
	a.bytes = r.number("bytes", true, 1, UINT64_MAX, true).value_or(0);
	a.timeout_seconds = r.timeout();
	a.congestion_control = r.optional_text("cc");
	if (a.congestion_control && a.congestion_control->empty())
		r.fail("--cc must not be empty");
	a.sndbuf = r.number("sndbuf", false, 1, kMaxBufferBytes, true);
	a.bind_device = r.optional_text("bind-dev");
	if (a.bind_device && (a.bind_device->empty() || a.bind_device->size() >= IFNAMSIZ))
		r.fail("--bind-dev must be a device name (1 to 15 characters)");
	return finish(r, a);
}

Expected<Command> parse_tcp_rr(OptionReader &r)
{
	TcpRrArgs a;
	a.dst = r.text("dst");
	a.port = r.port("port").value_or(0);
	a.size = r.number("size", false, 1, 1ULL << 24, true).value_or(1000);
	a.count = r.number("count", true, 1, 1000000).value_or(0);
	a.pause_ms = r.number("pause-ms", false, 0, 60000).value_or(0);
	a.timeout_seconds = r.timeout();
	return finish(r, a);
}

Expected<Command> parse_tcp_rr_server(OptionReader &r)
{
	TcpRrServerArgs a;
	a.port = r.port("port").value_or(0);
	a.size = r.number("size", false, 1, 1ULL << 24, true).value_or(1000);
	a.timeout_seconds = r.timeout();
	return finish(r, a);
}

Expected<Command> parse_tcp_sink(OptionReader &r)
{
	TcpSinkArgs a;
	a.port = r.port("port").value_or(0);
	a.bytes = r.number("bytes", false, 1, UINT64_MAX, true);
	a.timeout_seconds = r.timeout();
	a.once = r.flag("once");
	return finish(r, a);
}

Expected<Command> parse_marker(OptionReader &r)
{
	MarkerArgs a;
	a.dst = r.text("dst");
	a.name = r.text("name");
	if (!a.name.empty() && !is_valid_marker_name(a.name))
		r.fail("--name wants 1.." + std::to_string(kMaxMarkerNameLength) + " printable ASCII characters");
	a.port = r.port("port", false).value_or(kMarkerPort);
	a.timeout_seconds = r.timeout();
	a.wait_for_transmit = !r.flag("no-wait");
	return finish(r, a);
}

struct Mode {
	std::string_view name;
	std::vector<OptionSpec> options;
	Expected<Command> (*parse)(OptionReader &);
};

const std::vector<Mode> &modes()
{
	static const std::vector<Mode> all{
		{"udp-send",
		 {{"dst", true}, {"port", true}, {"src-port", true}, {"size", true}, {"count", true}, {"flow", true},
		  {"timeout", true}, {"sndbuf", true}, {"gso", true}},
		 parse_udp_send},
		{"udp-sink", {{"port", true}, {"count", true}, {"timeout", true}, {"rcvbuf", true}}, parse_udp_sink},
		{"tcp-send",
		 {{"dst", true}, {"port", true}, {"bytes", true}, {"timeout", true}, {"cc", true}, {"sndbuf", true},
		  {"bind-dev", true}},
		 parse_tcp_send},
		{"tcp-sink", {{"port", true}, {"bytes", true}, {"timeout", true}, {"once", false}}, parse_tcp_sink},
		{"tcp-rr",
		 {{"dst", true}, {"port", true}, {"size", true}, {"count", true}, {"pause-ms", true}, {"timeout", true}},
		 parse_tcp_rr},
		{"tcp-rr-server", {{"port", true}, {"size", true}, {"timeout", true}}, parse_tcp_rr_server},
		{"marker", {{"dst", true}, {"name", true}, {"port", true}, {"timeout", true}, {"no-wait", false}}, parse_marker},
	};
	return all;
}

} // namespace

std::string usage_text()
{
	return "usage: gp-traffic MODE [OPTIONS]   (every mode: --timeout SECONDS, default 60)\n"
	       "  udp-send --dst ADDR --port P [--src-port P] [--size PAYLOAD_BYTES] --count N [--flow ID]\n"
	       "           [--sndbuf BYTES] [--gso SEGMENTS]\n"
	       "  udp-sink --port P --count N [--rcvbuf BYTES]\n"
	       "  tcp-send --dst ADDR --port P --bytes N [--cc NAME] [--sndbuf BYTES] [--bind-dev DEV]\n"
	       "  tcp-sink --port P [--bytes N] [--once]\n"
	       "  tcp-rr   --dst ADDR --port P --count N [--size BYTES] [--pause-ms MS]\n"
	       "  tcp-rr-server --port P [--size BYTES]\n"
	       "  marker   --dst ADDR --name PHASE [--port 9] [--no-wait]\n"
	       "Addresses are numeric IPv4/IPv6. Sizes take k/m/g suffixes (powers of 1024).\n"
	       "Output: JSON on stdout. Exit 0 done, 1 runtime failure or timeout, 2 usage error.\n";
}

Expected<Command> parse_arguments(int argc, char *const argv[])
{
	if (argc < 2)
		return usage_error("no mode given");
	const std::string_view mode_name = argv[1];
	if (mode_name == "-h" || mode_name == "--help" || mode_name == "help")
		return Command{HelpArgs{}};
	for (const Mode &mode : modes()) {
		if (mode.name != mode_name)
			continue;
		// getopt sees the mode as its program name, so options start right after it.
		auto collected = collect_options(mode.name, argc - 1, argv + 1, mode.options);
		if (!collected)
			return collected.error();
		if (collected->help)
			return Command{HelpArgs{}};
		OptionReader reader(mode.name, std::move(collected->values));
		return mode.parse(reader);
	}
	return usage_error("unknown mode '" + std::string(mode_name) + "'");
}

} // namespace gp::traffic
