#include "analysis.hpp"

#include <cmath>
#include <map>
#include <tuple>

#include "sequence_tracker.hpp"

namespace gp::wirecheck {

bool IpPrefix::contains(const IpAddress &candidate) const
{
	if (candidate.version != address.version)
		return false;
	const unsigned full_bytes = length / 8, rest_bits = length % 8;
	if (!std::equal(address.bytes.begin(), address.bytes.begin() + full_bytes, candidate.bytes.begin()))
		return false;
	if (rest_bits == 0)
		return true;
	const uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest_bits));
	return (address.bytes[full_bytes] & mask) == (candidate.bytes[full_bytes] & mask);
}

// Everything the per-phase bookkeeping needs to know about one frame, worked out once.
struct FrameFacts {
	uint64_t number = 0; // from 1, like Wireshark
	uint64_t length = 0;
	uint64_t wire = 0;
	const DecodedFrame *decoded = nullptr;
	size_t flow = 0; // index into the configured flows; == their count for "other"
	bool is_marker = false;
};

namespace {

double ratio(uint64_t part, uint64_t whole) { return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0; }

class FlowAccumulator {
public:
	FlowAccumulator(std::string name, std::string prefix, std::optional<uint64_t> rate_bps,
			const AnalysisConfig &config)
		: name_(std::move(name)), prefix_(std::move(prefix)), rate_bps_(rate_bps),
		  linkrate_bps_(config.linkrate_bps), tolerance_bytes_(config.tolerance_bytes)
	{
	}

	// `start`: wire position of the frame's first byte within the span being reported.
	void add(uint64_t start, const FrameFacts &frame)
	{
		if (data_.frames == 0)
			first_start_ = start;
		else
			record_spacing(start - last_start_);
		data_.add(frame.length);
		payload_bytes_ += frame.decoded->transport_payload_bytes;
		last_start_ = start;
		last_wire_ = frame.wire;
	}

	FlowReport finish(uint64_t span_wire_bytes) const
	{
		FlowReport report;
		report.name = name_;
		report.prefix = prefix_;
		report.data = data_;
		report.payload_bytes = payload_bytes_;
		report.expected_rate_bps = rate_bps_;
		report.phase_rate_bps = ratio(data_.wire_bytes, span_wire_bytes) * linkrate();
		if (data_.frames > 0) {
			const uint64_t first_to_end = last_start_ + last_wire_ - first_start_;
			report.achieved_rate_inclusive_bps = ratio(data_.wire_bytes, first_to_end) * linkrate();
		}
		if (data_.frames > 1) {
			const uint64_t first_to_last_start = last_start_ - first_start_;
			report.achieved_rate_bps = ratio(data_.wire_bytes - last_wire_, first_to_last_start) * linkrate();
			if (rate_bps_)
				report.rate_error = (*report.achieved_rate_bps - static_cast<double>(*rate_bps_)) /
						    static_cast<double>(*rate_bps_);
		}
		report.spacing = spacing_;
		if (spacing_.count > 0) {
			report.spacing.mean = static_cast<double>(spacing_sum_) / static_cast<double>(spacing_.count);
			if (rate_bps_)
				report.spacing.deviation_mean_abs = deviation_abs_sum_ / static_cast<double>(spacing_.count);
		}
		return report;
	}

private:
	double linkrate() const { return static_cast<double>(linkrate_bps_); }

	void record_spacing(uint64_t spacing)
	{
		auto &s = spacing_;
		s.min = s.count == 0 ? spacing : std::min(s.min, spacing);
		s.max = std::max(s.max, spacing);
		++s.count;
		spacing_sum_ += spacing;
		if (spacing == last_wire_)
			++s.back_to_back;
		if (!rate_bps_)
			return;
		const double planned = static_cast<double>(last_wire_) * linkrate() / static_cast<double>(*rate_bps_);
		const double deviation = static_cast<double>(spacing) - planned;
		s.deviation_max = s.deviation_max ? std::max(*s.deviation_max, deviation) : deviation;
		s.deviation_min = s.deviation_min ? std::min(*s.deviation_min, deviation) : deviation;
		deviation_abs_sum_ += std::fabs(deviation);
		if (static_cast<double>(spacing) < planned - static_cast<double>(tolerance_bytes_))
			++s.violations;
	}

	std::string name_, prefix_;
	std::optional<uint64_t> rate_bps_;
	uint64_t linkrate_bps_, tolerance_bytes_;
	Counter data_;
	uint64_t payload_bytes_ = 0;
	uint64_t first_start_ = 0, last_start_ = 0, last_wire_ = 0;
	SpacingReport spacing_;
	uint64_t spacing_sum_ = 0;
	double deviation_abs_sum_ = 0;
};

// Device IFG mode: every data frame should be followed by (IFG - 12) wire bytes of gap frames.
class IfgAccumulator {
public:
	explicit IfgAccumulator(uint64_t ifg_bytes) : ifg_bytes_(ifg_bytes), planned_(ifg_bytes - kStandardIfgBytes) {}

	void add_gap(uint64_t wire) { gap_since_data_ += wire; }

	void add_data(uint64_t wire)
	{
		if (seen_data_) {
			const double deviation = static_cast<double>(gap_since_data_) - static_cast<double>(planned_);
			++pairs_;
			if (gap_since_data_ != planned_)
				++mismatched_;
			gap_between_ += gap_since_data_;
			deviation_max_abs_ = std::max(deviation_max_abs_, std::fabs(deviation));
			deviation_sum_ += deviation;
		}
		seen_data_ = true;
		gap_since_data_ = 0;
		data_frames_ += 1;
		data_wire_ += wire;
	}

	IfgReport finish(uint64_t all_wire, uint64_t payload_bytes, uint64_t linkrate_bps) const
	{
		IfgReport r;
		r.ifg_bytes = ifg_bytes_;
		r.planned_gap_bytes = planned_;
		r.pairs = pairs_;
		r.mismatched_pairs = mismatched_;
		r.gap_wire_bytes_between = gap_between_;
		r.deviation_max_abs = deviation_max_abs_;
		r.deviation_mean = pairs_ ? deviation_sum_ / static_cast<double>(pairs_) : 0.0;
		r.data_wire_ratio = ratio(data_wire_, all_wire);
		r.law_ratio = ratio(data_wire_, data_wire_ + data_frames_ * planned_);
		r.payload_rate_bps = ratio(payload_bytes, all_wire) * static_cast<double>(linkrate_bps);
		return r;
	}

private:
	uint64_t ifg_bytes_, planned_;
	bool seen_data_ = false;
	uint64_t gap_since_data_ = 0, pairs_ = 0, mismatched_ = 0, gap_between_ = 0;
	uint64_t data_frames_ = 0, data_wire_ = 0;
	double deviation_max_abs_ = 0, deviation_sum_ = 0;
};

class IntegrityAccumulator {
public:
	void add(const DecodedFrame &frame)
	{
		if (frame.traffic_header)
			udp_[frame.traffic_header->flow_id].observe(frame.traffic_header->seq);
		if (frame.tcp && frame.tcp->payload_length > 0)
			add_tcp(*frame.tcp);
	}

	IntegrityReport finish() const
	{
		IntegrityReport r;
		for (const auto &[flow_id, tracker] : udp_)
			r.udp.push_back({flow_id, tracker.received(), tracker.lost(), tracker.reordered(),
					 tracker.duplicated(), tracker.lowest().value_or(0),
					 tracker.highest().value_or(0)});
		r.tcp_connections = tcp_highest_end_.size();
		r.tcp_data_segments = tcp_data_segments_;
		r.tcp_out_of_order = tcp_out_of_order_;
		return r;
	}

private:
	using TcpKey = std::tuple<IpAddress, IpAddress, uint16_t, uint16_t>;

	void add_tcp(const TcpSegment &segment)
	{
		++tcp_data_segments_;
		const uint32_t end = segment.seq + segment.payload_length; // wraps like TCP does
		const TcpKey key{segment.src, segment.dst, segment.src_port, segment.dst_port};
		auto [it, inserted] = tcp_highest_end_.try_emplace(key, end);
		if (inserted)
			return;
		// Sequence space is modular: compare by signed distance (RFC 1982 style).
		if (static_cast<int32_t>(segment.seq - it->second) < 0)
			++tcp_out_of_order_;
		if (static_cast<int32_t>(end - it->second) > 0)
			it->second = end;
	}

	std::map<uint32_t, traffic::SequenceTracker> udp_;
	std::map<TcpKey, uint32_t> tcp_highest_end_;
	uint64_t tcp_data_segments_ = 0, tcp_out_of_order_ = 0;
};

} // namespace

// All statistics of one span of the capture: a phase, or the whole capture.
class PhaseAccumulator {
public:
	PhaseAccumulator(std::string name, uint64_t first_frame, const AnalysisConfig &config)
		: config_(config)
	{
		report_.name = std::move(name);
		report_.first_frame = first_frame;
		for (const auto &flow : config.flows)
			flows_.emplace_back(flow.name, flow.prefix_text, flow.rate_bps, config);
		flows_.emplace_back(std::string(kOtherFlowName), std::string(), std::nullopt, config);
		if (config.ifg_bytes)
			ifg_.emplace(*config.ifg_bytes);
	}

	bool empty() const { return report_.all.frames == 0; }

	void add(const FrameFacts &frame)
	{
		const uint64_t start = report_.all.wire_bytes;
		report_.all.add(frame.length);
		const DecodedFrame &decoded = *frame.decoded;
		if (decoded.is_gap)
			add_gap(frame);
		else
			add_data(start, frame);
		if (decoded.headers_truncated)
			++report_.headers_truncated;
	}

	PhaseReport finish() const
	{
		PhaseReport report = report_;
		for (const auto &flow : flows_)
			report.flows.push_back(flow.finish(report_.all.wire_bytes));
		if (ifg_)
			report.ifg = ifg_->finish(report_.all.wire_bytes, report_.payload_bytes, config_.linkrate_bps);
		report.integrity = integrity_.finish();
		return report;
	}

private:
	void add_gap(const FrameFacts &frame)
	{
		report_.gap.add(frame.length);
		if (ifg_)
			ifg_->add_gap(frame.wire);
		const GapDefects &defects = frame.decoded->gap_defects;
		if (defects.none())
			return;
		auto &invalid = report_.invalid_gaps;
		++invalid.count;
		for (size_t i = 0; i < kGapDefectCount; ++i)
			invalid.by_defect[i] += defects.test(i);
		if (invalid.examples.size() < kMaxInvalidGapExamples)
			invalid.examples.push_back("frame " + std::to_string(frame.number) + ": " +
						   describe_gap_defects(defects));
	}

	void add_data(uint64_t start, const FrameFacts &frame)
	{
		const DecodedFrame &decoded = *frame.decoded;
		report_.data.add(frame.length);
		report_.payload_bytes += decoded.transport_payload_bytes;
		report_.markers += frame.is_marker;
		report_.non_ip += !decoded.is_ip;
		flows_[frame.flow].add(start, frame);
		if (ifg_)
			ifg_->add_data(frame.wire);
		integrity_.add(decoded);
	}

	const AnalysisConfig &config_;
	PhaseReport report_; // the plain counters; the rest is filled in by finish()
	std::vector<FlowAccumulator> flows_;
	std::optional<IfgAccumulator> ifg_;
	IntegrityAccumulator integrity_;
};

Analyzer::Analyzer(AnalysisConfig config) : config_(std::move(config))
{
	phase_ = std::make_unique<PhaseAccumulator>(std::string(kStartPhaseName), 1, config_);
	total_ = std::make_unique<PhaseAccumulator>(std::string(kTotalName), 1, config_);
}

Analyzer::~Analyzer() = default;

size_t Analyzer::flow_of(const DecodedFrame &frame) const
{
	const size_t other = config_.flows.size();
	if (!frame.destination || frame.marker_name)
		return other; // markers belong to "other" whatever their destination
	size_t best = other;
	for (size_t i = 0; i < config_.flows.size(); ++i) {
		const IpPrefix &prefix = config_.flows[i].prefix;
		if (prefix.contains(*frame.destination) &&
		    (best == other || prefix.length > config_.flows[best].prefix.length))
			best = i; // longest prefix wins; among equal ones, the first given
	}
	return best;
}

void Analyzer::add(const CapturedFrame &frame)
{
	const DecodedFrame decoded = decode_frame(frame, config_.device_mac);
	FrameFacts facts;
	facts.number = ++frame_number_;
	facts.length = frame.length;
	facts.wire = wire_bytes(frame.length);
	facts.decoded = &decoded;
	facts.is_marker = decoded.marker_name.has_value();
	facts.flow = flow_of(decoded);
	if (facts.is_marker) {
		if (!phase_->empty())
			finished_phases_.push_back(phase_->finish());
		phase_ = std::make_unique<PhaseAccumulator>(*decoded.marker_name, facts.number, config_);
	}
	phase_->add(facts);
	total_->add(facts);
}

CaptureReport Analyzer::finish()
{
	CaptureReport report;
	report.linkrate_bps = config_.linkrate_bps;
	report.phases = std::move(finished_phases_);
	if (!phase_->empty())
		report.phases.push_back(phase_->finish());
	report.total = total_->finish();
	return report;
}

} // namespace gp::wirecheck
