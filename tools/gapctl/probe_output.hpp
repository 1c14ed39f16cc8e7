// The parameter file of `gapctl probe` (format "gappace-params/1", see tools/gapctl/README.md)
// and its human table, and writing the file atomically.
#pragma once

#include <string>

#include "expected.hpp"
#include "output.hpp"
#include "probe_result.hpp"

namespace gp::probe {

// The JSON object, compact or pretty, with a final newline. Numbers are finite and >= 0
// (what loaders require): a non-finite figure is written as 0.
std::string params_json(const ProbeResult &result, OutputFormat format = OutputFormat::Json);
// A summary and one row per message size, for a terminal.
std::string params_table(const ProbeResult &result, const std::string &written_to);
// Writes `content` to a temporary file in the target's directory, fsyncs it and renames it over
// `path`: readers see the old file or the new one, never half of one.
Expected<void> write_file_atomically(const std::string &path, const std::string &content);

} // namespace gp::probe
