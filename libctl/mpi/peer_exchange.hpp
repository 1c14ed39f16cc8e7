// Which TCP connection of this process leads to which rank of a communicator.
//
// MPI does not say which socket carries which peer, and a socket accepted by a rank shows
// the connecting rank's ephemeral port, not its listening one. A socket (L, R) of rank r
// belongs to rank q when q has the socket (R, L): both ends must confirm it.
//
// The ranks do not publish their sockets to everyone (that is O(ranks^2) memory on every
// rank: 160 MB per rank after an all-to-all of 2048 ranks). Each rank publishes only a
// fixed record (host, interface addresses, its sockets' local addresses, listening
// endpoints) with one PMPI_Allgather, then sends each socket to the ranks that can own its
// other end:
//
//   1. a socket whose local end is one of this rank's published listening endpoints was
//      accepted here: its connector sends it to us, so it is not sent;
//   2. a socket whose remote end is some rank's published listening endpoint goes to that
//      rank (normally exactly one);
//   3. any other socket goes to every rank of the host that owns its remote address (for a
//      loopback address, the ranks of this network namespace), so unpublished listeners,
//      addresses or transports that never listen still match, at a cost of ranks-per-host
//      copies.
//
// An address that ranks of several hosts publish routes nothing. A receiver answers each
// endpoint with one byte: 1 when it holds the reverse socket (and maps it to the sender),
// else 0; the sender maps its socket to a receiver that said 1. Traffic and memory are
// O(sockets + ranks) per rank. This file is the MPI-independent part (scanning, routing,
// matching); the shim moves the data with PMPI_Allgather, PMPI_Alltoall, PMPI_Allreduce,
// two PMPI_Alltoallv and PMPI_Allreduce, in that order on every rank (libctl/mpi/README.md).
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

// A listening TCP socket of a rank, as published.
struct ListenEndpoint {
	uint8_t addr[16];	// IPv4-mapped like WireEndpoint; zero for a wildcard bind
	uint16_t port;
	uint8_t wildcard;	// bound to 0.0.0.0 or ::, so any address of its host reaches it
	uint8_t reserved;
};
static_assert(sizeof(ListenEndpoint) == 20);

inline constexpr int kMaxPublishedAddrs = 4;
inline constexpr int kMaxPublishedListeners = 8;
// A sane bound on the connected sockets one rank scans; a rank with more maps the first ones.
inline constexpr size_t kMaxSocketsPerRank = 65536;

inline constexpr int kMaxSocketAddrs = 8;

// The fixed-size record every rank publishes with one PMPI_Allgather.
struct RankRecord {
	uint64_t host_key;	// equal for processes that share a kernel and a network namespace
	uint64_t netns_key;	// the same without the host name: whom loopback reaches
	uint32_t n_addrs;	// used entries of addrs
	uint32_t n_listeners;	// used entries of listeners
	uint32_t n_socket_addrs; // used entries of socket_addrs
	uint32_t reserved;
	uint8_t addr_family[kMaxPublishedAddrs]; // 4 or 6
	uint32_t reserved2;
	uint8_t addrs[kMaxPublishedAddrs][16];	// the rank's interface addresses (address form)
	// The distinct non-loopback local addresses of the rank's connected sockets, IPv4-mapped:
	// the addresses its peers really reach it at (one a host's first interface addresses may
	// not include), for routing only.
	uint8_t socket_addrs[kMaxSocketAddrs][16];
	ListenEndpoint listeners[kMaxPublishedListeners];
};
static_assert(sizeof(RankRecord) == 392);

// What one scan of /proc/self/fd found.
struct SocketScan {
	std::vector<LocalSocket> connected;	// at most the bound given to scan_tcp_sockets
	std::vector<ListenEndpoint> listeners;	// at most kMaxPublishedListeners
};

// Builds a LocalSocket from raw tuple data (exposed for tests).
LocalSocket make_local_socket(int family, const void *local_addr, uint16_t local_port,
			      const void *remote_addr, uint16_t remote_port);

// A ListenEndpoint from a bound address (exposed for tests); a zero address is a wildcard.
ListenEndpoint make_listen_endpoint(int family, const void *addr, uint16_t port);

// The TCP sockets of this process: connected ones (at most max_sockets) and listeners.
SocketScan scan_tcp_sockets(size_t max_sockets);

// Identity of the network namespace: boot id and the namespace's inode. Processes with equal
// keys reach each other over loopback.
uint64_t compute_netns_key();
// Identity of "the same host" for the address-form fallback: the netns key and the host
// name. Processes in different network namespaces of one machine count as different hosts,
// since their traffic crosses a device.
uint64_t compute_host_key();

// This process's record: its keys, up to kMaxPublishedAddrs non-loopback interface
// addresses (IPv4 first, then global IPv6), up to kMaxPublishedListeners listeners, and up
// to kMaxSocketAddrs distinct local addresses of its connected sockets.
RankRecord make_rank_record(uint64_t host_key, uint64_t netns_key,
			    std::span<const ListenEndpoint> listeners,
			    std::span<const LocalSocket> connected);

struct PeerTable {
	// This rank's peers for gapctl_phase: one tuple-form entry per socket mapped to a rank,
	// then address-form entries for ranks on other hosts without a known socket. Ranks on
	// this host without a socket (shared memory) are left out.
	std::vector<gapctl_peer> peers;
	uint32_t tuple_peers = 0;
	uint32_t address_peers = 0;
	uint32_t mapped_ranks = 0;	// distinct ranks this rank reaches through a tuple
	uint64_t matched_pairs = 0;	// rank pairs of the communicator joined by a known socket
	// Identical on every rank (computed from reduced data only): some rank pair that should
	// talk over TCP has no matched socket yet. Pairs on different hosts always should; pairs
	// on one host only once some pair on one host was seen using TCP.
	bool any_unmapped = false;
};

// What every rank contributes to the PMPI_Allreduce (MPI_UINT64_T, MPI_SUM) that makes the
// rescan decision the same everywhere.
struct ExchangeSums {
	uint64_t mapped_ranks = 0;	// summed: each matched pair counts twice
	uint64_t local_mapped = 0;	// summed: mapped peers on the mapping rank's own host
	uint64_t failed = 0;		// summed: ranks whose part failed (the table is then empty)
};
inline constexpr int kExchangeSumsCount = 3;
static_assert(sizeof(ExchangeSums) == kExchangeSumsCount * sizeof(uint64_t));

// One rank's side of one exchange. Each step fills the buffers the next collective sends;
// a step that fails (bad input, allocation) marks the exchange failed but leaves buffers of
// the right shape, so this rank still takes part in every remaining collective.
class EndpointExchange {
public:
	// Allocates everything whose size depends on the communicator only, so that what can
	// fail later are the buffers sized by the sockets.
	EndpointExchange(int my_rank, int n_ranks, std::vector<LocalSocket> mine);

	// After PMPI_Allgather of the records (one per rank; they must outlive this object):
	// chooses where each socket goes (the rules above). Fills send_counts, send_displs and
	// sent for PMPI_Alltoall and PMPI_Alltoallv.
	void route(std::span<const RankRecord> records);
	std::span<const int> send_counts() const { return send_counts_; }
	std::span<const int> send_displs() const { return send_displs_; }
	std::span<const WireEndpoint> sent() const { return sent_; }

	// After PMPI_Alltoall of the counts: sizes the receive side of PMPI_Alltoallv. False when
	// that fails (memory, impossible counts): this rank cannot receive what the others send,
	// so the shim asks every rank (PMPI_Allreduce) before the PMPI_Alltoallv and all of them
	// give the exchange up alike.
	bool expect(std::span<const int> recv_counts) noexcept;
	std::span<const int> recv_counts() const { return recv_counts_; }
	std::span<const int> recv_displs() const { return recv_displs_; }
	std::span<WireEndpoint> received() { return received_; }

	// After PMPI_Alltoallv of the endpoints: maps the sockets whose other end was received
	// and fills the answers (one byte per received endpoint, laid out like received) for the
	// second PMPI_Alltoallv, which returns into answers_in (laid out like sent).
	void answer();
	std::span<const uint8_t> answers_out() const { return answers_out_; }
	std::span<uint8_t> answers_in() { return answers_in_; }

	// After that PMPI_Alltoallv: maps the sent sockets the receivers confirmed and returns
	// this rank's contribution to the PMPI_Allreduce.
	ExchangeSums confirm();

	// After PMPI_Allreduce: whether some rank pair that should talk over TCP is still
	// unmatched. Reads only the sums and counts route() made, allocates nothing, so every
	// rank computes it and the same answer (the rescan decision hangs on it).
	bool any_unmapped(const ExchangeSums &sums) const noexcept;
	uint64_t matched_pairs(const ExchangeSums &sums) const noexcept { return sums.mapped_ranks / 2; }

	// After PMPI_Allreduce: this rank's peer table. False (and an empty table) when any
	// rank failed; every rank sees the same sums, so every rank returns the same. May throw
	// (allocation): only this rank's table is lost then.
	bool table(const ExchangeSums &sums, PeerTable &table) const;

	// Gives this rank's part up (a failed scan): it still takes part, sending nothing, and
	// its ExchangeSums make every rank drop the exchange.
	void abandon() noexcept;
	bool failed() const { return failed_; }
	size_t sockets() const { return mine_.size(); }
	uint64_t sent_count() const { return sent_.size(); }
	uint64_t received_count() const { return received_.size(); }

private:
	int my_rank_;
	int n_ranks_ = 0;
	bool failed_ = false;
	std::vector<LocalSocket> mine_;
	std::span<const RankRecord> records_;
	std::vector<int> peer_of_;		// per socket of mine: the mapped rank, or -1
	std::vector<uint32_t> sent_socket_;	// per sent endpoint: index into mine_
	std::vector<WireEndpoint> sent_;
	std::vector<int> send_counts_, send_displs_, recv_counts_, recv_displs_;
	std::vector<WireEndpoint> received_;
	std::vector<uint8_t> answers_out_, answers_in_;
	uint64_t all_pairs_ = 0;	// rank pairs of the communicator
	uint64_t same_host_pairs_ = 0;	// of which on one host
};

// "10.0.0.1:5000>10.0.0.2:6000" for logs.
std::string format_tuple(const gapctl_peer &peer);

} // namespace gp::mpishim
