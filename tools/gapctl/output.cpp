#include "output.hpp"

#include <net/if.h>

#include <cstdio>
#include <initializer_list>
#include <utility>

#include "units.hpp"

namespace gp {
namespace {

constexpr std::string_view kIndent = "    ";

std::string device_text(uint32_t ifindex, const IfnameResolver &ifname)
{
	std::string name = ifname ? ifname(ifindex) : std::string();
	return name.empty() ? "ifindex " + std::to_string(ifindex) : "dev " + name;
}

void write_device_json(JsonWriter &json, uint32_t ifindex, const IfnameResolver &ifname)
{
	if (std::string name = ifname ? ifname(ifindex) : std::string(); !name.empty())
		json.field("ifname", name);
	json.field("ifindex", ifindex);
}

std::string format_value(uint64_t value, bool is_rate)
{
	return is_rate ? format_rate(value) : std::to_string(value);
}

// "8001:" like tc prints a qdisc handle.
std::string format_handle(uint32_t handle)
{
	char text[16];
	std::snprintf(text, sizeof(text), "%x:", handle >> 16);
	return text;
}

// The counters, grouped into lines: data frames, gap frames, everything else.
bool counter_starts_line(uint16_t attr)
{
	return attr == GAPPACE_A_STATS_GAP_FRAMES || attr == GAPPACE_A_STATS_DROPS;
}

std::string format_counters_text(const Counters &counters)
{
	std::string text, line;
	auto flush = [&] {
		if (!line.empty())
			text += std::string(kIndent) + line + "\n";
		line.clear();
	};
	for (const auto &field : kCounterFields) {
		if (counter_starts_line(field.attr))
			flush();
		if (const auto &value = counters[field.attr]) {
			if (!line.empty())
				line += ' ';
			line += std::string(field.key) + " " + format_value(*value, field.is_rate);
		}
	}
	flush();
	return text;
}

void write_counters_json(JsonWriter &json, const Counters &counters)
{
	json.key("stats").begin_object();
	for (const auto &field : kCounterFields)
		if (const auto &value = counters[field.attr])
			json.field(field.key, *value);
	json.end_object();
}

bool xstats_field_starts_line(std::string_view key)
{
	return key == "data_packets" || key == "gap_frames" || key == "paced_packets";
}

std::string format_xstats_text(const QdiscXstats &xstats)
{
	std::string text, line;
	auto flush = [&] {
		if (!line.empty())
			text += std::string(kIndent) + line + "\n";
		line.clear();
	};
	for (const auto &field : kXstatsFields) {
		if (xstats_field_starts_line(field.key))
			flush();
		if (!xstats.has_field(field.offset, field.size))
			continue;
		if (!line.empty())
			line += ' ';
		line += std::string(field.key) + " " + format_value(xstats_field_value(xstats, field), field.is_rate);
	}
	flush();
	return text;
}

void write_xstats_json(JsonWriter &json, const QdiscXstats &xstats)
{
	json.key("xstats").begin_object();
	for (const auto &field : kXstatsFields)
		if (xstats.has_field(field.offset, field.size))
			json.field(field.key, xstats_field_value(xstats, field));
	json.end_object();
}

std::string format_linkrate(uint64_t linkrate)
{
	return linkrate == 0 ? "auto" : format_rate(linkrate);
}

std::string us_text(uint32_t us)
{
	return std::to_string(us) + "us";
}

std::string ms_text(uint32_t ms)
{
	return std::to_string(ms) + "ms";
}

// "8000us", "8000us (asked 5000us)" when the kernel rounded.
std::string applied_text(uint32_t applied, std::optional<uint32_t> asked)
{
	std::string text = us_text(applied);
	if (asked && *asked != applied)
		text += " (asked " + us_text(*asked) + ")";
	return text;
}

std::string connections_text(uint32_t count)
{
	return std::to_string(count) + (count == 1 ? " connection" : " connections");
}

// The connection of a reply: "LOCAL -> PEER", or "peer PEER" without a local end.
std::string rto_ends_text(const RtoInfo &rto)
{
	const std::string peer = rto.peer ? format_endpoint(*rto.peer) : "?";
	if (!rto.local)
		return "peer " + peer;
	return format_endpoint(*rto.local) + " -> " + peer;
}

// Appends " key VALUE" for each present value; `unit` formats it.
void append_values(std::string &line, const RtoValues &values,
		   std::initializer_list<std::pair<uint16_t, std::string_view>> fields,
		   std::string (*unit)(uint32_t))
{
	for (const auto &[attr, key] : fields)
		if (const auto &value = values[attr]) {
			if (!line.empty())
				line += ' ';
			line += std::string(key) + " " + (unit ? unit(*value) : std::to_string(*value));
		}
}

// An object of the present values among `attrs`, keyed like kRtoFields.
void write_rto_values_json(JsonWriter &json, const RtoValues &values, std::initializer_list<uint16_t> attrs)
{
	json.begin_object();
	for (uint16_t attr : attrs)
		for (const auto &field : kRtoFields)
			if (field.attr == attr && values[attr])
				json.field(field.key, *values[attr]);
	json.end_object();
}

} // namespace

std::string system_ifname(uint32_t ifindex)
{
	char name[IF_NAMESIZE] = {};
	return if_indextoname(ifindex, name) ? std::string(name) : std::string();
}

// ------------------------------------------------------------------ text

std::string format_rule_text(const RuleInfo &rule, const IfnameResolver &ifname)
{
	std::string text = device_text(rule.ifindex, ifname) + " dst " + format_prefix(rule.dst);
	if (rule.rate)
		text += " rate " + format_rate(*rule.rate);
	if (rule.group)
		text += " group " + std::to_string(*rule.group);
	text += "\n";
	if (rule.stats)
		text += format_counters_text(*rule.stats);
	return text;
}

std::string format_device_stats_text(const DeviceStats &stats, const IfnameResolver &ifname)
{
	std::string text = device_text(stats.ifindex, ifname);
	if (stats.linkrate)
		text += " linkrate " + format_rate(*stats.linkrate);
	if (stats.linkrate_auto)
		text += " (auto)";
	if (stats.ifg)
		text += " ifg " + std::to_string(*stats.ifg);
	if (stats.limit)
		text += " limit " + std::to_string(*stats.limit);
	if (stats.rules)
		text += " rules " + std::to_string(*stats.rules);
	text += "\n";
	if (stats.stats)
		text += format_counters_text(*stats.stats);
	return text;
}

std::string format_qdisc_text(const QdiscInfo &qdisc, const IfnameResolver &ifname)
{
	std::string text = device_text(qdisc.ifindex, ifname) + " qdisc " + qdisc.kind + " " +
			   format_handle(qdisc.handle) + (qdisc.is_root() ? " root" : "");
	if (qdisc.options.linkrate)
		text += " linkrate " + format_linkrate(*qdisc.options.linkrate);
	if (qdisc.options.ifg)
		text += " ifg " + std::to_string(*qdisc.options.ifg);
	if (qdisc.options.limit)
		text += " limit " + std::to_string(*qdisc.options.limit);
	if (qdisc.options.lookahead_ns && *qdisc.options.lookahead_ns)
		text += " lookahead " + std::to_string((*qdisc.options.lookahead_ns + 999) / 1000) + "us";
	text += "\n";
	if (qdisc.xstats)
		text += format_xstats_text(*qdisc.xstats);
	return text;
}

// ------------------------------------------------------------------ JSON

void write_rule_json(JsonWriter &json, const RuleInfo &rule, const IfnameResolver &ifname)
{
	json.begin_object();
	write_device_json(json, rule.ifindex, ifname);
	json.field("dst", format_prefix(rule.dst));
	if (rule.rate)
		json.field("rate", *rule.rate);
	if (rule.group)
		json.field("group", *rule.group);
	if (rule.stats)
		write_counters_json(json, *rule.stats);
	json.end_object();
}

void write_device_stats_json(JsonWriter &json, const DeviceStats &stats, const IfnameResolver &ifname)
{
	json.begin_object();
	write_device_json(json, stats.ifindex, ifname);
	if (stats.linkrate)
		json.field("linkrate", *stats.linkrate);
	json.field("linkrate_auto", stats.linkrate_auto);
	if (stats.ifg)
		json.field("ifg", *stats.ifg);
	if (stats.limit)
		json.field("limit", *stats.limit);
	if (stats.rules)
		json.field("rules", *stats.rules);
	if (stats.stats)
		write_counters_json(json, *stats.stats);
	json.end_object();
}

void write_qdisc_json(JsonWriter &json, const QdiscInfo &qdisc, const IfnameResolver &ifname)
{
	json.begin_object();
	write_device_json(json, qdisc.ifindex, ifname);
	json.field("kind", qdisc.kind);
	json.field("handle", format_handle(qdisc.handle));
	json.field("root", qdisc.is_root());
	json.key("options").begin_object();
	if (qdisc.options.linkrate)
		json.field("linkrate", *qdisc.options.linkrate);
	if (qdisc.options.ifg)
		json.field("ifg", *qdisc.options.ifg);
	if (qdisc.options.limit)
		json.field("limit", *qdisc.options.limit);
	if (qdisc.options.lookahead_ns)
		json.field("lookahead_ns", *qdisc.options.lookahead_ns);
	json.end_object();
	if (qdisc.xstats)
		write_xstats_json(json, *qdisc.xstats);
	json.end_object();
}

// ------------------------------------------------------------------ RTO overrides

std::string format_rto_target(const RtoTarget &target)
{
	if (target.is_peer_only()) {
		Endpoint peer = target.peer;
		peer.port = 0;
		return "peer " + format_endpoint(peer);
	}
	return format_endpoint(*target.local) + " -> " + format_endpoint(target.peer);
}

std::string format_rto_set_text(const RtoTarget &target, const RtoSettings &asked, const RtoInfo &reply)
{
	const RtoValues &values = reply.values;
	std::string text = "rto " + format_rto_target(target) + ":";
	std::string sep = " ";
	if (target.is_peer_only() && values[GAPPACE_A_RTO_COUNT]) {
		text += sep + connections_text(*values[GAPPACE_A_RTO_COUNT]);
		sep = ", ";
	}
	if (const auto &floor = values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US])
		text += sep + "floor " + applied_text(*floor, asked.rto_min_us);
	else
		text += sep + "floor " + us_text(asked.rto_min_us) + " asked";
	sep = ", ";
	if (const auto &delack = values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US])
		text += sep + "delack " + applied_text(*delack, asked.delack_max_us);
	text += "; held ";
	if (asked.ttl_ms)
		text += "for " + ms_text(*asked.ttl_ms) + " or ";
	return text + "until gapctl exits (Ctrl-C)\n";
}

std::string format_rto_clear_text(const RtoTarget &target, const RtoInfo &reply)
{
	std::string text = "rto " + format_rto_target(target) + ": restored";
	if (const auto &count = reply.values[GAPPACE_A_RTO_COUNT])
		text += " " + connections_text(*count);
	return text + "\n";
}

void write_rto_set_json(JsonWriter &json, const RtoInfo &reply)
{
	write_rto_values_json(json, reply.values,
			      {GAPPACE_A_RTO_COUNT, GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US,
			       GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US});
}

void write_rto_clear_json(JsonWriter &json, const RtoInfo &reply)
{
	write_rto_values_json(json, reply.values, {GAPPACE_A_RTO_COUNT});
}

std::string format_rto_text(const RtoInfo &rto)
{
	const RtoValues &values = rto.values;
	std::string first = rto_ends_text(rto);
	if (const auto &floor = values[GAPPACE_A_RTO_EFFECTIVE_RTO_MIN_US])
		first += " rto_min " + applied_text(*floor, values[GAPPACE_A_RTO_RTO_MIN_US]);
	if (const auto &delack = values[GAPPACE_A_RTO_EFFECTIVE_DELACK_MAX_US])
		first += " delack_max " + applied_text(*delack, values[GAPPACE_A_RTO_DELACK_MAX_US]);
	if (const auto &rto_us = values[GAPPACE_A_RTO_RTO_US])
		first += " rto " + us_text(*rto_us);

	std::string orig;
	append_values(orig, values,
		      {{GAPPACE_A_RTO_ORIG_RTO_MIN_US, "rto_min"}, {GAPPACE_A_RTO_ORIG_DELACK_MAX_US, "delack_max"}},
		      us_text);
	std::string owner;
	append_values(owner, values, {{GAPPACE_A_RTO_OWNER_PID, "pid"}, {GAPPACE_A_RTO_OWNER_PORTID, "portid"}},
		      nullptr);
	append_values(owner, values, {{GAPPACE_A_RTO_TTL_LEFT_MS, "ttl_left"}}, ms_text);

	std::string text = first + "\n";
	if (!orig.empty())
		text += std::string(kIndent) + "orig " + orig + "\n";
	if (!owner.empty())
		text += std::string(kIndent) + "owner " + owner + "\n";
	return text;
}

void write_rto_json(JsonWriter &json, const RtoInfo &rto)
{
	json.begin_object();
	if (rto.local)
		json.field("local", format_endpoint(*rto.local));
	if (rto.peer)
		json.field("peer", format_endpoint(*rto.peer));
	for (const auto &field : kRtoFields)
		if (const auto &value = rto.values[field.attr])
			json.field(field.key, *value);
	json.end_object();
}

std::string finish_json(OutputFormat format, const JsonWriter &json)
{
	return (format == OutputFormat::PrettyJson ? pretty_json(json.str()) : json.str()) + "\n";
}

std::string pretty_json(std::string_view compact)
{
	std::string out;
	int depth = 0;
	bool in_string = false, escaped = false;
	auto newline = [&] {
		out += '\n';
		for (int i = 0; i < depth; ++i)
			out += kIndent;
	};
	for (size_t i = 0; i < compact.size(); ++i) {
		const char c = compact[i];
		if (in_string) {
			out += c;
			if (escaped)
				escaped = false;
			else if (c == '\\')
				escaped = true;
			else if (c == '"')
				in_string = false;
			continue;
		}
		switch (c) {
		case '"':
			in_string = true;
			out += c;
			break;
		case '{':
		case '[': {
			out += c;
			const char next = i + 1 < compact.size() ? compact[i + 1] : '\0';
			if (next == '}' || next == ']') { // keep empty containers on one line
				out += next;
				++i;
				break;
			}
			++depth;
			newline();
			break;
		}
		case '}':
		case ']':
			--depth;
			newline();
			out += c;
			break;
		case ',':
			out += c;
			newline();
			break;
		case ':':
			out += ": ";
			break;
		default:
			out += c;
		}
	}
	return out;
}

// ------------------------------------------------------------------ report

Report::Report(OutputFormat format, IfnameResolver ifname) : format_(format), ifname_(std::move(ifname))
{
	if (format_ != OutputFormat::Text)
		json_.begin_array();
}

void Report::add(const RuleInfo &rule)
{
	if (format_ == OutputFormat::Text)
		text_ += format_rule_text(rule, ifname_);
	else
		write_rule_json(json_, rule, ifname_);
}

void Report::add(const DeviceStats &stats)
{
	if (format_ == OutputFormat::Text)
		text_ += format_device_stats_text(stats, ifname_);
	else
		write_device_stats_json(json_, stats, ifname_);
}

void Report::add(const QdiscInfo &qdisc)
{
	if (format_ == OutputFormat::Text)
		text_ += format_qdisc_text(qdisc, ifname_);
	else
		write_qdisc_json(json_, qdisc, ifname_);
}

void Report::add(const RtoInfo &rto)
{
	if (format_ == OutputFormat::Text)
		text_ += format_rto_text(rto);
	else
		write_rto_json(json_, rto);
}

std::string Report::finish()
{
	if (format_ == OutputFormat::Text)
		return text_;
	json_.end_array();
	return finish_json(format_, json_);
}

} // namespace gp
