// Wire protocol between `gapctl probe` (the client) and `gapctl probe --serve` (the responder).
//
// One TCP connection carries a session: control frames, and between them the raw bytes of the
// measurement a RUN frame announced. Everything is in network byte order.
//
// Frame = 12-byte header + payload:
//
//    0               4       6       8               12
//   +---------------+-------+-------+---------------+------------------+
//   | magic "GPPR"  |version| type  | payload length| payload ...      |
//   +---------------+-------+-------+---------------+------------------+
//
// magic is 0x47505052 ("GPPR"); version is kProbeProtocolVersion; length at most
// kProbeMaxPayload. A peer that sees a frame of another version answers with an ERROR frame of
// its own version and closes: the header layout is the same in every version, so either side can
// always say which version the other speaks. Payloads have a fixed size per type (ERROR: text),
// reserved bytes must be zero, and anything else is refused: nothing here trusts the peer.
//
//   HELLO   (c->r) u8 role (1 control, 2 bulk), u8[3] zero, u64 token (bulk: the session's)
//   WELCOME (r->c) u64 session token, u64 largest message the responder accepts
//   RUN     (c->r) u8 kind, u8[3] zero, u32 count, u64 message size   (kinds below)
//   RESULT  (r->c) u64 values[4], meaning per kind (below)
//   ERROR   (both) UTF-8 text, the reason; the sender closes after it
//   BYE     (c->r) empty: the session is over
//
// A session: HELLO(control) -> WELCOME, then RUN ... RESULT pairs, then BYE. After RUN the data of
// the measurement flows, and the responder sends RESULT when its side is done. A message of m bytes
// is max(m, 1) bytes on the wire: TCP has no empty message (a 0-byte MPI message also carries an
// envelope).
//
//   PINGPONG  count times: the client sends a message, the responder sends one back.
//             RESULT: responder's CPU ns in recv, in send, count, 0.
//   EXCHANGE  count times: both send a message at once, each then waits for the other's.
//             RESULT: 0, 0, count, 0.
//   TRAIN     both send count messages back to back while receiving the other's count.
//             RESULT: ns from the end of the first to the end of the last message the responder
//             received (the kernel's receive times of their last segments), 0, count, 0.
//   BULK_START the client then opens a second connection with HELLO(bulk, token) and streams
//             bytes into it; the responder discards them. RESULT (once accepted): all 0.
//   BULK_MARK RESULT: bytes received on the bulk connection so far, ns since its first byte.
//   BULK_STOP the responder closes the bulk connection. RESULT: total bytes, ns, 0, 0.
//   STAMPED_PING count times: the client sends 8 bytes, the responder answers with 8 bytes: the
//             ns from the kernel's receive timestamp of the client's message to just before its
//             own send() (its turnaround, 0 if the kernel gave no timestamp). The client takes
//             it out of the round trip: what remains is the network's, without the time either
//             process needed to wake up. Size must be 8. RESULT: 0, 0, count, 0.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "expected.hpp"

namespace gp::probe {

inline constexpr uint32_t kProbeMagic = 0x47505052; // "GPPR"
inline constexpr uint16_t kProbeProtocolVersion = 1;
inline constexpr size_t kFrameHeaderSize = 12;
inline constexpr uint32_t kProbeMaxPayload = 1024;
inline constexpr uint16_t kDefaultProbePort = 7433;
// Largest message the responder accepts (and the client may ask for): bounds --max-size.
inline constexpr uint64_t kMaxMessageSize = 1ull << 30;
// Largest count of one RUN: together with the size it bounds one measurement's work.
inline constexpr uint32_t kMaxRunCount = 1000000;
// Largest ERROR text we send or accept (longer ones are cut when sent).
inline constexpr size_t kMaxErrorText = 512;

enum class FrameType : uint16_t {
	Hello = 1,
	Welcome = 2,
	Run = 3,
	Result = 4,
	Error = 5,
	Bye = 6,
};

enum class Role : uint8_t { Control = 1, Bulk = 2 };

enum class RunKind : uint8_t {
	PingPong = 1,
	Exchange = 2,
	Train = 3,
	BulkStart = 4,
	BulkMark = 5,
	BulkStop = 6,
	StampedPing = 7,
};

// The message size of a StampedPing: the responder's turnaround as a u64.
inline constexpr uint64_t kStampedPingSize = 8;

struct FrameHeader {
	uint16_t version = kProbeProtocolVersion;
	FrameType type = FrameType::Bye;
	uint32_t length = 0;
};

struct Hello {
	Role role = Role::Control;
	uint64_t token = 0;
	bool operator==(const Hello &) const = default;
};

struct Welcome {
	uint64_t token = 0;
	uint64_t max_message = kMaxMessageSize;
	bool operator==(const Welcome &) const = default;
};

struct Run {
	RunKind kind = RunKind::PingPong;
	uint32_t count = 0;
	uint64_t size = 0;
	bool operator==(const Run &) const = default;
};

struct Result {
	std::array<uint64_t, 4> values{};
	bool operator==(const Result &) const = default;
};

using Frame = std::vector<uint8_t>; // header + payload, ready to send

Frame encode_hello(const Hello &hello);
Frame encode_welcome(const Welcome &welcome);
Frame encode_run(const Run &run);
Frame encode_result(const Result &result);
Frame encode_error(std::string_view text, uint16_t version = kProbeProtocolVersion);
Frame encode_bye();

// Checks magic, type and length. A frame of another version decodes (version says which)
// only if its magic is right: the caller must compare versions before reading the payload.
// err: EBADMSG for garbage, EMSGSIZE for an oversized length.
Expected<FrameHeader> decode_header(std::span<const uint8_t> bytes);

// Payload decoders: exact size, known enum values, zero reserved bytes. err EBADMSG.
Expected<Hello> decode_hello(std::span<const uint8_t> payload);
Expected<Welcome> decode_welcome(std::span<const uint8_t> payload);
Expected<Run> decode_run(std::span<const uint8_t> payload);
Expected<Result> decode_result(std::span<const uint8_t> payload);
// ERROR text, with bytes outside printable ASCII replaced by '?' (it ends up on a terminal).
std::string decode_error_text(std::span<const uint8_t> payload);

// The bytes a message of `size` occupies on the wire: TCP cannot carry an empty one.
inline uint64_t wire_size(uint64_t size) { return size == 0 ? 1 : size; }

std::string_view frame_type_name(FrameType type);
std::string_view run_kind_name(RunKind kind);

} // namespace gp::probe
