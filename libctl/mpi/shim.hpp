// Internals of the PMPI shim libgapctl-mpi.so, shared by the wrapper files. Compiled once
// per MPI flavour (Open MPI and MPICH have different ABIs: MPI_Comm is a pointer in one and
// an int in the other), so nothing here may assume a handle representation.
#pragma once
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "gapctl.h"
#include "peer_exchange.hpp"

#define GP_SHIM_EXPORT __attribute__((visibility("default")))

namespace gp::mpishim {

// Per-communicator cache, created at the first wrapped collective on the communicator and
// dropped by the attribute delete callback when the communicator is freed.
struct CommState {
	MPI_Comm comm = MPI_COMM_NULL;
	int size = 0;
	int rank = -1;
	bool hinted = false;	// an intracommunicator with more than one process
	// Collectives on a communicator are issued in the same order by every rank and never
	// concurrently (MPI's rule), so these need no lock: only the thread running a
	// collective on this communicator touches them.
	uint64_t seq = 0;	// wrapped collectives on this communicator so far
	uint64_t exchanges = 0;	// exchanges run (the first one is no rescan)
	// An exchange came due at a call that must not block (a nonblocking collective, a
	// persistent init): it runs at the next blocking wrapped collective, the same one on
	// every rank, since all issue their collectives in the same order.
	bool exchange_pending = false;
	uint64_t due_seq = 0;	// the collective at which the pending exchange came due
	int rescans = 0;
	bool any_unmapped = true;
	bool exchange_broken = false;
	// Read by any thread (MPI_Start of a persistent request), replaced by exchanges; the
	// old tables stay alive until the communicator goes, so a reader never sees freed data.
	std::atomic<const PeerTable *> peers{nullptr};
	std::vector<std::unique_ptr<PeerTable>> tables;
};

// A phase in flight: what phase_end needs.
struct Phase {
	uint64_t n = 0;		// the shim's own phase number (logs pair begin/end with it)
	uint64_t id = 0;	// gapctl's phase id, 0 if gapctl did not accept the phase
	uint64_t start_ns = 0;	// 0: completion not observed, reported as duration 0
};

// Hot-path switch: false before MPI_Init, with GAPPACE_SHIM=0, and after MPI_Finalize.
extern std::atomic<bool> g_on;
inline bool shim_on() noexcept { return g_on.load(std::memory_order_relaxed); }

void shim_start() noexcept;	// after PMPI_Init/PMPI_Init_thread succeeded
void shim_stop() noexcept;	// before PMPI_Finalize

// The state for a collective that is about to be issued on comm, counting it, and running
// the endpoint exchange when it is due (see README.md, "rescan rule"). nullptr: no hint
// for this communicator (shim off, intercommunicator, single process, MPI_COMM_NULL).
// `may_block` false (nonblocking collectives, persistent inits): an exchange that is due
// waits for the next blocking one, since the exchange's own collectives wait for every rank,
// and a nonblocking call must not (a rank may need the others' progress to reach its Wait).
CommState *comm_enter(MPI_Comm comm, bool may_block = true) noexcept;
// The state kept alive for a persistent request (which may outlive the communicator).
std::shared_ptr<CommState> comm_shared(MPI_Comm comm) noexcept;

Phase phase_begin(const CommState &cs, uint32_t kind, uint32_t flags, uint64_t bytes) noexcept;
void phase_end(const Phase &phase) noexcept;

// Nonblocking and persistent collectives: request -> phase.
void track_nonblocking(MPI_Request request, const Phase &phase) noexcept;
void track_persistent(MPI_Request request, std::shared_ptr<CommState> cs, uint32_t kind,
		      uint32_t flags, uint64_t bytes) noexcept;
// True when some request is tracked: lets the wait/test wrappers skip all work otherwise.
extern std::atomic<uint64_t> g_tracked_requests;
inline bool requests_tracked() noexcept
{
	return g_tracked_requests.load(std::memory_order_relaxed) != 0;
}
void request_started(MPI_Request request) noexcept;	// MPI_Start/Startall
// MPI reported this request (its handle as it was before the completion call) complete:
// a nonblocking one is then MPI_REQUEST_NULL, a persistent one inactive.
void request_completed(MPI_Request request) noexcept;
void request_freed(MPI_Request request) noexcept;

// count * size of type, 0 for MPI_DATATYPE_NULL or errors. Only called on arguments MPI
// declares significant at this process.
uint64_t type_bytes(int64_t count, MPI_Datatype type) noexcept;

} // namespace gp::mpishim
