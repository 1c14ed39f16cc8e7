// gp-wirecheck: checks what one NIC put on the wire (a QEMU filter-dump capture) against what
// gappace promised: valid gap frames, paced flows, device IFG, no loss. See README.md.
#include <cstdio>
#include <exception>

#include "analysis.hpp"
#include "capture.hpp"
#include "options.hpp"
#include "report.hpp"

namespace {

constexpr int kExitAssertFailed = 1;
constexpr int kExitUsage = 2;

int run(int argc, char *argv[])
{
	using namespace gp::wirecheck;
	const auto options = parse_command_line(argc, argv);
	if (!options) {
		std::fprintf(stderr, "gp-wirecheck: %s\n%s", options.error().message.c_str(), usage_text().c_str());
		return kExitUsage;
	}
	if (options->help) {
		std::fputs(usage_text().c_str(), stdout);
		return 0;
	}
	Analyzer analyzer(options->analysis);
	const auto capture = read_capture(options->capture_path, [&](const CapturedFrame &frame) { analyzer.add(frame); });
	if (!capture) {
		std::fprintf(stderr, "gp-wirecheck: %s: %s\n", options->capture_path.c_str(),
			     capture.error().message.c_str());
		return kExitUsage;
	}
	if (!capture->warning.empty())
		std::fprintf(stderr, "gp-wirecheck: warning: %s\n", capture->warning.c_str());
	const CaptureReport report = analyzer.finish();

	ReportContext context;
	context.capture_path = options->capture_path;
	context.config = &options->analysis;
	context.capture = *capture;
	context.asserts_checked = options->asserts.any();
	if (context.asserts_checked)
		context.assert_failures = check_asserts(report, options->asserts);
	const std::string output = options->json ? format_json(report, context) : format_text(report, context);
	std::fputs(output.c_str(), stdout);
	for (const auto &failure : context.assert_failures)
		std::fprintf(stderr, "gp-wirecheck: assert failed: %s\n", failure.c_str());
	return context.assert_failures.empty() ? 0 : kExitAssertFailed;
}

} // namespace

int main(int argc, char *argv[])
{
	try {
		return run(argc, argv);
	} catch (const std::exception &e) {
		std::fprintf(stderr, "gp-wirecheck: %s\n", e.what());
		return kExitUsage;
	}
}
