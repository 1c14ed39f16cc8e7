// The host's TCP counters the loss check judges (models/loss_check.hpp): segments sent and
// retransmitted (/proc/net/snmp, Tcp), retransmission timeouts and what the kernel found needless
// of both (/proc/net/netstat, TcpExt: TCPTimeouts, TCPDSACKRecvSegs, TCPSpuriousRTOs) of the
// daemon's network namespace, with the monotonic time of the reading.
#pragma once

#include <optional>
#include <string_view>

#include "loss_check.hpp"

namespace gp::daemon {

// nullopt if either file or OutSegs, RetransSegs or TCPTimeouts is missing.
std::optional<models::HostTcpCounters> read_host_tcp_counters();
// The same from the files' texts (at_us is left to the caller).
std::optional<models::HostTcpCounters> host_tcp_counters_from_texts(std::string_view snmp_text,
								   std::string_view netstat_text);

} // namespace gp::daemon
