// The rendezvous protocol: what ranks and rank 0 say to each other over one TCP connection each.
//
// Framing (TCP is a byte stream, so messages are length-prefixed):
//     u32 length (big endian) = 1 + body size, at most 1 + kMaxFrameBody
//     u8  type                 (MessageType)
//     body                     (fields below, integers big endian)
//
//   ANNOUNCE rank -> 0   version u32, rank u32, ranks u32, data listener (endpoint), side u8,
//                        netns inode u64, and the run's shape, which every rank must share:
//                        msg u64, volume u64 (0 = none), iterations u64 (0 = none), pattern u8
//   TABLE    0 -> all    session u64, iterations u64, capped u8, count u32, then per rank:
//                        data listener (endpoint), side u8, netns inode u64
//   READY    rank -> 0   (empty) the rank's data connections are all up
//   START    0 -> all    (empty) every rank is ready: the measured run begins
//   RESULT   rank -> 0   a RankResult (result.hpp), including per-iteration durations
//   STOP     0 -> all    (empty) rank 0's deadline passed: stop and send RESULT now
//   DONE     0 -> all    (empty) every result is in: exit
//   ABORT    either way  text: a rank failed; rank 0 passes it on to everyone
//
// endpoint = family u8 (4 or 6), address 16 bytes (IPv4 in the first 4), port u16.
// A data connection starts with a hello from the connecting (lower) rank:
//     magic u32 "GPA2", session u64, rank u32     (16 bytes, kHelloSize)
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "endpoint.hpp"
#include "expected.hpp"
#include "result.hpp"
#include "types.hpp"

namespace gp::alltoall {

enum class MessageType : uint8_t {
	Announce = 1,
	Table = 2,
	Ready = 3,
	Start = 4,
	Result = 5,
	Stop = 6,
	Done = 7,
	Abort = 8,
};

inline constexpr uint32_t kProtocolVersion = 1;
inline constexpr uint32_t kMaxFrameBody = 64u << 20; // a RESULT with 100000 durations is 800 KB
inline constexpr size_t kHelloSize = 16;
inline constexpr uint32_t kHelloMagic = 0x47504132; // "GPA2"

struct Frame {
	MessageType type = MessageType::Abort;
	std::vector<uint8_t> body;
};

std::vector<uint8_t> encode_frame(const Frame &frame);

// Reassembles frames from what the stream delivers, in any split.
class FrameParser {
public:
	void feed(std::span<const uint8_t> bytes);
	// The next complete frame, nullopt if more bytes are needed; EPROTO on a bad length or type.
	Expected<std::optional<Frame>> next();
	size_t buffered() const { return buffer_.size() - consumed_; }

private:
	std::vector<uint8_t> buffer_;
	size_t consumed_ = 0;
};

struct Announce {
	uint32_t version = kProtocolVersion;
	uint32_t rank = 0;
	uint32_t ranks = 0;
	Endpoint data;
	Side side = Side::None;
	uint64_t netns_inode = 0;
	uint64_t msg = 0;
	uint64_t volume = 0;
	uint64_t iterations = 0;
	Pattern pattern = Pattern::Pairwise;
};

struct RankInfo {
	Endpoint data;
	Side side = Side::None;
	uint64_t netns_inode = 0;
};

struct Table {
	uint64_t session = 0;
	uint64_t iterations = 0;
	bool iterations_capped = false;
	std::vector<RankInfo> ranks;
};

Frame encode_announce(const Announce &announce);
Expected<Announce> decode_announce(const Frame &frame);
Frame encode_table(const Table &table);
Expected<Table> decode_table(const Frame &frame);
Frame encode_result(const RankResult &result);
Expected<RankResult> decode_result(const Frame &frame);
Frame encode_abort(const std::string &reason);
Expected<std::string> decode_abort(const Frame &frame);
Frame empty_frame(MessageType type); // READY, START, STOP, DONE

std::array<uint8_t, kHelloSize> encode_hello(uint64_t session, uint32_t rank);
struct Hello {
	uint64_t session = 0;
	uint32_t rank = 0;
};
Expected<Hello> decode_hello(std::span<const uint8_t, kHelloSize> bytes);

} // namespace gp::alltoall
