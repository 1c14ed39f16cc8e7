#include "output.hpp"

#include <net/if.h>

#include <cstdio>

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
	json.end_object();
	if (qdisc.xstats)
		write_xstats_json(json, *qdisc.xstats);
	json.end_object();
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

std::string Report::finish()
{
	if (format_ == OutputFormat::Text)
		return text_;
	json_.end_array();
	return (format_ == OutputFormat::PrettyJson ? pretty_json(json_.str()) : json_.str()) + "\n";
}

} // namespace gp
