// The data connections: one TCP connection per pair of ranks, the lower rank connecting to the
// higher one's listener and identifying itself with a hello (wire.hpp).
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "endpoint.hpp"
#include "event_loop.hpp"
#include "expected.hpp"
#include "net.hpp"
#include "unique_fd.hpp"
#include "wire.hpp"

namespace gp::alltoall {

struct PeerLink {
	int rank = -1;	// the peer
	UniqueFd fd;	// connected, non-blocking, TCP_NODELAY
	Endpoint local; // this end, as the peer sees it
	Endpoint remote;
	bool cross = false; // the peer is on the other side of the bottleneck
};

struct MeshSetup {
	int rank = 0;
	const Table *table = nullptr;
	uint64_t session = 0;
	SocketTuning tuning;
	// Polled once per wakeup: an error (rank 0 aborted or stopped the run) ends the setup.
	std::function<std::optional<Error>()> interrupted;
};

// Connects to every higher rank and accepts every lower one on `listener` (which already
// carries the tuning, inherited by accepted sockets). The result is indexed by peer rank (the
// own entry has no fd). Bounded by the deadline.
Expected<std::vector<PeerLink>> build_mesh(EventLoop &loop, int listener, const MeshSetup &setup,
					   const Deadline &deadline);

} // namespace gp::alltoall
