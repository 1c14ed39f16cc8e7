// Which TCP connection of this process leads to which rank of a communicator.
//
// MPI does not say which socket carries which peer, and a socket accepted by a rank shows
// the connecting rank's ephemeral port, not its listening one. So every rank publishes the
// (local, remote) endpoints of all its connected TCP sockets, and the socket (L, R) of rank
// r belongs to the rank q that published (R, L). This file holds the MPI-independent part:
// scanning the sockets, the fixed-size records the ranks exchange, and the matching. The
// shim moves the records with PMPI_Allgather/PMPI_Allgatherv.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gapctl.h"

namespace gp::mpishim {

// One end pair of a TCP connection as published. Addresses are kept as 16 bytes with IPv4
// stored IPv4-mapped (::ffff:a.b.c.d), so an AF_INET6 socket carrying IPv4 matches the
// AF_INET socket at the other end. Ports are in host order.
struct WireEndpoint {
	uint8_t local_addr[16];
	uint8_t remote_addr[16];
	uint16_t local_port;
	uint16_t remote_port;
	uint32_t reserved;	// zero: no padding holes, the record is sent as raw bytes
};
static_assert(sizeof(WireEndpoint) == 40);

// One connected TCP socket of this process: what is published, and the tuple as the socket
// itself reports it (what goes into the hint, as `ss` shows it from this process).
struct LocalSocket {
	WireEndpoint wire;
	int family;		// AF_INET or AF_INET6
	uint8_t local_addr[16];	// network order, 4 bytes used for AF_INET
	uint8_t remote_addr[16];
	uint16_t local_port;	// host order
	uint16_t remote_port;
};

inline constexpr int kMaxPublishedAddrs = 4;
// A sane bound on what one rank publishes; a rank with more sockets publishes the first ones.
inline constexpr uint32_t kMaxEndpointsPerRank = 4096;

// The fixed-size part every rank publishes with one PMPI_Allgather.
struct RankRecord {
	uint64_t host_key;	// equal for processes that share a kernel and a network namespace
	uint32_t n_endpoints;	// entries this rank contributes to the PMPI_Allgatherv
	uint32_t n_addrs;	// used entries of addrs
	uint8_t addr_family[kMaxPublishedAddrs]; // 4 or 6
	uint32_t reserved;
	uint8_t addrs[kMaxPublishedAddrs][16];	// the rank's interface addresses (address form)
};
static_assert(sizeof(RankRecord) == 88);

// Builds a LocalSocket from raw tuple data (exposed for tests).
LocalSocket make_local_socket(int family, const void *local_addr, uint16_t local_port,
			      const void *remote_addr, uint16_t remote_port);

// The connected TCP sockets of this process (scans /proc/self/fd), at most max_sockets.
std::vector<LocalSocket> scan_tcp_sockets(size_t max_sockets);

// Identity of "the same host" for the address-form fallback: boot id, network namespace
// and host name. Processes in different network namespaces of one machine count as
// different hosts, since their traffic crosses a device.
uint64_t compute_host_key();

// This process's record: host key, endpoint count and up to kMaxPublishedAddrs non-loopback
// interface addresses (IPv4 first, then global IPv6).
RankRecord make_rank_record(uint64_t host_key, uint32_t n_endpoints);

struct PeerTable {
	// This rank's peers for gapctl_phase: one tuple-form entry per socket mapped to a rank,
	// then address-form entries for ranks on other hosts without a known socket. Ranks on
	// this host without a socket (shared memory) are left out.
	std::vector<gapctl_peer> peers;
	uint32_t tuple_peers = 0;
	uint32_t address_peers = 0;
	uint32_t mapped_ranks = 0;	// distinct ranks this rank reaches through a tuple
	uint64_t matched_pairs = 0;	// rank pairs of the communicator joined by a known socket
	// Identical on every rank (computed from the same gathered data only): some rank pair
	// that should talk over TCP has no matched socket yet. Pairs on different hosts always
	// should; pairs on one host only once some pair on one host was seen using TCP.
	bool any_unmapped = false;
};

// Matches the gathered data. records has one entry per rank; endpoints holds every rank's
// endpoints concatenated in rank order (records[r].n_endpoints each). mine are this rank's
// sockets in the order it published them. Returns false on inconsistent input (counts that
// do not add up), leaving table empty.
bool match_peers(int my_rank, std::span<const LocalSocket> mine,
		 std::span<const RankRecord> records, std::span<const WireEndpoint> endpoints,
		 PeerTable &table);

// "10.0.0.1:5000>10.0.0.2:6000" for logs.
std::string format_tuple(const gapctl_peer &peer);

} // namespace gp::mpishim
