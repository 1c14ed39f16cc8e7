#include "cli.hpp"

#include <array>
#include <cerrno>
#include <cstdint>
#include <limits>

#include "units.hpp"

namespace gp {
namespace {

Error usage(std::string message)
{
	return make_error(EINVAL, std::move(message));
}

std::string quoted(std::string_view word)
{
	return "\"" + std::string(word) + "\"";
}

Expected<uint64_t> parse_rate_arg(std::string_view keyword, std::string_view text)
{
	if (auto rate = parse_rate(text))
		return *rate;
	return usage("invalid " + std::string(keyword) + " " + quoted(text) + " (a rate: e.g. 100mbit, 1gbit, 2.5gbit)");
}

Expected<uint32_t> parse_u32_arg(std::string_view keyword, std::string_view text)
{
	auto value = parse_u64(text);
	if (!value || *value > std::numeric_limits<uint32_t>::max())
		return usage("invalid " + std::string(keyword) + " " + quoted(text) + " (a number up to 4294967295)");
	return static_cast<uint32_t>(*value);
}

// linkrate RATE|auto; "auto" is 0: the qdisc then follows the device's speed.
Expected<uint64_t> parse_linkrate_arg(std::string_view text)
{
	if (text == "auto")
		return uint64_t{0};
	return parse_rate_arg("linkrate", text);
}

constexpr std::array<Keyword, 5> kQdiscSetGrammar{{
	{"dev", KeywordKind::Value, true},
	{"linkrate"},
	{"ifg"},
	{"limit"},
	{"lookahead"},
}};

// lookahead TIME (ns, us, ms, s; a bare number is microseconds), 0 for none, at most 1 s.
Expected<uint32_t> parse_lookahead_arg(std::string_view text)
{
	auto us = parse_time_us(text);
	if (!us || *us > GAPPACE_LOOKAHEAD_MAX / 1000)
		return usage("invalid lookahead " + quoted(text) + " (a time up to 1s, such as 200us; 0 for none)");
	return static_cast<uint32_t>(*us * 1000);
}

Expected<QdiscSetArgs> parse_qdisc_set_args(Args args)
{
	auto values = parse_keywords(args, kQdiscSetGrammar);
	if (!values)
		return values.error();
	QdiscSetArgs parsed;
	parsed.dev = values->at("dev");
	if (auto it = values->find("linkrate"); it != values->end()) {
		auto linkrate = parse_linkrate_arg(it->second);
		if (!linkrate)
			return linkrate.error();
		parsed.options.linkrate = *linkrate;
	}
	if (auto it = values->find("ifg"); it != values->end()) {
		auto ifg = parse_u32_arg("ifg", it->second);
		if (!ifg)
			return ifg.error();
		parsed.options.ifg = *ifg;
	}
	if (auto it = values->find("limit"); it != values->end()) {
		auto limit = parse_u32_arg("limit", it->second);
		if (!limit)
			return limit.error();
		parsed.options.limit = *limit;
	}
	if (auto it = values->find("lookahead"); it != values->end()) {
		auto lookahead = parse_lookahead_arg(it->second);
		if (!lookahead)
			return lookahead.error();
		parsed.options.lookahead_ns = *lookahead;
	}
	return parsed;
}

Expected<PaceRuleArgs> parse_pace_rule_args(Args args, bool with_rate, bool allow_replace_flag)
{
	std::vector<Keyword> grammar{{"dev", KeywordKind::Value, true}, {"dst", KeywordKind::Value, true}};
	if (with_rate) {
		grammar.push_back({"rate", KeywordKind::Value, true});
		grammar.push_back({"group", KeywordKind::Value});
	}
	if (allow_replace_flag)
		grammar.push_back({"replace", KeywordKind::Flag});
	auto values = parse_keywords(args, grammar);
	if (!values)
		return values.error();

	PaceRuleArgs parsed;
	parsed.dev = values->at("dev");
	auto dst = parse_prefix(values->at("dst"));
	if (!dst)
		return dst.error();
	parsed.dst = *dst;
	if (with_rate) {
		auto rate = parse_rate_arg("rate", values->at("rate"));
		if (!rate)
			return rate.error();
		parsed.rate = *rate;
	}
	if (auto it = values->find("group"); it != values->end()) {
		auto group = parse_u32_arg("group", it->second);
		if (!group)
			return group.error();
		if (!*group)
			return usage("invalid group \"0\" (groups are numbered from 1; leave it out for a rule of its own)");
		parsed.group = *group;
	}
	parsed.replace = values->contains("replace");
	return parsed;
}

// A TIME argument in microseconds: more than 0, at most the u32 the kernel takes.
Expected<uint32_t> parse_time_arg(std::string_view what, std::string_view text)
{
	const auto us = parse_time_us(text);
	if (!us)
		return usage("invalid " + std::string(what) + " " + quoted(text) +
			     " (a time: e.g. 5ms, 200us, 0.01s; a bare number is microseconds)");
	if (*us == 0 || *us > std::numeric_limits<uint32_t>::max())
		return usage("invalid " + std::string(what) + " " + quoted(text) + " (must be 1us .. 4294967295us)");
	return static_cast<uint32_t>(*us);
}

// ttl TIME, sent in milliseconds (rounded up).
Expected<uint32_t> parse_ttl_arg(std::string_view text)
{
	const auto us = parse_time_us(text);
	if (!us)
		return usage("invalid ttl " + quoted(text) + " (a time: e.g. 30s, 500ms; a bare number is microseconds)");
	const uint64_t ms = *us / 1000 + (*us % 1000 ? 1 : 0);
	if (ms == 0 || ms > std::numeric_limits<uint32_t>::max())
		return usage("invalid ttl " + quoted(text) + " (must be 1ms .. 4294967295ms)");
	return static_cast<uint32_t>(ms);
}

// { SADDR:SPORT DADDR:DPORT | peer ADDR } at the front of args; `used` says how many words.
Expected<RtoTarget> parse_rto_target(Args args, size_t &used)
{
	RtoTarget target;
	if (!args.empty() && args.front() == "peer") {
		if (args.size() < 2)
			return usage("missing address after \"peer\"");
		auto peer = parse_host_address(args[1]);
		if (!peer)
			return peer.error();
		target.peer = *peer;
		used = 2;
		return target;
	}
	if (args.empty())
		return usage("missing the connection: SADDR:SPORT DADDR:DPORT, or peer ADDR");
	auto local = parse_endpoint(args[0]);
	if (!local)
		return local.error();
	if (args.size() < 2)
		return usage("missing the peer end DADDR:DPORT after " + quoted(args[0]));
	auto peer = parse_endpoint(args[1]);
	if (!peer)
		return peer.error();
	if (local->family != peer->family)
		return usage("both ends must be IPv4 or both IPv6: " + quoted(args[0]) + " " + quoted(args[1]));
	target.local = *local;
	target.peer = *peer;
	used = 2;
	return target;
}

constexpr std::array<Keyword, 2> kRtoSetGrammar{{{"delack"}, {"ttl"}}};

} // namespace

Expected<KeywordValues> parse_keywords(Args args, std::span<const Keyword> grammar)
{
	KeywordValues values;
	for (size_t i = 0; i < args.size(); ++i) {
		const std::string_view word = args[i];
		const Keyword *keyword = nullptr;
		for (const auto &candidate : grammar)
			if (candidate.name == word)
				keyword = &candidate;
		if (!keyword)
			return usage("unknown keyword " + quoted(word));
		if (values.contains(keyword->name))
			return usage("duplicate keyword " + quoted(word));
		if (keyword->kind == KeywordKind::Flag) {
			values.emplace(keyword->name, std::string_view());
			continue;
		}
		if (i + 1 >= args.size())
			return usage("missing value after " + quoted(word));
		values.emplace(keyword->name, args[++i]);
	}
	for (const auto &keyword : grammar)
		if (keyword.required && !values.contains(keyword.name))
			return usage("missing " + quoted(keyword.name));
	return values;
}

Expected<QdiscSetArgs> parse_qdisc_attach_args(Args args)
{
	return parse_qdisc_set_args(args);
}

Expected<QdiscSetArgs> parse_qdisc_change_args(Args args)
{
	auto parsed = parse_qdisc_set_args(args);
	if (parsed && parsed->options.empty())
		return usage("nothing to change: give linkrate, ifg, limit or lookahead");
	return parsed;
}

Expected<DeviceArgs> parse_device_args(Args args)
{
	static constexpr std::array<Keyword, 1> grammar{{{"dev", KeywordKind::Value, true}}};
	auto values = parse_keywords(args, grammar);
	if (!values)
		return values.error();
	return DeviceArgs{std::string(values->at("dev"))};
}

Expected<DeviceFilterArgs> parse_device_filter_args(Args args)
{
	static constexpr std::array<Keyword, 1> grammar{{{"dev"}}};
	auto values = parse_keywords(args, grammar);
	if (!values)
		return values.error();
	DeviceFilterArgs parsed;
	if (auto it = values->find("dev"); it != values->end())
		parsed.dev = std::string(it->second);
	return parsed;
}

Expected<PaceRuleArgs> parse_pace_add_args(Args args)
{
	return parse_pace_rule_args(args, true, true);
}

Expected<PaceRuleArgs> parse_pace_replace_args(Args args)
{
	auto parsed = parse_pace_rule_args(args, true, false);
	if (parsed)
		parsed->replace = true;
	return parsed;
}

Expected<PaceRuleArgs> parse_pace_del_args(Args args)
{
	return parse_pace_rule_args(args, false, false);
}

Expected<RtoSetArgs> parse_rto_set_args(Args args)
{
	size_t used = 0;
	auto target = parse_rto_target(args, used);
	if (!target)
		return target.error();
	RtoSetArgs parsed;
	parsed.target = *target;
	args = args.subspan(used);

	const bool is_keyword = !args.empty() && (args.front() == "delack" || args.front() == "ttl");
	if (args.empty() || is_keyword)
		return usage("missing TIME (the RTO floor, e.g. 5ms)" +
			     (is_keyword ? " before " + quoted(args.front()) : std::string()));
	auto rto_min = parse_time_arg("TIME", args.front());
	if (!rto_min)
		return rto_min.error();
	parsed.settings.rto_min_us = *rto_min;

	auto values = parse_keywords(args.subspan(1), kRtoSetGrammar);
	if (!values)
		return values.error();
	if (auto it = values->find("delack"); it != values->end()) {
		auto delack = parse_time_arg("delack", it->second);
		if (!delack)
			return delack.error();
		parsed.settings.delack_max_us = *delack;
	}
	if (auto it = values->find("ttl"); it != values->end()) {
		auto ttl = parse_ttl_arg(it->second);
		if (!ttl)
			return ttl.error();
		parsed.settings.ttl_ms = *ttl;
	}
	return parsed;
}

Expected<RtoClearArgs> parse_rto_clear_args(Args args)
{
	size_t used = 0;
	auto target = parse_rto_target(args, used);
	if (!target)
		return target.error();
	if (args.size() > used)
		return usage("unexpected " + quoted(args[used]));
	return RtoClearArgs{*target};
}

Expected<NoArgs> parse_no_args(Args args)
{
	if (!args.empty())
		return usage("unexpected " + quoted(args.front()));
	return NoArgs{};
}

Expected<CommandLine> parse_command_line(std::span<const char *const> argv)
{
	CommandLine line;
	bool json = false, pretty = false;
	size_t i = 1; // argv[0] is the program
	for (; i < argv.size(); ++i) {
		const std::string_view word = argv[i];
		if (word.size() < 2 || word[0] != '-')
			break;
		if (word == "-j" || word == "-json" || word == "--json")
			json = true;
		else if (word == "-p" || word == "-pretty" || word == "--pretty")
			pretty = true;
		else if (word == "-h" || word == "-help" || word == "--help")
			line.options.help = true;
		else
			return usage("unknown option " + quoted(word));
	}
	// Like ip, -p only matters together with -j.
	if (json)
		line.options.format = pretty ? OutputFormat::PrettyJson : OutputFormat::Json;
	for (; i < argv.size(); ++i)
		line.words.emplace_back(argv[i]);
	return line;
}

} // namespace gp
