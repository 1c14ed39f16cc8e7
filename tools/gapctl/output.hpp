// Rendering of decoded replies: iproute2-like text, or JSON with stable snake_case keys
// (the attribute / field names, lowercased, without prefix) and numbers in base units.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "json.hpp"
#include "messages.hpp"

namespace gp {

// Name of an interface for printing; empty when unknown (the device may be gone already).
using IfnameResolver = std::function<std::string(uint32_t ifindex)>;
std::string system_ifname(uint32_t ifindex);

enum class OutputFormat { Text, Json, PrettyJson };

// Text: one block per object, each ending in a newline.
std::string format_rule_text(const RuleInfo &rule, const IfnameResolver &ifname);
std::string format_device_stats_text(const DeviceStats &stats, const IfnameResolver &ifname);
std::string format_qdisc_text(const QdiscInfo &qdisc, const IfnameResolver &ifname);

// JSON: one object per call, for the array a show command prints.
void write_rule_json(JsonWriter &json, const RuleInfo &rule, const IfnameResolver &ifname);
void write_device_stats_json(JsonWriter &json, const DeviceStats &stats, const IfnameResolver &ifname);
void write_qdisc_json(JsonWriter &json, const QdiscInfo &qdisc, const IfnameResolver &ifname);

// Re-indents compact JSON (ours: no insignificant whitespace) with 4 spaces, like `ip -j -p`.
std::string pretty_json(std::string_view compact);

// Collects the objects of a show command and renders them in the chosen format. JSON output
// is always an array (possibly empty), like `ip -j`.
class Report {
public:
	Report(OutputFormat format, IfnameResolver ifname);

	void add(const RuleInfo &rule);
	void add(const DeviceStats &stats);
	void add(const QdiscInfo &qdisc);
	// The whole output, ending in a newline unless it is empty text.
	std::string finish();

private:
	OutputFormat format_;
	IfnameResolver ifname_;
	JsonWriter json_;
	std::string text_;
};

} // namespace gp
