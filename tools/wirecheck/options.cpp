#include "options.hpp"

#include <arpa/inet.h>
#include <getopt.h>

#include <cerrno>
#include <charconv>

#include "units.hpp"

namespace gp::wirecheck {
namespace {

Error usage_error(std::string message) { return make_error(EINVAL, std::move(message)); }

std::optional<uint8_t> parse_hex_octet(std::string_view text)
{
	unsigned value = 0;
	if (text.empty() || text.size() > 2)
		return std::nullopt;
	auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, 16);
	if (ec != std::errc() || end != text.data() + text.size())
		return std::nullopt;
	return static_cast<uint8_t>(value);
}

enum LongOnlyOption {
	kLinkrate = 256,
	kDevMac,
	kIfg,
	kFlow,
	kTolerance,
	kAssert,
};

} // namespace

std::string usage_text()
{
	return "usage: gp-wirecheck [-j] --linkrate RATE [--dev-mac MAC] [--ifg BYTES]\n"
	       "                    [--flow NAME=PREFIX[,rate=RATE]]... [--tolerance BYTES]\n"
	       "                    [--assert CHECKS] FILE.pcap\n"
	       "  -j, --json         print one JSON object instead of tables\n"
	       "  --linkrate RATE    wire rate of the link, tc units (1gbit)\n"
	       "  --dev-mac MAC      source MAC every gap frame must carry\n"
	       "  --ifg BYTES        device IFG mode: expect IFG-12 wire bytes of gap frames after each data frame\n"
	       "  --flow SPEC        data frames to PREFIX (longest prefix wins) form flow NAME, expected at RATE\n"
	       "  --tolerance BYTES  spacing shorter than planned by more than this is a violation (default 84)\n"
	       "  --assert CHECKS    exit 1 unless these hold: gaps,spacing,rate[=REL],integrity,ifg[=BYTES] or all\n";
}

Expected<MacAddress> parse_mac(std::string_view text)
{
	MacAddress mac{};
	size_t octet = 0;
	std::string_view rest = text;
	for (; octet < mac.size(); ++octet) {
		const size_t colon = rest.find(':');
		const std::string_view part = rest.substr(0, colon);
		const auto value = parse_hex_octet(part);
		if (!value || (colon == std::string_view::npos) != (octet == mac.size() - 1))
			return usage_error("invalid MAC address '" + std::string(text) + "' (want aa:bb:cc:dd:ee:ff)");
		mac[octet] = *value;
		rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
	}
	return mac;
}

Expected<IpPrefix> parse_prefix(std::string_view text)
{
	const size_t slash = text.find('/');
	const std::string address_text(text.substr(0, slash));
	IpPrefix prefix;
	if (inet_pton(AF_INET, address_text.c_str(), prefix.address.bytes.data()) == 1)
		prefix.address.version = 4;
	else if (inet_pton(AF_INET6, address_text.c_str(), prefix.address.bytes.data()) == 1)
		prefix.address.version = 6;
	else
		return usage_error("invalid address '" + address_text + "' in prefix '" + std::string(text) + "'");
	const unsigned max_length = prefix.address.version == 4 ? 32 : 128;
	prefix.length = max_length;
	if (slash != std::string_view::npos) {
		const auto length = parse_u64(text.substr(slash + 1));
		if (!length || *length > max_length)
			return usage_error("invalid prefix length in '" + std::string(text) + "'");
		prefix.length = static_cast<unsigned>(*length);
	}
	return prefix;
}

Expected<FlowSpec> parse_flow(std::string_view text)
{
	const auto bad = [&](const std::string &why) {
		return usage_error("invalid --flow '" + std::string(text) + "': " + why +
				   " (want NAME=PREFIX[,rate=RATE])");
	};
	const size_t equals = text.find('=');
	if (equals == std::string_view::npos || equals == 0)
		return bad("no NAME=");
	FlowSpec flow;
	flow.name = std::string(text.substr(0, equals));
	if (flow.name == kOtherFlowName)
		return bad("'other' is the name of the frames no flow matches");
	if (flow.name.find(',') != std::string::npos)
		return bad("NAME contains ','");
	std::string_view rest = text.substr(equals + 1);
	const size_t comma = rest.find(',');
	flow.prefix_text = std::string(rest.substr(0, comma));
	auto prefix = parse_prefix(flow.prefix_text);
	if (!prefix)
		return bad(prefix.error().message);
	flow.prefix = *prefix;
	rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
	while (!rest.empty()) {
		const size_t next = rest.find(',');
		const std::string_view item = rest.substr(0, next);
		rest = next == std::string_view::npos ? std::string_view() : rest.substr(next + 1);
		if (!item.starts_with("rate="))
			return bad("unknown key in '" + std::string(item) + "'");
		const auto rate = parse_rate(item.substr(5));
		if (!rate || *rate == 0)
			return bad("invalid rate '" + std::string(item.substr(5)) + "'");
		flow.rate_bps = *rate;
	}
	return flow;
}

Expected<Options> parse_command_line(int argc, char *const argv[])
{
	static const option long_options[] = {
		{"json", no_argument, nullptr, 'j'},
		{"help", no_argument, nullptr, 'h'},
		{"linkrate", required_argument, nullptr, kLinkrate},
		{"dev-mac", required_argument, nullptr, kDevMac},
		{"ifg", required_argument, nullptr, kIfg},
		{"flow", required_argument, nullptr, kFlow},
		{"tolerance", required_argument, nullptr, kTolerance},
		{"assert", required_argument, nullptr, kAssert},
		{nullptr, 0, nullptr, 0},
	};
	Options options;
	std::optional<std::string> assert_text;
	optind = 0; // full re-initialisation: parse_command_line may run more than once (tests)
	opterr = 0; // we word the errors ourselves
	int opt;
	while ((opt = getopt_long(argc, argv, "+:jh", long_options, nullptr)) != -1) {
		const std::string_view arg = optarg ? optarg : "";
		switch (opt) {
		case 'j':
			options.json = true;
			break;
		case 'h':
			options.help = true;
			return options;
		case kLinkrate: {
			const auto rate = parse_rate(arg);
			if (!rate || *rate == 0)
				return usage_error("invalid --linkrate '" + std::string(arg) + "'");
			options.analysis.linkrate_bps = *rate;
			break;
		}
		case kDevMac: {
			auto mac = parse_mac(arg);
			if (!mac)
				return mac.error();
			options.analysis.device_mac = *mac;
			break;
		}
		case kIfg: {
			const auto ifg = parse_u64(arg);
			if (!ifg || *ifg < kStandardIfgBytes)
				return usage_error("invalid --ifg '" + std::string(arg) + "' (bytes, at least 12)");
			options.analysis.ifg_bytes = *ifg;
			break;
		}
		case kFlow: {
			auto flow = parse_flow(arg);
			if (!flow)
				return flow.error();
			for (const auto &existing : options.analysis.flows)
				if (existing.name == flow->name)
					return usage_error("flow '" + flow->name + "' given twice");
			options.analysis.flows.push_back(std::move(*flow));
			break;
		}
		case kTolerance: {
			const auto tolerance = parse_u64(arg);
			if (!tolerance)
				return usage_error("invalid --tolerance '" + std::string(arg) + "' (wire bytes)");
			options.analysis.tolerance_bytes = *tolerance;
			break;
		}
		case kAssert:
			assert_text = std::string(arg);
			break;
		case ':':
			return usage_error(std::string(argv[optind - 1]) + " needs an argument");
		default:
			return usage_error(std::string("unknown option ") + argv[optind - 1]);
		}
	}
	if (options.analysis.linkrate_bps == 0)
		return usage_error("--linkrate is required");
	if (assert_text) {
		auto asserts = parse_asserts(*assert_text, options.analysis.ifg_bytes.has_value());
		if (!asserts)
			return asserts.error();
		options.asserts = *asserts;
	}
	if (argc - optind != 1)
		return usage_error(argc == optind ? "no capture file given" : "more than one capture file given");
	options.capture_path = argv[optind];
	return options;
}

} // namespace gp::wirecheck
