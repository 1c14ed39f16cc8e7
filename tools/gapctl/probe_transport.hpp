// TCP plumbing shared by the probe client and the responder: connecting and listening, frames
// on a socket, bounded blocking I/O, the concurrent send/receive loop of exchanges and trains,
// and the clocks. Every wait is bounded: a blocking call gives up after the socket's stall
// timeout (SO_RCVTIMEO / SO_SNDTIMEO), a poll after its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "endpoint.hpp"
#include "expected.hpp"
#include "probe_protocol.hpp"
#include "unique_fd.hpp"

namespace gp::probe {

using SteadyClock = std::chrono::steady_clock;

// CLOCK_MONOTONIC in ns: wall time of a measurement.
int64_t monotonic_ns();
// CLOCK_REALTIME in ns: the clock of kernel receive timestamps.
int64_t realtime_ns();
// CLOCK_THREAD_CPUTIME_ID in ns: CPU time this thread spent, in user space and in the kernel
// on its behalf (not while it sleeps in a blocking call). Our o_s / o_r clock.
int64_t thread_cpu_ns();
// What one thread_cpu_ns() pair costs by itself (median of back-to-back pairs), in ns: it is a
// system call, not vDSO, and is subtracted from every overhead sample.
double thread_cpu_clock_overhead_ns();

class Deadline {
public:
	explicit Deadline(std::chrono::milliseconds from_now) : at_(SteadyClock::now() + from_now) {}
	bool expired() const { return SteadyClock::now() >= at_; }
	// Milliseconds left, at least 0, at most `cap`.
	int left_ms(int cap = 1 << 30) const;

private:
	SteadyClock::time_point at_;
};

// A connected TCP socket with TCP_NODELAY, the stall timeout set, and both ends.
struct Connection {
	UniqueFd fd;
	Endpoint local;
	Endpoint peer;
};

// Resolves `host` (name or address), connects to port within `timeout`. err is the errno of
// the last address tried (ECONNREFUSED, EHOSTUNREACH, ETIMEDOUT ...), message says which.
Expected<Connection> connect_tcp(const std::string &host, uint16_t port, std::chrono::milliseconds timeout,
				 std::chrono::milliseconds stall);
// Listens on bind (an address; empty: every IPv6 and IPv4 address, or IPv4 only if the
// machine has no IPv6) and port (0: any). Returns the socket and the bound endpoint.
struct Listener {
	UniqueFd fd;
	Endpoint local;
};
Expected<Listener> listen_tcp(const std::string &bind, uint16_t port);
// Waits up to `deadline` for a connection; nullopt-equivalent ETIMEDOUT when none came.
Expected<Connection> accept_tcp(int listen_fd, const Deadline &deadline, std::chrono::milliseconds stall);

// Sets SO_RCVTIMEO and SO_SNDTIMEO: the longest a blocking call waits without progress.
Expected<void> set_stall_timeout(int fd, std::chrono::milliseconds stall);

// Blocking, retried on partial transfers and EINTR; EAGAIN from a stall timeout becomes
// ETIMEDOUT, an orderly close ECONNRESET ("closed by the peer").
Expected<void> send_all(int fd, const void *data, size_t size);
Expected<void> recv_exact(int fd, void *data, size_t size);
// recv_exact with the kernel's receive timestamp (CLOCK_REALTIME ns, SCM_TIMESTAMPNS) of the
// last segment read; 0 when the kernel gave none. Needs enable_rx_timestamps().
Expected<void> recv_with_timestamp(int fd, void *data, size_t size, int64_t &kernel_rx_realtime_ns);
Expected<void> enable_rx_timestamps(int fd, bool on);
// recv_exact into a scratch buffer, for data we only count.
Expected<void> discard_exact(int fd, uint64_t size, std::vector<uint8_t> &scratch);
// send_all of `size` bytes taken cyclically from `pattern`.
Expected<void> send_repeated(int fd, uint64_t size, const std::vector<uint8_t> &pattern);

Expected<void> send_frame(int fd, const Frame &frame);
struct ReceivedFrame {
	FrameHeader header;
	std::vector<uint8_t> payload;
};
// Reads one frame; fails on garbage (EBADMSG), an oversized payload (EMSGSIZE), or a frame of
// another protocol version (EPROTONOSUPPORT; the header is returned in the message).
Expected<ReceivedFrame> recv_frame(int fd);

// The measurement loop of EXCHANGE and TRAIN: sends `send_count` messages of wire_size(size)
// bytes (one send() call each, continued when partial) while receiving `recv_count` of them
// (no recv() crosses the end of a message), without ever blocking on one direction while the
// other could progress. Times of the start, and of the end of the first and of the last message
// received: when this thread saw them (monotonic_ns()), and when the kernel received the
// segment that completed them (CLOCK_REALTIME ns; 0 unless enable_rx_timestamps()). The
// kernel's times are the ones to trust for arrival gaps: this thread may be busy in a long
// send() while messages arrive.
struct TransferTimes {
	int64_t start_ns = 0;
	int64_t first_received_ns = 0;
	int64_t last_received_ns = 0;
	int64_t first_kernel_ns = 0;
	int64_t last_kernel_ns = 0;
	// ns between the ends of the first and the last message received, kernel times if known.
	int64_t arrival_span_ns() const
	{
		if (first_kernel_ns > 0 && last_kernel_ns >= first_kernel_ns)
			return last_kernel_ns - first_kernel_ns;
		return last_received_ns - first_received_ns;
	}
};
Expected<TransferTimes> transfer(int fd, uint64_t size, uint32_t send_count, uint32_t recv_count,
				 const std::vector<uint8_t> &send_buffer, std::vector<uint8_t> &recv_buffer,
				 std::chrono::milliseconds stall);

// MSS and path MTU of a connected TCP socket (TCP_INFO snd_mss, IP_MTU / IPV6_MTU); the MTU is
// 1500 and the MSS mtu - 52 when the kernel does not say.
struct PathInfo {
	uint32_t mss = 1448;
	uint32_t mtu = 1500;
};
PathInfo path_info(int fd, int family);
// Segments this socket retransmitted so far (TCP_INFO tcpi_total_retrans).
uint64_t total_retransmits(int fd);

std::string errno_text(int err);
// "3 s", "0.5 s"
std::string seconds_text(std::chrono::milliseconds duration);

} // namespace gp::probe
