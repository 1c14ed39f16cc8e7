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

// RTO overrides. `rto set` and `rto clear` print one result (not a list): text is one line;
// JSON is one object, {"count", "effective_rto_min_us", "effective_delack_max_us"} for set
// and {"count"} for clear, with the keys the kernel sent.
std::string format_rto_target(const RtoTarget &target); // "10.0.0.1:40000 -> 10.0.0.2:5001", "peer 10.0.0.2"
std::string format_rto_set_text(const RtoTarget &target, const RtoSettings &asked, const RtoInfo &reply);
std::string format_rto_clear_text(const RtoTarget &target, const RtoInfo &reply);
void write_rto_set_json(JsonWriter &json, const RtoInfo &reply);
void write_rto_clear_json(JsonWriter &json, const RtoInfo &reply);
// One override of `rto show`.
std::string format_rto_text(const RtoInfo &rto);
void write_rto_json(JsonWriter &json, const RtoInfo &rto);

// A single JSON value (ours, compact) as printed: pretty if asked, then a newline.
std::string finish_json(OutputFormat format, const JsonWriter &json);

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
	void add(const RtoInfo &rto);
	// The whole output, ending in a newline unless it is empty text.
	std::string finish();

private:
	OutputFormat format_;
	IfnameResolver ifname_;
	JsonWriter json_;
	std::string text_;
};

} // namespace gp
