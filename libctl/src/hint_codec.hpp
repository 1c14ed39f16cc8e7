// The one encoding of a collective-phase hint: a generic netlink message of the gappace
// family (GAPPACE_CMD_HINT, one GAPPACE_A_HINT nest), whichever carrier moves it — the kernel's
// multicast group or gappaced's Unix seqpacket socket. libgapctl encodes; gappaced, gapctl and
// the tests decode. Decoding validates exactly what the kernel's policy validates, because on
// the socket carrier the daemon is the only check.
#pragma once

#include <linux/gappace.h>
#include <linux/netlink.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "endpoint.hpp"
#include "expected.hpp"

namespace gp::hint {

enum class Event : uint32_t { Begin = GAPPACE_HINT_EVENT_BEGIN, End = GAPPACE_HINT_EVENT_END };

// A peer of a phase: an address (local.family == 0: every connection of the sender's uid to
// that host) or one TCP connection, local -> remote, as `ss` shows it at the sender.
struct Peer {
	Endpoint remote;	// the port is 0 in the address form
	Endpoint local;		// family 0 in the address form
	int32_t rank = -1;

	bool is_tuple() const { return local.family != 0; }
	bool operator==(const Peer &) const = default;
};

// Who sent a hint, as the kernel (or the daemon, from SO_PEERCRED) stamped it.
struct Sender {
	uint32_t pid = 0;
	uint32_t uid = 0;
	uint32_t netns = 0;	// inode of the netns; 0 if the carrier cannot tell
	bool operator==(const Sender &) const = default;
};

// Everything but the peers: what a BEGIN or END carries.
struct Header {
	Event event = Event::Begin;
	uint64_t phase_id = 0;
	uint32_t kind = 0;		// enum gappace_hint_kind
	uint32_t algorithm = 0;		// enum gappace_hint_algorithm
	uint32_t flags = 0;		// GAPPACE_HINT_F_*
	uint64_t bytes_per_peer = 0;
	uint32_t comm_size = 0;
	int32_t rank = -1;		// -1: not sent
	uint32_t repetitions = 0;
	uint64_t duration_ns = 0;	// END only; 0: not sent
	uint64_t signature = 0;		// BEGIN only; 0: not sent (see Advice)
	// BEGIN only, both or neither (0: not sent): the phases of this signature the sender
	// skipped under quiet advice since its last BEGIN of it, and their summed durations.
	uint32_t quiet_phases = 0;
	uint64_t quiet_ns = 0;
	bool operator==(const Header &) const = default;
};

struct Hint {
	Header header;
	std::vector<Peer> peers;
	std::optional<Sender> sender;	// present in decoded hints that came through a carrier
};

// Bytes an encoded hint with n_peers peers needs at most.
size_t max_encoded_size(size_t n_peers);
// Bytes one peer takes inside the hint nest.
size_t encoded_peer_size(const Peer &peer);
// A netlink attribute's length is 16 bits: the hint nest, with the kernel's sender stamp
// (3 x 8 bytes) added, must stay below 64 KiB. This is the room left for peers.
inline constexpr size_t kPeerBudget = 65535 - 24 - 128;

// Encodes one hint into buf (at least max_encoded_size(peers.size()) bytes) as a generic
// netlink request with nlmsg_type = family_id (0 on the socket carrier, where no family id
// exists) and no ACK requested. Returns the message length. The caller has validated the
// values; peers beyond GAPPACE_HINT_MAX_PEERS must have been cut off already.
size_t encode(std::span<uint8_t> buf, uint16_t family_id, uint32_t seq, const Header &header,
	      std::span<const Peer> peers);

enum class SenderStamp { Forbidden, Required };

// Decodes and validates a hint message (genlmsghdr + attributes). Forbidden: a sender stamp
// in the message is an error (what arrives on the daemon's socket, which then fills in
// Hint::sender from SO_PEERCRED); Required: it must be there (what arrives from the kernel). EINVAL/ERANGE with a message naming the field.
Expected<Hint> decode(const nlmsghdr *nlh, SenderStamp stamp);

// gappaced's answer on the hints socket (GAPPACE_CMD_HINT_ADVICE): BEGIN hints whose
// signature is `signature` change nothing for the next `quiet_ms`, so the sender may skip them.
// With quiet_summary, the sender reports what it skipped with the signature's next BEGIN
// (Header::quiet_phases, quiet_ns).
struct Advice {
	uint64_t signature = 0;
	uint32_t quiet_ms = 0;
	bool quiet_summary = false;
	bool operator==(const Advice &) const = default;
};
inline constexpr size_t kAdviceMaxSize = 64;

size_t encode_advice(std::span<uint8_t> buf, uint32_t seq, const Advice &advice);
// EOPNOTSUPP for another command (a sender ignores what it does not know), EINVAL otherwise.
Expected<Advice> decode_advice(const nlmsghdr *nlh);

// "alltoall", "p2p_burst", ...; nullptr for unknown values.
const char *kind_name(uint32_t kind);
uint32_t kind_from_name(std::string_view name);	// 0 if unknown
const char *algorithm_name(uint32_t algorithm);
uint32_t algorithm_from_name(std::string_view name);	// UINT32_MAX if unknown
const char *event_name(Event event);

} // namespace gp::hint
