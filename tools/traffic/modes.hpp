// gp-traffic's modes. Each prints one JSON object on stdout (tcp-sink: one per connection) and
// returns the process exit code: 0 done, 1 runtime failure or timeout. Messages go to stderr.
#pragma once
#include <string>

#include "args.hpp"
#include "expected.hpp"
#include "json.hpp"

namespace gp::traffic {

inline constexpr int kExitDone = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

int run_udp_send(const UdpSendArgs &args);
int run_udp_sink(const UdpSinkArgs &args);
int run_tcp_send(const TcpSendArgs &args);
int run_tcp_sink(const TcpSinkArgs &args);
int run_tcp_rr(const TcpRrArgs &args);
int run_tcp_rr_server(const TcpRrServerArgs &args);
int run_marker(const MarkerArgs &args);

// Shared by the modes' implementations.
void print_json(const JsonWriter &json);
int fail(const char *mode, const Error &error); // prints "gp-traffic: MODE: message", returns 1

// How long blocking socket calls may take before a loop looks at its deadline again.
inline constexpr int kIoSliceMs = 200;

} // namespace gp::traffic
