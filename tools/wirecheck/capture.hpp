// Reading a capture file with libpcap (pcap or pcapng, Ethernet link type only).
#pragma once
#include <cstdio>
#include <functional>
#include <string>

#include "expected.hpp"
#include "frame.hpp"

namespace gp::wirecheck {

using FrameSink = std::function<void(const CapturedFrame &)>;

struct CaptureSummary {
	uint64_t frames = 0;
	uint32_t snap_length = 0;
	std::string warning; // e.g. a truncated last record: the frames before it were delivered
};

// Hands every frame of the capture at `path` to `sink`, in file order.
Expected<CaptureSummary> read_capture(const std::string &path, const FrameSink &sink);
// The same for an open stream (tests use fmemopen); takes ownership of `file`.
Expected<CaptureSummary> read_capture(FILE *file, const FrameSink &sink);

} // namespace gp::wirecheck
