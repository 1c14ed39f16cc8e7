// tcp-send and tcp-sink: one bulk transfer per connection.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "modes.hpp"
#include "net.hpp"

namespace gp::traffic {
namespace {

constexpr const char *kSendMode = "tcp-send";
constexpr const char *kSinkMode = "tcp-sink";
constexpr size_t kChunkBytes = 256 * 1024;

Expected<UniqueFd> sender_socket(const TcpSendArgs &args, int family)
{
	auto fd = open_socket(family, SOCK_STREAM);
	if (!fd)
		return fd.error();
	if (args.congestion_control) {
		const std::string &cc = *args.congestion_control;
		if (setsockopt(fd->get(), IPPROTO_TCP, TCP_CONGESTION, cc.data(), static_cast<socklen_t>(cc.size())) != 0)
			return system_error("TCP_CONGESTION '" + cc + "' (is the module loaded and allowed?)");
	}
	if (args.sndbuf)
		if (auto ok = set_buffer_size(fd->get(), true, *args.sndbuf); !ok)
			return ok.error();
	if (args.bind_device) {
		const std::string &dev = *args.bind_device;
		if (setsockopt(fd->get(), SOL_SOCKET, SO_BINDTODEVICE, dev.data(), static_cast<socklen_t>(dev.size())) != 0)
			return system_error("SO_BINDTODEVICE '" + dev + "'");
	}
	return fd;
}

// Sends `total` bytes; returns how many went out before an error or the deadline.
uint64_t send_all(int fd, uint64_t total, const Deadline &deadline, std::optional<Error> &error)
{
	const std::vector<uint8_t> chunk(kChunkBytes, 0);
	uint64_t sent = 0;
	while (sent < total && !deadline.expired()) {
		const size_t want = static_cast<size_t>(std::min<uint64_t>(total - sent, chunk.size()));
		const ssize_t n = ::send(fd, chunk.data(), want, MSG_NOSIGNAL);
		if (n >= 0) {
			sent += static_cast<uint64_t>(n);
		} else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			error = system_error("send");
			break;
		}
	}
	return sent;
}

// After our FIN, the sink closes once it has read everything: its EOF means all data arrived.
Expected<bool> wait_for_peer_close(int fd, const Deadline &deadline)
{
	char discard[4096];
	for (;;) {
		pollfd readable{fd, POLLIN, 0};
		const int ready = ::poll(&readable, 1, deadline.remaining_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return system_error("poll");
		if (ready == 0)
			return false;
		const ssize_t n = ::recv(fd, discard, sizeof(discard), MSG_DONTWAIT);
		if (n == 0)
			return true;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return system_error("waiting for the sink to close");
	}
}

void write_tcp_info(JsonWriter &json, int fd)
{
	tcp_info info{};
	socklen_t length = sizeof(info);
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &length) != 0) {
		json.key("retransmits").null().key("rto_us").null().key("snd_cwnd").null();
		return;
	}
	json.field("retransmits", info.tcpi_total_retrans)
		.field("rto_us", info.tcpi_rto)
		.field("snd_cwnd", info.tcpi_snd_cwnd)
		.field("snd_mss", info.tcpi_snd_mss);
	char cc[32] = "";
	socklen_t cc_length = sizeof(cc) - 1;
	if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, cc, &cc_length) == 0)
		json.field("cc", std::string_view(cc, strnlen(cc, cc_length)));
}

struct ConnectionResult {
	uint64_t bytes = 0;
	double seconds = 0;
	bool complete = false;
	bool timed_out = false;
	std::optional<Error> error;
};

ConnectionResult receive_connection(int fd, const TcpSinkArgs &args, const Deadline &deadline)
{
	ConnectionResult result;
	std::vector<uint8_t> buffer(kChunkBytes);
	const Stopwatch stopwatch;
	for (;;) {
		if (args.bytes && result.bytes >= *args.bytes) {
			result.complete = true;
			break;
		}
		pollfd readable{fd, POLLIN, 0};
		const int ready = ::poll(&readable, 1, deadline.remaining_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0) {
			result.error = system_error("poll");
			break;
		}
		if (ready == 0) {
			result.timed_out = true;
			break;
		}
		const size_t want = args.bytes ? static_cast<size_t>(std::min<uint64_t>(*args.bytes - result.bytes, buffer.size()))
					       : buffer.size();
		const ssize_t n = ::recv(fd, buffer.data(), want, MSG_DONTWAIT);
		if (n == 0) {
			result.complete = !args.bytes; // EOF: complete only if no size was promised
			break;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				continue;
			result.error = system_error("recv");
			break;
		}
		result.bytes += static_cast<uint64_t>(n);
	}
	result.seconds = stopwatch.seconds();
	return result;
}

} // namespace

int run_tcp_send(const TcpSendArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	const auto to = numeric_address(args.dst, args.port);
	if (!to)
		return fail(kSendMode, to.error());
	auto fd = sender_socket(args, to->family());
	if (!fd)
		return fail(kSendMode, fd.error());
	if (auto ok = connect_within(fd->get(), *to, deadline); !ok)
		return fail(kSendMode, ok.error());
	if (auto ok = set_io_timeout(fd->get(), kIoSliceMs); !ok)
		return fail(kSendMode, ok.error());

	const Stopwatch stopwatch;
	std::optional<Error> error;
	const uint64_t sent = send_all(fd->get(), args.bytes, deadline, error);
	bool delivered = false;
	if (!error && sent == args.bytes) {
		::shutdown(fd->get(), SHUT_WR);
		auto closed = wait_for_peer_close(fd->get(), deadline);
		if (!closed)
			error = closed.error();
		else
			delivered = *closed;
	}
	const double seconds = stopwatch.seconds();
	const bool timed_out = !error && !delivered;

	JsonWriter json;
	json.begin_object()
		.field("bytes", sent)
		.field("seconds", seconds) // connected .. the sink closed after reading everything
		.field("rate", seconds > 0 ? static_cast<double>(sent) * 8 / seconds : 0.0)
		.field("timed_out", timed_out);
	write_tcp_info(json, fd->get());
	json.end_object();
	print_json(json);
	if (error)
		return fail(kSendMode, *error);
	if (timed_out)
		return fail(kSendMode, make_error(ETIMEDOUT, "timed out after " + std::to_string(sent) + " of " +
								   std::to_string(args.bytes) + " bytes"));
	return kExitDone;
}

int run_tcp_sink(const TcpSinkArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	auto listener = bound_socket(SOCK_STREAM, args.port);
	if (!listener)
		return fail(kSinkMode, listener.error());
	if (::listen(listener->get(), 4) != 0)
		return fail(kSinkMode, system_error("listen"));

	uint64_t connections = 0;
	bool all_complete = true;
	while (!deadline.expired()) {
		pollfd acceptable{listener->get(), POLLIN, 0};
		const int ready = ::poll(&acceptable, 1, deadline.remaining_ms());
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return fail(kSinkMode, system_error("poll"));
		if (ready == 0)
			break;
		sockaddr_storage peer_storage{};
		socklen_t peer_length = sizeof(peer_storage);
		UniqueFd connection(::accept4(listener->get(), reinterpret_cast<sockaddr *>(&peer_storage), &peer_length,
					      SOCK_CLOEXEC));
		if (!connection) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return fail(kSinkMode, system_error("accept"));
		}
		SocketAddress peer;
		peer.storage = peer_storage;
		peer.length = peer_length;
		const ConnectionResult result = receive_connection(connection.get(), args, deadline);
		connection.reset(); // closing tells the sender that everything arrived
		++connections;
		all_complete = all_complete && result.complete;

		JsonWriter json;
		json.begin_object()
			.field("bytes", result.bytes)
			.field("seconds", result.seconds) // accept .. last byte or EOF
			.field("rate", result.seconds > 0 ? static_cast<double>(result.bytes) * 8 / result.seconds : 0.0)
			.field("peer", peer.text())
			.field("complete", result.complete)
			.field("timed_out", result.timed_out)
			.end_object();
		print_json(json);
		if (result.error)
			return fail(kSinkMode, *result.error);
		if (args.once)
			break;
	}
	if (connections == 0)
		return fail(kSinkMode, make_error(ETIMEDOUT, "timed out: no connection"));
	if (!all_complete)
		return fail(kSinkMode, make_error(EPIPE, args.bytes ? "a connection ended before --bytes arrived"
								    : "a connection did not reach EOF in time"));
	return kExitDone;
}

} // namespace gp::traffic
