// gp-traffic's command line: one subcommand per mode, each with its own options, parsed into a
// typed description of what to do. Every mode is bounded by a count or size AND a timeout.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <variant>

#include "expected.hpp"

namespace gp::traffic {

inline constexpr double kDefaultTimeoutSeconds = 60;
inline constexpr uint64_t kDefaultUdpPayload = 1472; // a full 1500-byte IPv4 packet
inline constexpr uint64_t kMaxUdpPayload = 65507;

struct UdpSendArgs {
	std::string dst;
	uint16_t port = 0;
	std::optional<uint16_t> src_port;
	uint64_t size = kDefaultUdpPayload;
	uint64_t count = 0;
	uint32_t flow_id = 0;
	double timeout_seconds = kDefaultTimeoutSeconds;
	std::optional<uint64_t> sndbuf;
	// Datagrams per sendmsg with UDP_SEGMENT (1 = plain sends): a sender that hands the
	// stack 64 KB at a time keeps up with a fast wire where one syscall per datagram cannot.
	uint64_t gso_segments = 1;
};

struct UdpSinkArgs {
	uint16_t port = 0;
	uint64_t count = 0;
	double timeout_seconds = kDefaultTimeoutSeconds;
	std::optional<uint64_t> rcvbuf;
};

struct TcpSendArgs {
	std::string dst;
	uint16_t port = 0;
	uint64_t bytes = 0;
	double timeout_seconds = kDefaultTimeoutSeconds;
	std::optional<std::string> congestion_control;
	std::optional<uint64_t> sndbuf;
	std::optional<std::string> bind_device;	// SO_BINDTODEVICE
};

struct TcpSinkArgs {
	uint16_t port = 0;
	std::optional<uint64_t> bytes; // per connection; without it, read to EOF
	double timeout_seconds = kDefaultTimeoutSeconds;
	bool once = false;
};

// Request/response: the client writes --size bytes, the server answers one byte; the client
// times every exchange. A lost tail shows as one exchange that took an RTO.
struct TcpRrArgs {
	std::string dst;
	uint16_t port = 0;
	uint64_t size = 1000;
	uint64_t count = 0;
	uint64_t pause_ms = 0; // between exchanges
	double timeout_seconds = kDefaultTimeoutSeconds;
};

struct TcpRrServerArgs {
	uint16_t port = 0;
	uint64_t size = 1000;
	double timeout_seconds = kDefaultTimeoutSeconds;
};

struct MarkerArgs {
	std::string dst;
	std::string name;
	uint16_t port = 9;
	double timeout_seconds = kDefaultTimeoutSeconds;
	bool wait_for_transmit = true;
};

struct HelpArgs {};

using Command = std::variant<HelpArgs, UdpSendArgs, UdpSinkArgs, TcpSendArgs, TcpSinkArgs, TcpRrArgs,
			     TcpRrServerArgs, MarkerArgs>;

std::string usage_text();

// argv[0] is the program, argv[1] the subcommand. Errors are usage errors (exit 2).
Expected<Command> parse_arguments(int argc, char *const argv[]);

} // namespace gp::traffic
