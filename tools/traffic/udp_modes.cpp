// udp-send and udp-sink.
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <span>
#include <cstdio>
#include <map>
#include <thread>
#include <vector>

#include "modes.hpp"
#include "net.hpp"
#include "sequence_tracker.hpp"
#include "traffic_proto.hpp"

namespace gp::traffic {
namespace {

constexpr const char *kSendMode = "udp-send";
constexpr const char *kSinkMode = "udp-sink";

Expected<UniqueFd> sender_socket(const UdpSendArgs &args, int family)
{
	auto fd = open_socket(family, SOCK_DGRAM);
	if (!fd)
		return fd.error();
	if (args.sndbuf)
		if (auto ok = set_buffer_size(fd->get(), true, *args.sndbuf); !ok)
			return ok.error();
	if (auto ok = set_io_timeout(fd->get(), kIoSliceMs); !ok)
		return ok.error();
	if (args.gso_segments > 1) {
		const int segment = static_cast<int>(args.size);
		if (::setsockopt(fd->get(), SOL_UDP, UDP_SEGMENT, &segment, sizeof(segment)) != 0)
			return system_error("UDP_SEGMENT");
	}
	if (args.src_port) {
		const SocketAddress any = any_address(family, *args.src_port);
		if (::bind(fd->get(), any.get(), any.length) != 0)
			return system_error("bind to source port " + std::to_string(*args.src_port));
	}
	return fd;
}

// Sends one datagram (or, with UDP_SEGMENT, one train of them), retrying what only means
// "not now": a full socket buffer (the qdisc is the pacer, so this is the normal state) and a
// device queue that is momentarily out of room.
Expected<bool> send_datagram(int fd, std::span<const uint8_t> payload, const SocketAddress &to,
			     const Deadline &deadline)
{
	for (;;) {
		if (::sendto(fd, payload.data(), payload.size(), 0, to.get(), to.length) >= 0)
			return true;
		if (errno == ENOBUFS)
			std::this_thread::sleep_for(std::chrono::microseconds(100));
		else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return system_error("sendto " + to.text());
		if (deadline.expired())
			return false;
	}
}

} // namespace

int run_udp_send(const UdpSendArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	const auto to = numeric_address(args.dst, args.port);
	if (!to)
		return fail(kSendMode, to.error());
	auto fd = sender_socket(args, to->family());
	if (!fd)
		return fail(kSendMode, fd.error());

	// One train of gso_segments datagrams, each with its own header: the kernel cuts the
	// buffer into datagrams of args.size bytes.
	std::vector<uint8_t> train(args.size * args.gso_segments, 0);
	const Stopwatch stopwatch;
	uint64_t sent = 0;
	bool timed_out = false;
	std::optional<Error> error;
	while (sent < args.count) {
		const uint64_t n = std::min(args.gso_segments, args.count - sent);
		for (uint64_t i = 0; i < n; ++i)
			encode_payload_header({args.flow_id, sent + i},
					      std::span<uint8_t, kPayloadHeaderSize>(train.data() + i * args.size,
										     kPayloadHeaderSize));
		const auto ok = send_datagram(fd->get(), std::span<const uint8_t>(train.data(), n * args.size), *to,
					      deadline);
		if (!ok) {
			error = ok.error();
			break;
		}
		if (!*ok) {
			timed_out = true;
			break;
		}
		sent += n;
	}
	const double seconds = stopwatch.seconds();

	JsonWriter json;
	json.begin_object()
		.field("sent", sent)
		.field("bytes", sent * args.size)
		.field("seconds", seconds)
		.field("flow_id", args.flow_id)
		.field("timed_out", timed_out)
		.end_object();
	print_json(json);
	if (error)
		return fail(kSendMode, *error);
	if (timed_out)
		return fail(kSendMode, make_error(ETIMEDOUT, "timed out after " + std::to_string(sent) + " of " +
								   std::to_string(args.count) + " datagrams"));
	return kExitDone;
}

int run_udp_sink(const UdpSinkArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	auto fd = bound_socket(SOCK_DGRAM, args.port);
	if (!fd)
		return fail(kSinkMode, fd.error());
	if (args.rcvbuf)
		if (auto ok = set_buffer_size(fd->get(), false, *args.rcvbuf); !ok)
			return fail(kSinkMode, ok.error());

	std::map<uint32_t, SequenceTracker> flows;
	uint64_t received = 0, bytes = 0, foreign = 0;
	std::optional<Stopwatch> since_first; // the sender may start long after us
	double seconds = 0;
	std::vector<uint8_t> buffer(65536);
	while (received < args.count) {
		pollfd readable{fd->get(), POLLIN, 0};
		const int ready = ::poll(&readable, 1, deadline.remaining_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return fail(kSinkMode, system_error("poll"));
		if (ready == 0)
			break; // deadline
		const ssize_t length = ::recv(fd->get(), buffer.data(), buffer.size(), MSG_DONTWAIT);
		if (length < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			return fail(kSinkMode, system_error("recv"));
		}
		if (!since_first)
			since_first.emplace();
		seconds = since_first->seconds();
		++received;
		bytes += static_cast<uint64_t>(length);
		const auto header = decode_payload_header(std::span<const uint8_t>(buffer.data(), static_cast<size_t>(length)));
		if (header)
			flows.try_emplace(header->flow_id, uint64_t{0}).first->second.observe(header->seq); // senders start at 0
		else
			++foreign;
	}
	const bool timed_out = received < args.count;

	JsonWriter json;
	json.begin_object()
		.field("received", received)
		.field("bytes", bytes)
		.field("seconds", seconds) // first to last datagram
		.field("foreign", foreign)  // datagrams without a gp-traffic header
		.field("timed_out", timed_out)
		.key("flows")
		.begin_array();
	for (const auto &[flow_id, tracker] : flows)
		json.begin_object()
			.field("flow_id", flow_id)
			.field("received", tracker.received())
			.field("lost", tracker.lost())
			.field("reordered", tracker.reordered())
			.field("duplicated", tracker.duplicated())
			.field("highest_seq", tracker.highest().value_or(0))
			.end_object();
	json.end_array().end_object();
	print_json(json);
	if (timed_out)
		return fail(kSinkMode, make_error(ETIMEDOUT, "timed out after " + std::to_string(received) + " of " +
								   std::to_string(args.count) + " datagrams"));
	return kExitDone;
}

} // namespace gp::traffic
