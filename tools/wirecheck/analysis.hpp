// The analysis of one NIC's transmitted frames, in transmit order: phases, gap frames, per-flow
// achieved rate and spacing, device IFG mode, and stream integrity. Everything is measured in
// wire bytes: the capture has no usable clock, but the wire (kept busy by gap frames) is one.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "frame.hpp"

namespace gp::wirecheck {

struct IpPrefix {
	IpAddress address;
	unsigned length = 0; // bits
	bool contains(const IpAddress &candidate) const;
};

struct FlowSpec {
	std::string name;
	std::string prefix_text; // as the user wrote it, for reports
	IpPrefix prefix;
	std::optional<uint64_t> rate_bps;
};

inline constexpr std::string_view kOtherFlowName = "other";
inline constexpr std::string_view kStartPhaseName = "(start)";
inline constexpr std::string_view kTotalName = "(total)";
inline constexpr uint64_t kDefaultToleranceBytes = 84; // one minimum-size gap frame
inline constexpr size_t kMaxInvalidGapExamples = 5;

struct AnalysisConfig {
	uint64_t linkrate_bps = 0;
	std::optional<MacAddress> device_mac;
	std::optional<uint64_t> ifg_bytes; // device IFG mode expectation, >= 12
	std::vector<FlowSpec> flows;
	uint64_t tolerance_bytes = kDefaultToleranceBytes;
};

struct Counter {
	uint64_t frames = 0;
	uint64_t bytes = 0;	 // frame bytes without FCS (original lengths)
	uint64_t wire_bytes = 0; // see wire_bytes()
	void add(uint64_t frame_length)
	{
		++frames;
		bytes += frame_length;
		wire_bytes += gp::wirecheck::wire_bytes(frame_length);
	}
};

struct InvalidGapReport {
	uint64_t count = 0;
	std::array<uint64_t, kGapDefectCount> by_defect{};
	std::vector<std::string> examples; // "frame 17: wrong_dst,bad_length" (frame numbers from 1)
};

// Spacing of consecutive frames of one flow (within the reported span), in wire bytes.
struct SpacingReport {
	uint64_t count = 0; // consecutive pairs
	uint64_t min = 0, max = 0;
	double mean = 0;
	uint64_t back_to_back = 0; // pairs with nothing at all on the wire between them
	// Against the planned spacing wire(frame i) * linkrate / rate; only with an expected rate.
	std::optional<double> deviation_max, deviation_min, deviation_mean_abs;
	uint64_t violations = 0; // spacing < planned - tolerance
};

struct FlowReport {
	std::string name;
	std::string prefix; // empty for "other"
	Counter data;
	uint64_t payload_bytes = 0;
	// (wire bytes of all flow frames but the last) / (wire bytes from the start of the first flow
	// frame to the start of the last) * linkrate; nullopt below 2 frames. Exact for a paced stream.
	std::optional<double> achieved_rate_bps;
	// (all flow wire bytes) / (start of first frame .. end of last frame) * linkrate.
	std::optional<double> achieved_rate_inclusive_bps;
	double phase_rate_bps = 0; // flow wire bytes / all wire bytes of the phase * linkrate
	std::optional<uint64_t> expected_rate_bps;
	std::optional<double> rate_error; // (achieved_rate_bps - expected) / expected
	SpacingReport spacing;
};

struct IfgReport {
	uint64_t ifg_bytes = 0;
	uint64_t planned_gap_bytes = 0; // ifg_bytes - 12: gap-frame wire bytes after each data frame
	uint64_t pairs = 0;		// consecutive data frame pairs
	uint64_t mismatched_pairs = 0;	// pairs whose gap differs from the plan at all
	uint64_t gap_wire_bytes_between = 0; // sum of the gaps of all pairs
	double deviation_max_abs = 0;
	double deviation_mean = 0;
	double data_wire_ratio = 0; // data wire bytes / all wire bytes
	double law_ratio = 0;	    // data wire / (data wire + data frames * planned gap)
	double payload_rate_bps = 0; // TCP/UDP payload bytes / all wire bytes * linkrate
};

struct UdpStreamReport {
	uint32_t flow_id = 0;
	uint64_t received = 0, lost = 0, reordered = 0, duplicated = 0;
	uint64_t first_seq = 0, highest_seq = 0;
};

struct IntegrityReport {
	std::vector<UdpStreamReport> udp; // by flow id
	uint64_t tcp_connections = 0;	  // distinct 4-tuples with data
	uint64_t tcp_data_segments = 0;
	uint64_t tcp_out_of_order = 0; // data segments starting below the highest end seen
};

struct PhaseReport {
	std::string name;
	uint64_t first_frame = 0; // frame number (from 1) of the phase's first frame
	uint64_t markers = 0;
	Counter all, data, gap;
	uint64_t payload_bytes = 0;
	uint64_t non_ip = 0;
	uint64_t headers_truncated = 0;
	InvalidGapReport invalid_gaps;
	std::vector<FlowReport> flows; // configured flows in order, then "other"
	std::optional<IfgReport> ifg;
	IntegrityReport integrity;
};

struct CaptureReport {
	uint64_t linkrate_bps = 0;
	std::vector<PhaseReport> phases;
	PhaseReport total;
};

class PhaseAccumulator;

// Feed frames in transmit order, then call finish() once.
class Analyzer {
public:
	explicit Analyzer(AnalysisConfig config);
	~Analyzer();
	Analyzer(const Analyzer &) = delete;
	Analyzer &operator=(const Analyzer &) = delete;

	void add(const CapturedFrame &frame);
	CaptureReport finish();

private:
	size_t flow_of(const DecodedFrame &frame) const;

	AnalysisConfig config_;
	uint64_t frame_number_ = 0;
	std::vector<PhaseReport> finished_phases_;
	std::unique_ptr<PhaseAccumulator> phase_, total_;
};

} // namespace gp::wirecheck
