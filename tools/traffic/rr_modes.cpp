// tcp-rr and tcp-rr-server: timed request/response exchanges over one connection.
//
// The client writes --size bytes and waits for the server's one-byte answer, --count times.
// Each exchange is timed: when the last segment of a request (or the answer) is lost and
// nothing follows it, that exchange takes one retransmission timeout - the stall gappace's
// RTO override shortens. TCP_NODELAY keeps every request in as few segments as possible.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <vector>

#include "modes.hpp"
#include "net.hpp"

namespace gp::traffic {
namespace {

constexpr const char *kClientMode = "tcp-rr";
constexpr const char *kServerMode = "tcp-rr-server";

// Reads exactly `want` bytes; false on EOF, error or deadline.
bool read_exactly(int fd, uint8_t *buf, size_t want, const Deadline &deadline)
{
	size_t got = 0;
	while (got < want) {
		if (deadline.expired())
			return false;
		const ssize_t n = ::recv(fd, buf + got, want - got, 0);
		if (n > 0)
			got += static_cast<size_t>(n);
		else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return false;
	}
	return true;
}

bool write_all(int fd, const uint8_t *buf, size_t len, const Deadline &deadline)
{
	size_t sent = 0;
	while (sent < len) {
		if (deadline.expired())
			return false;
		const ssize_t n = ::send(fd, buf + sent, len - sent, MSG_NOSIGNAL);
		if (n > 0)
			sent += static_cast<size_t>(n);
		else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return false;
	}
	return true;
}

void set_nodelay(int fd)
{
	const int one = 1;
	::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

} // namespace

int run_tcp_rr(const TcpRrArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	const auto to = numeric_address(args.dst, args.port);
	if (!to)
		return fail(kClientMode, to.error());
	auto fd = open_socket(to->family(), SOCK_STREAM);
	if (!fd)
		return fail(kClientMode, fd.error());
	if (auto ok = set_io_timeout(fd->get(), kIoSliceMs); !ok)
		return fail(kClientMode, ok.error());
	if (auto ok = connect_within(fd->get(), *to, deadline); !ok)
		return fail(kClientMode, ok.error());
	set_nodelay(fd->get());

	std::vector<uint8_t> request(args.size, 0x5a);
	std::vector<uint64_t> latencies_us;
	latencies_us.reserve(args.count);
	bool complete = true;
	for (uint64_t i = 0; i < args.count; ++i) {
		const auto start = std::chrono::steady_clock::now();
		uint8_t answer = 0;
		if (!write_all(fd->get(), request.data(), request.size(), deadline) ||
		    !read_exactly(fd->get(), &answer, 1, deadline)) {
			complete = false;
			break;
		}
		latencies_us.push_back(static_cast<uint64_t>(
			std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start)
				.count()));
		if (args.pause_ms)
			std::this_thread::sleep_for(std::chrono::milliseconds(args.pause_ms));
	}

	tcp_info info{};
	socklen_t info_len = sizeof(info);
	::getsockopt(fd->get(), IPPROTO_TCP, TCP_INFO, &info, &info_len);

	std::vector<uint64_t> sorted = latencies_us;
	std::sort(sorted.begin(), sorted.end());
	const auto max_it = std::max_element(latencies_us.begin(), latencies_us.end());
	JsonWriter json;
	json.begin_object()
		.field("count", static_cast<uint64_t>(latencies_us.size()))
		.field("size", args.size)
		.field("p50_us", sorted.empty() ? 0 : sorted[sorted.size() / 2])
		.field("max_us", sorted.empty() ? 0 : sorted.back())
		.field("max_index", max_it == latencies_us.end() ? 0 : static_cast<uint64_t>(max_it - latencies_us.begin()))
		.field("total_retrans", static_cast<uint64_t>(info.tcpi_total_retrans))
		.field("rto_us", static_cast<uint64_t>(info.tcpi_rto))
		.field("complete", complete);
	json.key("latencies_us").begin_array();
	for (uint64_t us : latencies_us)
		json.value(us);
	json.end_array().end_object();
	print_json(json);
	if (!complete)
		return fail(kClientMode, make_error(ETIMEDOUT, "exchange " + std::to_string(latencies_us.size()) +
								    " did not complete"));
	return kExitDone;
}

int run_tcp_rr_server(const TcpRrServerArgs &args)
{
	const Deadline deadline(args.timeout_seconds);
	auto listener = bound_socket(SOCK_STREAM, args.port);
	if (!listener)
		return fail(kServerMode, listener.error());
	if (::listen(listener->get(), 1) != 0)
		return fail(kServerMode, system_error("listen"));
	pollfd acceptable{listener->get(), POLLIN, 0};
	if (::poll(&acceptable, 1, deadline.remaining_ms()) <= 0)
		return fail(kServerMode, make_error(ETIMEDOUT, "no connection"));
	UniqueFd connection(::accept4(listener->get(), nullptr, nullptr, SOCK_CLOEXEC));
	if (!connection)
		return fail(kServerMode, system_error("accept"));
	if (auto ok = set_io_timeout(connection.get(), kIoSliceMs); !ok)
		return fail(kServerMode, ok.error());
	set_nodelay(connection.get());

	std::vector<uint8_t> request(args.size);
	uint64_t answered = 0;
	const uint8_t answer = 1;
	while (read_exactly(connection.get(), request.data(), request.size(), deadline) &&
	       write_all(connection.get(), &answer, 1, deadline))
		++answered;
	JsonWriter json;
	json.begin_object().field("answered", answered).end_object();
	print_json(json);
	return kExitDone;
}

} // namespace gp::traffic
