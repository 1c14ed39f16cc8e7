#include "report.hpp"

#include <cinttypes>
#include <cmath>
#include <cstdio>

#include "json.hpp"
#include "units.hpp"

namespace gp::wirecheck {
namespace {

template <class T> void optional_field(JsonWriter &json, std::string_view name, const std::optional<T> &value)
{
	json.key(name);
	if (value)
		json.value(*value);
	else
		json.null();
}

void write_counter(JsonWriter &json, const Counter &counter)
{
	json.field("frames", counter.frames).field("bytes", counter.bytes).field("wire_bytes", counter.wire_bytes);
}

void write_spacing(JsonWriter &json, const SpacingReport &spacing)
{
	const bool any = spacing.count > 0;
	json.begin_object().field("count", spacing.count);
	optional_field(json, "min", any ? std::optional(spacing.min) : std::nullopt);
	optional_field(json, "max", any ? std::optional(spacing.max) : std::nullopt);
	optional_field(json, "mean", any ? std::optional(spacing.mean) : std::nullopt);
	optional_field(json, "deviation_max", spacing.deviation_max);
	optional_field(json, "deviation_min", spacing.deviation_min);
	optional_field(json, "deviation_mean_abs", spacing.deviation_mean_abs);
	json.field("violations", spacing.violations).field("back_to_back", spacing.back_to_back).end_object();
}

void write_flow(JsonWriter &json, const FlowReport &flow)
{
	json.begin_object().field("name", flow.name);
	optional_field(json, "prefix", flow.prefix.empty() ? std::nullopt : std::optional(flow.prefix));
	write_counter(json, flow.data);
	json.field("payload_bytes", flow.payload_bytes);
	optional_field(json, "achieved_rate", flow.achieved_rate_bps);
	optional_field(json, "achieved_rate_inclusive", flow.achieved_rate_inclusive_bps);
	json.field("phase_rate", flow.phase_rate_bps);
	optional_field(json, "expected_rate", flow.expected_rate_bps);
	optional_field(json, "rate_error", flow.rate_error);
	json.key("spacing");
	write_spacing(json, flow.spacing);
	json.end_object();
}

void write_invalid_gaps(JsonWriter &json, const InvalidGapReport &invalid)
{
	json.begin_object().field("count", invalid.count);
	for (size_t i = 0; i < kGapDefectCount; ++i)
		json.field(gap_defect_name(static_cast<GapDefect>(i)), invalid.by_defect[i]);
	json.key("examples").begin_array();
	for (const auto &example : invalid.examples)
		json.value(example);
	json.end_array().end_object();
}

void write_ifg(JsonWriter &json, const std::optional<IfgReport> &ifg)
{
	if (!ifg) {
		json.null();
		return;
	}
	json.begin_object()
		.field("ifg", ifg->ifg_bytes)
		.field("planned_gap", ifg->planned_gap_bytes)
		.field("pairs", ifg->pairs)
		.field("mismatched_pairs", ifg->mismatched_pairs)
		.field("gap_wire_bytes_between", ifg->gap_wire_bytes_between)
		.field("deviation_max_abs", ifg->deviation_max_abs)
		.field("deviation_mean", ifg->deviation_mean)
		.field("data_wire_ratio", ifg->data_wire_ratio)
		.field("law_ratio", ifg->law_ratio)
		.field("payload_rate", ifg->payload_rate_bps)
		.end_object();
}

void write_integrity(JsonWriter &json, const IntegrityReport &integrity)
{
	json.begin_object().key("udp").begin_array();
	for (const auto &udp : integrity.udp)
		json.begin_object()
			.field("flow_id", udp.flow_id)
			.field("received", udp.received)
			.field("lost", udp.lost)
			.field("reordered", udp.reordered)
			.field("duplicated", udp.duplicated)
			.field("first_seq", udp.first_seq)
			.field("highest_seq", udp.highest_seq)
			.end_object();
	json.end_array()
		.field("tcp_connections", integrity.tcp_connections)
		.field("tcp_data_segments", integrity.tcp_data_segments)
		.field("tcp_out_of_order", integrity.tcp_out_of_order)
		.end_object();
}

void write_phase(JsonWriter &json, const PhaseReport &phase)
{
	json.begin_object().field("name", phase.name).field("first_frame", phase.first_frame).field("markers", phase.markers);
	write_counter(json, phase.all);
	json.key("data").begin_object();
	write_counter(json, phase.data);
	json.field("payload_bytes", phase.payload_bytes).end_object();
	json.key("gap").begin_object();
	write_counter(json, phase.gap);
	json.end_object();
	json.key("invalid_gaps");
	write_invalid_gaps(json, phase.invalid_gaps);
	json.field("non_ip", phase.non_ip).field("headers_truncated", phase.headers_truncated);
	json.key("flows").begin_array();
	for (const auto &flow : phase.flows)
		write_flow(json, flow);
	json.end_array();
	json.key("ifg");
	write_ifg(json, phase.ifg);
	json.key("integrity");
	write_integrity(json, phase.integrity);
	json.end_object();
}

// ---- text

std::string printf_string(const char *format, auto... args)
{
	char line[512];
	std::snprintf(line, sizeof(line), format, args...);
	return line;
}

std::string rate_text(const std::optional<double> &bps)
{
	if (!bps)
		return "-";
	return format_rate(static_cast<uint64_t>(std::llround(*bps)));
}

std::string number_text(const std::optional<double> &value, const char *format = "%.1f")
{
	return value ? printf_string(format, *value) : std::string("-");
}

void append_flows(std::string &out, const PhaseReport &phase)
{
	out += printf_string("  %-12s %8s %12s %10s %10s %10s %9s %9s %9s %9s %6s %6s\n", "flow", "frames",
			     "wire_bytes", "achieved", "phase", "expected", "error", "dev_max", "dev_min",
			     "mean|dev|", "viol", "b2b");
	for (const auto &flow : phase.flows) {
		if (flow.data.frames == 0 && !flow.expected_rate_bps)
			continue;
		const std::string expected = flow.expected_rate_bps ? format_rate(*flow.expected_rate_bps) : "-";
		const std::string error_percent = flow.rate_error ? printf_string("%.3f%%", *flow.rate_error * 100) : "-";
		out += printf_string("  %-12s %8" PRIu64 " %12" PRIu64 " %10s %10s %10s %9s %9s %9s %9s %6" PRIu64
				     " %6" PRIu64 "\n",
				     flow.name.c_str(), flow.data.frames, flow.data.wire_bytes,
				     rate_text(flow.achieved_rate_bps).c_str(), rate_text(flow.phase_rate_bps).c_str(),
				     expected.c_str(), error_percent.c_str(),
				     number_text(flow.spacing.deviation_max).c_str(),
				     number_text(flow.spacing.deviation_min).c_str(),
				     number_text(flow.spacing.deviation_mean_abs).c_str(), flow.spacing.violations,
				     flow.spacing.back_to_back);
	}
}

void append_phase(std::string &out, const PhaseReport &phase)
{
	out += printf_string("phase '%s' (from frame %" PRIu64 "): %" PRIu64 " frames, %" PRIu64 " wire bytes\n",
			     phase.name.c_str(), phase.first_frame, phase.all.frames, phase.all.wire_bytes);
	out += printf_string("  data %" PRIu64 " frames / %" PRIu64 " wire bytes (non-IP %" PRIu64 ", markers %" PRIu64
			     "), gap %" PRIu64 " frames / %" PRIu64 " wire bytes, invalid gaps %" PRIu64 "\n",
			     phase.data.frames, phase.data.wire_bytes, phase.non_ip, phase.markers, phase.gap.frames,
			     phase.gap.wire_bytes, phase.invalid_gaps.count);
	for (const auto &example : phase.invalid_gaps.examples)
		out += "    invalid gap " + example + "\n";
	append_flows(out, phase);
	if (phase.ifg)
		out += printf_string("  ifg %" PRIu64 ": %" PRIu64 " pairs, planned gap %" PRIu64
				     ", max|dev| %.0f, mean dev %.3f, data/wire %.6f, law %.6f, payload %s\n",
				     phase.ifg->ifg_bytes, phase.ifg->pairs, phase.ifg->planned_gap_bytes,
				     phase.ifg->deviation_max_abs, phase.ifg->deviation_mean, phase.ifg->data_wire_ratio,
				     phase.ifg->law_ratio, rate_text(phase.ifg->payload_rate_bps).c_str());
	for (const auto &udp : phase.integrity.udp)
		out += printf_string("  udp flow id %u: received %" PRIu64 ", lost %" PRIu64 ", reordered %" PRIu64
				     ", duplicated %" PRIu64 " (seq %" PRIu64 "..%" PRIu64 ")\n",
				     udp.flow_id, udp.received, udp.lost, udp.reordered, udp.duplicated, udp.first_seq,
				     udp.highest_seq);
	if (phase.integrity.tcp_data_segments)
		out += printf_string("  tcp: %" PRIu64 " connections, %" PRIu64 " data segments, %" PRIu64
				     " out of order\n",
				     phase.integrity.tcp_connections, phase.integrity.tcp_data_segments,
				     phase.integrity.tcp_out_of_order);
}

} // namespace

std::string format_json(const CaptureReport &report, const ReportContext &context)
{
	JsonWriter json;
	const AnalysisConfig &config = *context.config;
	json.begin_object()
		.field("file", context.capture_path)
		.field("linkrate", report.linkrate_bps)
		.field("tolerance", config.tolerance_bytes);
	optional_field(json, "ifg", config.ifg_bytes);
	optional_field(json, "dev_mac", config.device_mac ? std::optional(format_mac(*config.device_mac)) : std::nullopt);
	json.field("frames", context.capture.frames).field("snap_length", context.capture.snap_length);
	optional_field(json, "warning",
		       context.capture.warning.empty() ? std::nullopt : std::optional(context.capture.warning));
	json.key("phases").begin_array();
	for (const auto &phase : report.phases)
		write_phase(json, phase);
	json.end_array();
	json.key("total");
	write_phase(json, report.total);
	json.key("asserts").begin_object().field("checked", context.asserts_checked).key("failures").begin_array();
	for (const auto &failure : context.assert_failures)
		json.value(failure);
	json.end_array().end_object().end_object();
	return json.str() + "\n";
}

std::string format_text(const CaptureReport &report, const ReportContext &context)
{
	std::string out = printf_string("%s: %" PRIu64 " frames, link %s\n", context.capture_path.c_str(),
					context.capture.frames, format_rate(report.linkrate_bps).c_str());
	if (!context.capture.warning.empty())
		out += "warning: " + context.capture.warning + "\n";
	for (const auto &phase : report.phases)
		append_phase(out, phase);
	append_phase(out, report.total);
	if (context.asserts_checked) {
		out += context.assert_failures.empty() ? "asserts: all hold\n" : "asserts: FAILED\n";
		for (const auto &failure : context.assert_failures)
			out += "  " + failure + "\n";
	}
	return out;
}

} // namespace gp::wirecheck
