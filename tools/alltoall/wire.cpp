#include "wire.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace gp::alltoall {
namespace {

Error protocol_error(std::string message) { return make_error(EPROTO, "rendezvous protocol: " + message); }

class ByteWriter {
public:
	void u8(uint8_t v) { bytes_.push_back(v); }
	void u16(uint16_t v) { be(v, 2); }
	void u32(uint32_t v) { be(v, 4); }
	void u64(uint64_t v) { be(v, 8); }
	void raw(const void *data, size_t size)
	{
		const auto *p = static_cast<const uint8_t *>(data);
		bytes_.insert(bytes_.end(), p, p + size);
	}
	void endpoint(const Endpoint &e)
	{
		u8(e.family == AF_INET6 ? 6 : 4);
		raw(e.address.data(), e.address.size());
		u16(e.port);
	}
	void optional_u64(const std::optional<uint64_t> &v)
	{
		u8(v.has_value());
		u64(v.value_or(0));
	}
	std::vector<uint8_t> take() { return std::move(bytes_); }

private:
	void be(uint64_t v, int size)
	{
		for (int i = size - 1; i >= 0; --i)
			bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
	}
	std::vector<uint8_t> bytes_;
};

// Bounds-checked reads; after the first overrun every read yields 0 and ok() is false.
class ByteReader {
public:
	explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}
	bool ok() const { return ok_; }
	bool at_end() const { return pos_ == bytes_.size(); }
	size_t remaining() const { return bytes_.size() - pos_; }
	uint8_t u8() { return static_cast<uint8_t>(be(1)); }
	uint16_t u16() { return static_cast<uint16_t>(be(2)); }
	uint32_t u32() { return static_cast<uint32_t>(be(4)); }
	uint64_t u64() { return be(8); }
	bool raw(void *out, size_t size)
	{
		if (!take(size))
			return false;
		std::memcpy(out, bytes_.data() + pos_ - size, size);
		return true;
	}
	Endpoint endpoint()
	{
		Endpoint e;
		const uint8_t family = u8();
		e.family = family == 6 ? AF_INET6 : AF_INET;
		if (family != 4 && family != 6)
			ok_ = false;
		raw(e.address.data(), e.address.size());
		e.port = u16();
		return e;
	}
	std::optional<uint64_t> optional_u64()
	{
		const bool present = u8() != 0;
		const uint64_t v = u64();
		return present ? std::optional(v) : std::nullopt;
	}

private:
	bool take(size_t size)
	{
		if (!ok_ || remaining() < size) {
			ok_ = false;
			return false;
		}
		pos_ += size;
		return true;
	}
	uint64_t be(size_t size)
	{
		if (!take(size))
			return 0;
		uint64_t v = 0;
		for (size_t i = pos_ - size; i < pos_; ++i)
			v = (v << 8) | bytes_[i];
		return v;
	}
	std::span<const uint8_t> bytes_;
	size_t pos_ = 0;
	bool ok_ = true;
};

template <class T> Expected<T> finish(const ByteReader &reader, T value, const char *what)
{
	if (!reader.ok() || !reader.at_end())
		return protocol_error(std::string("malformed ") + what + " message");
	return value;
}

Expected<void> expect_type(const Frame &frame, MessageType type, const char *what)
{
	if (frame.type != type)
		return protocol_error(std::string("expected a ") + what + " message, got type " +
				      std::to_string(static_cast<int>(frame.type)));
	return {};
}

bool valid_side(uint8_t v) { return v <= static_cast<uint8_t>(Side::Right); }
bool valid_pattern(uint8_t v) { return v >= 1 && v <= static_cast<uint8_t>(Pattern::Half); }

void write_snapshot(ByteWriter &w, const CounterSnapshot &s)
{
	w.u8(static_cast<uint8_t>(s.values.size()));
	for (const auto &value : s.values)
		w.optional_u64(value);
}

void read_snapshot(ByteReader &r, CounterSnapshot &s)
{
	const uint8_t count = r.u8();
	for (size_t i = 0; i < count; ++i) {
		const auto value = r.optional_u64();
		if (i < s.values.size())
			s.values[i] = value; // counters a newer peer added are skipped
	}
}

} // namespace

std::vector<uint8_t> encode_frame(const Frame &frame)
{
	ByteWriter w;
	w.u32(static_cast<uint32_t>(1 + frame.body.size()));
	w.u8(static_cast<uint8_t>(frame.type));
	w.raw(frame.body.data(), frame.body.size());
	return w.take();
}

void FrameParser::feed(std::span<const uint8_t> bytes)
{
	// Compact only when the consumed prefix dominates: amortised O(1) per byte.
	if (consumed_ > 0 && consumed_ * 2 >= buffer_.size()) {
		buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(consumed_));
		consumed_ = 0;
	}
	buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
}

Expected<std::optional<Frame>> FrameParser::next()
{
	const size_t available = buffered();
	if (available < 5)
		return std::optional<Frame>();
	const uint8_t *p = buffer_.data() + consumed_;
	const uint32_t length = (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | p[3];
	if (length == 0 || length > 1 + kMaxFrameBody)
		return protocol_error("bad frame length " + std::to_string(length));
	const uint8_t type = p[4];
	if (type < static_cast<uint8_t>(MessageType::Announce) || type > static_cast<uint8_t>(MessageType::Abort))
		return protocol_error("unknown message type " + std::to_string(type));
	if (available < 4 + static_cast<size_t>(length))
		return std::optional<Frame>();
	Frame frame;
	frame.type = static_cast<MessageType>(type);
	frame.body.assign(p + 5, p + 4 + length);
	consumed_ += 4 + static_cast<size_t>(length);
	return std::optional<Frame>(std::move(frame));
}

Frame encode_announce(const Announce &a)
{
	ByteWriter w;
	w.u32(a.version);
	w.u32(a.rank);
	w.u32(a.ranks);
	w.endpoint(a.data);
	w.u8(static_cast<uint8_t>(a.side));
	w.u64(a.netns_inode);
	w.u64(a.msg);
	w.u64(a.volume);
	w.u64(a.iterations);
	w.u8(static_cast<uint8_t>(a.pattern));
	return {MessageType::Announce, w.take()};
}

Expected<Announce> decode_announce(const Frame &frame)
{
	if (auto ok = expect_type(frame, MessageType::Announce, "ANNOUNCE"); !ok)
		return ok.error();
	ByteReader r(frame.body);
	Announce a;
	a.version = r.u32();
	if (r.ok() && a.version != kProtocolVersion)
		return protocol_error("peer speaks version " + std::to_string(a.version) + ", this gp-alltoall " +
				      std::to_string(kProtocolVersion) + " (mixed builds?)");
	a.rank = r.u32();
	a.ranks = r.u32();
	a.data = r.endpoint();
	const uint8_t side = r.u8();
	a.netns_inode = r.u64();
	a.msg = r.u64();
	a.volume = r.u64();
	a.iterations = r.u64();
	const uint8_t pattern = r.u8();
	if (r.ok() && (!valid_side(side) || !valid_pattern(pattern)))
		return protocol_error("ANNOUNCE with a bad side or pattern");
	a.side = static_cast<Side>(side);
	a.pattern = static_cast<Pattern>(pattern);
	return finish(r, a, "ANNOUNCE");
}

Frame encode_table(const Table &t)
{
	ByteWriter w;
	w.u64(t.session);
	w.u64(t.iterations);
	w.u8(t.iterations_capped);
	w.u32(static_cast<uint32_t>(t.ranks.size()));
	for (const auto &info : t.ranks) {
		w.endpoint(info.data);
		w.u8(static_cast<uint8_t>(info.side));
		w.u64(info.netns_inode);
	}
	return {MessageType::Table, w.take()};
}

Expected<Table> decode_table(const Frame &frame)
{
	if (auto ok = expect_type(frame, MessageType::Table, "TABLE"); !ok)
		return ok.error();
	ByteReader r(frame.body);
	Table t;
	t.session = r.u64();
	t.iterations = r.u64();
	t.iterations_capped = r.u8() != 0;
	const uint32_t count = r.u32();
	// 27 bytes per entry: a count the body cannot hold is malformed, not an allocation.
	if (count > r.remaining() / 27 + 1)
		return protocol_error("TABLE claims " + std::to_string(count) + " ranks");
	for (uint32_t i = 0; i < count && r.ok(); ++i) {
		RankInfo info;
		info.data = r.endpoint();
		const uint8_t side = r.u8();
		if (!valid_side(side))
			return protocol_error("TABLE with a bad side");
		info.side = static_cast<Side>(side);
		info.netns_inode = r.u64();
		t.ranks.push_back(info);
	}
	return finish(r, t, "TABLE");
}

Frame encode_result(const RankResult &res)
{
	ByteWriter w;
	w.u32(res.rank);
	w.u8(static_cast<uint8_t>((res.timed_out ? 1 : 0) | (res.verified ? 2 : 0) | (res.counters_valid ? 4 : 0) |
				  (res.hints.open ? 8 : 0)));
	w.u64(res.wall_ns);
	w.u64(res.bytes_sent);
	w.u64(res.bytes_received);
	w.u64(res.bytes_cross_sent);
	w.u64(res.bytes_cross_received);
	w.u64(res.iterations_done);
	w.u64(res.netns_inode);
	write_snapshot(w, res.counters_before);
	write_snapshot(w, res.counters_after);
	w.u64(res.tcp_info.total_retrans);
	w.u32(res.tcp_info.rto_max_us);
	w.u64(res.hints.queued);
	w.u64(res.hints.sent);
	w.u64(res.hints.dropped);
	w.u64(res.hints.rejected);
	w.u8(static_cast<uint8_t>(res.cc.size()));
	w.raw(res.cc.data(), res.cc.size());
	w.u32(static_cast<uint32_t>(res.iteration_ns.size()));
	for (uint64_t ns : res.iteration_ns)
		w.u64(ns);
	w.u32(static_cast<uint32_t>(res.iteration_retrans.size()));
	for (uint32_t n : res.iteration_retrans)
		w.u32(n);
	return {MessageType::Result, w.take()};
}

Expected<RankResult> decode_result(const Frame &frame)
{
	if (auto ok = expect_type(frame, MessageType::Result, "RESULT"); !ok)
		return ok.error();
	ByteReader r(frame.body);
	RankResult res;
	res.rank = r.u32();
	const uint8_t flags = r.u8();
	res.timed_out = flags & 1;
	res.verified = flags & 2;
	res.counters_valid = flags & 4;
	res.hints.open = flags & 8;
	res.wall_ns = r.u64();
	res.bytes_sent = r.u64();
	res.bytes_received = r.u64();
	res.bytes_cross_sent = r.u64();
	res.bytes_cross_received = r.u64();
	res.iterations_done = r.u64();
	res.netns_inode = r.u64();
	read_snapshot(r, res.counters_before);
	read_snapshot(r, res.counters_after);
	res.tcp_info.total_retrans = r.u64();
	res.tcp_info.rto_max_us = r.u32();
	res.hints.queued = r.u64();
	res.hints.sent = r.u64();
	res.hints.dropped = r.u64();
	res.hints.rejected = r.u64();
	const uint8_t cc_length = r.u8();
	res.cc.resize(cc_length);
	r.raw(res.cc.data(), cc_length);
	const uint32_t count = r.u32();
	if (count > r.remaining() / 8)
		return protocol_error("RESULT claims " + std::to_string(count) + " durations");
	res.iteration_ns.reserve(count);
	for (uint32_t i = 0; i < count; ++i)
		res.iteration_ns.push_back(r.u64());
	const uint32_t traced = r.u32();
	if (traced != 0 && traced != count)
		return protocol_error("RESULT has " + std::to_string(traced) + " traced iterations for " +
				      std::to_string(count) + " durations");
	if (traced > r.remaining() / 4)
		return protocol_error("RESULT claims " + std::to_string(traced) + " traced iterations");
	res.iteration_retrans.reserve(traced);
	for (uint32_t i = 0; i < traced; ++i)
		res.iteration_retrans.push_back(r.u32());
	return finish(r, std::move(res), "RESULT");
}

Frame encode_abort(const std::string &reason)
{
	Frame frame{MessageType::Abort, {}};
	const size_t size = std::min<size_t>(reason.size(), 4096);
	frame.body.assign(reason.begin(), reason.begin() + static_cast<std::ptrdiff_t>(size));
	return frame;
}

Expected<std::string> decode_abort(const Frame &frame)
{
	if (auto ok = expect_type(frame, MessageType::Abort, "ABORT"); !ok)
		return ok.error();
	std::string reason(frame.body.begin(), frame.body.end());
	for (char &c : reason)
		if (static_cast<unsigned char>(c) < 0x20 && c != '\n')
			c = '?'; // printed to a terminal: no control characters from the network
	return reason;
}

Frame empty_frame(MessageType type) { return Frame{type, {}}; }

std::array<uint8_t, kHelloSize> encode_hello(uint64_t session, uint32_t rank)
{
	ByteWriter w;
	w.u32(kHelloMagic);
	w.u64(session);
	w.u32(rank);
	const auto bytes = w.take();
	std::array<uint8_t, kHelloSize> out{};
	std::memcpy(out.data(), bytes.data(), out.size());
	return out;
}

Expected<Hello> decode_hello(std::span<const uint8_t, kHelloSize> bytes)
{
	ByteReader r(bytes);
	if (r.u32() != kHelloMagic)
		return protocol_error("a data connection without the gp-alltoall hello");
	Hello hello;
	hello.session = r.u64();
	hello.rank = r.u32();
	return hello;
}

} // namespace gp::alltoall
