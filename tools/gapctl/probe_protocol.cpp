#include "probe_protocol.hpp"

#include <cerrno>

namespace gp::probe {
namespace {

// Largest amount of data one RUN may move in each direction: a garbage or hostile client
// cannot make the responder stream for hours (its stall and overall timeouts apply as well).
constexpr uint64_t kMaxRunBytes = 16ull << 30;

constexpr size_t kHelloSize = 12;
constexpr size_t kWelcomeSize = 16;
constexpr size_t kRunSize = 16;
constexpr size_t kResultSize = 32;

void put_u16(Frame &out, uint16_t v)
{
	out.push_back(static_cast<uint8_t>(v >> 8));
	out.push_back(static_cast<uint8_t>(v));
}

void put_u32(Frame &out, uint32_t v)
{
	for (int shift = 24; shift >= 0; shift -= 8)
		out.push_back(static_cast<uint8_t>(v >> shift));
}

void put_u64(Frame &out, uint64_t v)
{
	for (int shift = 56; shift >= 0; shift -= 8)
		out.push_back(static_cast<uint8_t>(v >> shift));
}

uint16_t get_u16(std::span<const uint8_t> in, size_t at)
{
	return static_cast<uint16_t>(in[at] << 8 | in[at + 1]);
}

uint32_t get_u32(std::span<const uint8_t> in, size_t at)
{
	uint32_t v = 0;
	for (size_t i = 0; i < 4; ++i)
		v = v << 8 | in[at + i];
	return v;
}

uint64_t get_u64(std::span<const uint8_t> in, size_t at)
{
	uint64_t v = 0;
	for (size_t i = 0; i < 8; ++i)
		v = v << 8 | in[at + i];
	return v;
}

Frame start_frame(FrameType type, size_t payload_size, uint16_t version = kProbeProtocolVersion)
{
	Frame out;
	out.reserve(kFrameHeaderSize + payload_size);
	put_u32(out, kProbeMagic);
	put_u16(out, version);
	put_u16(out, static_cast<uint16_t>(type));
	put_u32(out, static_cast<uint32_t>(payload_size));
	return out;
}

Error bad(std::string message)
{
	return make_error(EBADMSG, std::move(message));
}

Expected<void> check_size(std::span<const uint8_t> payload, size_t want, std::string_view what)
{
	if (payload.size() != want)
		return bad(std::string(what) + " payload is " + std::to_string(payload.size()) + " bytes, expected " +
			   std::to_string(want));
	return {};
}

bool zero(std::span<const uint8_t> bytes)
{
	for (uint8_t b : bytes)
		if (b)
			return false;
	return true;
}

bool is_data_kind(RunKind kind)
{
	return kind == RunKind::PingPong || kind == RunKind::Exchange || kind == RunKind::Train ||
	       kind == RunKind::StampedPing;
}

} // namespace

Frame encode_hello(const Hello &hello)
{
	Frame out = start_frame(FrameType::Hello, kHelloSize);
	out.push_back(static_cast<uint8_t>(hello.role));
	out.insert(out.end(), 3, 0);
	put_u64(out, hello.token);
	return out;
}

Frame encode_welcome(const Welcome &welcome)
{
	Frame out = start_frame(FrameType::Welcome, kWelcomeSize);
	put_u64(out, welcome.token);
	put_u64(out, welcome.max_message);
	return out;
}

Frame encode_run(const Run &run)
{
	Frame out = start_frame(FrameType::Run, kRunSize);
	out.push_back(static_cast<uint8_t>(run.kind));
	out.insert(out.end(), 3, 0);
	put_u32(out, run.count);
	put_u64(out, run.size);
	return out;
}

Frame encode_result(const Result &result)
{
	Frame out = start_frame(FrameType::Result, kResultSize);
	for (uint64_t v : result.values)
		put_u64(out, v);
	return out;
}

Frame encode_error(std::string_view text, uint16_t version)
{
	text = text.substr(0, kMaxErrorText);
	Frame out = start_frame(FrameType::Error, text.size(), version);
	out.insert(out.end(), text.begin(), text.end());
	return out;
}

Frame encode_bye()
{
	return start_frame(FrameType::Bye, 0);
}

Expected<FrameHeader> decode_header(std::span<const uint8_t> bytes)
{
	if (bytes.size() < kFrameHeaderSize)
		return bad("short frame header (" + std::to_string(bytes.size()) + " bytes)");
	if (get_u32(bytes, 0) != kProbeMagic)
		return bad("bad magic: not a gappace probe frame");
	FrameHeader header;
	header.version = get_u16(bytes, 4);
	const uint16_t type = get_u16(bytes, 6);
	header.length = get_u32(bytes, 8);
	if (type < static_cast<uint16_t>(FrameType::Hello) || type > static_cast<uint16_t>(FrameType::Bye))
		return bad("unknown frame type " + std::to_string(type));
	header.type = static_cast<FrameType>(type);
	if (header.length > kProbeMaxPayload)
		return make_error(EMSGSIZE, "frame payload of " + std::to_string(header.length) +
						    " bytes exceeds the limit of " + std::to_string(kProbeMaxPayload));
	return header;
}

Expected<Hello> decode_hello(std::span<const uint8_t> payload)
{
	if (auto ok = check_size(payload, kHelloSize, "HELLO"); !ok)
		return ok.error();
	const uint8_t role = payload[0];
	if (role != static_cast<uint8_t>(Role::Control) && role != static_cast<uint8_t>(Role::Bulk))
		return bad("HELLO: unknown role " + std::to_string(role));
	if (!zero(payload.subspan(1, 3)))
		return bad("HELLO: reserved bytes are not zero");
	Hello hello{static_cast<Role>(role), get_u64(payload, 4)};
	if (hello.role == Role::Control && hello.token != 0)
		return bad("HELLO: a control connection carries no token");
	return hello;
}

Expected<Welcome> decode_welcome(std::span<const uint8_t> payload)
{
	if (auto ok = check_size(payload, kWelcomeSize, "WELCOME"); !ok)
		return ok.error();
	Welcome welcome{get_u64(payload, 0), get_u64(payload, 8)};
	if (welcome.token == 0)
		return bad("WELCOME: session token is 0");
	return welcome;
}

Expected<Run> decode_run(std::span<const uint8_t> payload)
{
	if (auto ok = check_size(payload, kRunSize, "RUN"); !ok)
		return ok.error();
	const uint8_t kind = payload[0];
	if (kind < static_cast<uint8_t>(RunKind::PingPong) || kind > static_cast<uint8_t>(RunKind::StampedPing))
		return bad("RUN: unknown kind " + std::to_string(kind));
	if (!zero(payload.subspan(1, 3)))
		return bad("RUN: reserved bytes are not zero");
	Run run{static_cast<RunKind>(kind), get_u32(payload, 4), get_u64(payload, 8)};
	const std::string name(run_kind_name(run.kind));
	if (!is_data_kind(run.kind)) {
		if (run.count != 0 || run.size != 0)
			return bad("RUN " + name + ": count and size must be 0");
		return run;
	}
	if (run.count == 0 || run.count > kMaxRunCount)
		return bad("RUN " + name + ": count " + std::to_string(run.count) + " is not in 1.." +
			   std::to_string(kMaxRunCount));
	if (run.kind == RunKind::StampedPing && run.size != kStampedPingSize)
		return bad("RUN " + name + ": message size must be " + std::to_string(kStampedPingSize));
	if (run.size > kMaxMessageSize)
		return bad("RUN " + name + ": message size " + std::to_string(run.size) + " exceeds " +
			   std::to_string(kMaxMessageSize));
	if (wire_size(run.size) * run.count > kMaxRunBytes)
		return bad("RUN " + name + ": " + std::to_string(run.count) + " messages of " + std::to_string(run.size) +
			   " bytes exceed the limit of " + std::to_string(kMaxRunBytes) + " bytes per run");
	return run;
}

Expected<Result> decode_result(std::span<const uint8_t> payload)
{
	if (auto ok = check_size(payload, kResultSize, "RESULT"); !ok)
		return ok.error();
	Result result;
	for (size_t i = 0; i < result.values.size(); ++i)
		result.values[i] = get_u64(payload, i * 8);
	return result;
}

std::string decode_error_text(std::span<const uint8_t> payload)
{
	std::string text;
	for (uint8_t c : payload.first(std::min(payload.size(), kMaxErrorText)))
		text += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '?';
	return text;
}

std::string_view frame_type_name(FrameType type)
{
	switch (type) {
	case FrameType::Hello: return "HELLO";
	case FrameType::Welcome: return "WELCOME";
	case FrameType::Run: return "RUN";
	case FrameType::Result: return "RESULT";
	case FrameType::Error: return "ERROR";
	case FrameType::Bye: return "BYE";
	}
	return "?";
}

std::string_view run_kind_name(RunKind kind)
{
	switch (kind) {
	case RunKind::PingPong: return "pingpong";
	case RunKind::Exchange: return "exchange";
	case RunKind::Train: return "train";
	case RunKind::BulkStart: return "bulk-start";
	case RunKind::BulkMark: return "bulk-mark";
	case RunKind::BulkStop: return "bulk-stop";
	case RunKind::StampedPing: return "stamped-ping";
	}
	return "?";
}

} // namespace gp::probe
