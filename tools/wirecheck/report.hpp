// gp-wirecheck's output: one JSON object (-j) or tables for a human. Key names are documented in
// README.md and stable: tests parse them.
#pragma once
#include <string>
#include <vector>

#include "analysis.hpp"
#include "capture.hpp"

namespace gp::wirecheck {

struct ReportContext {
	std::string capture_path;
	const AnalysisConfig *config = nullptr;
	CaptureSummary capture;
	bool asserts_checked = false;
	std::vector<std::string> assert_failures;
};

std::string format_json(const CaptureReport &report, const ReportContext &context);
std::string format_text(const CaptureReport &report, const ReportContext &context);

} // namespace gp::wirecheck
